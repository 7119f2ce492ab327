/* The cuda backend's block smoothing kernel (block_smooth.h): one thread
 * an entry of the n*k, the weight of its row read once per entry. */
#include "block_smooth.h"
#include "cuda_check.h"
#include "smooth_value.h"

#include <cuda_runtime.h>

#define KS_BSM_THREADS 256
#define KS_BSM_MAX_BLOCKS 65535

static __global__ void k_bsmooth(long long total, int k, double a, double c,
                                 const double *__restrict__ w, const double *__restrict__ b,
                                 const double *__restrict__ t, const double *xin,
                                 const double *xprev, double *xout)
{
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const double r = t ? b[e] - t[e] : b[e];
        xout[e] = ks_smooth_value_v(a, c, w[e / k], xin ? xin[e] : 0.0,
                                    xprev && a != 0.0 ? xprev[e] : 0.0, r);
    }
}

extern "C" ks_error ks_cuda_bsmooth(ks_backend *be, ks_int n, int k, double a, double c,
                                    const double *w, const double *b, const double *t,
                                    const double *xin, const double *xprev, double *xout)
{
    const long long total = (long long)n * k;
    if (total <= 0)
        return KS_OK;
    long long blocks = (total + KS_BSM_THREADS - 1) / KS_BSM_THREADS;
    const unsigned grid = (unsigned)(blocks < KS_BSM_MAX_BLOCKS ? blocks : KS_BSM_MAX_BLOCKS);
    k_bsmooth<<<grid, KS_BSM_THREADS, 0, (cudaStream_t)ks_cuda_stream(be)>>>(
        total, k, a, c, w, b, t, xin, xprev, xout);
    KS_CUDA_LAUNCH_CHECK("k_bsmooth");
    return KS_OK;
}
