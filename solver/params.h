/* Parsed, validated settings. The config module (solver/config.c) fills
 * these from JSON with documented defaults (docs/config.md); solvers and
 * preconditioners read only these structs, never JSON. Not installed. */
#ifndef KS_PARAMS_H
#define KS_PARAMS_H

#include "../vec/ks_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS_NAME_MAX 32
#define KS_PATH_MAX 1024

typedef enum ks_conv_kind {
    KS_CONV_ABSOLUTE,     /* ||r|| < tol */
    KS_CONV_RELATIVE_INI, /* ||r|| < tol * ||r0|| */
    KS_CONV_RELATIVE_RHS  /* ||r|| < tol * ||b|| (default) */
} ks_conv_kind;

typedef enum ks_norm_kind { KS_NORM_L1, KS_NORM_L2, KS_NORM_LMAX } ks_norm_kind;

/* AMG smoother (an object scope "smoother" inside the AMG scope). */
typedef struct ks_smoother_params {
    char solver[KS_NAME_MAX];  /* "JACOBI", "JACOBI_L1", "CHEBYSHEV", "GS", "SGS" (GS/SGS: cpu) */
    double relaxation_factor;  /* damping for Jacobi variants (default 1.0; JACOBI uses 2/3 if unset) */
    int chebyshev_degree;      /* polynomial degree (default 2) */
    double chebyshev_lower;    /* lower bound as a fraction of the upper eigenvalue bound (default 0.3) */
} ks_smoother_params;

/* Algebraic multigrid settings (AmgX names; docs/config.md). */
typedef struct ks_amg_params {
    char algorithm[KS_NAME_MAX];    /* "CLASSICAL" (default) | "AGGREGATION" */
    char selector[KS_NAME_MAX];     /* "HMIS" (default) | "PMIS" */
    int hmis_block_rows;            /* HMIS's Ruge-Stueben pass: 0 serial (default), -1 in
                                     * parallel blocks sized per level, N >= 2 in blocks of
                                     * N rows */
    char interpolator[KS_NAME_MAX]; /* "D2" extended+i (default) | "D1" direct */
    double strength_threshold;      /* theta, default 0.25 */
    double max_row_sum;             /* default 0.9; 1.0 disables the test */
    int interp_max_elements;        /* default 4; 0 = no limit */
    double interp_truncation_factor;/* default 0.0 (off) */
    int aggressive_levels;          /* default 0 */
    ks_smoother_params smoother;
    int presweeps;                  /* default 1 */
    int postsweeps;                 /* default 1 */
    char cycle[8];                  /* "V" (default) | "W" | "F" */
    int max_levels;                 /* default 25 */
    int min_coarse_rows;            /* stop coarsening at or below this many rows (default 2) */
    int coarse_max_rows;            /* dense direct solve when rows <= this (default 300) */
    char coarse_solver[KS_NAME_MAX];/* "DENSE_LU" (default) */
    unsigned long long seed;        /* random weights of PMIS/HMIS (default 1) */
    char level_format[KS_NAME_MAX]; /* SpMV format of the hierarchy's A, P, R (default "auto":
                                     * each level chooses from its own statistics) */
    char hierarchy_precision[KS_NAME_MAX]; /* "DOUBLE" (default) | "FLOAT": values of the
                                     * coarse operators, P, R and the coarse inverse kept as
                                     * float32 (vectors and sums stay float64) */
} ks_amg_params;

typedef struct ks_precond_params {
    char solver[KS_NAME_MAX];  /* "NOSOLVER", "JACOBI" (alias "BLOCK_JACOBI"), "JACOBI_L1", "AMG" */
    double relaxation_factor;  /* damping omega, default 1.0 */
    ks_amg_params amg;         /* when solver is "AMG" */
} ks_precond_params;

typedef struct ks_solver_params {
    char solver[KS_NAME_MAX];  /* "PCG", "CG", "PBICGSTAB", "BICGSTAB" */
    int max_iters;             /* default 1000 */
    double tolerance;          /* default 1e-8 */
    ks_conv_kind convergence;  /* default RELATIVE_RHS */
    ks_norm_kind norm;         /* default L2 */
    int monitor_residual;      /* print each iteration (default 0) */
    int print_solve_stats;     /* print a summary after the solve (default 0) */
    int store_res_history;     /* keep residual history (default 1) */
    double divergence_factor;  /* DIVERGED when ||r|| > factor * reference (default 1e10) */
    ks_precond_params pc;
} ks_solver_params;

/* ksolve's own top-level keys: what to solve, where. */
typedef struct ks_problem_params {
    char backend[64];              /* "cpu", "cuda" or "cpu,cuda" (default "cpu") */
    char spmv_format[KS_NAME_MAX]; /* default "auto" */
    ks_spmv_params spmv;
    char matrix_file[KS_PATH_MAX]; /* "" when the generator is used */
    ks_gen_params gen;             /* default: poisson3d_7 sized to take seconds */
    char rhs_file[KS_PATH_MAX];    /* "" when rhs_kind is used */
    char rhs_kind[KS_NAME_MAX];    /* "A_ones" (b = A*1, default), "ones", "A_sin", "zero" */
    char solution_file[KS_PATH_MAX]; /* "" = do not write */
} ks_problem_params;

void ks_solver_params_default(ks_solver_params *p);
void ks_amg_params_default(ks_amg_params *p);
void ks_problem_params_default(ks_problem_params *p);

/* Accessors for a parsed config (solver/config.c). */
const ks_solver_params *ks_config_solver_params(const ks_config *cfg);
const ks_problem_params *ks_config_problem_params(const ks_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
