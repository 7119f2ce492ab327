/* "sliced_ell" and "sell" (SELL-C-sigma) on the cuda backend: one thread per
 * row, rows in slice order, so the threads of a slice read C consecutive
 * slots per step (column-major within the slice, ell_family.h). A thread
 * reads all width[s] slots of its slice (padding: value 0 at a valid
 * column, no branch) and writes y[perm[p]], so x and y keep the original
 * ordering; perm is skipped when it is the identity (sliced_ell).
 *
 * One thread per row has a cost on matrices with a few very long rows: the
 * slice holding such a row takes that row's length in steps on one warp
 * (memplus, rajat01, hangGlider_2 ran 4 to 11x slower than cuSPARSE on an
 * H200), and a matrix of few rows fills few warps (raefsky2: 3242 rows).
 * Those suit hyb or csr_vector; these formats suit many rows of similar
 * length (stencils, FEM), where they beat cuSPARSE. */
#include "ell_family.h"
#include "format_cuda.h"
#include "spmm_cuda.h"
#include "../vec/cuda_check.h"

namespace {

const int kBlock = 256; /* threads need not align with slices: each finds its own */

struct sell_state {
    ks_int nrows, nslices;
    int log2c;
    int permuted;
    ks_int *slice_ptr;
    ks_int *perm; /* NULL unless permuted */
    ks_int *colind;
    double *val;
};

/* Sliced row p: its first index and value (stride C through its slice)
 * and the slice's width. */
struct sell_row {
    const ks_int *c;
    const double *v;
    ks_int C, width;
};

__device__ __forceinline__ sell_row sell_row_at(ks_int p, int log2c,
                                                const ks_int *__restrict__ slice_ptr,
                                                const ks_int *colind, const double *val)
{
    sell_row r;
    r.C = (ks_int)1 << log2c;
    const ks_int s = p >> log2c;
    const ks_int start = __ldg(slice_ptr + s);
    r.width = (__ldg(slice_ptr + s + 1) - start) >> log2c;
    r.c = colind + start + (p & (r.C - 1));
    r.v = val + start + (p & (r.C - 1));
    return r;
}

template <bool P>
__global__ void __launch_bounds__(kBlock)
    sell_kernel(ks_int nrows, int log2c, const ks_int *__restrict__ slice_ptr,
                const ks_int *__restrict__ perm, const ks_int *__restrict__ colind,
                const double *__restrict__ val, const double *__restrict__ x, double alpha,
                double beta, double *__restrict__ y)
{
    const long long gid = (long long)blockIdx.x * kBlock + threadIdx.x;
    if (gid >= nrows)
        return; /* no warp-collective operations below */
    const ks_int p = (ks_int)gid;
    const sell_row r = sell_row_at(p, log2c, slice_ptr, colind, val);
    const ks_int C = r.C, *__restrict__ c = r.c;
    const double *__restrict__ v = r.v;
    double sum = 0.0;
    /* A counted loop, so the unrolled body has no exit between its copies
     * and the loads of 8 entries are in flight together: a long row is
     * otherwise a chain of dependent gathers (index, then x), and the time
     * of its whole slice. The sum keeps its sequential order. Offsets stay
     * below INT_MAX (the layout checks). */
#pragma unroll 8
    for (ks_int k = 0; k < r.width; k++)
        sum += __ldg(v + k * C) * __ldg(x + __ldg(c + k * C));
    const ks_int row = P ? __ldg(perm + p) : p;
    /* beta == 0 must not read y: it may hold garbage or NaN. */
    y[row] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[row];
}

/* SpMM (spmm_cuda.h): thread e = p*k + j sums column j of sliced row p in
 * sell_kernel's order; the k threads of a row share its entry loads. */
template <bool P, int K>
__global__ void __launch_bounds__(kBlock)
    sell_spmm_kernel(ks_int nrows, int log2c, const ks_int *__restrict__ slice_ptr,
                     const ks_int *__restrict__ perm, const ks_int *__restrict__ colind,
                     const double *__restrict__ val, int k, const double *__restrict__ X,
                     double alpha, double beta, double *__restrict__ Y)
{
    const ks_spmm_pos q = ks_spmm_at<K>((long long)blockIdx.x * kBlock + threadIdx.x, k);
    if (q.i >= nrows)
        return;
    const ks_int p = (ks_int)q.i;
    const sell_row r = sell_row_at(p, log2c, slice_ptr, colind, val);
    const double *__restrict__ xj = X + q.j;
    double sum = 0.0;
#pragma unroll 4
    for (ks_int w = 0; w < r.width; w++)
        sum += __ldg(r.v + w * r.C) * __ldg(xj + (long long)__ldg(r.c + w * r.C) * q.kk);
    const long long row = P ? __ldg(perm + p) : p;
    ks_spmm_store(Y, row * q.kk + q.j, alpha, sum, beta);
}

void sell_destroy(ks_backend *be, void *state)
{
    sell_state *s = (sell_state *)state;
    if (!s)
        return;
    void *p[] = {s->slice_ptr, s->perm, s->colind, s->val};
    ks_cufmt_free(be, p, KS_CUFMT_COUNT(p));
    free(s);
}

ks_error sell_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_sell_layout *L = (const ks_sell_layout *)layout;
    *state = NULL;
    sell_state *s = (sell_state *)ks_calloc(1, sizeof *s, "sell state");
    if (!s)
        return KS_ERR_MEMORY;
    s->nrows = L->nrows;
    s->nslices = L->nslices;
    s->permuted = L->permuted;
    while ((1 << s->log2c) < L->C)
        s->log2c++;
    const size_t nslots = (size_t)L->slice_ptr[L->nslices];
    /* The permutation only when permuted. No slots (no entries): the
     * kernel reads nothing, so arrays of 0 bytes stay NULL. */
    const ks_cufmt_array a[] = {
        {(void **)&s->slice_ptr, L->slice_ptr, sizeof(ks_int) * ((size_t)L->nslices + 1),
         "sell slice pointers"},
        {(void **)&s->perm, L->perm, L->permuted ? sizeof(ks_int) * (size_t)L->nrows : 0,
         "sell permutation"},
        {(void **)&s->colind, L->colind, sizeof(ks_int) * nslots, "sell column indices"},
        {(void **)&s->val, L->val, sizeof(double) * nslots, "sell values"},
    };
    ks_error e = ks_cufmt_upload(be, a, KS_CUFMT_COUNT(a), KS_CUFMT_EMPTY_NULL);
    return ks_cufmt_done(be, e, s, sell_destroy, state);
}

ks_error sell_apply(ks_backend *be, void *state, double alpha, const double *x, double beta,
                    double *y)
{
    const sell_state *s = (const sell_state *)state;
    ks_cufmt_launch lc;
    if (!ks_cufmt_launch_for(be, s->nrows, kBlock, &lc))
        return KS_OK;
    if (s->permuted) {
        sell_kernel<true><<<lc.blocks, kBlock, 0, lc.stream>>>(s->nrows, s->log2c,
                                                                s->slice_ptr, s->perm,
                                                                s->colind, s->val, x, alpha,
                                                                beta, y);
        KS_CUDA_LAUNCH_CHECK("sell_kernel");
    } else {
        sell_kernel<false><<<lc.blocks, kBlock, 0, lc.stream>>>(s->nrows, s->log2c,
                                                                 s->slice_ptr, s->perm,
                                                                 s->colind, s->val, x, alpha,
                                                                 beta, y);
        KS_CUDA_LAUNCH_CHECK("sliced_ell_kernel");
    }
    return KS_OK;
}

ks_error sell_spmm(ks_backend *be, void *state, int k, double alpha, const double *X,
                   double beta, double *Y)
{
    const sell_state *s = (const sell_state *)state;
    ks_cufmt_launch lc;
    if (!ks_cufmt_launch_for(be, (long long)s->nrows * k, kBlock, &lc))
        return KS_OK;
#define KS_SELL_SPMM(K)                                                                       \
    do {                                                                                      \
        if (s->permuted)                                                                      \
            sell_spmm_kernel<true, K><<<lc.blocks, kBlock, 0, lc.stream>>>(                   \
                s->nrows, s->log2c, s->slice_ptr, s->perm, s->colind, s->val, k, X, alpha,    \
                beta, Y);                                                                     \
        else                                                                                  \
            sell_spmm_kernel<false, K><<<lc.blocks, kBlock, 0, lc.stream>>>(                  \
                s->nrows, s->log2c, s->slice_ptr, s->perm, s->colind, s->val, k, X, alpha,    \
                beta, Y);                                                                     \
    } while (0)
    KS_SPMM_DISPATCH(k, KS_SELL_SPMM);
#undef KS_SELL_SPMM
    KS_CUDA_LAUNCH_CHECK("sell_spmm_kernel");
    return KS_OK;
}

} // namespace

extern "C" const ks_spmv_format_ops ks_format_sliced_ell_cuda = {
    "sliced_ell",
    KS_BACKEND_CUDA,
    "Sliced ELL: slices of C rows (default 32), each padded to its longest row, no sorting",
    ks_sliced_ell_layout_build,
    ks_sell_layout_apply,
    ks_sell_layout_bytes,
    ks_sell_layout_free,
    sell_setup,
    sell_apply,
    sell_destroy,
    NULL, /* gs_sweep */
    ks_sell_layout_to_csr,
    NULL, /* fused_step */
    0, /* float_values */
    NULL, /* setup_sparse */
    NULL, /* state_bytes */
    NULL, /* reads_values */
    sell_spmm,
    NULL, /* fused_block */
    NULL, /* spmm_dot */
    NULL, /* fused_block_dot */
    NULL, /* fused_ghost */
};

extern "C" const ks_spmv_format_ops ks_format_sell_cuda = {
    "sell",
    KS_BACKEND_CUDA,
    "SELL-C-sigma: rows sorted by length in windows of sigma (default 8C), slices of C rows",
    ks_sell_layout_build,
    ks_sell_layout_apply,
    ks_sell_layout_bytes,
    ks_sell_layout_free,
    sell_setup,
    sell_apply,
    sell_destroy,
    NULL, /* gs_sweep */
    ks_sell_layout_to_csr,
    NULL, /* fused_step */
    0, /* float_values */
    NULL, /* setup_sparse */
    NULL, /* state_bytes */
    NULL, /* reads_values */
    sell_spmm,
    NULL, /* fused_block */
    NULL, /* spmm_dot */
    NULL, /* fused_block_dot */
    NULL, /* fused_ghost */
};
