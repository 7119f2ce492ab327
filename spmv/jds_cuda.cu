/* "jds" on the cuda backend: one thread per permuted row. Thread k takes
 * entry j of its row from jagged diagonal j at jd_ptr[j] + k, so the
 * threads of a warp read consecutive values and indices; it stops at the
 * first diagonal not longer than k (rows are sorted by decreasing length,
 * so a warp's threads stop at nearly the same j). The result goes to y
 * through the permutation. One very long row keeps one thread walking its
 * diagonals alone: JDS's weak case (coo or hyb suit such matrices). */
#include "other_formats.h"
#include "../vec/cuda_check.h"

namespace {

const int kBlock = 256;

struct jds_state {
    ks_int nrows, njd;
    ks_int *perm, *jd_ptr, *col;
    double *val;
};

__global__ void __launch_bounds__(kBlock)
    jds_kernel(ks_int nrows, ks_int njd, const ks_int *__restrict__ perm,
               const ks_int *__restrict__ jd_ptr, const ks_int *__restrict__ col,
               const double *__restrict__ val, const double *__restrict__ x, double alpha,
               double beta, double *__restrict__ y)
{
    const long long k = (long long)blockIdx.x * kBlock + threadIdx.x;
    if (k >= nrows)
        return;
    double sum = 0.0;
    long long start = __ldg(jd_ptr);
    for (ks_int j = 0; j < njd; j++) {
        const long long next = __ldg(jd_ptr + j + 1);
        const long long idx = start + k;
        if (idx >= next)
            break;
        sum += __ldg(val + idx) * __ldg(x + __ldg(col + idx));
        start = next;
    }
    const ks_int r = __ldg(perm + k);
    /* beta == 0 must not read y: it may hold garbage or NaN. */
    y[r] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[r];
}

void jds_destroy(ks_backend *be, void *state)
{
    jds_state *s = (jds_state *)state;
    if (!s)
        return;
    void *ptrs[4] = {s->perm, s->jd_ptr, s->col, s->val};
    for (int i = 0; i < 4; i++)
        if (ptrs[i])
            be->ops->free(be, ptrs[i]);
    free(s);
}

ks_error jds_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_jds_layout *L = (const ks_jds_layout *)layout;
    *state = NULL;
    jds_state *s = (jds_state *)ks_calloc(1, sizeof *s, "jds state");
    if (!s)
        return KS_ERR_MEMORY;
    s->nrows = L->nrows;
    s->njd = L->njd;
    ks_error e = ks_be_upload_new(be, L->perm, sizeof(ks_int) * (size_t)L->nrows,
                                  (void **)&s->perm, "jds permutation");
    if (e == KS_OK)
        e = ks_be_upload_new(be, L->jd_ptr, sizeof(ks_int) * ((size_t)L->njd + 1),
                             (void **)&s->jd_ptr, "jds diagonal pointers");
    if (e == KS_OK)
        e = ks_be_upload_new(be, L->col, sizeof(ks_int) * (size_t)L->nnz, (void **)&s->col,
                             "jds column indices");
    if (e == KS_OK)
        e = ks_be_upload_new(be, L->val, sizeof(double) * (size_t)L->nnz, (void **)&s->val,
                             "jds values");
    if (e != KS_OK) {
        jds_destroy(be, s);
        return e;
    }
    *state = s;
    return KS_OK;
}

ks_error jds_apply(ks_backend *be, void *state, double alpha, const double *x, double beta,
                   double *y)
{
    const jds_state *s = (const jds_state *)state;
    if (s->nrows == 0)
        return KS_OK;
    const unsigned blocks = (unsigned)(((long long)s->nrows + kBlock - 1) / kBlock);
    jds_kernel<<<blocks, kBlock, 0, (cudaStream_t)ks_cuda_stream(be)>>>(
        s->nrows, s->njd, s->perm, s->jd_ptr, s->col, s->val, x, alpha, beta, y);
    KS_CUDA_LAUNCH_CHECK("jds_kernel");
    return KS_OK;
}

} // namespace

extern "C" const ks_spmv_format_ops ks_format_jds_cuda = {
    "jds",
    KS_BACKEND_CUDA,
    "jagged diagonals: rows sorted by length, one thread per row, y through the permutation",
    ks_jds_layout_build,
    ks_jds_layout_apply,
    ks_jds_layout_bytes,
    ks_jds_layout_free,
    jds_setup,
    jds_apply,
    jds_destroy,
    NULL, /* gs_sweep */
    ks_jds_layout_to_csr,
    NULL, /* fused_step */
    0, /* float_values */
};
