/* Turning CUDA / cuSPARSE return codes into ks_seterr messages that
 * name the failing call, for .cu files. Each macro returns the ks_error from
 * the enclosing function on failure. Not installed. */
#ifndef KS_CUDA_CHECK_H
#define KS_CUDA_CHECK_H

#include "../core/ks_internal.h"

#include <cuda_runtime.h>
#include <cusparse.h>

/* A failing runtime call also becomes the "last error" that cudaGetLastError
 * reports; it is consumed here so a later launch check does not blame the
 * next kernel for it. */
#define KS_CUDA_CHECK(call)                                                                   \
    do {                                                                                      \
        cudaError_t ks_ce_ = (call);                                                          \
        if (ks_ce_ != cudaSuccess) {                                                          \
            (void)cudaGetLastError();                                                         \
            return ks_seterr(KS_ERR_DEVICE, "%s failed: %s (%s:%d)", #call,                   \
                             cudaGetErrorString(ks_ce_), __FILE__, __LINE__);                 \
        }                                                                                     \
    } while (0)

/* After a <<<...>>> launch: configuration errors show up here, faults in the
 * kernel itself at the next synchronising call. */
#define KS_CUDA_LAUNCH_CHECK(kernel_name)                                                     \
    do {                                                                                      \
        cudaError_t ks_ce_ = cudaGetLastError();                                              \
        if (ks_ce_ != cudaSuccess)                                                            \
            return ks_seterr(KS_ERR_DEVICE, "launch of kernel %s failed: %s (%s:%d)",         \
                             kernel_name, cudaGetErrorString(ks_ce_), __FILE__, __LINE__);    \
    } while (0)

#define KS_CUSPARSE_CHECK(call)                                                               \
    do {                                                                                      \
        cusparseStatus_t ks_cs_ = (call);                                                     \
        if (ks_cs_ != CUSPARSE_STATUS_SUCCESS)                                                \
            return ks_seterr(KS_ERR_DEVICE, "%s failed: %s (%s:%d)", #call,                   \
                             cusparseGetErrorString(ks_cs_), __FILE__, __LINE__);             \
    } while (0)

#endif
