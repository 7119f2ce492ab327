/* The cpu implementations of the AMG setup steps, on host CSR, one tested
 * function per step (OpenMP; results independent of the thread count):
 *     strength -> coarsening (PMIS/HMIS) or aggregation -> interpolation
 *     -> truncation (the products are sparse/cpu's)
 * amg_cpu.c fills the cpu kernel table (amg/kernels.h) with them; tests
 * call them directly. Not installed. */
#ifndef KS_AMG_CPU_H
#define KS_AMG_CPU_H

#include "../kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- strength */
/* Strength pattern: row i lists the j != i that i strongly depends on,
 * sorted ascending. Diagonal never included. */
typedef struct ks_strength {
    ks_int n;
    ks_int *rowptr; /* n + 1 */
    ks_int *colind; /* rowptr[n] */
} ks_strength;

/* Classical (Ruge-Stueben, hypre sign convention): j is strong for i when
 *   -s*a_ij >= theta * max_{k != i} (-s*a_ik),  s = sign(a_ii),
 * rows with no connection of the right sign have none; a row whose
 * |row sum| > max_row_sum * |a_ii| (max_row_sum < 1) gets no strong
 * connections (hypre's max_row_sum). theta in [0,1]. */
ks_error ks_amg_strength_classical(const ks_csr *A, double theta, double max_row_sum,
                                   ks_strength *S);
/* The same rule for rows split in two blocks of columns (a distributed
 * matrix's rows on one rank): L (n x n, the diagonal in column i) the
 * owned columns, G (n x ng; NULL: none) the others, numbered in ascending
 * global order, those below nbelow preceding L's columns and the rest
 * following. Row for row the classical pattern of the whole row (its sum
 * taken in global column order, so the max_row_sum test sees the serial
 * bits), split alike: SL the strong owned columns (n x n), SG the strong
 * ghost columns (n rows, G's column numbers; rowptr zeros without G). */
ks_error ks_amg_strength_classical_blocks(const ks_csr *L, const ks_csr *G, ks_int nbelow,
                                          double theta, double max_row_sum, ks_strength *SL,
                                          ks_strength *SG);
/* The same for blocks whose rows are known good (a matrix's own blocks,
 * checked when it was made: ks_sparse.valid): their columns are not
 * scanned again, only the shapes and parameters checked. */
ks_error ks_amg_strength_classical_blocks_valid(const ks_csr *L, const ks_csr *G, ks_int nbelow,
                                                double theta, double max_row_sum,
                                                ks_strength *SL, ks_strength *SG);
/* Symmetric measure for aggregation: |a_ij| >= theta * sqrt(|a_ii a_jj|). */
ks_error ks_amg_strength_symmetric(const ks_csr *A, double theta, ks_strength *S);
ks_error ks_strength_transpose(const ks_strength *S, ks_strength *ST);
void ks_strength_free(ks_strength *S);

/* ----------------------------------------------------------- coarsening */

/* PMIS (De Sterck, Yang, Heys): measure = |S^T row| + random in [0,1)
 * from a counter-based hash of (seed, i) (so results do not depend on the
 * thread count), repeated independent sets. cf[i] = KS_CPT or KS_FPT on
 * return; points with no strong connections in either direction are F with
 * an empty interpolation row. *nc = number of C points.
 * Guarantee: every F point with strong connections has a strong C neighbour
 * in its S row. For a nonsymmetric S that can conflict with independence of
 * the C points (a 3-cycle of dependencies), so a final serial fix-up pass
 * promotes such F points to C; for a symmetric S no fix-up happens and the C
 * points are independent. F points with an empty S row get empty P rows. */
ks_error ks_amg_pmis(const ks_strength *S, unsigned long long seed, int *cf, ks_int *nc);
/* The distributed PMIS's steps and the int gather (the cpu table's
 * pmis_joint_step and gather_int; pmis_joint.c). */
ks_error ks_amg_cpu_pmis_joint_step(ks_pmis_joint *J, int step, unsigned long long seed,
                                    ks_gint *count);
ks_error ks_amg_cpu_gather_int(ks_backend *be, const int *src, const ks_int *idx, ks_int n,
                               int *out);
/* HMIS: a Ruge-Stueben first pass, then PMIS on what is left (for a
 * structurally symmetric S on one process the RS pass decides everything;
 * the PMIS pass matters with MPI), then the same fix-up as PMIS. */
ks_error ks_amg_hmis(const ks_strength *S, unsigned long long seed, int *cf, ks_int *nc);
/* HMIS with the RS pass as ks_amg_params.hmis_block_rows says: 0 serial
 * (ks_amg_hmis), -1 in parallel blocks sized from S (serial below 2^21
 * rows), N >= 2 in blocks of N rows (hmis.c explains the blocks). */
ks_error ks_amg_hmis_rows(const ks_strength *S, unsigned long long seed, int block_rows, int *cf,
                          ks_int *nc);
/* Coarse numbering: cmap[i] = index among C points for C points, -1 for F. */
ks_error ks_amg_coarse_map(ks_int n, const int *cf, ks_int *cmap, ks_int *nc);

/* -------------------------------------------------------- interpolation */
/* P is n x nc (nc = number of C points), C rows are identity rows.
 * Direct ("D1"): interpolate from strong C neighbours only, with the
 * classical split of positive/negative off-diagonal sums; when a row has no
 * strong C coupling of one sign, that sign's off-diagonals are lumped into
 * the diagonal (Stueben), so P reproduces constants for zero row sums. */
ks_error ks_amg_interp_direct(const ks_csr *A, const ks_strength *S, const int *cf, ks_csr *P);
/* Extended+i ("D2", De Sterck et al. / hypre interp_type 6): C points of
 * strong F neighbours are included (distance two). */
ks_error ks_amg_interp_extended_i(const ks_csr *A, const ks_strength *S, const int *cf,
                                  ks_csr *P);
/* Both for rows r0 .. r1 - 1 only (the other rows of P stay empty), the
 * same rows bit for bit: what a distributed setup builds from a rank's
 * local system (its rows and the rows and points they reach). */
ks_error ks_amg_interp_direct_rows(const ks_csr *A, const ks_strength *S, const int *cf,
                                   ks_int r0, ks_int r1, ks_csr *P);
ks_error ks_amg_interp_extended_i_rows(const ks_csr *A, const ks_strength *S, const int *cf,
                                       ks_int r0, ks_int r1, ks_csr *P);
/* Truncate each row in place: drop |w| < factor * max|w| (factor in [0,1],
 * 0 turns this off), then keep at most max_elements largest (0 = no cap),
 * rescaling the kept entries once so the row sum is unchanged. */
ks_error ks_amg_interp_truncate(ks_csr *P, int max_elements, double factor);
/* The same rule on n rows rp (offsets from 0) with columns *colp of csz
 * bytes (ks_int, or ks_gint), values *valp: in place, each row truncated in
 * its slot, then the rows packed (the arrays may be replaced by
 * right-sized ones: the old ones freed). Ties between equal |w| go to the
 * lower column (col_keys: the ks_int columns) or the lower position in the
 * row (col_keys 0: the same for rows with ascending columns). The new
 * count is rp[n]. */
ks_error ks_amg_truncate_rows(ks_int n, ks_int *rp, void **colp, size_t csz, int col_keys,
                              double **valp, int max_elements, double factor);

/* ---------------------------------------------------------- aggregation */
/* Greedy aggregation on a symmetric strength graph: agg[i] in [0, *na). */
ks_error ks_amg_aggregate(const ks_strength *S, ks_int *agg, ks_int *na);
/* The same with the keys of the root rounds hashed from seed
 * (ks_amg_aggregate uses seed 1). */
ks_error ks_amg_aggregate_seeded(const ks_strength *S, unsigned long long seed, ks_int *agg,
                                 ks_int *na);
/* Tentative prolongator: P0(i, agg[i]) = 1 / sqrt(|aggregate|). */
ks_error ks_amg_tentative_prolongator(ks_int n, const ks_int *agg, ks_int na, ks_csr *P0);
/* rho(D^-1 A) estimate by `iters` power/Lanczos steps (deterministic start). */
ks_error ks_amg_spectral_radius_dinv_a(const ks_csr *A, int iters, double *rho);
/* The same, where known_sym says A is symmetric to rounding (a Galerkin
 * product R A P, R = P^T, of an exactly symmetric matrix), so the symmetry
 * test is skipped (the diagonal's signs still choose); *exact (may be
 * NULL) = 1 when the test ran and found A symmetric bit for bit (pattern
 * and values), else 0. */
ks_error ks_amg_spectral_radius_sym(const ks_csr *A, int iters, int known_sym, double *rho,
                                    int *exact);
/* Smoothed prolongator P = (I - omega D^-1 A) P0 with omega = 4/(3 rho). */
ks_error ks_amg_smooth_prolongator(const ks_csr *A, const ks_csr *P0, double rho, ks_csr *P);

/* ------------------------------------ distributed estimate, row-wise part */
/* The table's spectral_prepare_blocks on host blocks (spectral_blocks.c):
 * check = 0 for blocks known good (ks_sparse.valid), whose rows are not
 * scanned; else a malformed row fails as ks_amg_spectral_blocks_malformed
 * says. */
ks_error ks_amg_spectral_prepare_csr(const ks_csr *L, const ks_csr *G, int check, double *d,
                                     ks_spectral_prep *out);
/* The table's spectral_scale_start on host arrays. */
void ks_amg_spectral_scale_start(ks_int n, ks_gint row_begin, int sym, double *d, double *start);
/* Position of column c in sorted row i of X, or -1 (a binary search). */
ks_int ks_amg_csr_find(const ks_csr *X, ks_int i, ks_int c);
/* The table's symmetry_counts on a host CSR (sorted rows). */
void ks_amg_symmetry_counts_csr(const ks_csr *L, const double *d, int64_t cnt[4]);
/* spectral_prepare_blocks' argument checks and malformed-row error (bad:
 * the row, -1 when the row pointers do not span [0, nnz]; ghost: in G),
 * shared by the backends so that their messages agree. */
ks_error ks_amg_spectral_blocks_args(const ks_sparse *L, const ks_sparse *G, const double *d,
                                     const ks_spectral_prep *out);
ks_error ks_amg_spectral_blocks_malformed(ks_int bad, int ghost);

#ifdef __cplusplus
}
#endif
#endif
