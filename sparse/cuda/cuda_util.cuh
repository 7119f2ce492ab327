/* Device helpers shared by the cuda setup kernels (sparse/cuda/,
 * amg/cuda/): launch sizes, the backend's stream, and an exclusive scan of
 * row counts into row pointers (the step between every symbolic and
 * numeric pass). No CUB or Thrust: the project keeps CUDA C-style. Not
 * installed. */
#ifndef KS_CUDA_UTIL_CUH
#define KS_CUDA_UTIL_CUH

#include "../../vec/backend.h"
#include "../../vec/cuda_check.h"

#include <cuda_runtime.h>
#include <stdint.h>

#define KS_CU_BLOCK 256

static inline cudaStream_t ks_cu_stream(ks_backend *be)
{
    return (cudaStream_t)ks_cuda_stream(be);
}

/* Blocks for n threads of KS_CU_BLOCK (at least 1; grid-stride loops
 * cover the rest beyond the cap). */
static inline unsigned ks_cu_blocks(long long n)
{
    long long b = (n + KS_CU_BLOCK - 1) / KS_CU_BLOCK;
    if (b < 1)
        b = 1;
    if (b > 1048576)
        b = 1048576;
    return (unsigned)b;
}

#define KS_CU_FOR(i, n)                                                                      \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (long long)(n); \
         i += (long long)gridDim.x * blockDim.x)

#ifdef __cplusplus
extern "C" {
#endif

/* out[0] = 0, out[i] = in[0] + ... + in[i-1] for i <= n (out has n + 1
 * entries; in and out may be the same array, in then having n + 1 slots).
 * *total (host, may be NULL) = out[n]. A total beyond ks_int's range is
 * KS_ERR_SIZE naming `what`. Synchronises when total is asked for. */
ks_error ks_cu_scan(ks_backend *be, const ks_int *in, ks_int n, ks_int *out, ks_int *total,
                    const char *what);
/* *count = number of i < n with x[i] == value (host result). */
ks_error ks_cu_count_eq(ks_backend *be, const int *x, ks_int n, int value, ks_int *count);

#ifdef __cplusplus
}
#endif
#endif
