/* The AMG setup's operations, declared once and implemented once per
 * backend (Ginkgo's shape: amg/cpu/ and amg/cuda/ fill a table each), and
 * the calls the driver makes (hierarchy.c, resetup.c, smoother.c), which
 * pick the table of the backend the data lives on. The driver never asks
 * where that is.
 *
 * A backend whose table lacks an operation (a NULL entry) still gets it:
 * the call copies the operands to the host, runs the cpu kernel there and
 * copies the results back (ks_amg_exec.host_steps counts such steps, and
 * the report names them). Every array below lives on the operands'
 * backend; counts and scalars come back on the host. Not installed. */
#ifndef KS_AMG_KERNELS_H
#define KS_AMG_KERNELS_H

#include "params.h"
#include "../sparse/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

/* C/F markers (cf arrays). */
enum { KS_FPT = -1, KS_UNDECIDED = 0, KS_CPT = 1 };

/* What spectral_prepare_blocks reports about a rank's rows (host). */
typedef struct ks_spectral_prep {
    ks_int bad;        /* the first row whose diagonal is zero or not finite; n when none */
    ks_int npos, nneg; /* rows with a positive / a negative diagonal */
    double bound;      /* max_i sum_j |a_ij| / |a_ii| over the other rows (0 when none) */
} ks_spectral_prep;

/* The distributed PMIS's points where its rounds run (mpi/pmis_dist.c): own
 * points 0 .. nloc-1 (global row_begin + i), then the external ones nloc ..
 * nloc+next-1 (global ext_gid[j - nloc]); the joint graph's S and S^T rows
 * of the own points (srp/sci, trp/tci, columns in that numbering); per
 * point the measure count cnt, random measure h, state cf (KS_CPT, KS_FPT,
 * KS_UNDECIDED), this round's selection sel, the fix-up's candidate flag
 * cand and its state fix (KS_PMIS_UNSEEN, _PROMOTED, _KEPT). Every array
 * in be's memory (NULL be: the host). The caller brings the external
 * points' cnt, cf, sel, cand and fix from their owners between steps. */
typedef struct ks_pmis_joint {
    ks_backend *be;
    ks_int nloc, next;
    ks_gint row_begin;
    const ks_gint *ext_gid;
    const ks_int *srp, *sci, *trp, *tci;
    int *cnt, *cf, *sel, *cand, *fix;
    uint64_t *h;
    int *scratch; /* one int in be's memory for a step's count (device tables) */
} ks_pmis_joint;

enum { KS_PMIS_UNSEEN = 0, KS_PMIS_PROMOTED = 1, KS_PMIS_KEPT = 2 };

/* The steps of pmis_joint_step, each over the own points (*count: its
 * count over them):
 *   KS_PMIS_INIT: h of every point from (seed, global index), cnt[i] =
 *     |S^T_i|, sel, cand and fix 0 everywhere, cf of the external points
 *     KS_UNDECIDED; an undecided own point without S or S^T entries
 *     becomes F. Count: own points left undecided.
 *   KS_PMIS_SELECT: sel[i] = i undecided and no undecided neighbour in
 *     S_i or S^T_i beats its measure (cnt, then h, then global index).
 *     Count: selected points.
 *   KS_PMIS_UPDATE: a selected point becomes C, an undecided one with a
 *     selected neighbour F. Count: points still undecided.
 *   KS_PMIS_CANDIDATES: cand[i] = i is F with S entries, none of them C.
 *     Count: candidates.
 *   KS_PMIS_FIXUP: an unseen candidate with a promoted earlier (smaller
 *     global index) candidate in S_i is kept; one whose earlier candidates
 *     in S_i are all decided is promoted (and becomes C). Count: unseen
 *     candidates left. Which round decides a candidate may differ between
 *     backends; the outcome does not. */
enum { KS_PMIS_INIT, KS_PMIS_SELECT, KS_PMIS_UPDATE, KS_PMIS_CANDIDATES, KS_PMIS_FIXUP };

typedef struct ks_amg_kernels {
    ks_backend_kind backend;
    /* Strength graphs: S is a pattern (no values) of A's size, row i lists
     * the j != i that i strongly depends on, sorted. Classical: hypre's
     * sign convention with theta and max_row_sum; symmetric (aggregation):
     * |a_ij| >= theta sqrt(|a_ii a_jj|). */
    ks_error (*strength_classical)(const ks_sparse *A, double theta, double max_row_sum,
                                   ks_sparse *S);
    ks_error (*strength_symmetric)(const ks_sparse *A, double theta, ks_sparse *S);
    /* C/F splittings of S: cf[i] = KS_CPT / KS_FPT, *nc = number of C
     * points. PMIS with random measures hashed from (seed, i); HMIS with
     * its Ruge-Stueben pass serial (block_rows 0) or in blocks. */
    ks_error (*pmis)(const ks_sparse *S, unsigned long long seed, int *cf, ks_int *nc);
    ks_error (*hmis)(const ks_sparse *S, unsigned long long seed, int block_rows, int *cf,
                     ks_int *nc);
    /* Interpolation P (n x nc) from A, S and the splitting: direct (D1) or
     * extended+i (D2); truncation in place (max elements, threshold); and
     * for re-setup Pn projected onto P's pattern (*changed = 1 when it does
     * not fit; see resetup.c). */
    ks_error (*interp_direct)(const ks_sparse *A, const ks_sparse *S, const int *cf,
                              ks_sparse *P);
    ks_error (*interp_extended_i)(const ks_sparse *A, const ks_sparse *S, const int *cf,
                                  ks_sparse *P);
    /* The same for rows r0 .. r1 - 1 only (0 <= r0 <= r1 <= n), the same
     * rows bit for bit: P is still n x nc, its other rows empty, and a zero
     * diagonal is refused only in the rows built. What a distributed setup
     * builds from a rank's local system (mpi/interp_local.c). */
    ks_error (*interp_direct_rows)(const ks_sparse *A, const ks_sparse *S, const int *cf,
                                   ks_int r0, ks_int r1, ks_sparse *P);
    ks_error (*interp_extended_i_rows)(const ks_sparse *A, const ks_sparse *S, const int *cf,
                                       ks_int r0, ks_int r1, ks_sparse *P);
    ks_error (*interp_truncate)(ks_sparse *P, int max_elements, double factor);
    ks_error (*interp_project)(const ks_sparse *Pn, ks_sparse *P, int truncated, int *changed);
    /* Aggregation: agg[i] in [0, *na) from S (distance-two independent
     * roots with keys hashed from seed, amg/cpu/aggregate.c); the tentative
     * prolongator P0 (n x na) on be; P = (I - 4/(3 rho) D^-1 A) P0. */
    ks_error (*aggregate)(const ks_sparse *S, unsigned long long seed, ks_int *agg, ks_int *na);
    ks_error (*tentative_prolongator)(ks_backend *be, ks_int n, const ks_int *agg, ks_int na,
                                      ks_sparse *P0);
    ks_error (*smooth_prolongator)(const ks_sparse *A, const ks_sparse *P0, double rho,
                                   ks_sparse *P);
    /* rho(D^-1 A) estimated by `iters` Lanczos steps from a fixed start.
     * known_sym: A is symmetric to rounding (a Galerkin product R A P,
     * R = P^T, of an exactly symmetric matrix), so the symmetry test is
     * skipped (the diagonal's signs still choose Lanczos or the power
     * method); *exact (may be NULL) = 1 when the test ran and found A
     * symmetric bit for bit, pattern and values, else 0. */
    ks_error (*spectral_radius)(const ks_sparse *A, int iters, int known_sym, double *rho,
                                int *exact);
    /* *bad = the first row whose diagonal is zero, not finite or not
     * stored (A->nrows when none), with its value (0 when not stored) and
     * whether the row stores one. */
    ks_error (*check_diagonal)(const ks_sparse *A, ks_int *bad, double *value, int *stored);
    /* Smoother weights w (on A's backend): JACOBI omega/a_ii, JACOBI_L1
     * omega/(a_ii + sign(a_ii) sum_{j!=i} |a_ij|), otherwise 1/a_ii. The
     * diagonal must have passed check_diagonal. */
    ks_error (*smoother_weights)(const ks_sparse *A, ks_amg_smoother_kind kind, double omega,
                                 double *w);
    /* The classical strength of a distributed matrix's rows on one rank
     * (mpi/strength_dist.c): L (n x n) its owned columns, G (n x ng, NULL:
     * none) the ghost columns in ascending global order, the first nbelow
     * of them below the rank's rows. SL (n x n) and SG (n x ng) the strong
     * columns of each block: row for row strength_classical of the whole
     * row, its sum taken in global column order (amg_cpu.h). */
    ks_error (*strength_classical_blocks)(const ks_sparse *L, const ks_sparse *G, ks_int nbelow,
                                          double theta, double max_row_sum, ks_sparse *SL,
                                          ks_sparse *SG);
    /* The row-wise part of a distributed level's rho(D^-1 A) estimate
     * (mpi/amg_dist_smoother.c) on one rank's blocks, L (n x n) its owned
     * columns and G (n x ng, NULL: none) its ghost columns: d[i] = L's
     * a_ii (0 when not stored) and *out. Each row's sum_j |a_ij| adds L's
     * entries then G's, left to right, in one thread: the bound has the
     * same bits on every backend. */
    ks_error (*spectral_prepare_blocks)(const ks_sparse *L, const ks_sparse *G, double *d,
                                        ks_spectral_prep *out);
    /* n rows on be: d[i] = sym ? 1/sqrt(|d_i|) : 1/d_i in place, and
     * start[i] = ks_spectral_start(row_begin + i) (amg/spectral_common.h),
     * the serial start vector by global row. */
    ks_error (*spectral_scale_start)(ks_backend *be, ks_int n, ks_gint row_begin, int sym,
                                     double *d, double *start);
    /* The symmetry test of the serial estimate on one rank's owned block L
     * (n x n, sorted rows) with its diagonal d (on L's backend): cnt[0] its
     * strictly upper entries, cnt[1] its strictly lower ones, cnt[2] the
     * upper ones whose partner a_ji is missing or differs by more than
     * KS_SPEC_SYM_TOL sqrt|a_ii a_jj|, cnt[3] those not equal bit for bit
     * (host counts; mpi/symmetry_dist.c adds the ghost block's). */
    ks_error (*symmetry_counts)(const ks_sparse *L, const double *d, int64_t cnt[4]);
    /* One step of the distributed PMIS on J (above). */
    ks_error (*pmis_joint_step)(ks_pmis_joint *J, int step, unsigned long long seed,
                                ks_gint *count);
    /* out[k] = src[idx[k]] for k < n (be's memory): the values a halo plan
     * sends, packed. */
    ks_error (*gather_int)(ks_backend *be, const int *src, const ks_int *idx, ks_int n,
                           int *out);
} ks_amg_kernels;

extern const ks_amg_kernels ks_amg_cpu_kernels;
#ifdef KS_HAVE_CUDA
extern const ks_amg_kernels ks_amg_cuda_kernels;
#endif

/* Where a setup's steps run: the operands' backend's table, else (staged)
 * the cpu table on host copies. host_steps counts the staged calls. */
typedef struct ks_amg_exec {
    ks_backend *host;  /* a cpu backend for staged steps (made on first need) */
    long host_steps;
    unsigned host_ops; /* bit k: operation k (ks_amg_op) ran on the host */
} ks_amg_exec;

typedef enum ks_amg_op {
    KS_OP_STRENGTH, KS_OP_PMIS, KS_OP_HMIS, KS_OP_INTERP, KS_OP_TRUNCATE, KS_OP_PROJECT,
    KS_OP_AGGREGATE, KS_OP_TENTATIVE, KS_OP_SMOOTH_P, KS_OP_SPECTRAL, KS_OP_DIAGONAL,
    KS_OP_WEIGHTS, KS_OP_TRANSPOSE, KS_OP_SPGEMM, KS_OP_RAP, KS_OP_RAP_NUMERIC, KS_OP_PATTERN,
    KS_NOPS
} ks_amg_op;
/* "strength", "PMIS", ... (index by ks_amg_op). */
extern const char *const ks_amg_op_names[KS_NOPS];

void ks_amg_exec_free(ks_amg_exec *x);

/* The driver's calls: as the table entries above, plus the sparse products
 * of sparse/sparse.h under the same fallback. */
ks_error ks_amgk_strength_classical(ks_amg_exec *x, const ks_sparse *A, double theta,
                                    double max_row_sum, ks_sparse *S);
ks_error ks_amgk_strength_symmetric(ks_amg_exec *x, const ks_sparse *A, double theta,
                                    ks_sparse *S);
ks_error ks_amgk_pmis(ks_amg_exec *x, const ks_sparse *S, unsigned long long seed, int *cf,
                      ks_int *nc);
ks_error ks_amgk_hmis(ks_amg_exec *x, const ks_sparse *S, unsigned long long seed,
                      int block_rows, int *cf, ks_int *nc);
ks_error ks_amgk_interp(ks_amg_exec *x, ks_amg_interp kind, const ks_sparse *A,
                        const ks_sparse *S, const int *cf, ks_sparse *P);
ks_error ks_amgk_interp_rows(ks_amg_exec *x, ks_amg_interp kind, const ks_sparse *A,
                             const ks_sparse *S, const int *cf, ks_int r0, ks_int r1,
                             ks_sparse *P);
ks_error ks_amgk_truncate(ks_amg_exec *x, ks_sparse *P, int max_elements, double factor);
ks_error ks_amgk_project(ks_amg_exec *x, const ks_sparse *Pn, ks_sparse *P, int truncated,
                         int *changed);
ks_error ks_amgk_aggregate(ks_amg_exec *x, const ks_sparse *S, unsigned long long seed,
                           ks_int *agg, ks_int *na);
ks_error ks_amgk_tentative(ks_amg_exec *x, ks_backend *be, ks_int n, const ks_int *agg,
                           ks_int na, ks_sparse *P0);
ks_error ks_amgk_smooth_prolongator(ks_amg_exec *x, const ks_sparse *A, const ks_sparse *P0,
                                    double rho, ks_sparse *P);
ks_error ks_amgk_spectral_radius(ks_amg_exec *x, const ks_sparse *A, int iters, int known_sym,
                                 double *rho, int *exact);
ks_error ks_amgk_check_diagonal(ks_amg_exec *x, const ks_sparse *A, ks_int *bad,
                                double *value, int *stored);
ks_error ks_amgk_smoother_weights(ks_amg_exec *x, const ks_sparse *A, ks_amg_smoother_kind kind,
                                  double omega, double *w);
ks_error ks_amgk_transpose(ks_amg_exec *x, const ks_sparse *A, ks_sparse *AT);
ks_error ks_amgk_spgemm(ks_amg_exec *x, const ks_sparse *A, const ks_sparse *B, ks_sparse *C);
ks_error ks_amgk_rap(ks_amg_exec *x, const ks_sparse *R, const ks_sparse *A, const ks_sparse *P,
                     ks_sparse *Ac);
ks_error ks_amgk_rap_numeric(ks_amg_exec *x, const ks_sparse *R, const ks_sparse *A,
                             const ks_sparse *P, ks_sparse *Ac, int *outside);
ks_error ks_amgk_same_pattern(ks_amg_exec *x, const ks_sparse *A, const ks_sparse *B,
                              int *same);
ks_error ks_amgk_strength_classical_blocks(ks_amg_exec *x, const ks_sparse *L,
                                           const ks_sparse *G, ks_int nbelow, double theta,
                                           double max_row_sum, ks_sparse *SL, ks_sparse *SG);
ks_error ks_amgk_spectral_prepare_blocks(ks_amg_exec *x, const ks_sparse *L, const ks_sparse *G,
                                         double *d, ks_spectral_prep *out);
ks_error ks_amgk_spectral_scale_start(ks_amg_exec *x, ks_backend *be, ks_int n,
                                      ks_gint row_begin, int sym, double *d, double *start);
/* The table of J->be's backend (the cpu's for the host); no staging: the
 * distributed PMIS keeps its arrays where the table runs. */
ks_error ks_amgk_pmis_joint_step(ks_pmis_joint *J, int step, unsigned long long seed,
                                 ks_gint *count);
ks_error ks_amgk_gather_int(ks_backend *be, const int *src, const ks_int *idx, ks_int n,
                            int *out);
ks_error ks_amgk_symmetry_counts(ks_amg_exec *x, const ks_sparse *L, const double *d,
                                 int64_t cnt[4]);

#ifdef __cplusplus
}
#endif
#endif
