/* Entry point of the distributed AMG setup for the AMG preconditioner
 * (solver/precond_amg.c), which calls it for a distributed matrix in a
 * build with MPI. Needs no mpi.h. Not installed. */
#ifndef KS_AMG_DIST_HIERARCHY_H
#define KS_AMG_DIST_HIERARCHY_H

#include "../amg/hierarchy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over A's ranks. The hierarchy of the distributed matrix A on
 * its backend (cpu or cuda; the setup's pieces run on host copies of the
 * levels, what they build is created on the backend): each level's A, P
 * and R distributed ks_matrix objects,
 * the coarsest level solved by dense LU on every rank. Options that cannot
 * run distributed yet fail with KS_ERR_UNSUPPORTED naming the option; every
 * failure is the same on every rank. ks_amg_destroy frees the result. */
ks_error ks_amg_setup_dist(ks_backend *be, const ks_amg_params *prm, ks_matrix *A, ks_amg **out);
/* Collective over A's ranks. A's values changed, not its pattern (the
 * matrix of the last setup, ks_matrix_set_values): the hierarchy keeps
 * its splittings, patterns and halo plans and recomputes values, as
 * ks_amg_resetup (amg/resetup.c) does on one process; it rebuilds
 * (resetup_fell_back = 1) where that cannot be done
 * (mpi/amg_dist_resetup.c says when). On failure the hierarchy is left
 * empty, as serially. */
ks_error ks_amg_resetup_dist(ks_amg *amg, ks_matrix *A);
/* A distributed matrix on a communicator of one rank is its local block
 * (no ghost columns, the same rows): that block, whose one-process AMG
 * setup (amg/hierarchy.c, on the device where it lives) builds the
 * hierarchy the distributed setup would, PMIS's splitting and the
 * operators alike, and more options. NULL for a matrix over several
 * ranks, or when KS_AMG_ONE_RANK=distributed in the environment asks for
 * the distributed setup anyway (tests, comparisons). */
ks_matrix *ks_amg_dist_one_rank_block(ks_matrix *A);

#ifdef __cplusplus
}
#endif
#endif
