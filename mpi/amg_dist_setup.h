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
 * hold its points) moves onto fewer ranks (amg_dist_setup.c says how).
 * The variable is the setting (tests change it; 0: never); -1, its
 * default, takes the backend's: KS_AMG_DIST_AGGLOMERATE_ROWS on one with
 * host memory, _DEVICE on a device, or KS_AMG_DIST_AGGLOMERATE from the
 * environment (measurements). */
#define KS_AMG_DIST_AGGLOMERATE_ROWS 64
#define KS_AMG_DIST_AGGLOMERATE_ROWS_DEVICE 8192
extern int ks_amg_dist_agglomerate_rows;

/* Collective. Every level below level 0 built on amg's level 0 (which
 * ks_amg_start set), then the coarse inverse, work vectors, smoother data,
 * global sizes and float32 operators: the whole setup after its checks. */
ks_error ks_amg_dist_build(ks_amg *amg);
/* Collective. Every row of level l has a nonzero finite diagonal, on
 * every rank; the message names the global row. */
ks_error ks_amg_dist_check_diagonal(ks_amg *amg, int l);
/* On a backend without host memory, free the host copies the setup's
 * pieces read (but level 0's: the caller's matrix's). */
void ks_amg_dist_drop_host_copies(ks_amg *amg);
/* Collective. hierarchy_precision FLOAT: amg->coarse_inv (just made with
 * float64 values) replaced by its float32 copy; nothing otherwise. */
ks_error ks_amg_dist_float_coarse_inv(ks_amg *amg);

/* ---------------------------------------------------- amg_dist_keep.c */
/* What a values-only re-setup (amg_dist_resetup.c) reuses of a level: for
 * classical coarsening the strength graph, splitting and coarse ids it was
 * made from (an aggressive level's first stage) and the second stage's
 * splitting cf2; for smoothed aggregation the tentative prolongator P0
 * (the aggregates); and the final P (truncated, in the coarse layout after
 * agglomeration: its pattern is kept, its values rewritten). S borrows
 * the level matrix's layout and plan, which stay as long as the level. */
typedef struct ks_dist_level_keep {
    ks_dist_strength S;
    int *cf;
    ks_dist_coarse C;
    int aggressive;  /* two stages (aggressive_dist.c): cf2 splits A1's rows */
    int *cf2;
    ks_dist_prows P0; /* aggregation: the tentative prolongator */
    ks_dist_prows P;
    ks_gint *coff;   /* P's coarse layout (size + 1) */
    ks_dist_prows R;      /* R = P^T and its transpose plan, */
    ks_dist_transpose_plan tr;
    ks_dist_rap_plan rap; /* the product's plan: made by the first re-setup, then values only */
    ks_dist_ext_rows ext; /* extended+i's fetched rows and their plan (likewise) */
    int ext_made;
} ks_dist_level_keep;
/* Collective (agreed). Start keeping (amg->dist_keep): every
 * configuration has a values-only re-setup. */
ks_error ks_amg_dist_keep_start(ks_amg *amg);
/* Level l's matrix was remade with the same rows, layout and ghost
 * columns (FLOAT's recast): the kept strength graph borrows the new one's
 * layout, ghost ids and halo plan. */
void ks_amg_dist_keep_rebind(ks_amg *amg, int l);
/* Level l's keep, NULL when nothing is kept. */
ks_dist_level_keep *ks_amg_dist_keep_level(ks_amg *amg, int l);

/* ------------------------------------------------ amg_dist_classical.c */
/* As the serial driver: a coarse grid of nc points from n stalls (none,
 * or more than 90% kept). */
int ks_amg_dist_stalls(ks_gint nc, ks_gint n);
/* The trace's CPU clock starts (a setup begins). */
void ks_amg_dist_trace_start(void);
/* Time since *t0 into phase ph (and the trace, with the rank and its CPU
 * time of the step), *t0 moved on. */
void ks_amg_dist_phase(ks_amg *amg, int l, ks_amg_phase ph, const char *what, double *t0);
/* The levels' SpMV format (prm.level_format, or "auto"). */
const char *ks_amg_dist_level_format(const ks_amg *amg);
/* Collective. Rows with global columns (P's or R's) as a distributed
 * matrix with rows laid out by roff and columns by coff (copied). */
ks_error ks_amg_dist_transfer_matrix(ks_amg *amg, const ks_dist_prows *X, const ks_gint *roff,
                                     const ks_gint *coff, ks_matrix **M);
/* Collective. R = P^T as a distributed matrix (rows by coff, columns by
 * foff) from P's matrix Pm on a device: its local block the transpose of
 * Pm's there, its ghost block the entries of other ranks' rows of P
 * (ks_dist_prows_transpose_others); the blocks of ks_dist_prows_transpose's
 * R, without R's rows on the host. */
ks_error ks_amg_dist_transpose_matrix(ks_amg *amg, const ks_dist_prows *P, const ks_gint *foff,
                                      const ks_gint *coff, const ks_matrix *Pm, ks_matrix **Rm);
/* Whether the parameters truncate interpolation. */
int ks_amg_dist_truncating(const ks_amg_params *p);
/* Collective. Classical coarsening of A (level l's phases and trace):
 * strength, PMIS or HMIS (prm.selector) with `seed`, the coarse ids; then,
 * unless the coarsening stalls (*stalled = 1: no coarse point, or more
 * than 90% of A's rows kept; P left empty), interpolation `kind` (D1 or
 * extended+i), truncated by the parameters, into P.
 * keep (may be NULL) takes the strength, splitting and coarse ids when P
 * is made (keep->P and coff are the caller's). */
ks_error ks_amg_dist_classical_p_keep(ks_amg *amg, int l, const ks_matrix *A,
                                      unsigned long long seed, ks_amg_interp kind, int *stalled,
                                      ks_dist_prows *P, ks_dist_level_keep *keep);

/* ---------------------------------------------------- aggregate_dist.c */
/* Collective. Smoothed aggregation's P for level l of A (algorithm
 * AGGREGATION): uncoupled aggregates (each rank's points aggregated by the
 * serial code on its local block's symmetric strength, theta halved per
 * level, the serial seed), the tentative prolongator smoothed by damped
 * Jacobi over ranks. *stalled as ks_amg_dist_classical_p_keep. */
ks_error ks_amg_dist_aggregation_p(ks_amg *amg, int l, const ks_matrix *A, int *stalled,
                                   ks_dist_prows *P, ks_dist_level_keep *keep);
/* Collective. keep (may be NULL) takes P0 when P is made. The smoothing
 * alone: P = P0 - omega D^-1 A P0 with omega = 4 / (3 rho(D^-1 A)) of
 * A's values now (what a re-setup recomputes from the kept P0). */
ks_error ks_amg_dist_smoothed_p(ks_amg *amg, int l, const ks_matrix *A, const ks_dist_prows *P0,
                                ks_dist_prows *P);

/* --------------------------------------------------- aggressive_dist.c */
/* Collective. Aggressive coarsening of level l (l < aggressive_levels),
 * amg/hierarchy.c's build_aggressive over ranks: P holds the first stage's
 * truncated interpolation P1 of A; the second stage splits A1 = P1^T A P1
 * (strength, PMIS or HMIS with the serial second-stage seed, D1 or
 * extended+i by aggressive_interpolator, truncated) and P becomes P1 P2,
 * truncated. When the second stage stalls P stays P1, as serially; else
 * keep (may be NULL) takes the second stage's splitting (keep->cf2,
 * keep->aggressive = 1). */
ks_error ks_amg_dist_aggressive(ks_amg *amg, int l, const ks_matrix *A, ks_dist_prows *P,
                                ks_dist_level_keep *keep);
/* Collective. A re-setup's aggressive interpolation of A's values now,
 * amg/resetup.c's reinterp_aggressive over ranks: P1 the first stage
 * (truncated afresh by the caller), A1 = P1^T A P1, its strength anew, the
 * kept splitting cf2 (A1's rows of this rank) with its coarse ids, P2 by
 * aggressive_interpolator, truncated; P = P1 P2, untruncated (the caller
 * projects it onto the kept pattern). */
ks_error ks_amg_dist_aggressive_values(ks_amg *amg, int l, const ks_matrix *A,
                                       const ks_dist_prows *P1, const int *cf2, ks_dist_prows *P);

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
/* The same with the serial estimate's shortcut: known_sym skips the
 * symmetry check (a Galerkin product of an exactly symmetric level 0 is
 * symmetric to rounding); exact (NULL: not wanted) is set to whether the
 * check ran and found every pair equal bit for bit (ks_amg.sym0). */
ks_error ks_dist_spectral_radius_sym(ks_matrix *A, int iters, int known_sym, double *rho,
                                     int *exact);

/* ----------------------------------------------------- symmetry_dist.c */
/* Collective. *sym = 1 when the distributed matrix A is symmetric to
 * rounding by the serial estimate's rule (every upper entry's partner
 * within KS_SPEC_SYM_TOL sqrt(|a_ii a_jj|), as many lower as upper
 * entries), the same answer on every rank. d: this rank's diagonal (host);
 * d_be: the same on A's backend, then the owned block's pairs are checked
 * where it lives by the AMG kernels (ks_amgk_symmetry_counts) and only the
 * ghost block comes to the host (NULL: all on host copies). exact (NULL:
 * not wanted): symmetric with every pair equal bit for bit. */
ks_error ks_dist_symmetric(const ks_matrix *A, const double *d, const double *d_be, int *sym,
                           int *exact);

#ifdef __cplusplus
}
#endif
#endif
