/* "jds" on the cuda backend: one thread per permuted row. Thread k takes
 * entry j of its row from jagged diagonal j at jd_ptr[j] + k, so the
 * threads of a warp read consecutive values and indices; it stops at the
 * first diagonal not longer than k (rows are sorted by decreasing length,
 * so a warp's threads stop at nearly the same j). The result goes to y
 * through the permutation. One very long row keeps one thread walking its
 * diagonals alone: JDS's weak case (coo or hyb suit such matrices). */
#include "format_cuda.h"
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
    void *p[] = {s->perm, s->jd_ptr, s->col, s->val};
    ks_cufmt_free(be, p, KS_CUFMT_COUNT(p));
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
    const ks_cufmt_array a[] = {
        {(void **)&s->perm, L->perm, sizeof(ks_int) * (size_t)L->nrows, "jds permutation"},
        {(void **)&s->jd_ptr, L->jd_ptr, sizeof(ks_int) * ((size_t)L->njd + 1),
         "jds diagonal pointers"},
        {(void **)&s->col, L->col, sizeof(ks_int) * (size_t)L->nnz, "jds column indices"},
        {(void **)&s->val, L->val, sizeof(double) * (size_t)L->nnz, "jds values"},
    };
    ks_error e = ks_cufmt_upload(be, a, KS_CUFMT_COUNT(a), KS_CUFMT_EMPTY_ALLOC);
    return ks_cufmt_done(be, e, s, jds_destroy, state);
}

ks_error jds_apply(ks_backend *be, void *state, double alpha, const double *x, double beta,
                   double *y)
{
    const jds_state *s = (const jds_state *)state;
    ks_cufmt_launch lc;
    if (!ks_cufmt_launch_for(be, s->nrows, kBlock, &lc))
        return KS_OK;
    jds_kernel<<<lc.blocks, kBlock, 0, lc.stream>>>(s->nrows, s->njd, s->perm, s->jd_ptr, s->col,
                                                    s->val, x, alpha, beta, y);
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
    NULL, /* setup_sparse */
    NULL, /* state_bytes */
    NULL, /* reads_values */
    NULL, /* spmm: k SpMVs */
    NULL, /* fused_block */
    NULL, /* spmm_dot */
    NULL, /* fused_block_dot */
    NULL, /* fused_ghost */
};
