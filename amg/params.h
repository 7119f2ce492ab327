/* AMG settings, typed: the config table fills them once (enums through the
 * name tables below) and ks_amg_params_check is the one validation, run when
 * a config loads and again at setup for parameters set in code. The AMG
 * code reads only this struct. Not installed. */
#ifndef KS_AMG_PARAMS_H
#define KS_AMG_PARAMS_H

#include "../core/ks_internal.h"
#include "../core/names.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ks_amg_algorithm { KS_AMG_CLASSICAL, KS_AMG_AGGREGATION } ks_amg_algorithm;
typedef enum ks_amg_selector { KS_AMG_PMIS, KS_AMG_HMIS } ks_amg_selector;
typedef enum ks_amg_interp { KS_AMG_D1, KS_AMG_D2 } ks_amg_interp;
typedef enum ks_amg_cycle_kind { KS_AMG_V, KS_AMG_W, KS_AMG_F } ks_amg_cycle_kind;
typedef enum ks_amg_precision { KS_AMG_DOUBLE, KS_AMG_FLOAT } ks_amg_precision;
typedef enum ks_amg_coarse_solver { KS_AMG_DENSE_LU } ks_amg_coarse_solver;
typedef enum ks_amg_smoother_kind {
    KS_SMOOTHER_JACOBI,    /* x += omega D^-1 (b - A x) */
    KS_SMOOTHER_JACOBI_L1, /* x += D_l1^-1 (b - A x), d_i = |a_ii| + sum_{j!=i} |a_ij| */
    KS_SMOOTHER_CHEBYSHEV, /* polynomial in D^-1 A on [lower*lmax, lmax] */
    KS_SMOOTHER_GS,        /* hybrid Gauss-Seidel (formats with a sweep; forward pre,
                            * backward post) */
    KS_SMOOTHER_SGS        /* symmetric hybrid Gauss-Seidel (forward + backward) */
} ks_amg_smoother_kind;

/* Names (AmgX spellings; aliases accepted on input). */
extern const ks_name ks_amg_algorithm_names[];
extern const ks_name ks_amg_selector_names[];
extern const ks_name ks_amg_interp_names[];
extern const ks_name ks_amg_cycle_names[];
extern const ks_name ks_amg_precision_names[];
extern const ks_name ks_amg_coarse_solver_names[];
extern const ks_name ks_amg_smoother_names[];

/* AMG smoother (an object scope "smoother" inside the AMG scope). */
typedef struct ks_smoother_params {
    ks_amg_smoother_kind solver; /* default CHEBYSHEV */
    double relaxation_factor;    /* damping of the Jacobi variants (default 1.0; 0 = unset:
                                  * 2/3 for JACOBI, 1 otherwise) */
    int chebyshev_degree;        /* polynomial degree (default 2) */
    double chebyshev_lower;      /* lower bound as a fraction of the upper eigenvalue
                                  * bound (default 0.3) */
} ks_smoother_params;

#define KS_AMG_FORMAT_MAX 32

/* Algebraic multigrid settings (AmgX names; docs/config.md). */
typedef struct ks_amg_params {
    ks_amg_algorithm algorithm;     /* default CLASSICAL */
    ks_amg_selector selector;       /* default PMIS (both backends: HMIS has a serial
                                     * pass, run on the host even for cuda) */
    int hmis_block_rows;            /* HMIS's Ruge-Stueben pass: 0 serial (default), -1 in
                                     * parallel blocks sized per level, N >= 2 in blocks of
                                     * N rows */
    ks_amg_interp interpolator;     /* default D2 (extended+i) */
    double strength_threshold;      /* theta, default 0.25 */
    double max_row_sum;             /* default 0.9; 1.0 disables the test */
    int interp_max_elements;        /* default 4; 0 = no limit */
    double interp_truncation_factor;/* default 0.0 (off) */
    int aggressive_levels;          /* default 0 */
    ks_amg_interp aggressive_interpolator; /* second stage of an aggressive level: default
                                     * D2; D1 skips extended+i's distance-two walk on the
                                     * first stage's (long-row) Galerkin operator */
    ks_smoother_params smoother;
    int presweeps;                  /* default 1 */
    int postsweeps;                 /* default 1 */
    ks_amg_cycle_kind cycle;        /* default V */
    int max_levels;                 /* default 25 */
    int print_setup_progress;       /* 1: a line per level as setup builds it (default 0) */
    int min_coarse_rows;            /* stop coarsening at or below this many rows (default 2) */
    int coarse_max_rows;            /* dense direct solve when rows <= this (default 300) */
    ks_amg_coarse_solver coarse_solver; /* default DENSE_LU */
    unsigned long long seed;        /* random weights of PMIS/HMIS (default 1) */
    char level_format[KS_AMG_FORMAT_MAX]; /* SpMV format of the hierarchy's A, P, R
                                     * (default "auto": each level chooses from its own
                                     * statistics) */
    ks_amg_precision hierarchy_precision; /* DOUBLE (default) | FLOAT: values of the coarse
                                     * operators, P, R and the coarse inverse kept as float32
                                     * (vectors and sums stay float64) */
} ks_amg_params;

/* The documented defaults (docs/config.md). */
void ks_amg_params_default(ks_amg_params *p);
/* Validate names and ranges of p; errors are KS_ERR_CONFIG naming
 * "<scope>.<key>" (scope e.g. "solver.preconditioner"; NULL -> "amg"). */
ks_error ks_amg_params_check(const ks_amg_params *p, const char *scope);
/* "" for a serial HMIS first pass (or PMIS), else " with blocked RS (...)"
 * for reports; written into buf. */
const char *ks_amg_hmis_blocks_label(const ks_amg_params *p, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
