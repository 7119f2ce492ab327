/* Solver and preconditioner seams. A Krylov method is one file filling a
 * ks_krylov_ops; a preconditioner one file filling a ks_precond_ops (AMG
 * implements the same table). Both see only ks_vec / ks_matrix calls, so one
 * source runs on every backend and every SpMV format. Not installed. */
#ifndef KS_SOLVER_IMPL_H
#define KS_SOLVER_IMPL_H

#include "params.h"
#include "../spmv/format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_precond ks_precond;
struct ks_many;

typedef struct ks_precond_ops {
    const char *name;
    /* Build from A (read ks_matrix_host_csr(A) for setup on the host). */
    ks_error (*setup)(ks_precond *pc, ks_matrix *A);
    /* z = M^{-1} r */
    ks_error (*apply)(ks_precond *pc, const ks_vec *r, ks_vec *z);
    void (*destroy)(ks_precond *pc);
    /* Optional: A's values changed, pattern kept (NULL: destroy + setup). */
    ks_error (*resetup)(ks_precond *pc, ks_matrix *A);
    /* Optional: print what setup built (AMG grid table) for reports. */
    void (*print)(const ks_precond *pc, FILE *out);
    /* Optional: the hierarchy summary (ks_solver_hierarchy) and the cycle
     * profile switch (ks_solver_profile_cycles). */
    ks_error (*hierarchy)(ks_precond *pc, ks_hierarchy_info *info);
    ks_error (*profile)(ks_precond *pc, int on);
    /* Optional: Z = M^{-1} R for every column of block R (solve_many);
     * NULL: ks_precond_apply_block applies apply to each column. */
    ks_error (*apply_block)(ks_precond *pc, const ks_block *R, ks_block *Z);
    /* Optional: apply_block and dots[j] = R(:,j)'Z(:,j) in the same passes
     * (NULL: ks_precond_apply_block_dot applies, then takes a block dot). */
    ks_error (*apply_block_dot)(ks_precond *pc, const ks_block *R, ks_block *Z, double *dots);
} ks_precond_ops;

struct ks_precond {
    const ks_precond_ops *ops;
    ks_backend *be;
    ks_precond_params prm;
    void *data;
    int block_fallback_said; /* logged that blocks are applied column by column */
};

/* Z = M^{-1} R column by column: apply_block where the preconditioner has
 * one, else apply on each column copied out to a vector. */
ks_error ks_precond_apply_block(ks_precond *pc, const ks_block *R, ks_block *Z);
/* Z = M^{-1} R and dots[j] = R(:,j)'Z(:,j) (CG's r'z): apply_block_dot
 * where the preconditioner has one, else ks_precond_apply_block and
 * ks_block_dot. */
ks_error ks_precond_apply_block_dot(ks_precond *pc, const ks_block *R, ks_block *Z,
                                    double *dots);
/* The same always column by column (apply on each column). */
ks_error ks_precond_apply_columns(ks_precond *pc, const ks_block *R, ks_block *Z);

/* Create by prm->solver name; "NOSOLVER" gives the identity. */
ks_error ks_precond_create(ks_backend *be, const ks_precond_params *prm, ks_precond **pc);
void ks_precond_destroy(ks_precond *pc);

typedef struct ks_krylov_ops {
    const char *name;
    int preconditioned;  /* 0: "CG"/"BICGSTAB" take no preconditioner */
    int work_vectors;    /* how many n-vectors solve() needs in s->work */
    /* Optional: the count when it depends on the settings (GMRES's basis
     * grows with the restart length); overrides work_vectors. */
    int (*work_count)(const ks_solver_params *prm);
    /* Iterate from x; fill s->stats (status, iterations, residuals). */
    ks_error (*solve)(ks_solver *s, const ks_vec *b, ks_vec *x);
    /* Optional: the k systems of a ks_solver_solve_many together, each
     * column with its own scalars and stopping rule (solver/many.h); NULL:
     * solve_many solves the columns one after the other with solve. */
    ks_error (*solve_block)(ks_solver *s, struct ks_many *m);
} ks_krylov_ops;

struct ks_solver {
    const ks_krylov_ops *ops;
    ks_backend *be;
    ks_solver_params prm;
    ks_matrix *A;
    ks_precond *pc;
    ks_vec **work;       /* the method's vectors, then one for the true residual */
    int nwork;
    ks_solve_stats stats;
    double *history;
    int history_cap;
    /* The power of two b (and x0) were multiplied by for this solve (1
     * normally, see ks_solver_solve): residuals inside the iteration are
     * scaled by it, everything reported is divided by it. */
    double scale;
    /* The last solve's per-column statistics (ks_solver_stats_column):
     * ncols columns (1 after ks_solver_solve, whose column is stats),
     * each with its own history array (col_hist, col_hist_cap entries). */
    int ncols;
    ks_solve_stats *col_stats;
    double **col_hist;
    int *col_hist_cap;
    int col_cap;         /* entries allocated in the three arrays */
    int many_last;       /* the last solve was ks_solver_solve_many */
    int many_fallback_said; /* logged that the method solves columns one by one */
};

#ifdef __cplusplus
}
#endif
#endif
