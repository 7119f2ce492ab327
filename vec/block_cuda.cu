/* Block-vector kernels of the cuda backend. The n*k entries are walked
 * flat (entry e is row e / k, column e % k), so consecutive threads touch
 * consecutive addresses whatever k is; the per-column scalars and column
 * lists travel by value as kernel arguments. The dot keeps one column per
 * thread: a block covers R rows (R a power of two, R*k <= 256 threads) per
 * step of its grid-stride loop, and sums each column over its R row slots
 * by a fixed tree, then over the blocks (ks_cuda_finish_sum): no atomics,
 * the grid a function of n and k only, so results are reproducible. */
#include "block_cuda.h"
#include "cuda_check.h"

#include <cuda_runtime.h>

#define KS_BCU_THREADS 256
#define KS_BCU_MAX_BLOCKS 65535

typedef struct bscalars {
    double a[KS_BLOCK_MAX_COLS], b[KS_BLOCK_MAX_COLS], c[KS_BLOCK_MAX_COLS];
} bscalars;

typedef struct bcols {
    int c[KS_BLOCK_MAX_COLS];
} bcols;

#define FLAT(e, total)                                                                        \
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < (total);         \
         e += (long long)gridDim.x * blockDim.x)

/* x NULL: no x term; b[j] == 0: y not read. */
static __global__ void k_baxpby(long long total, int k, bscalars s, const double *x, double *y)
{
    FLAT(e, total)
    {
        const int j = (int)(e % k);
        double v = s.b[j] == 0.0 ? 0.0 : s.b[j] * y[e];
        y[e] = x ? s.a[j] * x[e] + v : v;
    }
}

/* k_baxpby's expressions, y's (b = 1) then p's (a = 1): the same bits. */
static __global__ void k_baxpy_aypx(long long total, int k, bscalars s, double *p, double *y,
                                    const double *z)
{
    FLAT(e, total)
    {
        const int j = (int)(e % k);
        const double pv = p[e];
        double v = 1.0 * y[e];
        y[e] = s.a[j] * pv + v;
        v = s.b[j] == 0.0 ? 0.0 : s.b[j] * pv;
        p[e] = 1.0 * z[e] + v;
    }
}

static __global__ void k_baxpbypcz(long long total, int k, bscalars s, const double *x,
                                   const double *y, double *z)
{
    FLAT(e, total)
    {
        const int j = (int)(e % k);
        double v = s.a[j] * x[e] + s.b[j] * y[e];
        z[e] = s.c[j] == 0.0 ? v : v + s.c[j] * z[e];
    }
}

static __global__ void k_bpmul(long long total, int k, const double *__restrict__ w,
                               const double *x, double *y)
{
    FLAT(e, total) y[e] = w[e / k] * x[e];
}

static __global__ void k_bgather(long long total, int kx, const double *__restrict__ x, int m,
                                 bcols c, double *__restrict__ y)
{
    FLAT(e, total) y[e] = x[(e / m) * kx + c.c[e % m]];
}

static __global__ void k_bscatter(long long total, int m, const double *__restrict__ y, bcols c,
                                  int kx, double *__restrict__ x)
{
    FLAT(e, total) x[(e / m) * kx + c.c[e % m]] = y[e];
}

/* Columns j0 .. j0+kc of x.y (k columns in all): thread t < R*kc sums
 * column j0 + t % kc over rows t / kc, +R, ... of the block's share. */
static __global__ void k_bdot_part(ks_int n, int k, int j0, int kc, int R,
                                   const double *__restrict__ x, const double *__restrict__ y,
                                   double *part, int red_blocks)
{
    __shared__ double s[KS_BCU_THREADS];
    const int t = threadIdx.x;
    double acc = 0.0;
    if (t < R * kc) {
        const int j = j0 + t % kc;
        for (long long i = (long long)blockIdx.x * R + t / kc; i < n;
             i += (long long)gridDim.x * R)
            acc += x[i * k + j] * y[i * k + j];
    }
    s[t] = acc;
    __syncthreads();
    for (int h = R / 2; h >= 1; h /= 2) {
        if (t < h * kc)
            s[t] += s[t + h * kc];
        __syncthreads();
    }
    if (t < kc)
        part[(size_t)t * red_blocks + blockIdx.x] = s[t];
}

/* k_bdot_part's walk with y[:,j] += a[j] x[:,j] first: each entry is
 * visited once, updated as k_baxpby updates it (b = 1), and its new value
 * squared into the column's sum in k_bdot_part's order, so y and the sums
 * have the bits of ks_cuda_baxpby, then ks_cuda_bdot(y, y). */
static __global__ void k_baxpy_dot_part(ks_int n, int k, int j0, int kc, int R, bscalars s,
                                        const double *__restrict__ x, double *__restrict__ y,
                                        double *part, int red_blocks)
{
    __shared__ double sh[KS_BCU_THREADS];
    const int t = threadIdx.x;
    double acc = 0.0;
    if (t < R * kc) {
        const int j = j0 + t % kc;
        const double a = s.a[j];
        for (long long i = (long long)blockIdx.x * R + t / kc; i < n;
             i += (long long)gridDim.x * R) {
            const long long e = i * k + j;
            const double v = y[e];
            const double w = a * x[e] + v;
            y[e] = w;
            acc += w * w;
        }
    }
    sh[t] = acc;
    __syncthreads();
    for (int h = R / 2; h >= 1; h /= 2) {
        if (t < h * kc)
            sh[t] += sh[t + h * kc];
        __syncthreads();
    }
    if (t < kc)
        part[(size_t)t * red_blocks + blockIdx.x] = sh[t];
}

static unsigned flat_grid(long long total)
{
    long long b = (total + KS_BCU_THREADS - 1) / KS_BCU_THREADS;
    return (unsigned)(b < 1 ? 1 : b < KS_BCU_MAX_BLOCKS ? b : KS_BCU_MAX_BLOCKS);
}

static cudaStream_t stream_of(ks_backend *be) { return (cudaStream_t)ks_cuda_stream(be); }

#define BLAUNCH(kernel, total, ...)                                                           \
    do {                                                                                      \
        if ((total) <= 0)                                                                     \
            return KS_OK;                                                                     \
        kernel<<<flat_grid(total), KS_BCU_THREADS, 0, stream_of(be)>>>(total, __VA_ARGS__);   \
        KS_CUDA_LAUNCH_CHECK(#kernel);                                                        \
        return KS_OK;                                                                         \
    } while (0)

static bscalars scalars(int k, const double *a, const double *b, const double *c)
{
    bscalars s;
    for (int j = 0; j < k; j++) {
        s.a[j] = a ? a[j] : 0.0;
        s.b[j] = b ? b[j] : 0.0;
        s.c[j] = c ? c[j] : 0.0;
    }
    return s;
}

static bcols column_list(int m, const int *cols)
{
    bcols c;
    for (int q = 0; q < m; q++)
        c.c[q] = cols[q];
    return c;
}

extern "C" ks_error ks_cuda_baxpby(ks_backend *be, ks_int n, int k, const double *a,
                                   const double *x, const double *b, double *y)
{
    BLAUNCH(k_baxpby, (long long)n * k, k, scalars(k, a, b, NULL), x, y);
}

extern "C" ks_error ks_cuda_baxpy_aypx(ks_backend *be, ks_int n, int k, const double *a,
                                       double *p, double *y, const double *b, const double *z)
{
    BLAUNCH(k_baxpy_aypx, (long long)n * k, k, scalars(k, a, b, NULL), p, y, z);
}

extern "C" ks_error ks_cuda_baxpbypcz(ks_backend *be, ks_int n, int k, const double *a,
                                      const double *x, const double *b, const double *y,
                                      const double *c, double *z)
{
    BLAUNCH(k_baxpbypcz, (long long)n * k, k, scalars(k, a, b, c), x, y, z);
}

extern "C" ks_error ks_cuda_bpmul(ks_backend *be, ks_int n, int k, const double *w,
                                  const double *x, double *y)
{
    BLAUNCH(k_bpmul, (long long)n * k, k, w, x, y);
}

extern "C" ks_error ks_cuda_bgather(ks_backend *be, ks_int n, int kx, const double *x, int m,
                                    const int *cols, double *y)
{
    BLAUNCH(k_bgather, (long long)n * m, kx, x, m, column_list(m, cols), y);
}

extern "C" ks_error ks_cuda_bscatter(ks_backend *be, ks_int n, int m, const double *y,
                                     const int *cols, int kx, double *x)
{
    BLAUNCH(k_bscatter, (long long)n * m, m, y, column_list(m, cols), kx, x);
}

/* The grid of ks_cuda_bdot's chunk of kc columns: R rows a block step. */
static int bdot_rows(int kc)
{
    int R = 1;
    while (2 * R * kc <= KS_BCU_THREADS)
        R *= 2;
    return R;
}

static int bdot_grid(ks_int n, int R)
{
    const int rb = ks_cuda_red_blocks();
    long long g = ((long long)n + R - 1) / R;
    return (int)(g < 1 ? 1 : g < rb ? g : rb);
}

/* As ks_cuda_bdot, chunk by chunk: each chunk's columns updated and
 * summed in one kernel. */
extern "C" ks_error ks_cuda_baxpy_dot(ks_backend *be, ks_int n, int k, const double *a,
                                      const double *x, double *y, double *r)
{
    const bscalars s = scalars(k, a, NULL, NULL);
    for (int j0 = 0; j0 < k; j0 += KS_VEC_MULTI_MAX) {
        const int kc = k - j0 < KS_VEC_MULTI_MAX ? k - j0 : KS_VEC_MULTI_MAX;
        const int R = bdot_rows(kc), grid = bdot_grid(n, R);
        k_baxpy_dot_part<<<grid, KS_BCU_THREADS, 0, stream_of(be)>>>(
            n, k, j0, kc, R, s, x, y, ks_cuda_partials(be), ks_cuda_red_blocks());
        KS_CUDA_LAUNCH_CHECK("k_baxpy_dot_part");
        KS_TRY(ks_cuda_finish_sum(be, grid, kc, r + j0));
    }
    return KS_OK;
}

/* Column c0 + blockIdx.x of part (nb partials a column): thread t adds
 * partials t, t + blockDim.x, ... in order into partial array blockIdx.x
 * of the reduction scratch, which ks_cuda_finish_sum then sums. */
static __global__ void k_fold_parts(long long nb, int c0, const double *__restrict__ part,
                                    double *out, int stride)
{
    const long long base = (long long)(c0 + blockIdx.x) * nb;
    double s = 0.0;
    for (long long b = threadIdx.x; b < nb; b += blockDim.x)
        s += part[base + b];
    out[(size_t)blockIdx.x * stride + threadIdx.x] = s;
}

extern "C" ks_error ks_cuda_finish_parts(ks_backend *be, const double *part, long long nb,
                                         int k, double *r)
{
    const int rb = ks_cuda_red_blocks();
    for (int j0 = 0; j0 < k; j0 += KS_VEC_MULTI_MAX) {
        const int kc = k - j0 < KS_VEC_MULTI_MAX ? k - j0 : KS_VEC_MULTI_MAX;
        k_fold_parts<<<kc, rb, 0, stream_of(be)>>>(nb, j0, part, ks_cuda_partials(be), rb);
        KS_CUDA_LAUNCH_CHECK("k_fold_parts");
        KS_TRY(ks_cuda_finish_sum(be, nb < rb ? (int)nb : rb, kc, r + j0));
    }
    return KS_OK;
}

/* In chunks of at most KS_VEC_MULTI_MAX columns (the partials scratch). */
extern "C" ks_error ks_cuda_bdot(ks_backend *be, ks_int n, int k, const double *x,
                                 const double *y, double *r)
{
    const int rb = ks_cuda_red_blocks();
    for (int j0 = 0; j0 < k; j0 += KS_VEC_MULTI_MAX) {
        const int kc = k - j0 < KS_VEC_MULTI_MAX ? k - j0 : KS_VEC_MULTI_MAX;
        const int R = bdot_rows(kc), grid = bdot_grid(n, R);
        k_bdot_part<<<grid, KS_BCU_THREADS, 0, stream_of(be)>>>(n, k, j0, kc, R, x, y,
                                                                ks_cuda_partials(be), rb);
        KS_CUDA_LAUNCH_CHECK("k_bdot_part");
        KS_TRY(ks_cuda_finish_sum(be, grid, kc, r + j0));
    }
    return KS_OK;
}
