/* One GPU a rank for the MPI examples (rank_gpu.c): the backend each rank
 * solves on, its GPU chosen first on cuda, and a line a rank naming them. */
#ifndef KS_EXAMPLE_RANK_GPU_H
#define KS_EXAMPLE_RANK_GPU_H

#include <ksolve_mpi.h>

#include <stdio.h>

/* Collective. The backend `name` ("cpu" or "cuda") on every rank; on cuda
 * this rank's GPU is chosen first by map (--gpu-map; NULL: KS_GPU_MAP,
 * else "local": the k-th rank of a node on GPU k mod the node's GPUs). */
ks_error rank_backend_create(const ks_comm *c, const char *name, const char *map,
                             ks_backend **be);
/* Collective. On rank 0, to out, a line a rank "<prefix>rank R: host H, GPU
 * D (name, PCI bus id)"; nothing on a backend without GPUs (cpu). */
ks_error rank_print_gpus(const ks_comm *c, const ks_backend *be, FILE *out, const char *prefix);

#endif
