/* A^T on the device by counting sort: column counts (integer atomics: the
 * counts do not depend on their order), a scan into A^T's row pointers,
 * then a scatter of entry numbers k with atomic cursors (the order inside
 * each row of A^T is then arbitrary), a segmented sort of each row of A^T
 * by k, and a gather of (row of k, value of k).
 *
 * Sorting by the entry number k rather than by row: k grows with the row
 * in CSR and is unique, so the result is the stable counting sort's of
 * the cpu (sparse/cpu/transpose.c) bit for bit, even for an input whose
 * rows repeat a column.
 *
 * Cost, for the AMG's R = P^T (tens of millions of entries into a few
 * hundred thousand columns): the count and the scatter take the entries
 * in order, 32 consecutive ones a warp, and lanes of one column (few
 * distinct in a warp: neighbouring rows share their coarse points) add
 * with a single atomic (__match_any_sync; the lanes' ranks in the group
 * keep their order inside the warp), so far fewer atomics queue on the
 * hot counters. The scatter also records each entry's row (rowof[k],
 * written in entry order: coalesced), found by a binary search between
 * the rows of the warp's first and last entries (themselves found by two
 * searches the whole warp shares, so the loads of the long search are
 * broadcasts); the gather then reads rowof[k] instead of searching all
 * row pointers once per entry, divergently. */
#include "sparse_cuda.cuh"

namespace {

/* The largest i in [lo, hi) with rp[i] <= k (rp[lo] <= k < rp[hi]). */
__device__ __forceinline__ ks_int row_of(const ks_int *__restrict__ rp, ks_int lo, ks_int hi,
                                         ks_int k)
{
    while (hi - lo > 1) {
        const ks_int mid = lo + (hi - lo) / 2;
        if (rp[mid] <= k)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Warp-wide: the lanes of the warp whose entry has column c (c < 0: an
 * inactive lane, alone), and how many of them are below this lane. */
__device__ __forceinline__ unsigned column_peers(ks_int c, int *below)
{
    const int lane = threadIdx.x & 31;
    const unsigned peers = __match_any_sync(KS_CU_FULL_MASK, c < 0 ? -1 - lane : c);
    *below = __popc(peers & ((1u << lane) - 1u));
    return peers;
}

/* Trip counts are uniform per block (warp intrinsics inside). */
__global__ void count_cols(ks_int nnz, const ks_int *__restrict__ ci, ks_int *cnt)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long base = (long long)blockIdx.x * blockDim.x; base < nnz; base += stride) {
        const long long k = base + threadIdx.x;
        const ks_int c = k < nnz ? ci[k] : -1;
        int below;
        const unsigned peers = column_peers(c, &below);
        if (c >= 0 && below == 0)
            atomicAdd(&cnt[c], __popc(peers));
    }
}

/* tci[trp[c] + cursor] = k for each entry k of column c (one atomic per
 * column and warp, lanes in order behind it), and rowof[k] = its row. */
__global__ void scatter_entries(ks_int n, ks_int nnz, const ks_int *__restrict__ rp,
                                const ks_int *__restrict__ ci, const ks_int *__restrict__ trp,
                                ks_int *cursor, ks_int *tci, ks_int *rowof)
{
    const int lane = threadIdx.x & 31;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long base = (long long)blockIdx.x * blockDim.x; base < nnz; base += stride) {
        const long long k = base + threadIdx.x;
        const ks_int c = k < nnz ? ci[k] : -1;
        /* the rows of the warp's first and last entries bound every lane's */
        const long long w0 = base + (threadIdx.x & ~31);
        const long long w1 = w0 + 31 < nnz ? w0 + 31 : nnz - 1;
        const ks_int ends = row_of(rp, 0, n, (ks_int)(lane & 1 ? w1 : w0));
        const ks_int r0 = __shfl_sync(KS_CU_FULL_MASK, ends, 0);
        const ks_int r1 = __shfl_sync(KS_CU_FULL_MASK, ends, 1);
        int below;
        const unsigned peers = column_peers(c, &below);
        const int leader = __ffs(peers) - 1;
        ks_int pos = 0;
        if (c >= 0 && below == 0)
            pos = atomicAdd(&cursor[c], __popc(peers));
        pos = __shfl_sync(KS_CU_FULL_MASK, pos, leader);
        if (c >= 0) {
            tci[trp[c] + pos + below] = (ks_int)k;
            rowof[k] = row_of(rp, r0, r1 + 1, (ks_int)k);
        }
    }
}

/* tci holds entry numbers, sorted within each row: replace each by its row
 * in A, copy its value. */
__global__ void gather_entries(ks_int nnz, const ks_int *__restrict__ rowof,
                               const double *__restrict__ val, ks_int *tci, double *tval)
{
    KS_CU_FOR(p, nnz)
    {
        const ks_int k = tci[p];
        tci[p] = rowof[k];
        if (tval)
            tval[p] = val[k];
    }
}

} // namespace

extern "C" ks_error ks_cu_transpose(const ks_sparse *A, ks_sparse *AT)
{
    /* as the cpu: a bad index would write out of bounds */
    KS_TRY(ks_cu_check(A, "sparse transpose (cuda)", 0));
    ks_backend *be = A->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = A->nrows, m = A->ncols, nnz = A->nnz;
    KS_TRY(ks_sparse_alloc(be, m, n, nnz, A->val == NULL, AT));
    ks_cu_tmp tmp;
    ks_cu_tmp_init(&tmp, be);
    ks_int *cursor = NULL, *rowof = NULL;
    /* column counts in AT's row pointers, scanned in place */
    ks_error e = ks_cu_memset(be, AT->rowptr, 0, sizeof(ks_int) * ((size_t)m + 1),
                              "transpose counts");
    if (e == KS_OK && nnz > 0) {
        count_cols<<<ks_cu_blocks(nnz), KS_CU_BLOCK, 0, st>>>(nnz, A->colind, AT->rowptr);
        e = ks_cu_launched("count_cols");
    }
    if (e == KS_OK)
        e = ks_cu_scan(be, AT->rowptr, m, AT->rowptr, NULL, "transpose row pointers");
    if (e == KS_OK && nnz > 0) {
        e = ks_cu_tmp_alloc(&tmp, sizeof(ks_int) * ((size_t)m + 1), (void **)&cursor,
                            "transpose cursors");
        if (e == KS_OK)
            e = ks_cu_tmp_alloc(&tmp, sizeof(ks_int) * (size_t)nnz, (void **)&rowof,
                                "transpose entry rows");
        if (e == KS_OK)
            e = ks_cu_memset(be, cursor, 0, sizeof(ks_int) * ((size_t)m + 1),
                             "transpose cursors");
        if (e == KS_OK) {
            scatter_entries<<<ks_cu_blocks(nnz), KS_CU_BLOCK, 0, st>>>(
                n, nnz, A->rowptr, A->colind, AT->rowptr, cursor, AT->colind, rowof);
            e = ks_cu_launched("scatter_entries");
        }
        if (e == KS_OK)
            e = ks_cu_seg_sort(be, m, AT->rowptr, AT->colind, NULL);
        if (e == KS_OK) {
            gather_entries<<<ks_cu_blocks(nnz), KS_CU_BLOCK, 0, st>>>(nnz, rowof, A->val,
                                                                      AT->colind, AT->val);
            e = ks_cu_launched("gather_entries");
        }
    }
    ks_cu_tmp_free(&tmp);
    if (e != KS_OK)
        ks_sparse_free(AT);
    return e;
}
