/* The distributed AMG hierarchy (cpu or cuda backend; built on the host):
 * the level loop over the
 * distributed setup pieces (amg_dist.h, rap_dist.h), the transfer
 * operators as distributed ks_matrix objects, the coarsest level gathered
 * and solved by dense LU on every rank, and the smoothers' data. The cycle
 * is amg/cycle.c's, unchanged: it only applies ks_matrix and ks_vec
 * operations, which exchange halos and reduce over the ranks themselves.
 * Only mpi/ and the tests include this. Not installed. */
#ifndef KS_AMG_DIST_SETUP_H
#define KS_AMG_DIST_SETUP_H

#include "rap_dist.h"
#include "amg_dist_hierarchy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------- amg_dist_setup.c */
/* A coarse grid averaging fewer rows a rank than this (over the ranks that
 * hold its points) moves onto fewer ranks (amg_dist_setup.c says how);
 * the variable is the setting (tests change it; 0: never). */
#define KS_AMG_DIST_AGGLOMERATE_ROWS 64
extern int ks_amg_dist_agglomerate_rows;

/* ---------------------------------------------------- transpose_dist.c */
/* Collective. R = P^T: R's rows are this rank's coarse points (layout
 * coff, each rank's C count), its columns global fine ids ascending (P's
 * row layout foff); held in a ks_dist_prows whose "coarse" fields describe
 * R's columns (c_begin, nc: this rank's fine rows; nc_global: all fine
 * rows), so ks_dist_prows_split splits it by the fine layout. */
ks_error ks_dist_prows_transpose(const ks_dist_prows *P, const ks_gint *foff, const ks_gint *coff,
                                 ks_dist_prows *R);

/* -------------------------------------------------- amg_dist_coarse.c */
/* Collective. The coarsest level's rows gathered on every rank, factored
 * there by dense LU (the same matrix and code everywhere, hence the same
 * factors), and each rank's rows of the explicit inverse made a
 * distributed matrix (amg->coarse_inv) laid out like the level: the cycle's
 * coarse solve is then one distributed SpMV, whose halo brings every rank
 * the whole right-hand side. Nothing when the level is larger than the
 * dense limit (it is smoothed instead, as serially). */
ks_error ks_amg_dist_coarse_setup(ks_amg *amg);
/* Rows above which the coarsest level is smoothed, not factored (the
 * serial driver's rule: coarse_max_rows, or up to this many). */
#define KS_AMG_DIST_DENSE_LIMIT 2048

/* ------------------------------------------------ amg_dist_smoother.c */
/* Collective. Level l's smoother data on the distributed level matrix:
 * the diagonal checked over the ranks, l1 row sums with the ghost
 * entries, the Chebyshev interval from a distributed estimate. */
ks_error ks_amg_dist_smoother_setup(ks_amg *amg, int l);
/* Collective. Estimate of rho(D^-1 A) of a distributed matrix: Lanczos on
 * |D|^-1/2 A |D|^-1/2 (symmetric A, one-signed diagonal) as the serial
 * estimate does, with distributed vectors, SpMVs and rank-order sums. */
ks_error ks_dist_spectral_radius(ks_matrix *A, int iters, double *rho);

/* ----------------------------------------------------- symmetry_dist.c */
/* Collective. *sym = 1 when the distributed matrix A is symmetric to
 * rounding by the serial estimate's rule (every upper entry's partner
 * within KS_SPEC_SYM_TOL sqrt(|a_ii a_jj|), as many lower as upper
 * entries), the same answer on every rank. d: this rank's diagonal. */
ks_error ks_dist_symmetric(const ks_matrix *A, const double *d, int *sym);

#ifdef __cplusplus
}
#endif
#endif
