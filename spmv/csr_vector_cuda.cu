/* "csr_vector" on the cuda backend: T consecutive lanes of a warp share one
 * row (T in 1..32, a power of two), stride through its entries, then combine
 * their partial sums with a warp-shuffle tree of width T. T follows the mean
 * row length (about four entries a lane, see choose_threads_per_row), so
 * short rows do not leave most of a warp idle and long rows still get
 * coalesced loads. The device copy of the CSR
 * (ks_csr_device) is shared with the other CSR-family formats. */
#include "csr_family.h"
#include "../vec/cuda_check.h"

#include <climits>
#include <cstdio>
#include <cstring>

namespace {

const int kBlock = 256; /* threads per block: a multiple of 32, so no warp is partial */

struct csr_vector_state {
    ks_csr_device A; /* A.val NULL when the values are float32 (valf) */
    float *valf;
    int tpr;
};

/* Threads the device runs at once, about: 132 SMs x 2048 on an H100 or
 * H200. A launch of fewer is latency-bound rather than bandwidth-bound. */
const double kFullDevice = 262144.0;

/* Lanes per row: the smallest power of two >= mean/4, so a lane has about
 * kUnroll = 4 entries of a mean-length row and loads them all before using
 * any (one round trip to memory for indices and values, one for x), and a
 * warp covers 32/T rows. That keeps every lane busy and many rows in
 * flight, which is what bandwidth-bound sizes need. When even then the
 * launch would not fill the device (a small matrix is latency-bound), T
 * doubles once: shorter chains per lane, more threads.
 * Measured on an H200 with bench_spmv (median apply, speed vs cuSPARSE
 * ALG1): poisson3d_27 256^3 (26.8 a row) T=8: 1.39x, where the previous
 * rule (mean/2, hypre's 4/8/16/32 for means up to 8/16/32/64) gave T=16:
 * 0.97x; poisson3d_7 256^3 (7.0 a row) T=2: 1.55x, previous T=4: 1.19x;
 * cage11, poisson3Da and cavity26 ran fastest with the doubled T. */
int choose_threads_per_row(const ks_csr *A)
{
    double mean = A->nrows > 0 ? (double)A->nnz / (double)A->nrows : 0.0;
    int t = 1;
    while (t < 32 && 4.0 * t < mean)
        t *= 2;
    if (t < 32 && (double)A->nrows * t < kFullDevice)
        t *= 2;
    return t;
}

/* Entries a lane loads before it uses any (see above). The sums keep the
 * lane's entry order, so results equal those of the plain strided loop. */
const int kUnroll = 4;

/* Row `row`'s sum A(row,:) x over the T lanes of its group; the full sum
 * is in lane 0. Every lane of the warp must call it (the shuffles use the
 * full mask), rows past the end included. */
template <int T, typename V>
__device__ __forceinline__ double row_sum(unsigned row, int lane, ks_int nrows,
                                          const ks_int *__restrict__ rowptr,
                                          const ks_int *__restrict__ colind,
                                          const V *__restrict__ val,
                                          const double *__restrict__ x)
{
    double sum = 0.0;
    if (row < (unsigned)nrows) {
        const ks_int end = __ldg(rowptr + row + 1);
        for (ks_int j = __ldg(rowptr + row) + lane; j < end; j += kUnroll * T) {
            /* All loads unconditional (indices clamped to the row's last
             * entry, already being read) and every x load issued before any
             * product: a guarded load per entry would make each x load wait
             * for the previous entry's multiply-add. */
            ks_int c[kUnroll];
            double v[kUnroll], xv[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; u++) {
                const ks_int k = min(j + u * T, end - 1);
                c[u] = __ldg(colind + k);
                v[u] = (double)__ldg(val + k); /* float32 values: widened */
            }
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                xv[u] = __ldg(x + c[u]);
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                if (j + u * T < end)
                    sum += v[u] * xv[u];
        }
    }
    /* Width T keeps each row's group separate. */
#pragma unroll
    for (int off = T / 2; off > 0; off >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, off, T);
    return sum;
}

/* 32-bit row math: the launch has nrows * T / kBlock blocks, so this cannot
 * overflow while nrows fits ks_int. */
template <int T>
__device__ __forceinline__ unsigned my_row()
{
    return blockIdx.x * (unsigned)(kBlock / T) + threadIdx.x / T;
}

template <int T, typename V>
__global__ void __launch_bounds__(kBlock)
    csr_vector_kernel(ks_int nrows, const ks_int *__restrict__ rowptr,
                      const ks_int *__restrict__ colind, const V *__restrict__ val,
                      const double *__restrict__ x, double alpha, double beta,
                      double *__restrict__ y)
{
    const unsigned row = my_row<T>();
    const int lane = (int)(threadIdx.x & (T - 1));
    const double sum = row_sum<T, V>(row, lane, nrows, rowptr, colind, val, x);
    if (lane == 0 && row < (unsigned)nrows) {
        /* beta == 0 must not read y: it may hold garbage or NaN. */
        y[row] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[row];
    }
}

/* The fused residual / smoother pass (fused.h). */
template <int T, typename V>
__global__ void __launch_bounds__(kBlock)
    csr_vector_fused_kernel(ks_int nrows, const ks_int *__restrict__ rowptr,
                            const ks_int *__restrict__ colind, const V *__restrict__ val,
                            const ks_fused_step f)
{
    const unsigned row = my_row<T>();
    const int lane = (int)(threadIdx.x & (T - 1));
    const double sum = row_sum<T, V>(row, lane, nrows, rowptr, colind, val, f.x);
    if (lane == 0 && row < (unsigned)nrows)
        ks_fused_row(&f, (ks_int)row, sum);
}

template <int T>
unsigned grid_of(const csr_vector_state *s)
{
    const long long threads = (long long)s->A.nrows * T;
    return (unsigned)((threads + kBlock - 1) / kBlock);
}

/* apply (f == NULL) or the fused pass, values of type V */
template <int T, typename V>
ks_error launch_v(const csr_vector_state *s, const V *val, cudaStream_t stream, double alpha,
                  const double *x, double beta, double *y, const ks_fused_step *f)
{
    if (f) {
        csr_vector_fused_kernel<T, V><<<grid_of<T>(s), kBlock, 0, stream>>>(
            s->A.nrows, s->A.rowptr, s->A.colind, val, *f);
        KS_CUDA_LAUNCH_CHECK("csr_vector_fused_kernel");
        return KS_OK;
    }
    csr_vector_kernel<T, V><<<grid_of<T>(s), kBlock, 0, stream>>>(
        s->A.nrows, s->A.rowptr, s->A.colind, val, x, alpha, beta, y);
    KS_CUDA_LAUNCH_CHECK("csr_vector_kernel");
    return KS_OK;
}

template <int T>
ks_error launch(const csr_vector_state *s, cudaStream_t stream, double alpha, const double *x,
                double beta, double *y, const ks_fused_step *f)
{
    if (s->valf)
        return launch_v<T, float>(s, s->valf, stream, alpha, x, beta, y, f);
    return launch_v<T, double>(s, s->A.val, stream, alpha, x, beta, y, f);
}

ks_error dispatch(ks_backend *be, const csr_vector_state *s, double alpha, const double *x,
                  double beta, double *y, const ks_fused_step *f)
{
    if (s->A.nrows == 0)
        return KS_OK;
    cudaStream_t stream = (cudaStream_t)ks_cuda_stream(be);
    switch (s->tpr) {
    case 1: return launch<1>(s, stream, alpha, x, beta, y, f);
    case 2: return launch<2>(s, stream, alpha, x, beta, y, f);
    case 4: return launch<4>(s, stream, alpha, x, beta, y, f);
    case 8: return launch<8>(s, stream, alpha, x, beta, y, f);
    case 16: return launch<16>(s, stream, alpha, x, beta, y, f);
    case 32: return launch<32>(s, stream, alpha, x, beta, y, f);
    }
    return ks_seterr(KS_ERR_ARG, "csr_vector: threads_per_row %d is not a divisor of 32",
                     s->tpr);
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
    /* The lane loop looks up to kUnroll * 32 entries past the row end in
     * 32-bit ints. */
    if (A && A->nnz > INT_MAX - 2 * kUnroll * 32)
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
    ks_csr_device_free(be, &s->A);
    if (s->valf)
        be->ops->free(be, s->valf);
    free(s);
}

ks_error csr_vector_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_csr_layout *L = (const ks_csr_layout *)layout;
    *state = NULL;
    csr_vector_state *s = (csr_vector_state *)ks_calloc(1, sizeof *s, "csr_vector state");
    if (!s)
        return KS_ERR_MEMORY;
    s->tpr = L->threads_per_row;
    ks_csr H = L->A;
    if (L->valf)
        H.val = NULL; /* only the float32 copy goes to the device */
    ks_error e = ks_csr_device_upload(be, &H, "csr_vector", &s->A);
    if (e == KS_OK && L->valf && H.nnz > 0)
        e = ks_be_upload_new(be, L->valf, sizeof(float) * (size_t)H.nnz, (void **)&s->valf,
                             "csr_vector float32 values");
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
    return dispatch(be, (const csr_vector_state *)state, alpha, x, beta, y, NULL);
}

ks_error csr_vector_fused_step(ks_backend *be, void *state, const ks_fused_step *f)
{
    return dispatch(be, (const csr_vector_state *)state, 0.0, NULL, 0.0, NULL, f);
}

ks_error upload(ks_backend *be, const void *host, size_t bytes, void **dev, const char *what,
                const char *part)
{
    *dev = NULL;
    if (bytes == 0)
        return KS_OK; /* an empty matrix has no entries to read */
    char label[96];
    snprintf(label, sizeof label, "%s %s", what, part);
    return ks_be_upload_new(be, host, bytes, dev, label);
}

} // namespace

extern "C" void ks_csr_device_free(ks_backend *be, ks_csr_device *d)
{
    void *ptrs[3] = {d->rowptr, d->colind, d->val};
    for (int i = 0; i < 3; i++)
        if (ptrs[i])
            be->ops->free(be, ptrs[i]);
    d->rowptr = d->colind = NULL;
    d->val = NULL;
}

extern "C" ks_error ks_csr_device_upload(ks_backend *be, const ks_csr *A, const char *what,
                                         ks_csr_device *d)
{
    memset(d, 0, sizeof *d);
    d->nrows = A->nrows;
    d->ncols = A->ncols;
    d->nnz = A->nnz;
    ks_error e = upload(be, A->rowptr, sizeof(ks_int) * ((size_t)A->nrows + 1),
                        (void **)&d->rowptr, what, "row pointers");
    if (e == KS_OK)
        e = upload(be, A->colind, sizeof(ks_int) * (size_t)A->nnz, (void **)&d->colind, what,
                   "column indices");
    if (e == KS_OK && A->val) /* NULL: the format uploads its own values */
        e = upload(be, A->val, sizeof(double) * (size_t)A->nnz, (void **)&d->val, what,
                   "values");
    if (e != KS_OK)
        ks_csr_device_free(be, d);
    return e;
}

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
    csr_vector_fused_step,
    1, /* float_values */
};
