/* "codsell" (CoD-SELL, codsell.h) on the cuda backend: one thread per row.
 * A block of B = max(256, C) threads covers B / C slices: thread t works on
 * slice blockIdx.x * (B / C) + t / C, row t % C of it; slices hold at most
 * C rows, so the threads past a slice's row count idle. A thread sums the
 * dictionary entries (offsets read through __ldg: every thread of a slice
 * reads the same offset at the same step, one broadcast transaction; values
 * column-major, so the slice's threads read consecutive slots), then its
 * remainder like SELL (padding included, no branch), and writes y[perm[p]].
 * The loops and their order are those of the host reference apply. */
#include "codsell.h"
#include "format_cuda.h"
#include "../vec/cuda_check.h"

namespace {

const int kBlockMin = 256;

struct codsell_state {
    ks_int nrows, nslices;
    int C, permuted;
    ks_int *slice_row, *dict_ptr, *dval_ptr, *rem_ptr, *dict, *perm, *base, *rem_col;
    double *dval, *rem_val;
};

template <bool P>
__global__ void codsell_kernel(ks_int nslices, int log2c, int slices_per_block,
                               const ks_int *__restrict__ slice_row,
                               const ks_int *__restrict__ dict_ptr,
                               const ks_int *__restrict__ dval_ptr,
                               const ks_int *__restrict__ rem_ptr,
                               const ks_int *__restrict__ dict, const ks_int *__restrict__ perm,
                               const ks_int *__restrict__ base, const double *__restrict__ dval,
                               const ks_int *__restrict__ rem_col,
                               const double *__restrict__ rem_val,
                               const double *__restrict__ x, double alpha, double beta,
                               double *__restrict__ y)
{
    const long long s = (long long)blockIdx.x * slices_per_block + (threadIdx.x >> log2c);
    if (s >= nslices)
        return; /* no collective operations below */
    const ks_int r = (ks_int)(threadIdx.x & ((1u << log2c) - 1u));
    const ks_int q0 = __ldg(slice_row + s), R = __ldg(slice_row + s + 1) - q0;
    if (r >= R)
        return;
    const ks_int p = q0 + r;
    const ks_int d0 = __ldg(dict_ptr + s), D = __ldg(dict_ptr + s + 1) - d0;
    const ks_int r0 = __ldg(rem_ptr + s), Wr = (__ldg(rem_ptr + s + 1) - r0) / R;
    const ks_int b = __ldg(base + p);
    const double *__restrict__ v = dval + __ldg(dval_ptr + s) + r;
    const ks_int *__restrict__ dd = dict + d0;
    double sum = 0.0;
    /* Counted loops, unrolled, so several gathers are in flight together.
     * Offsets stay below INT_MAX (the layout checks). */
#pragma unroll 8
    for (ks_int j = 0; j < D; j++)
        sum += __ldg(v + j * R) * __ldg(x + b + __ldg(dd + j));
    const ks_int *__restrict__ rc = rem_col + r0 + r;
    const double *__restrict__ rv = rem_val + r0 + r;
#pragma unroll 4
    for (ks_int k = 0; k < Wr; k++)
        sum += __ldg(rv + k * R) * __ldg(x + __ldg(rc + k * R));
    const ks_int row = P ? __ldg(perm + p) : p;
    /* beta == 0 must not read y: it may hold garbage or NaN. */
    y[row] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[row];
}

void codsell_destroy(ks_backend *be, void *state)
{
    codsell_state *s = (codsell_state *)state;
    if (!s)
        return;
    void *p[] = {s->slice_row, s->dict_ptr, s->dval_ptr, s->rem_ptr, s->dict,
                 s->perm,      s->base,     s->rem_col,  s->dval,    s->rem_val};
    ks_cufmt_free(be, p, KS_CUFMT_COUNT(p));
    free(s);
}

ks_error codsell_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_codsell_layout *L = (const ks_codsell_layout *)layout;
    *state = NULL;
    codsell_state *s = (codsell_state *)ks_calloc(1, sizeof *s, "codsell state");
    if (!s)
        return KS_ERR_MEMORY;
    s->nrows = L->nrows;
    s->nslices = L->nslices;
    s->C = L->C;
    s->permuted = L->permuted;
    const size_t ns1 = sizeof(ks_int) * ((size_t)L->nslices + 1);
    const size_t ni = sizeof(ks_int) * (size_t)L->nrows;
    const size_t nd = (size_t)L->dict_ptr[L->nslices];
    const size_t nv = (size_t)L->dval_ptr[L->nslices];
    const size_t nr = (size_t)L->rem_ptr[L->nslices];
    /* No slices: nothing uploaded. The permutation only when permuted;
     * arrays of 0 bytes (nothing stored) stay NULL: the kernel reads
     * nothing from them. */
    const ks_cufmt_array a[] = {
        {(void **)&s->slice_row, L->slice_row, ns1, "codsell slice rows"},
        {(void **)&s->dict_ptr, L->dict_ptr, ns1, "codsell dict pointers"},
        {(void **)&s->dval_ptr, L->dval_ptr, ns1, "codsell value pointers"},
        {(void **)&s->rem_ptr, L->rem_ptr, ns1, "codsell rem pointers"},
        {(void **)&s->dict, L->dict, sizeof(ks_int) * nd, "codsell dictionaries"},
        {(void **)&s->perm, L->perm, L->permuted ? ni : 0, "codsell permutation"},
        {(void **)&s->base, L->base, ni, "codsell base columns"},
        {(void **)&s->dval, L->dval, sizeof(double) * nv, "codsell dictionary values"},
        {(void **)&s->rem_col, L->rem_col, sizeof(ks_int) * nr, "codsell remainder columns"},
        {(void **)&s->rem_val, L->rem_val, sizeof(double) * nr, "codsell remainder values"},
    };
    ks_error e = KS_OK;
    if (L->nslices > 0)
        e = ks_cufmt_upload(be, a, KS_CUFMT_COUNT(a), KS_CUFMT_EMPTY_NULL);
    return ks_cufmt_done(be, e, s, codsell_destroy, state);
}

ks_error codsell_apply(ks_backend *be, void *state, double alpha, const double *x, double beta,
                       double *y)
{
    const codsell_state *s = (const codsell_state *)state;
    if (s->nslices == 0)
        return KS_OK;
    int log2c = 0;
    while ((1 << log2c) < s->C)
        log2c++;
    const int block = s->C > kBlockMin ? s->C : kBlockMin;
    const int spb = block / s->C;
    const unsigned blocks = ks_cufmt_blocks(s->nslices, spb);
    cudaStream_t stream = ks_cufmt_stream(be);
    if (s->permuted) {
        codsell_kernel<true><<<blocks, block, 0, stream>>>(
            s->nslices, log2c, spb, s->slice_row, s->dict_ptr, s->dval_ptr, s->rem_ptr,
            s->dict, s->perm, s->base, s->dval, s->rem_col, s->rem_val, x, alpha, beta, y);
    } else {
        codsell_kernel<false><<<blocks, block, 0, stream>>>(
            s->nslices, log2c, spb, s->slice_row, s->dict_ptr, s->dval_ptr, s->rem_ptr,
            s->dict, s->perm, s->base, s->dval, s->rem_col, s->rem_val, x, alpha, beta, y);
    }
    KS_CUDA_LAUNCH_CHECK("codsell_kernel");
    return KS_OK;
}

} // namespace

extern "C" const ks_spmv_format_ops ks_format_codsell_cuda = {
    "codsell",
    KS_BACKEND_CUDA,
    "CoD-SELL: SELL-C-sigma with per-slice dictionaries of the rows' shared column pattern",
    ks_codsell_layout_build,
    ks_codsell_layout_apply,
    ks_codsell_layout_bytes,
    ks_codsell_layout_free,
    codsell_setup,
    codsell_apply,
    codsell_destroy,
    NULL, /* gs_sweep */
    ks_codsell_layout_to_csr,
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
