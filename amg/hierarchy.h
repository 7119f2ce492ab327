/* AMG hierarchy and solve side (private). Setup builds the levels where
 * the solve runs, through the per-backend steps of kernels.h, on sparse
 * matrices of that backend (ks_sparse); each level's operators then become
 * ks_matrix objects (taking the arrays, no copy) that the cycle applies
 * through ks_matrix / ks_vec. Nothing here knows where the data lives.
 *
 * Owners: hierarchy.c (setup, destroy), resetup.c (values-only re-setup),
 * smoother.c + chebyshev.c (smoothers), cycle.c (V/W/F cycles),
 * cycle_graph.c (graph replay), summary.c (ks_solver_hierarchy, cycle
 * profile), amg_report.c (grid table); solver/precond_amg.c wraps it as
 * the "AMG" preconditioner. Not installed. */
#ifndef KS_AMG_HIERARCHY_H
#define KS_AMG_HIERARCHY_H

#include "kernels.h"
#include "dense_lu.h"
#include "../spmv/format.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Setup phases timed separately (ks_amg.phase_seconds). */
typedef enum ks_amg_phase {
    KS_AMG_PHASE_STRENGTH,
    KS_AMG_PHASE_COARSENING, /* PMIS/HMIS or aggregation */
    KS_AMG_PHASE_INTERP,     /* interpolation / tentative + smoothed prolongator */
    KS_AMG_PHASE_TRUNCATION,
    KS_AMG_PHASE_RAP,        /* R = P^T and Ac = R A P */
    KS_AMG_PHASE_COARSE,     /* dense LU + explicit inverse */
    KS_AMG_PHASE_SMOOTHER,   /* diagonals, eigenvalue bounds */
    KS_AMG_PHASE_UPLOAD,     /* ks_matrix / ks_vec creation on the backend */
    KS_AMG_NPHASES
} ks_amg_phase;

/* "strength", "coarsening", ... (index by ks_amg_phase). */
extern const char *const ks_amg_phase_names[KS_AMG_NPHASES];

typedef struct ks_amg_level {
    /* The level's operator on amg->be: level 0 a view of the caller's
     * matrix (its values change with ks_matrix_set_values); deeper levels
     * owned until uploaded, then a view of Am's CSR. */
    ks_sparse A;
    ks_matrix *Am;     /* level 0: the caller's matrix, not owned */
    int own_Am;
    /* Transfer to the next level (unused on the coarsest): P n x nc and
     * R = P^T explicit (an SpMV, not a transpose-SpMV); views of Pm's and
     * Rm's CSRs once those exist. */
    ks_sparse P, R;
    ks_matrix *Pm, *Rm;
    /* 1: the arrays belong to a matrix (Am, Pm, Rm; level 0 the caller's),
     * the level only views them; re-setup writes values there, then
     * ks_matrix_values_changed. */
    unsigned char A_view, P_view, R_view;
    /* Kept for re-setup, on amg->be. */
    ks_sparse S;       /* strength pattern */
    int *cf;           /* classical: KS_CPT / KS_FPT per row (NULL for aggregation) */
    ks_int *agg;       /* aggregation: aggregate of each row (NULL for classical) */
    ks_int nagg;
    /* Aggressive coarsening (classical, level < aggressive_levels): two
     * coarsening stages. S / cf above are the first (n -> n1 points, with
     * interpolation P1); the second coarsens the Galerkin operator
     * A1 = P1^T A P1 (strength S2, splitting cf2 of the n1 points,
     * interpolation P2), and P = P1 P2 truncated. S2, P1 and P2 live only
     * while the level is built (re-setup recomputes them); cf2 stays. */
    int aggressive;
    ks_sparse P1, P2;
    ks_sparse S2;
    int *cf2;
    /* Smoother data. */
    ks_vec *dinv;      /* JACOBI: omega/a_ii, JACOBI_L1: omega/d_l1, CHEBYSHEV: 1/a_ii */
    int wkind;         /* how dinv was made (KS_W_DIAG / KS_W_L1, spmv/fused.h) */
    double wscale;     /* its numerator (omega, or 1) */
    double lmax, lmin; /* CHEBYSHEV interval for D^-1 A */
    double rho;        /* estimate of rho(D^-1 A) for the current values, */
    int rho_valid;     /* shared by smoothed aggregation and Chebyshev */
    /* Work vectors (level 0: x and b are the caller's, these stay NULL). */
    ks_vec *x, *b;
    ks_vec *r, *w;     /* residual, spare x (ks_amg_xbuf) */
    /* A hierarchy over MPI ranks (ks_amg.ranks > 0): the level's global
     * rows and the nonzeros of A, P and R summed over the ranks, for the
     * reports (A, P, R above are this rank's blocks). */
    int64_t rows_global, nnz_global, p_nnz_global, r_nnz_global;
} ks_amg_level;

typedef struct ks_amg {
    ks_backend *be;
    ks_amg_exec exec;           /* where the setup's steps ran (kernels.h) */
    unsigned long long A0_id;   /* ks_matrix_id of level 0's matrix at the last setup */
    ks_amg_params prm;
    ks_amg_smoother_kind smoother;
    int nlevels;
    ks_amg_level *levels;       /* nlevels entries, 0 = finest */
    /* Coarsest level: LU kept on the host (re-setup refactors it) and the
     * explicit inverse as a dense ks_matrix: the coarse matrix is small
     * (<= coarse_max_rows), so one SpMV is cheap, needs no triangular-solve
     * kernel and is the same code on every backend. */
    ks_dense_lu lu;
    ks_matrix *coarse_inv;
    struct ks_amg_coarse_job *coarse_job; /* between coarse_start and _finish (coarse.c) */
    struct ks_amg_spectral_job *spectral_job; /* the first levels' estimates (spectral_async.c) */
    /* hierarchy_precision FLOAT: the cycle's own float32 copy of level 0
     * (the Krylov method keeps the caller's float64 matrix); else NULL. */
    ks_matrix *A0f;
    /* 1 when level 0's spectral estimate found its matrix symmetric bit for
     * bit: the coarser levels' operators, Galerkin products R A P with
     * R = P^T, are then symmetric to rounding and their estimates skip the
     * symmetry test (ks_amg_level_spectral). */
    int sym0;
    double phase_seconds[KS_AMG_NPHASES]; /* of the last setup or re-setup */
    int last_was_resetup;       /* phase_seconds describe a re-setup */
    double setup_seconds;       /* last full setup (wall, synchronised) */
    double bytes;               /* what the last (re)setup holds on the backend: its bytes in
                                 * use grew by this much (operators, transfers, smoother
                                 * data, the levels' work vectors) */
    double resetup_seconds;     /* last re-setup (0 when none) */
    int resetup_count;
    int resetup_fell_back;      /* 1 when the last re-setup had to redo the full setup */
    /* The preconditioner cycle as a replayable graph (cycle_graph.c) and
     * the buffers it was captured with. */
    void *graph;
    const double *graph_b, *graph_x;
    const void *graph_A;
    int graph_off;              /* capture failed or not offered: run directly */
    struct ks_amg_blocks *blocks; /* the block cycle's level blocks (cycle_block.c) */
    /* ks_amg_info's per-level entries (refreshed by every call) and the
     * cycle profile (ks_amg_profile): per level and step, sums of seconds
     * and calls since profiling was turned on. */
    ks_hierarchy_level *info;
    int profile;
    long profiled_cycles;
    double (*prof_seconds)[KS_NSTEPS];
    long (*prof_calls)[KS_NSTEPS];
    int ranks;                  /* > 0: distributed over that many MPI ranks (mpi/) */
    /* A hierarchy over ranks: what its values-only re-setup reuses
     * (mpi/amg_dist_resetup.c; NULL when the configuration has no such
     * path), freed through dist_keep_free by ks_amg_clear: amg/ knows
     * nothing of its contents. */
    void *dist_keep;
    void (*dist_keep_free)(void *keep);
    double grid_complexity;     /* sum rows / rows(0) */
    double operator_complexity; /* sum nnz / nnz(0) */
} ks_amg;

/* --------------------------------------------------------- hierarchy.c */
/* Build the hierarchy for A (square) on A's backend. prm is copied. */
ks_error ks_amg_setup(ks_backend *be, const ks_amg_params *prm, ks_matrix *A, ks_amg **out);
void ks_amg_destroy(ks_amg *amg);
/* Bytes the level's operators take where the level lives (its CSRs and
 * their formats' states): A (level 0: the cycle's float32 copy, when there
 * is one; the caller's matrix is not counted), P, R, and on the coarsest
 * the explicit inverse. */
double ks_amg_level_bytes(const ks_amg *amg, int level);
/* Pieces re-setup reuses. ks_amg_check_matrix: A square, on amg's backend,
 * suits the smoother. ks_amg_start: level 0 on A (a view of its CSR).
 * ks_amg_build: every level below level 0. ks_amg_clear: free all but
 * level 0. */
ks_error ks_amg_check_matrix(const ks_amg *amg, ks_matrix *A);
void ks_amg_start(ks_amg *amg, ks_matrix *A);
ks_error ks_amg_build(ks_amg *amg);
void ks_amg_clear(ks_amg *amg);

/* ------------------------------------------------------------ coarse.c */
/* The coarsest level's dense LU and explicit inverse, (re)computed: start
 * takes a host copy of the level and begins the host work (on a thread
 * where the backend is a device, so it overlaps the device's work),
 * finish waits for it and (re)uploads the inverse. Between them the caller
 * may do anything but change the coarsest level. cancel: wait and drop
 * (error paths; ks_amg_clear calls it). */
ks_error ks_amg_coarse_start(ks_amg *amg);
ks_error ks_amg_coarse_finish(ks_amg *amg);
void ks_amg_coarse_cancel(ks_amg *amg);
/* ---------------------------------------------------- spectral_async.c */
/* Lanczos / power steps of every spectral estimate of rho(D^-1 A). */
#define KS_AMG_SPECTRAL_STEPS 12
/* rho(D^-1 A) of level l's operator A (hierarchy.c): level 0's estimate
 * sets amg->sym0, which the other levels' then read, so level 0's must
 * come first in each (re-)setup. x: the calling thread's exec. */
ks_error ks_amg_level_spectral(ks_amg *amg, ks_amg_exec *x, int l, const ks_sparse *A,
                               double *rho);
/* The Chebyshev estimates of the first levels on the backend's side queue
 * from a host thread (where the backend has one and it pays), overlapping
 * the hierarchy's build: start launches it with level 0, give hands it
 * level l (1, 2; each only after the one before) once that level's
 * operator is made (it synchronises the main queue), finish waits and stores them as the levels' rho (a failed one is
 * dropped: the smoother setup computes it again), cancel waits and drops
 * them (error paths, ks_amg_clear). Nothing may write a given level's
 * operator before finish. */
void ks_amg_spectral_start(ks_amg *amg);
ks_error ks_amg_spectral_give(ks_amg *amg, int l);
void ks_amg_spectral_finish(ks_amg *amg);
void ks_amg_spectral_cancel(ks_amg *amg);

/* keep = 0: free the float64 values of level L's P and R where their
 * formats never read them (float32 states); keep = 1: give them values
 * arrays again (uninitialised) for re-setup to write. */
ks_error ks_amg_transfer_values(ks_amg_level *L, int keep);
/* Classical strength of A (prm's threshold and max_row_sum), timed. */
ks_error ks_amg_classical_strength(ks_amg *amg, int level, const ks_sparse *A, ks_sparse *S);
/* Classical interpolation `kind` (prm.interpolator, or on an aggressive
 * level's second stage prm.aggressive_interpolator) of A with S / cf,
 * truncated by the prm settings when `truncate`; timed into the phases. */
ks_error ks_amg_classical_interp(ks_amg *amg, int level, ks_amg_interp kind, const ks_sparse *A,
                                 const ks_sparse *S, const int *cf, int truncate, ks_sparse *P);
/* Level l's strength, splitting or aggregates, interpolation arrays on
 * amg->be (n entries of `size` bytes). */
ks_error ks_amg_alloc_array(ks_amg *amg, ks_int n, size_t size, void **p, const char *what);
void ks_amg_free_array(ks_amg *amg, void *p);
/* SpMV parameters of the hierarchy's own matrices (float_values from
 * hierarchy_precision). */
void ks_amg_level_spmv_params(const ks_amg *amg, ks_spmv_params *sp);
/* 1 when KS_AMG_TRACE is set (and not "0") or the log level is KS_LOG_DEBUG. */
int ks_amg_tracing(void);
/* When tracing: one line per setup step (level, the step's call,
 * milliseconds) through ks_log, on stderr by default. */
void ks_amg_trace(int level, const char *what, double seconds);
/* Every row of level l's A has a nonzero finite diagonal, else
 * KS_ERR_NUMERIC naming the level and row (`who`: what needs it). */
ks_error ks_amg_check_diagonal(ks_amg *amg, const ks_sparse *A, int level, const char *who);

/* ---------------------------------------------------------- resetup.c */
/* A's values changed, pattern kept: reuse strength, C/F splitting or
 * aggregates and the P / RAP patterns, recompute values. Falls back to a
 * full setup (resetup_fell_back = 1) when interpolation's pattern changed. */
ks_error ks_amg_resetup(ks_amg *amg, ks_matrix *A);
/* The end of a re-setup (this one's and mpi/'s): e != KS_OK clears the
 * half-updated hierarchy and returns e; else the re-setup's time (from t0)
 * and count are kept. */
ks_error ks_amg_resetup_finish(ks_amg *amg, ks_error e, double t0);

/* ---------------------------------------------------------- smoother.c */
/* Smoother data of level l from its A (dinv, eigenvalue bounds). A's
 * diagonal must have passed ks_amg_check_diagonal since its values were
 * last written (the callers' level loops check every level). */
ks_error ks_amg_smoother_setup(ks_amg *amg, int l);
void ks_amg_smoother_free(ks_amg_level *L);
/* Where a level's x is during a cycle: the Jacobi / Chebyshev steps write
 * the new x out of place, into spare, and swap the two; Gauss-Seidel works
 * in place on cur. */
typedef struct ks_amg_xbuf {
    ks_vec *cur, *spare;
} ks_amg_xbuf;
/* `sweeps` smoothing steps on level l for A x = b, x in xb->cur. post = 1
 * applies the adjoint (backward GS) so a V(m,m) cycle is symmetric. x_zero
 * = 1: start from x = 0 whatever x holds (skips the first residual SpMV; the
 * first step writes xb->cur without swapping). */
ks_error ks_amg_smooth(ks_amg *amg, int l, const ks_vec *b, ks_amg_xbuf *xb, int sweeps,
                       int post, int x_zero);
/* How many times ks_amg_smooth(..., sweeps, ...) swaps xb when x is not
 * zero on entry (one less when it is). */
int ks_amg_smooth_steps(const ks_amg *amg, int l, int sweeps);
/* One step x_new = x + c dinv .* (b - A x) + a (x - x_old), x in xb->cur
 * and x_old in xb->spare (zero when prev_zero); x_new goes to spare and the
 * two swap. x_zero: x = 0, no SpMV, x_new = c dinv .* b in cur, no swap. */
ks_error ks_amg_jacobi_step(ks_amg *amg, int l, const ks_vec *b, ks_amg_xbuf *xb, double a,
                            double c, int x_zero, int prev_zero);
/* The first two steps from x = 0 in one pass: x1 = c0 dinv .* b, then
 * x2 = x1 + c dinv .* (b - A x1) + a x1. x2 ends in xb->cur after one swap,
 * as the two steps' would; xb->spare then holds x1 when keep_x1 (a third
 * Chebyshev step reads it as x_old) and scratch otherwise. */
ks_error ks_amg_jacobi_two_from_zero(ks_amg *amg, int l, const ks_vec *b, ks_amg_xbuf *xb,
                                     double c0, double a, double c, int keep_x1);
/* Times level l's smoothing swaps x between its two buffers in one visit
 * (cycle.c): a visit from x = 0 with an odd count starts in the spare. */
int ks_amg_level_swaps(const ks_amg *amg, int l, int x_zero);
/* The matrix the cycle applies on level l (level 0: A0f when present). */
ks_matrix *ks_amg_cycle_matrix(const ks_amg *amg, int l);
/* r = b - A_l x (one fused pass) */
ks_error ks_amg_residual(ks_amg *amg, int l, const ks_vec *b, const ks_vec *x, ks_vec *r);

/* --------------------------------------------------------- chebyshev.c */
/* One Chebyshev smoothing step of degree prm.smoother.chebyshev_degree, as
 * ks_amg_chebyshev_steps(amg, l) Jacobi-type steps. */
ks_error ks_amg_chebyshev(ks_amg *amg, int l, const ks_vec *b, ks_amg_xbuf *xb, int x_zero);
int ks_amg_chebyshev_steps(const ks_amg *amg, int l);

/* ------------------------------------------------------------- cycle.c */
/* One cycle (prm.cycle) for A x = b; x is the initial guess and the
 * result. x_zero = 1: start from x = 0 whatever x holds (preconditioner
 * use: z = M^-1 r). */
ks_error ks_amg_cycle(ks_amg *amg, const ks_vec *b, ks_vec *x, int x_zero);

/* -------------------------------------------------------- cycle_block.c */
/* X = one cycle from X = 0 on every column of B (the preconditioner on k
 * right-hand sides), by SpMM and block kernels. */
ks_error ks_amg_cycle_block(ks_amg *amg, const ks_block *B, ks_block *X);
/* The block cycle and dots[j] = B(:,j)'X(:,j) (CG's r'z), summed in the
 * epilogue of level 0's last post-smoothing step where its matrix has the
 * fused pass with dots (ks_matrix_fused_block_dot), else a block dot. */
ks_error ks_amg_cycle_block_dot(ks_amg *amg, const ks_block *B, ks_block *X, double *dots);
/* 1 when the hierarchy's cycle has a block form (not Gauss-Seidel, not
 * over MPI ranks). */
int ks_amg_has_block_cycle(const ks_amg *amg);
/* Free the block cycle's level blocks (ks_amg_clear). */
void ks_amg_blocks_free(ks_amg *amg);

/* -------------------------------------------------------- cycle_graph.c */
/* z = one cycle from z = 0 (the preconditioner), replayed from a captured
 * graph where the backend offers one. */
ks_error ks_amg_precond_cycle(ks_amg *amg, const ks_vec *b, ks_vec *x);
/* Drop the graph (setup, re-setup, destroy). */
void ks_amg_graph_reset(ks_amg *amg);

/* ---------------------------------------------------------- summary.c */
/* What the setup built, for ks_solver_hierarchy (arrays owned by amg). */
ks_error ks_amg_info(ks_amg *amg, ks_hierarchy_info *info);
/* Turn the cycle profile on (sums cleared) or off. */
ks_error ks_amg_profile(ks_amg *amg, int on);
/* Add seconds to level l's step (cycle.c, while profiling). */
void ks_amg_profile_add(ks_amg *amg, int l, ks_cycle_step step, double seconds);

/* One step of a level's visit (cycle.c, cycle_block.c); timed on its own
 * (backend synchronised before and after) while the cycle profile is on. */
#define KS_AMG_STEP(amg, l, step, call)                                       \
    do {                                                                      \
        double st_t0_ = 0.0;                                                  \
        if ((amg)->profile) {                                                 \
            KS_TRY(ks_backend_sync((amg)->be));                               \
            st_t0_ = ks_wtime();                                              \
        }                                                                     \
        KS_TRY(call);                                                         \
        if ((amg)->profile) {                                                 \
            KS_TRY(ks_backend_sync((amg)->be));                               \
            ks_amg_profile_add(amg, l, step, ks_wtime() - st_t0_);            \
        }                                                                     \
    } while (0)

/* -------------------------------------------------------- amg_report.c */
/* AmgX-style report: grid table (level, rows, nonzeros, nnz/row, memory
 * in MB, device/host), grid and operator complexity, setup time per
 * phase. */
void ks_amg_print(const ks_amg *amg, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
