/* The node's GPUs, for code that must pick one before a cuda backend is
 * created (mpi/: one GPU a rank) and name it in reports. vec/gpu_cuda.cu
 * with CUDA; vec/gpu_none.c without (no GPUs). Not installed. */
#ifndef KS_GPU_H
#define KS_GPU_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GPUs this process sees (CUDA_VISIBLE_DEVICES applies); 0 without a
 * driver or without CUDA in this build (no error). */
int ks_gpu_count(void);
/* Makes device current on the calling thread: a cuda backend created on it
 * afterwards runs there. KS_ERR_UNSUPPORTED without CUDA. */
ks_error ks_gpu_use(int device);

typedef struct ks_gpu_desc {
    int device;             /* -1: the backend has no GPU */
    char name[96];          /* "NVIDIA H100 80GB HBM3" */
    char pci_bus_id[32];    /* "0000:1b:00.0" */
} ks_gpu_desc;
/* The GPU be runs on; device -1 (and KS_OK) for a backend without one. */
ks_error ks_backend_gpu(const ks_backend *be, ks_gpu_desc *d);

#ifdef __cplusplus
}
#endif
#endif
