/* Copies between device memory and pageable host memory through a pair of
 * page-locked buffers (cuda.cu's upload and download of large arrays). A
 * plain cudaMemcpy from or to pageable memory goes through the driver's
 * own staging, one host thread copying and taking the page faults of a
 * fresh destination: 7-point 256^3 on an H200 host, the distributed
 * setup's product downloads ran at 2-4 GB/s. Here the device copies one
 * chunk into (or out of) one buffer while the OpenMP threads copy the
 * other chunk (ks_memcpy_par), so the host side runs at memory speed and
 * overlaps the bus. Not installed. */
#ifndef KS_CUDA_PINNED_H
#define KS_CUDA_PINNED_H

#include "../core/ks_internal.h"

#include <cuda_runtime.h>

#include <stddef.h>

/* Copies of this many bytes and more take the pinned pair (smaller ones a
 * plain cudaMemcpyAsync): below it the pair's set-up and the thread team
 * cost more than they save. */
#define KS_CUDA_PINNED_MIN ((size_t)8 << 20)
/* Bytes of each of the two buffers: the chunk one step moves. */
#define KS_CUDA_PINNED_CHUNK ((size_t)16 << 20)

typedef struct ks_cuda_pinned {
    void *buf[2];
    cudaEvent_t done[2];
    int state; /* 0: not made yet; 1: ready; -1: unavailable (plain copies) */
} ks_cuda_pinned;

/* dst = src (bytes), kind cudaMemcpyHostToDevice or DeviceToHost, queued
 * on `stream` after its earlier work; returns when the copy is complete
 * and the host buffer may be reused. The pair is made on the first large
 * copy; if it cannot be (page-locked memory refused), or
 * KS_CUDA_PINNED_COPY=0 is set, every copy is a plain one. */
ks_error ks_cuda_pinned_copy(ks_cuda_pinned *p, cudaStream_t stream, void *dst, const void *src,
                             size_t bytes, cudaMemcpyKind kind);

void ks_cuda_pinned_free(ks_cuda_pinned *p);

#endif
