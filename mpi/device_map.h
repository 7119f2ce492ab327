/* One GPU a rank (mpi/device_map.c): the mapping from a rank's place on its
 * node to a device, apart from MPI and CUDA so tests can fake the GPU
 * count. Not installed. */
#ifndef KS_MPI_DEVICE_MAP_H
#define KS_MPI_DEVICE_MAP_H

#include "mpi_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device of the rank that is local_rank-th on its node, under map
 * ("local", "none", "N" or "N,M,..."; docs/mpi.md "GPU mapping") on a node
 * with ngpus GPUs: *device = the index, or -1 for "none" (leave the current
 * device alone). A malformed map or an index >= ngpus: KS_ERR_ARG; no GPU
 * but one asked for: KS_ERR_UNSUPPORTED; messages name `what` (the setting
 * the map came from) and the map. */
ks_error ks_device_map_pick(const char *map, const char *what, int local_rank, int ngpus,
                            int *device);
/* Collective. This rank's place among the ranks of c on its node
 * (MPI_COMM_TYPE_SHARED) and how many there are. */
ks_error ks_comm_local_rank(const ks_comm *c, int *local_rank, int *local_size);

#ifdef __cplusplus
}
#endif
#endif
