/* Parsed, validated settings. The config module (solver/config.c) fills
 * these from JSON with documented defaults (docs/config.md); solvers and
 * preconditioners read only these structs, never JSON. Not installed. */
#ifndef KS_PARAMS_H
#define KS_PARAMS_H

#include "../core/ks_internal.h"
#include "../amg/params.h"

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

/* Names of the two enums above (AmgX spellings accepted as aliases). */
extern const ks_name ks_conv_names[];
extern const ks_name ks_norm_names[];

typedef struct ks_precond_params {
    char solver[KS_NAME_MAX];  /* "NOSOLVER", "JACOBI" (alias "BLOCK_JACOBI"), "JACOBI_L1", "AMG" */
    double relaxation_factor;  /* damping omega, default 1.0 */
    ks_amg_params amg;         /* when solver is "AMG" */
} ks_precond_params;

typedef struct ks_solver_params {
    char solver[KS_NAME_MAX];  /* "PCG", "CG", "PBICGSTAB", "BICGSTAB", "GMRES", "FGMRES",
                                  "PIPECG", "PIPEBICGSTAB", "AMG" */
    int max_iters;             /* default 1000 */
    double tolerance;          /* default 1e-8 */
    ks_conv_kind convergence;  /* default RELATIVE_RHS */
    ks_norm_kind norm;         /* default L2 */
    int monitor_residual;      /* print each iteration (default 0) */
    int print_solve_stats;     /* print a summary after the solve (default 0) */
    int store_res_history;     /* keep residual history (default 1) */
    double divergence_factor;  /* DIVERGED when ||r|| > factor * reference (default 1e10) */
    int gmres_n_restart;       /* GMRES/FGMRES restart length m (default 30) */
    int gmres_krylov_dim;      /* > 0: caps m as well (AmgX's key; default 0: off) */
    ks_precond_params pc;
} ks_solver_params;

void ks_solver_params_default(ks_solver_params *p);
/* 1 for the GMRES family ("GMRES", "FGMRES"), which reads the gmres_ keys. */
int ks_solver_params_is_gmres(const ks_solver_params *p);
/* The restart length GMRES runs with: gmres_n_restart, capped by
 * gmres_krylov_dim when that is > 0 and by max_iters (AmgX's rule). */
int ks_solver_params_gmres_m(const ks_solver_params *p);

/* The solver settings of a parsed config (solver/config.c). */
const ks_solver_params *ks_config_solver_params(const ks_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
