/* "csr_vector" on the cuda backend: T consecutive lanes of a warp share one
 * row (T in 1..32, a power of two), stride through its entries, then combine
 * their partial sums with a warp-shuffle tree of width T. T follows the mean
 * row length (hypre-like), so short rows do not leave most of a warp idle and
 * long rows still get coalesced loads. */
#include "csr_layout.h"
#include "../vec/cuda_check.h"

#include <climits>

namespace {

const int kBlock = 256; /* threads per block: a multiple of 32, so no warp is partial */

struct csr_vector_state {
    ks_int nrows, ncols, nnz;
    int tpr;
    ks_int *rowptr;
    ks_int *colind;
    double *val;
};

/* Smallest power of two >= mean/2, between 2 and 32: a warp covers 32/T rows
 * and each lane handles about two entries of a mean-length row (hypre uses
 * 4/8/16/32 lanes for up to 8/16/32/64 nonzeros a row). */
int choose_threads_per_row(const ks_csr *A)
{
    double mean = A->nrows > 0 ? (double)A->nnz / (double)A->nrows : 0.0;
    int t = 2;
    while (t < 32 && t < mean / 2.0)
        t *= 2;
    return t;
}

template <int T>
__global__ void __launch_bounds__(kBlock)
    csr_vector_kernel(ks_int nrows, const ks_int *__restrict__ rowptr,
                      const ks_int *__restrict__ colind, const double *__restrict__ val,
                      const double *__restrict__ x, double alpha, double beta,
                      double *__restrict__ y)
{
    const long long gid = (long long)blockIdx.x * kBlock + threadIdx.x;
    const long long row = gid / T;
    const int lane = (int)(threadIdx.x & (T - 1));
    double sum = 0.0;
    if (row < nrows) {
        const ks_int end = __ldg(rowptr + row + 1);
        for (ks_int j = __ldg(rowptr + row) + lane; j < end; j += T)
            sum += __ldg(val + j) * __ldg(x + __ldg(colind + j));
    }
    /* Every lane of the warp reaches the shuffles (no early return above),
     * as the full mask requires; width T keeps each row's group separate. */
#pragma unroll
    for (int off = T / 2; off > 0; off >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, off, T);
    if (lane == 0 && row < nrows) {
        /* beta == 0 must not read y: it may hold garbage or NaN. */
        y[row] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[row];
    }
}

template <int T>
ks_error launch(const csr_vector_state *s, cudaStream_t stream, double alpha, const double *x,
                double beta, double *y)
{
    const long long threads = (long long)s->nrows * T;
    const unsigned blocks = (unsigned)((threads + kBlock - 1) / kBlock);
    csr_vector_kernel<T><<<blocks, kBlock, 0, stream>>>(s->nrows, s->rowptr, s->colind, s->val,
                                                         x, alpha, beta, y);
    KS_CUDA_LAUNCH_CHECK("csr_vector_kernel");
    return KS_OK;
}

ks_error csr_vector_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    *layout = NULL;
    int tpr = prm ? prm->threads_per_row : 0;
    if (tpr < 0 || (tpr > 0 && (tpr > 32 || 32 % tpr != 0)))
        return ks_seterr(KS_ERR_ARG,
                         "csr_vector: threads_per_row = %d; use 0 (automatic) or a divisor of "
                         "32 (1, 2, 4, 8, 16, 32)",
                         tpr);
    /* The lane loop steps j by up to 32 past the row end in 32-bit ints. */
    if (A && A->nnz > INT_MAX - 64)
        return ks_seterr(KS_ERR_UNSUPPORTED, "csr_vector: %d nonzeros exceed the 32-bit range",
                         (int)A->nnz);
    KS_TRY(ks_csr_layout_build(A, prm, layout));
    ks_csr_layout *L = (ks_csr_layout *)*layout;
    L->threads_per_row = tpr > 0 ? tpr : choose_threads_per_row(A);
    return KS_OK;
}

void csr_vector_destroy(ks_backend *be, void *state)
{
    csr_vector_state *s = (csr_vector_state *)state;
    if (!s)
        return;
    if (s->rowptr)
        be->ops->free(be, s->rowptr);
    if (s->colind)
        be->ops->free(be, s->colind);
    if (s->val)
        be->ops->free(be, s->val);
    free(s);
}

ks_error upload(ks_backend *be, const void *host, size_t bytes, void **dev, const char *what)
{
    *dev = NULL;
    if (bytes == 0)
        return KS_OK; /* an empty matrix has no entries to read */
    return ks_be_upload_new(be, host, bytes, dev, what);
}

ks_error csr_vector_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_csr_layout *L = (const ks_csr_layout *)layout;
    const ks_csr *A = &L->A;
    *state = NULL;
    csr_vector_state *s = (csr_vector_state *)ks_calloc(1, sizeof *s, "csr_vector state");
    if (!s)
        return KS_ERR_MEMORY;
    s->nrows = A->nrows;
    s->ncols = A->ncols;
    s->nnz = A->nnz;
    s->tpr = L->threads_per_row;
    ks_error e = upload(be, A->rowptr, sizeof(ks_int) * ((size_t)A->nrows + 1),
                        (void **)&s->rowptr, "csr_vector row pointers");
    if (e == KS_OK)
        e = upload(be, A->colind, sizeof(ks_int) * (size_t)A->nnz, (void **)&s->colind,
                   "csr_vector column indices");
    if (e == KS_OK)
        e = upload(be, A->val, sizeof(double) * (size_t)A->nnz, (void **)&s->val,
                   "csr_vector values");
    if (e != KS_OK) {
        csr_vector_destroy(be, s);
        return e;
    }
    *state = s;
    return KS_OK;
}

ks_error csr_vector_apply(ks_backend *be, void *state, double alpha, const double *x,
                          double beta, double *y)
{
    const csr_vector_state *s = (const csr_vector_state *)state;
    if (s->nrows == 0)
        return KS_OK;
    cudaStream_t stream = (cudaStream_t)ks_cuda_stream(be);
    switch (s->tpr) {
    case 1: return launch<1>(s, stream, alpha, x, beta, y);
    case 2: return launch<2>(s, stream, alpha, x, beta, y);
    case 4: return launch<4>(s, stream, alpha, x, beta, y);
    case 8: return launch<8>(s, stream, alpha, x, beta, y);
    case 16: return launch<16>(s, stream, alpha, x, beta, y);
    case 32: return launch<32>(s, stream, alpha, x, beta, y);
    }
    return ks_seterr(KS_ERR_ARG, "csr_vector: threads_per_row %d is not a divisor of 32",
                     s->tpr);
}

} // namespace

extern "C" const ks_spmv_format_ops ks_format_csr_vector_cuda = {
    "csr_vector",
    KS_BACKEND_CUDA,
    "vector CSR: 1-32 lanes per row by mean row length, warp-shuffle reduction",
    csr_vector_layout_build,
    ks_csr_layout_apply,
    ks_csr_layout_bytes,
    ks_csr_layout_free,
    csr_vector_setup,
    csr_vector_apply,
    csr_vector_destroy,
    NULL, /* gs_sweep */
    ks_csr_layout_to_csr,
};
