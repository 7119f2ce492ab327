/* "csr_scalar" on the cuda backend: one thread per row of the plain CSR
 * arrays (the textbook kernel). Loads of neighbouring threads are not
 * coalesced, so it is the baseline the other CSR kernels are measured
 * against and a fair choice only for very short rows. The host half is the
 * shared CSR layout, whose reference sums in the same order. */
#include "csr_family.h"
#include "format_cuda.h"
#include "../vec/cuda_check.h"

#include <climits>

namespace {

const int kBlock = 256;
/* Entries a thread loads before it uses any, so a short row costs one
 * round trip to memory for indices and values and one for x, not two per
 * entry. The sum keeps CSR order. */
const int kUnroll = 4;

__global__ void __launch_bounds__(kBlock)
    csr_scalar_kernel(ks_int nrows, const ks_int *__restrict__ rowptr,
                      const ks_int *__restrict__ colind, const double *__restrict__ val,
                      const double *__restrict__ x, double alpha, double beta,
                      double *__restrict__ y)
{
    const unsigned row = blockIdx.x * (unsigned)kBlock + threadIdx.x;
    if (row >= (unsigned)nrows)
        return;
    const ks_int end = __ldg(rowptr + row + 1);
    double sum = 0.0;
    for (ks_int j = __ldg(rowptr + row); j < end; j += kUnroll) {
        /* Unconditional loads (clamped to the row's last entry) and all x
         * loads before any product, so nothing waits on a multiply-add. */
        ks_int c[kUnroll];
        double v[kUnroll], xv[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            const ks_int k = min(j + u, end - 1);
            c[u] = __ldg(colind + k);
            v[u] = __ldg(val + k);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; u++)
            xv[u] = __ldg(x + c[u]);
#pragma unroll
        for (int u = 0; u < kUnroll; u++)
            if (j + u < end)
                sum += v[u] * xv[u];
    }
    /* beta == 0 must not read y: it may hold garbage or NaN. */
    y[row] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[row];
}

struct csr_scalar_state {
    ks_csr_device A;
};

ks_error csr_scalar_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    if (layout)
        *layout = NULL;
    /* j steps up to kUnroll - 1 past a row's end in 32-bit ints. */
    if (A && A->nnz > INT_MAX - 2 * kUnroll)
        return ks_seterr(KS_ERR_UNSUPPORTED, "csr_scalar: %d nonzeros exceed the 32-bit range",
                         (int)A->nnz);
    return ks_csr_layout_build(A, prm, layout);
}

void csr_scalar_destroy(ks_backend *be, void *state)
{
    csr_scalar_state *s = (csr_scalar_state *)state;
    if (!s)
        return;
    ks_csr_device_free(be, &s->A);
    free(s);
}

ks_error csr_scalar_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_csr_layout *L = (const ks_csr_layout *)layout;
    *state = NULL;
    csr_scalar_state *s = (csr_scalar_state *)ks_calloc(1, sizeof *s, "csr_scalar state");
    if (!s)
        return KS_ERR_MEMORY;
    ks_error e = ks_csr_device_upload(be, &L->A, "csr_scalar", &s->A);
    return ks_cufmt_done(be, e, s, csr_scalar_destroy, state);
}

ks_error csr_scalar_apply(ks_backend *be, void *state, double alpha, const double *x,
                          double beta, double *y)
{
    const csr_scalar_state *s = (const csr_scalar_state *)state;
    ks_cufmt_launch lc;
    if (!ks_cufmt_launch_for(be, s->A.nrows, kBlock, &lc))
        return KS_OK;
    csr_scalar_kernel<<<lc.blocks, kBlock, 0, lc.stream>>>(s->A.nrows, s->A.rowptr, s->A.colind,
                                                         s->A.val, x, alpha, beta, y);
    KS_CUDA_LAUNCH_CHECK("csr_scalar_kernel");
    return KS_OK;
}

} // namespace

extern "C" const ks_spmv_format_ops ks_format_csr_scalar_cuda = {
    "csr_scalar",
    KS_BACKEND_CUDA,
    "scalar CSR: one thread per row (baseline; for very short rows)",
    csr_scalar_layout_build,
    ks_csr_layout_apply,
    ks_csr_layout_bytes,
    ks_csr_layout_free,
    csr_scalar_setup,
    csr_scalar_apply,
    csr_scalar_destroy,
    NULL, /* gs_sweep */
    ks_csr_layout_to_csr,
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
