/* A^T on the device by counting sort: column counts (integer atomics: the
 * counts do not depend on their order), a scan into A^T's row pointers,
 * then a scatter of entry numbers k with atomic cursors (the order inside
 * each row of A^T is then arbitrary), a segmented sort of each row of A^T
 * by k, and a gather of (row of k, value of k).
 *
 * Sorting by the entry number k rather than by row: k grows with the row
 * in CSR and is unique, so the result is the stable counting sort's of
 * the cpu (sparse/cpu/transpose.c) bit for bit, even for an input whose
 * rows repeat a column. */
#include "sparse_cuda.cuh"

namespace {

__global__ void count_cols(ks_int nnz, const ks_int *__restrict__ ci, ks_int *cnt)
{
    KS_CU_FOR(k, nnz)
    atomicAdd(&cnt[ci[k]], 1);
}

__global__ void scatter_entries(ks_int nnz, const ks_int *__restrict__ ci,
                                const ks_int *__restrict__ trp, ks_int *cursor, ks_int *tci)
{
    KS_CU_FOR(k, nnz)
    {
        const ks_int c = ci[k];
        tci[trp[c] + atomicAdd(&cursor[c], 1)] = (ks_int)k;
    }
}

/* tci holds entry numbers, sorted within each row: replace each by its row
 * in A (the largest i with rp[i] <= k; rp[n] = nnz > k), copy its value. */
__global__ void gather_entries(ks_int nnz, ks_int n, const ks_int *__restrict__ rp,
                               const double *__restrict__ val, ks_int *tci, double *tval)
{
    KS_CU_FOR(p, nnz)
    {
        const ks_int k = tci[p];
        ks_int lo = 0, hi = n; /* rp[lo] <= k < rp[hi] */
        while (hi - lo > 1) {
            const ks_int mid = lo + (hi - lo) / 2;
            if (rp[mid] <= k)
                lo = mid;
            else
                hi = mid;
        }
        tci[p] = lo;
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
    ks_int *cursor = NULL;
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
            e = ks_cu_memset(be, cursor, 0, sizeof(ks_int) * ((size_t)m + 1),
                             "transpose cursors");
        if (e == KS_OK) {
            scatter_entries<<<ks_cu_blocks(nnz), KS_CU_BLOCK, 0, st>>>(nnz, A->colind,
                                                                       AT->rowptr, cursor,
                                                                       AT->colind);
            e = ks_cu_launched("scatter_entries");
        }
        if (e == KS_OK)
            e = ks_cu_seg_sort(be, m, AT->rowptr, AT->colind, NULL);
        if (e == KS_OK) {
            gather_entries<<<ks_cu_blocks(nnz), KS_CU_BLOCK, 0, st>>>(nnz, n, A->rowptr, A->val,
                                                                      AT->colind, AT->val);
            e = ks_cu_launched("gather_entries");
        }
    }
    ks_cu_tmp_free(&tmp);
    if (e != KS_OK)
        ks_sparse_free(AT);
    return e;
}
