/* Per-row helpers of the cuda sparse table: binning rows by a size class,
 * the segmented sort of rows (sort_rows, the step that makes the
 * transpose deterministic, and the sort of the products' longest rows),
 * and the structure check (validate, and the input checks of the other
 * operations).
 *
 * Segmented sort (of all segments, or of a list of them), by segment
 * length:
 *   <= 1       nothing to do;
 *   2..32      one thread per row, insertion sort in registers/local memory;
 *   33..2048   one block per row, bitonic sort of (key, position) pairs in
 *              shared memory;
 *   > 2048     one block per row: 2048-entry tiles sorted as above into a
 *              global buffer, then merge passes (each element finds its
 *              place by a binary search in the partner run).
 * Pairs compare by key, then original position: a total order, so every
 * path gives the stable sort's result (duplicates keep their order). */
#include "sparse_cuda.cuh"
#include "../../core/ks_internal.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

namespace {

/* ============================================================ binning */
__global__ void bin_count(ks_int n, const unsigned char *__restrict__ bin, int nbins,
                          ks_int *count)
{
    __shared__ ks_int h[KS_CU_MAX_BINS];
    if (threadIdx.x < nbins)
        h[threadIdx.x] = 0;
    __syncthreads();
    KS_CU_FOR(i, n)
    atomicAdd(&h[bin[i]], 1); /* integers: the order of the adds does not matter */
    __syncthreads();
    if (threadIdx.x < nbins && h[threadIdx.x] > 0)
        atomicAdd(&count[threadIdx.x], h[threadIdx.x]);
}

/* cursor[b] = where bin b starts (the counts before it), on the device:
 * bin_fill's cursors without an upload of the host's starts (a wait). */
__global__ void bin_starts(const ks_int *count, int nbins, ks_int *cursor)
{
    ks_int at = 0;
    for (int b = 0; b < nbins; b++) {
        cursor[b] = at;
        at += count[b];
    }
}

/* Each warp reserves room for its lanes of a bin with one atomic (lanes of
 * the same bin found with __match_any_sync), so a bin holding nearly every
 * row does not serialise on one counter. The loop bound is the same for
 * the whole block, so every lane reaches the warp intrinsics. */
__global__ void bin_fill(ks_int n, const unsigned char *__restrict__ bin, ks_int *cursor,
                         ks_int *rows)
{
    const int lane = threadIdx.x & 31;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long base = (long long)blockIdx.x * blockDim.x; base < n; base += stride) {
        const long long i = base + threadIdx.x;
        const int b = i < n ? (int)bin[i] : -1;
        const unsigned peers = __match_any_sync(KS_CU_FULL_MASK, b);
        const int leader = __ffs(peers) - 1;
        ks_int pos = 0;
        if (b >= 0 && lane == leader)
            pos = atomicAdd(&cursor[b], __popc(peers));
        pos = __shfl_sync(KS_CU_FULL_MASK, pos, leader);
        if (b >= 0)
            rows[pos + __popc(peers & ((1u << lane) - 1u))] = (ks_int)i;
    }
}

/* ======================================================= segmented sort */
const int kSortThreads = 256;
const int kTile = 2048; /* entries a block sorts in shared memory */
const int kPerThread = kTile / kSortThreads;

/* (ka, pa) < (kb, pb) lexicographically. */
__device__ __forceinline__ bool pair_less(ks_int ka, ks_int pa, ks_int kb, ks_int pb)
{
    return ka < kb || (ka == kb && pa < pb);
}

/* Bitonic sort of P (a power of two) pairs in shared memory by the block;
 * ends synchronised. */
__device__ void bitonic_pairs(ks_int *sk, ks_int *sp, int P)
{
    for (int k = 2; k <= P; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int t = threadIdx.x; t < P; t += blockDim.x) {
                const int u = t ^ j;
                if (u > t) {
                    const bool up = (t & k) == 0;
                    if (pair_less(sk[u], sp[u], sk[t], sp[t]) == up) {
                        ks_int x = sk[t];
                        sk[t] = sk[u];
                        sk[u] = x;
                        x = sp[t];
                        sp[t] = sp[u];
                        sp[u] = x;
                    }
                }
            }
            __syncthreads();
        }
}

/* bin[t] for segment list ? list[t] : t. */
__global__ void seg_bins(ks_int n, const ks_int *__restrict__ list,
                         const ks_int *__restrict__ segptr, unsigned char *bin)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = list ? list[t] : (ks_int)t, len = segptr[i + 1] - segptr[i];
        bin[t] = len <= 1 ? 0 : len <= 32 ? 1 : len <= kTile ? 2 : 3;
    }
}

/* rows[u] = list[rows[u]]: binned list positions to segments. */
__global__ void list_rows(ks_int n, const ks_int *__restrict__ list, ks_int *rows)
{
    KS_CU_FOR(u, n)
    rows[u] = list[rows[u]];
}

/* Rows of 2..32 entries: one thread, stable insertion sort. */
__global__ void sort_small(const ks_int *__restrict__ rows, ks_int count,
                           const ks_int *__restrict__ segptr, ks_int *key, double *val)
{
    KS_CU_FOR(t, count)
    {
        const ks_int i = rows[t], k0 = segptr[i], len = segptr[i + 1] - k0;
        ks_int kk[32];
        double vv[32];
        for (int a = 0; a < len; a++) {
            kk[a] = key[k0 + a];
            vv[a] = val ? val[k0 + a] : 0.0;
        }
        for (int a = 1; a < len; a++) {
            const ks_int c = kk[a];
            const double v = vv[a];
            int b = a;
            for (; b > 0 && kk[b - 1] > c; b--) {
                kk[b] = kk[b - 1];
                vv[b] = vv[b - 1];
            }
            kk[b] = c;
            vv[b] = v;
        }
        for (int a = 0; a < len; a++) {
            key[k0 + a] = kk[a];
            if (val)
                val[k0 + a] = vv[a];
        }
    }
}

/* Rows of 33..2048 entries: one block per row, in shared memory. */
__global__ void __launch_bounds__(kSortThreads)
    sort_tile(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ segptr,
              ks_int *key, double *val)
{
    __shared__ ks_int sk[kTile], sp[kTile];
    for (ks_int t = blockIdx.x; t < count; t += gridDim.x) {
        const ks_int i = rows[t], k0 = segptr[i], len = segptr[i + 1] - k0;
        int P = 64;
        while (P < len)
            P <<= 1;
        for (int u = threadIdx.x; u < P; u += kSortThreads) {
            sk[u] = u < len ? key[k0 + u] : INT_MAX; /* padding sorts last */
            sp[u] = u < len ? u : INT_MAX;
        }
        __syncthreads();
        bitonic_pairs(sk, sp, P);
        /* values are permuted in place: all reads before any write */
        double v[kPerThread];
#pragma unroll
        for (int r = 0; r < kPerThread; r++) {
            const int u = threadIdx.x + r * kSortThreads;
            v[r] = val && u < len ? val[k0 + sp[u]] : 0.0;
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < kPerThread; r++) {
            const int u = threadIdx.x + r * kSortThreads;
            if (u < len) {
                key[k0 + u] = sk[u];
                if (val)
                    val[k0 + u] = v[r];
            }
        }
        __syncthreads(); /* sk, sp are reused by the next row */
    }
}

/* Rows longer than a tile: one block per row. tk and tp hold 2 * total
 * entries (two ping-pong halves), tv total values; row t of the bin owns
 * [toff[t], toff[t + 1]) of each half. */
__global__ void __launch_bounds__(kSortThreads)
    sort_large(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ segptr,
               const ks_int *__restrict__ toff, ks_int total, ks_int *key, double *val,
               ks_int *tk, ks_int *tp, double *tv)
{
    __shared__ ks_int sk[kTile], sp[kTile];
    for (ks_int t = blockIdx.x; t < count; t += gridDim.x) {
        const ks_int i = rows[t], k0 = segptr[i], L = segptr[i + 1] - k0;
        const size_t t0 = (size_t)toff[t];
        ks_int *ka = tk + t0, *pa = tp + t0;
        ks_int *kb = tk + (size_t)total + t0, *pb = tp + (size_t)total + t0;
        /* sorted tiles */
        for (ks_int c0 = 0; c0 < L; c0 += kTile) {
            const int n = L - c0 < kTile ? (int)(L - c0) : kTile;
            for (int u = threadIdx.x; u < kTile; u += kSortThreads) {
                sk[u] = u < n ? key[k0 + c0 + u] : INT_MAX;
                sp[u] = u < n ? c0 + u : INT_MAX;
            }
            __syncthreads();
            bitonic_pairs(sk, sp, kTile);
            for (int u = threadIdx.x; u < n; u += kSortThreads) {
                ka[c0 + u] = sk[u];
                pa[c0 + u] = sp[u];
            }
            __syncthreads();
        }
        /* merge runs of width w pairwise: an element's place in the merged
         * run is its index in its own run plus the number of elements of
         * the partner run before it (pairs are distinct: no ties). */
        for (long long w = kTile; w < L; w *= 2) {
            for (long long u = threadIdx.x; u < L; u += kSortThreads) {
                const long long run = u / w, base = (run & ~1LL) * w;
                const ks_int mk = ka[u], mp = pa[u];
                long long lo, hi, idx;
                if ((run & 1) == 0) {
                    lo = base + w;
                    hi = base + 2 * w < L ? base + 2 * w : L;
                    idx = u - base;
                } else {
                    lo = base;
                    hi = base + w;
                    idx = u - (base + w);
                }
                const long long olo = lo;
                while (lo < hi) {
                    const long long mid = lo + (hi - lo) / 2;
                    if (pair_less(ka[mid], pa[mid], mk, mp))
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                const long long dst = base + idx + (lo > olo ? lo - olo : 0);
                kb[dst] = mk;
                pb[dst] = mp;
            }
            __syncthreads();
            ks_int *x = ka;
            ka = kb;
            kb = x;
            x = pa;
            pa = pb;
            pb = x;
        }
        if (val) {
            for (ks_int u = threadIdx.x; u < L; u += kSortThreads)
                tv[t0 + u] = val[k0 + pa[u]];
            __syncthreads();
        }
        for (ks_int u = threadIdx.x; u < L; u += kSortThreads) {
            key[k0 + u] = ka[u];
            if (val)
                val[k0 + u] = tv[t0 + u];
        }
        __syncthreads();
    }
}

__global__ void bin_lengths(const ks_int *__restrict__ rows, ks_int count,
                            const ks_int *__restrict__ segptr, ks_int *len)
{
    KS_CU_FOR(t, count)
    {
        const ks_int i = rows[t];
        len[t] = segptr[i + 1] - segptr[i];
    }
}

/* ===================================================== structure check */
typedef struct check_result {
    ks_int rp0, rpn;  /* rowptr[0], rowptr[nrows] */
    ks_int bad_rp;    /* first row whose rowptr[i + 1] decreases or passes nnz */
    ks_int bad_ent;   /* first row with a bad entry (nrows: none) */
} check_result;

__global__ void check_init(check_result *r, ks_int n, const ks_int *rp)
{
    r->rp0 = rp[0];
    r->rpn = rp[n];
    r->bad_rp = n;
    r->bad_ent = n;
}

/* One warp per row: the rowptr step, then (where the row's bounds are
 * safe to use) its entries, as matrices/csr.c's row_entries_ok. */
__global__ void check_rows(ks_int n, ks_int ncols, ks_int nnz, const ks_int *__restrict__ rp,
                           const ks_int *__restrict__ ci, const double *__restrict__ val,
                           int full, check_result *r)
{
    const int lane = threadIdx.x & 31;
    const long long nw = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < n; i += nw) {
        const ks_int a = rp[i], b = rp[i + 1];
        if (b < a || b > nnz) {
            if (lane == 0)
                atomicMin(&r->bad_rp, (ks_int)i);
            continue;
        }
        if (a < 0) /* an earlier row is reported first; do not index with it */
            continue;
        int bad = 0;
        for (ks_int k = a + lane; k < b && !bad; k += 32) {
            const ks_int c = ci[k];
            if (c < 0 || c >= ncols)
                bad = 1;
            else if (full && ((k > a && c <= ci[k - 1]) || !isfinite(val[k])))
                bad = 1;
        }
        if (__any_sync(KS_CU_FULL_MASK, bad) && lane == 0)
            atomicMin(&r->bad_ent, (ks_int)i);
    }
}

/* *flag |= bit when check_rows (full = 0) would report anything: rowptr[0]
 * or rowptr[n] wrong, a row whose bounds decrease, leave [0, nnz], or a
 * column out of range. One thread per row: no sync, no result to set up. */
__global__ void check_flag(ks_int n, ks_int ncols, ks_int nnz, const ks_int *__restrict__ rp,
                           const ks_int *__restrict__ ci, int *flag, int bit)
{
    bool bad = false;
    if (blockIdx.x == 0 && threadIdx.x == 0)
        bad = rp[0] != 0 || rp[n] != nnz;
    KS_CU_FOR(i, n)
    {
        const ks_int a = rp[i], b = rp[i + 1];
        if (a < 0 || b < a || b > nnz) {
            bad = true;
            continue;
        }
        for (ks_int k = a; k < b && !bad; k++)
            bad = ci[k] < 0 || ci[k] >= ncols;
    }
    if (bad)
        atomicOr(flag, bit);
}

/* matrices/csr.c's describe_bad_row, word for word, for row i whose
 * columns c (and values v, may be NULL) came from the device. */
ks_error describe_row(const ks_sparse *A, ks_int i, ks_int len, const ks_int *c,
                      const double *v, const char *who)
{
    for (ks_int k = 0; k < len; k++) {
        if (c[k] < 0 || c[k] >= A->ncols)
            return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 ": column index %" PRId32
                             " out of range [0, %" PRId32 ")", who, i, c[k], A->ncols);
        if (k > 0 && c[k] <= c[k - 1])
            return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 ": column %" PRId32
                             " after column %" PRId32 " (columns must be sorted and unique)",
                             who, i, c[k], c[k - 1]);
        if (v && !isfinite(v[k]))
            return ks_seterr(KS_ERR_NUMERIC, "%s: row %" PRId32 ", column %" PRId32
                             ": value %g is not finite", who, i, c[k], v[k]);
    }
    return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 ": bad entries", who, i);
}

ks_error bad_row(const ks_sparse *A, ks_int i, const char *who)
{
    ks_backend *be = A->be;
    ks_int ends[2];
    KS_TRY(be->ops->download(be, ends, A->rowptr + i, sizeof ends));
    const ks_int len = ends[1] - ends[0];
    ks_int *c = (ks_int *)ks_malloc(sizeof(ks_int) * ((size_t)len + 1), "row columns");
    double *v = A->val ? (double *)ks_malloc(sizeof(double) * ((size_t)len + 1), "row values")
                       : NULL;
    ks_error e = !c || (A->val && !v) ? KS_ERR_MEMORY : KS_OK;
    if (e == KS_OK)
        e = be->ops->download(be, c, A->colind + ends[0], sizeof(ks_int) * (size_t)len);
    if (e == KS_OK && v)
        e = be->ops->download(be, v, A->val + ends[0], sizeof(double) * (size_t)len);
    if (e == KS_OK)
        e = describe_row(A, i, len, c, v, who);
    free(c);
    free(v);
    return e;
}

} // namespace

/* ====================================================== host functions */
extern "C" ks_error ks_cu_bin_rows(ks_cu_tmp *tmp, ks_int n, const unsigned char *bin, int nbins,
                                   ks_cu_bins *out)
{
    ks_backend *be = tmp->be;
    cudaStream_t st = ks_cu_stream(be);
    memset(out, 0, sizeof *out);
    if (nbins < 1 || nbins > KS_CU_MAX_BINS)
        return ks_seterr(KS_ERR_ARG, "internal error: %d row bins", nbins);
    ks_int *cnt = NULL; /* counts, then the fill cursors */
    KS_TRY(ks_cu_tmp_alloc(tmp, sizeof(ks_int) * 2 * KS_CU_MAX_BINS, (void **)&cnt,
                           "row bin counts"));
    KS_TRY(ks_cu_tmp_alloc(tmp, sizeof(ks_int) * ((size_t)n + 1), (void **)&out->rows,
                           "row bins"));
    KS_TRY(ks_cu_memset(be, cnt, 0, sizeof(ks_int) * KS_CU_MAX_BINS, "row bin counts"));
    if (n > 0) {
        unsigned g = ks_cu_blocks(n);
        bin_count<<<g < 1024 ? g : 1024, KS_CU_BLOCK, 0, st>>>(n, bin, nbins, cnt);
        KS_TRY(ks_cu_launched("bin_count"));
        bin_starts<<<1, 1, 0, st>>>(cnt, nbins, cnt + KS_CU_MAX_BINS);
        KS_TRY(ks_cu_launched("bin_starts"));
    }
    ks_int h[KS_CU_MAX_BINS];
    KS_TRY(be->ops->download(be, h, cnt, sizeof h));
    out->start[0] = 0;
    for (int b = 0; b < nbins; b++)
        out->start[b + 1] = out->start[b] + h[b];
    for (int b = nbins; b < KS_CU_MAX_BINS; b++)
        out->start[b + 1] = out->start[nbins];
    if (out->start[nbins] != n)
        return ks_seterr(KS_ERR_DEVICE, "internal error: %" PRId32 " of %" PRId32
                         " rows binned", out->start[nbins], n);
    if (n == 0)
        return KS_OK;
    bin_fill<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, bin, cnt + KS_CU_MAX_BINS, out->rows);
    return ks_cu_launched("bin_fill");
}

/* ks_cu_seg_sort of the nseg segments list[0 .. nseg) (list NULL: all). */
static ks_error seg_sort(ks_backend *be, ks_int nseg, const ks_int *list, const ks_int *segptr,
                         ks_int *key, double *val)
{
    if (nseg <= 0)
        return KS_OK;
    cudaStream_t st = ks_cu_stream(be);
    ks_cu_tmp tmp;
    ks_cu_tmp_init(&tmp, be);
    unsigned char *bin = NULL;
    ks_cu_bins bins;
    ks_error e = ks_cu_tmp_alloc(&tmp, (size_t)nseg, (void **)&bin, "row sort bins");
    if (e == KS_OK) {
        seg_bins<<<ks_cu_blocks(nseg), KS_CU_BLOCK, 0, st>>>(nseg, list, segptr, bin);
        e = ks_cu_launched("seg_bins");
    }
    if (e == KS_OK)
        e = ks_cu_bin_rows(&tmp, nseg, bin, 4, &bins);
    if (e == KS_OK && list) {
        list_rows<<<ks_cu_blocks(nseg), KS_CU_BLOCK, 0, st>>>(nseg, list, bins.rows);
        e = ks_cu_launched("list_rows");
    }
    ks_int nb = e == KS_OK ? bins.start[2] - bins.start[1] : 0;
    if (nb > 0) {
        sort_small<<<ks_cu_blocks(nb), KS_CU_BLOCK, 0, st>>>(bins.rows + bins.start[1], nb,
                                                              segptr, key, val);
        e = ks_cu_launched("sort_small");
    }
    nb = e == KS_OK ? bins.start[3] - bins.start[2] : 0;
    if (nb > 0) {
        sort_tile<<<ks_cu_grid(nb, 1), kSortThreads, 0, st>>>(bins.rows + bins.start[2], nb,
                                                              segptr, key, val);
        e = ks_cu_launched("sort_tile");
    }
    nb = e == KS_OK ? bins.start[4] - bins.start[3] : 0;
    if (nb > 0) {
        /* buffers for the long rows only: their offsets by a scan of their
         * lengths */
        const ks_int *lrows = bins.rows + bins.start[3];
        ks_int *toff = NULL, *tk = NULL, *tp = NULL, total = 0;
        double *tv = NULL;
        e = ks_cu_tmp_alloc(&tmp, sizeof(ks_int) * ((size_t)nb + 1), (void **)&toff,
                            "long row offsets");
        if (e == KS_OK) {
            bin_lengths<<<ks_cu_blocks(nb), KS_CU_BLOCK, 0, st>>>(lrows, nb, segptr, toff);
            e = ks_cu_launched("bin_lengths");
        }
        if (e == KS_OK)
            e = ks_cu_scan(be, toff, nb, toff, &total, "row sort buffer");
        if (e == KS_OK)
            e = ks_cu_tmp_alloc(&tmp, sizeof(ks_int) * 2 * (size_t)total, (void **)&tk,
                                "row sort keys");
        if (e == KS_OK)
            e = ks_cu_tmp_alloc(&tmp, sizeof(ks_int) * 2 * (size_t)total, (void **)&tp,
                                "row sort positions");
        if (e == KS_OK && val)
            e = ks_cu_tmp_alloc(&tmp, sizeof(double) * (size_t)total, (void **)&tv,
                                "row sort values");
        if (e == KS_OK) {
            sort_large<<<ks_cu_grid(nb, 1), kSortThreads, 0, st>>>(lrows, nb, segptr, toff, total,
                                                                   key, val, tk, tp, tv);
            e = ks_cu_launched("sort_large");
        }
    }
    ks_cu_tmp_free(&tmp);
    return e;
}

extern "C" ks_error ks_cu_seg_sort(ks_backend *be, ks_int nseg, const ks_int *segptr,
                                   ks_int *key, double *val)
{
    return seg_sort(be, nseg, NULL, segptr, key, val);
}

extern "C" ks_error ks_cu_seg_sort_rows(ks_backend *be, const ks_int *rows, ks_int count,
                                        const ks_int *segptr, ks_int *key, double *val)
{
    return seg_sort(be, count, rows, segptr, key, val);
}

/* ks_cu_check's tests of the sizes and pointers (on the host). */
static ks_error check_host(const ks_sparse *A, const char *who, int full)
{
    if (A->nrows < 0 || A->ncols < 0 || A->nnz < 0)
        return ks_seterr(KS_ERR_ARG, "%s: negative size (%" PRId32 " x %" PRId32
                         ", nnz %" PRId32 ")", who, A->nrows, A->ncols, A->nnz);
    if (!A->rowptr)
        return ks_seterr(KS_ERR_ARG, "%s: rowptr is NULL", who);
    if (A->nnz > 0 && (!A->colind || (full && !A->val)))
        return ks_seterr(KS_ERR_ARG, "%s: colind or val is NULL with nnz = %" PRId32, who,
                         A->nnz);
    return KS_OK;
}

extern "C" ks_error ks_cu_check_async(const ks_sparse *A, const char *who, int *flag, int bit)
{
    KS_TRY(check_host(A, who, 0));
    if (A->valid) /* made or checked by the library already */
        return KS_OK;
    check_flag<<<ks_cu_blocks(A->nrows), KS_CU_BLOCK, 0, ks_cu_stream(A->be)>>>(
        A->nrows, A->ncols, A->nnz, A->rowptr, A->colind, flag, bit);
    return ks_cu_launched("check_flag");
}

extern "C" ks_error ks_cu_check(const ks_sparse *A, const char *who, int full)
{
    KS_TRY(check_host(A, who, full));
    /* made or checked by the library already (a full check also reads the
     * values, which a structure known good does not vouch for) */
    if (A->valid && !full)
        return KS_OK;
    ks_backend *be = A->be;
    cudaStream_t st = ks_cu_stream(be);
    check_result *d = NULL, r;
    KS_TRY(ks_be_alloc(be, sizeof r, (void **)&d, "structure check result"));
    check_init<<<1, 1, 0, st>>>(d, A->nrows, A->rowptr);
    ks_error e = ks_cu_launched("check_init");
    if (e == KS_OK && A->nrows > 0) {
        check_rows<<<ks_cu_grid(A->nrows, KS_CU_BLOCK / 32), KS_CU_BLOCK, 0, st>>>(
            A->nrows, A->ncols, A->nnz, A->rowptr, A->colind, A->val, full, d);
        e = ks_cu_launched("check_rows");
    }
    if (e == KS_OK)
        e = be->ops->download(be, &r, d, sizeof r);
    be->ops->free(be, d);
    KS_TRY(e);
    /* the order of matrices/csr.c's ks_csr_check */
    if (r.rp0 != 0)
        return ks_seterr(KS_ERR_ARG, "%s: row 0: rowptr[0] = %" PRId32 " (expected 0)", who,
                         r.rp0);
    if (r.bad_rp < A->nrows) {
        ks_int ends[2];
        KS_TRY(be->ops->download(be, ends, A->rowptr + r.bad_rp, sizeof ends));
        if (ends[1] < ends[0])
            return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 ": rowptr decreases from %" PRId32
                             " to %" PRId32, who, r.bad_rp, ends[0], ends[1]);
        return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 ": rowptr[%" PRId32 "] = %" PRId32
                         " exceeds nnz = %" PRId32, who, r.bad_rp, r.bad_rp + 1, ends[1],
                         A->nnz);
    }
    if (r.rpn != A->nnz)
        return ks_seterr(KS_ERR_ARG, "%s: rowptr[nrows] = %" PRId32 " but nnz = %" PRId32, who,
                         r.rpn, A->nnz);
    if (r.bad_ent < A->nrows)
        return bad_row(A, r.bad_ent, who);
    return KS_OK;
}

extern "C" ks_error ks_cu_validate(const ks_sparse *A)
{
    /* as the cpu table: a pattern gets the structural checks only */
    ks_sparse B = *A; /* the explicit check reads everything, known good or not */
    B.valid = 0;
    return ks_cu_check(&B, "invalid CSR", A->val != NULL);
}

extern "C" ks_error ks_cu_sort_rows(ks_sparse *A)
{
    return ks_cu_seg_sort(A->be, A->nrows, A->rowptr, A->colind, A->val);
}
