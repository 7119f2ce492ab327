/* Solving k systems at once (ks_solver_solve_many): the state a block
 * method iterates with, and the bookkeeping every block method shares.
 *
 * Each column j has a view: a copy of the solver whose stats and history
 * are column j's, so the single-vector stopping rules (ks_krylov_start_norms,
 * ks_krylov_check, ks_krylov_stop) decide each column exactly as they
 * decide a single solve. The method works on blocks of the running columns
 * only: when columns stop, their x goes to the caller's X and every work
 * block is compacted (ks_block_keep_cols), so no SpMM, preconditioner or
 * kernel touches a stopped column again. Not installed. */
#ifndef KS_SOLVER_MANY_H
#define KS_SOLVER_MANY_H

#include "krylov.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_many {
    ks_solver *s;
    int k;                      /* columns of the solve */
    int kr;                     /* running columns: slots 0..kr-1 */
    int col[KS_BLOCK_MAX_COLS]; /* slot -> column of B and X */
    int stop[KS_BLOCK_MAX_COLS]; /* per slot: set when the column stopped this step */
    ks_solver *view;            /* k column views */
    const ks_block *B;          /* the caller's */
    ks_block *X;                /* the caller's: stopped columns land here */
    ks_block *Bw, *Xw;          /* the running columns of B and X */
    ks_block **work;            /* the method's blocks, compacted with Bw, Xw */
    int nwork, work_cap;
} ks_many;

/* Column view of slot q. */
static inline ks_solver *ks_many_view(ks_many *m, int q) { return &m->view[m->col[q]]; }

/* The block methods (ks_krylov_ops.solve_block). */
ks_error ks_krylov_cg_many(ks_solver *s, ks_many *m);
ks_error ks_krylov_bicgstab_many(ks_solver *s, ks_many *m);
ks_error ks_krylov_gmres_many(ks_solver *s, ks_many *m);

/* A new work block of the running columns, compacted with the others and
 * destroyed at the end of the solve. */
ks_error ks_many_block(ks_many *m, ks_block **W);
/* ks_solver_solve after its argument checks (the fallback's columns). */
ks_error ks_solver_solve_one(ks_solver *s, const ks_vec *b, ks_vec *x);
/* The summary of a solve_many (print_solve_stats). */
void ks_solver_print_many(const ks_solver *s);
/* Free the per-column statistics (ks_solver_destroy). */
void ks_solver_free_columns(ks_solver *s);

/* Per-column norms of W's running columns in the configured norm. */
ks_error ks_many_norm(ks_many *m, const ks_block *W, double *nrm);
/* Y += a X, then ks_many_norm of Y: one pass (ks_block_axpy_norm2, as the
 * single methods' ks_krylov_axpy_norm) with the L2 norm, unless
 * KS_BLOCK_FUSED=0 (the two calls, for A/B: the same bits). */
ks_error ks_many_axpy_norm(ks_many *m, const double *a, const ks_block *X, ks_block *Y,
                           double *nrm);
/* R = Bw - A Xw */
ks_error ks_many_residual(ks_many *m, ks_block *R);
/* Start: R = Bw - A Xw, the norms, ks_krylov_start_norms per column (a
 * column with b = 0 gets x = 0), then the stopped columns retired. Leaves
 * rnorm[q] per running slot. */
ks_error ks_many_start(ks_many *m, ks_block *R, double *rnorm);
/* ks_krylov_check on every running slot (rnorm per slot), marking stops. */
ks_error ks_many_check(ks_many *m, int it, const double *rnorm);
/* Retire the slots marked in m->stop: their Xw columns to X, then every
 * block compacted to the running ones. Scalars per slot (arrays of kr
 * doubles, given in `sc`, nsc of them) move with their slots. */
ks_error ks_many_retire(ks_many *m, double **sc, int nsc);
/* The monitor line of iteration it (the largest residual of the running
 * columns and how many run), when the monitor is on. */
void ks_many_monitor(ks_many *m, int it, const double *rnorm);

#ifdef __cplusplus
}
#endif
#endif
