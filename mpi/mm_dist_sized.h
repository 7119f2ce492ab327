/* ks_mm_read_dist for a caller that knows what else it will allocate per
 * row (the ksolve tool under mpirun: its vectors), as matrices/mmio_sized.h
 * is for the one-process reader. No mpi.h: the tool includes it. Not
 * installed. */
#ifndef KS_MM_DIST_SIZED_H
#define KS_MM_DIST_SIZED_H

#include "ksolve_mpi.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ks_mm_read_dist, whose memory check (each rank's share, before anything
 * of that size is allocated) also counts extra_row_bytes for each of the
 * rank's rows, described as `extra` in the message ("the solve's
 * vectors"). */
ks_error ks_mm_read_dist_sized(const ks_comm *comm, const char *path, ks_int nlocal,
                               ks_dist_csr *A, ks_mm_info *info, uint64_t extra_row_bytes,
                               const char *extra);

#ifdef __cplusplus
}
#endif
#endif
