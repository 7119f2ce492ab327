/* "hyb" on the cuda backend: the ELL part, one thread per row reading its
 * K column-major slots (coalesced across the warp) until the first padding
 * slot, writes y = alpha*A_ell*x + beta*y for every row; then the coo
 * kernels add alpha*A_coo*x for the overflow rows (applied with beta 1, so
 * they neither scale y again nor touch rows without overflow). Both run
 * on the backend's stream, so the COO pass sees the ELL pass's y. */
#include "format_cuda.h"
#include "other_formats.h"
#include "../vec/cuda_check.h"

namespace {

const int kBlock = 256;

struct hyb_state {
    ks_int nrows, width;
    ks_int *ell_col;
    double *ell_val;
    ks_coo_dev *coo; /* NULL when nothing overflows */
};

__global__ void __launch_bounds__(kBlock)
    hyb_ell_kernel(ks_int nrows, ks_int width, const ks_int *__restrict__ col,
                   const double *__restrict__ val, const double *__restrict__ x, double alpha,
                   double beta, double *__restrict__ y)
{
    const long long i = (long long)blockIdx.x * kBlock + threadIdx.x;
    if (i >= nrows)
        return;
    double sum = 0.0;
    for (ks_int j = 0; j < width; j++) {
        const long long slot = (long long)j * nrows + i;
        const ks_int c = __ldg(col + slot);
        if (c < 0)
            break; /* padding only follows */
        sum += __ldg(val + slot) * __ldg(x + c);
    }
    /* beta == 0 must not read y: it may hold garbage or NaN. */
    y[i] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[i];
}

void hyb_destroy(ks_backend *be, void *state)
{
    hyb_state *s = (hyb_state *)state;
    if (!s)
        return;
    void *p[] = {s->ell_col, s->ell_val};
    ks_cufmt_free(be, p, KS_CUFMT_COUNT(p));
    ks_coo_dev_destroy(be, s->coo);
    free(s);
}

ks_error hyb_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_hyb_layout *L = (const ks_hyb_layout *)layout;
    *state = NULL;
    hyb_state *s = (hyb_state *)ks_calloc(1, sizeof *s, "hyb state");
    if (!s)
        return KS_ERR_MEMORY;
    s->nrows = L->nrows;
    s->width = L->width;
    size_t slots = (size_t)L->width * (size_t)L->nrows;
    const ks_cufmt_array a[] = {
        {(void **)&s->ell_col, L->ell_col, sizeof(ks_int) * slots, "hyb ELL column indices"},
        {(void **)&s->ell_val, L->ell_val, sizeof(double) * slots, "hyb ELL values"},
    };
    ks_error e = ks_cufmt_upload(be, a, KS_CUFMT_COUNT(a), KS_CUFMT_EMPTY_ALLOC);
    if (e == KS_OK && L->coo.nnz > 0)
        e = ks_coo_dev_setup(be, &L->coo, &s->coo);
    return ks_cufmt_done(be, e, s, hyb_destroy, state);
}

ks_error hyb_apply(ks_backend *be, void *state, double alpha, const double *x, double beta,
                   double *y)
{
    const hyb_state *s = (const hyb_state *)state;
    ks_cufmt_launch lc;
    if (!ks_cufmt_launch_for(be, s->nrows, kBlock, &lc))
        return KS_OK;
    hyb_ell_kernel<<<lc.blocks, kBlock, 0, lc.stream>>>(s->nrows, s->width, s->ell_col,
                                                        s->ell_val, x, alpha, beta, y);
    KS_CUDA_LAUNCH_CHECK("hyb_ell_kernel");
    if (s->coo)
        KS_TRY(ks_coo_dev_apply(be, s->coo, alpha, x, 1.0, y));
    return KS_OK;
}

} // namespace

extern "C" const ks_spmv_format_ops ks_format_hyb_cuda = {
    "hyb",
    KS_BACKEND_CUDA,
    "hybrid ELL (width from the row lengths or ell_width) + COO overflow (deterministic)",
    ks_hyb_layout_build,
    ks_hyb_layout_apply,
    ks_hyb_layout_bytes,
    ks_hyb_layout_free,
    hyb_setup,
    hyb_apply,
    hyb_destroy,
    NULL, /* gs_sweep */
    ks_hyb_layout_to_csr,
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
