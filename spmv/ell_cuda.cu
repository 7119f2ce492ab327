/* "ell" (ELL-T) and "ellr" (ELLR-T) on the cuda backend. T consecutive
 * lanes of a warp share a row; the T-interleaved column-major layout
 * (ell_family.h) makes each step of a warp read 32 consecutive slots. "ell"
 * runs every lane over all wpad / T slots, padding included (value 0 at a
 * valid column, so no branch); "ellr" stops each lane at the row's length,
 * skipping the padding reads. Partial sums meet in a shuffle tree of width
 * T, the order the host reference (ell.c) reproduces. */
#include "ell_family.h"
#include "format_cuda.h"
#include "../vec/cuda_check.h"

namespace {

const int kBlock = 256; /* a multiple of 32: no partial warp, every T divides it */

struct ell_state {
    ks_int nrows, ld, wpad;
    int tpr;
    int stop_at_row_end;
    ks_int *rowlen; /* ellr only */
    ks_int *colind;
    double *val;
};

template <int T, bool R>
__global__ void __launch_bounds__(kBlock)
    ell_kernel(ks_int nrows, ks_int ld, ks_int wpad, const ks_int *__restrict__ rowlen,
               const ks_int *__restrict__ colind, const double *__restrict__ val,
               const double *__restrict__ x, double alpha, double beta, double *__restrict__ y)
{
    const long long gid = (long long)blockIdx.x * kBlock + threadIdx.x;
    const long long row = gid / T;
    const int lane = (int)(threadIdx.x & (T - 1));
    double sum = 0.0;
    if (row < nrows) {
        /* Lane j handles entries j, j + T, ... below the row's length
         * (ellr) or wpad (ell, a multiple of T: every lane wpad / T). */
        const ks_int end = R ? __ldg(rowlen + row) : wpad;
        const ks_int iters = end > lane ? (end - lane + T - 1) / T : 0;
        /* 64-bit offsets: ld * wpad may pass 2^31 slots. */
        const size_t step = (size_t)ld * T;
        const ks_int *__restrict__ c = colind + (size_t)row * T + lane;
        const double *__restrict__ v = val + (size_t)row * T + lane;
        /* A counted loop, so the unrolled body has no exit between its
         * copies and the loads of 8 entries are in flight together (a long
         * row is otherwise a chain of dependent gathers: index, then x).
         * The sum keeps its sequential order. */
#pragma unroll 8
        for (ks_int b = 0; b < iters; b++)
            sum += __ldg(v + b * step) * __ldg(x + __ldg(c + b * step));
    }
    /* Every lane reaches the shuffles (no early return), as the full mask
     * requires; width T keeps the rows of a warp apart. */
#pragma unroll
    for (int o = T / 2; o > 0; o >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, o, T);
    if (lane == 0 && row < nrows) {
        /* beta == 0 must not read y: it may hold garbage or NaN. */
        y[row] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[row];
    }
}

template <int T>
ks_error launch(const ell_state *s, cudaStream_t stream, double alpha, const double *x,
                double beta, double *y)
{
    const unsigned blocks = ks_cufmt_blocks((long long)s->nrows * T, kBlock);
    if (s->stop_at_row_end) {
        ell_kernel<T, true><<<blocks, kBlock, 0, stream>>>(s->nrows, s->ld, s->wpad, s->rowlen,
                                                            s->colind, s->val, x, alpha, beta,
                                                            y);
        KS_CUDA_LAUNCH_CHECK("ellr_kernel");
    } else {
        ell_kernel<T, false><<<blocks, kBlock, 0, stream>>>(s->nrows, s->ld, s->wpad, s->rowlen,
                                                             s->colind, s->val, x, alpha, beta,
                                                             y);
        KS_CUDA_LAUNCH_CHECK("ell_kernel");
    }
    return KS_OK;
}

void ell_destroy(ks_backend *be, void *state)
{
    ell_state *s = (ell_state *)state;
    if (!s)
        return;
    void *p[] = {s->rowlen, s->colind, s->val};
    ks_cufmt_free(be, p, KS_CUFMT_COUNT(p));
    free(s);
}

ks_error ell_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_ell_layout *L = (const ks_ell_layout *)layout;
    *state = NULL;
    ell_state *s = (ell_state *)ks_calloc(1, sizeof *s, "ell state");
    if (!s)
        return KS_ERR_MEMORY;
    s->nrows = L->nrows;
    s->ld = L->ld;
    s->wpad = L->wpad;
    s->tpr = L->threads_per_row;
    s->stop_at_row_end = L->stop_at_row_end;
    const size_t nslots = (size_t)L->ld * (size_t)L->wpad;
    /* Row lengths for ellr only. No slots (no entries): the kernel reads
     * nothing, so arrays of 0 bytes stay NULL. */
    const ks_cufmt_array a[] = {
        {(void **)&s->rowlen, L->rowlen,
         L->stop_at_row_end ? sizeof(ks_int) * (size_t)L->nrows : 0, "ellr row lengths"},
        {(void **)&s->colind, L->colind, sizeof(ks_int) * nslots, "ell column indices"},
        {(void **)&s->val, L->val, sizeof(double) * nslots, "ell values"},
    };
    ks_error e = ks_cufmt_upload(be, a, KS_CUFMT_COUNT(a), KS_CUFMT_EMPTY_NULL);
    return ks_cufmt_done(be, e, s, ell_destroy, state);
}

ks_error ell_apply(ks_backend *be, void *state, double alpha, const double *x, double beta,
                   double *y)
{
    const ell_state *s = (const ell_state *)state;
    if (s->nrows == 0)
        return KS_OK;
    cudaStream_t stream = ks_cufmt_stream(be);
    switch (s->tpr) {
    case 1: return launch<1>(s, stream, alpha, x, beta, y);
    case 2: return launch<2>(s, stream, alpha, x, beta, y);
    case 4: return launch<4>(s, stream, alpha, x, beta, y);
    case 8: return launch<8>(s, stream, alpha, x, beta, y);
    case 16: return launch<16>(s, stream, alpha, x, beta, y);
    case 32: return launch<32>(s, stream, alpha, x, beta, y);
    }
    return ks_seterr(KS_ERR_ARG, "ell: threads_per_row %d is not a divisor of 32", s->tpr);
}

} // namespace

extern "C" const ks_spmv_format_ops ks_format_ell_cuda = {
    "ell",
    KS_BACKEND_CUDA,
    "ELL-T: column-major ELL padded to the longest row, T lanes per row; refuses uneven rows",
    ks_ell_layout_build,
    ks_ell_layout_apply,
    ks_ell_layout_bytes,
    ks_ell_layout_free,
    ell_setup,
    ell_apply,
    ell_destroy,
    NULL, /* gs_sweep */
    ks_ell_layout_to_csr,
    NULL, /* fused_step */
    0, /* float_values */
    NULL, /* setup_sparse */
    NULL, /* state_bytes */
    NULL, /* reads_values */
    NULL, /* spmm: k SpMVs */
    NULL, /* fused_block */
    NULL, /* spmm_dot */
    NULL, /* fused_block_dot */
    NULL, /* fused_ghost */
};

extern "C" const ks_spmv_format_ops ks_format_ellr_cuda = {
    "ellr",
    KS_BACKEND_CUDA,
    "ELLR-T: ELL-T plus row lengths, lanes stop at the row's end (no padding reads)",
    ks_ellr_layout_build,
    ks_ell_layout_apply,
    ks_ell_layout_bytes,
    ks_ell_layout_free,
    ell_setup,
    ell_apply,
    ell_destroy,
    NULL, /* gs_sweep */
    ks_ell_layout_to_csr,
    NULL, /* fused_step */
    0, /* float_values */
    NULL, /* setup_sparse */
    NULL, /* state_bytes */
    NULL, /* reads_values */
    NULL, /* spmm: k SpMVs */
    NULL, /* fused_block */
    NULL, /* spmm_dot */
    NULL, /* fused_block_dot */
    NULL, /* fused_ghost */
};
