/* The node's GPUs, for code that must pick one before a cuda backend is
 * created (mpi/: one GPU a rank; the tool) and name it in reports:
 * vec/gpu_cuda.cu with CUDA, vec/gpu_none.c without (no GPUs); the map from
 * a process's place on its node to a GPU, vec/gpu_map.c. Not installed. */
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

/* The map in force (gpu_map.c): map when given, else the environment
 * variable KS_GPU_MAP when set and not empty, else "local"; *what names
 * where it came from, for messages ("GPU map" or "KS_GPU_MAP"). */
const char *ks_gpu_map_resolve(const char *map, const char **what);
/* The device of the process that is local_rank-th on its node (0 for a
 * lone process) under map ("local", "none", "N" or "N,M,...": docs/mpi.md
 * "GPU mapping") on a node with ngpus GPUs: *device = the index, or -1 for
 * "none" (leave the current device alone). A malformed map or an index >=
 * ngpus: KS_ERR_ARG; no GPU but one asked for: KS_ERR_UNSUPPORTED; the
 * messages name `what` and the map. */
ks_error ks_gpu_map_pick(const char *map, const char *what, int local_rank, int ngpus,
                         int *device);

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
