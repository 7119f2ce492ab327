/* The ksolve tool's own config keys: what to solve and where (backend,
 * spmv_format, spmv.*, threads, gpu_map, matrix.*, rhs.*, x0.*, solution.*). They are a scope the
 * tool registers with the library's config engine (solver/config_scope.h);
 * libksolve itself knows only the solver keys. Not installed. */
#ifndef KS_CLI_PROBLEM_H
#define KS_CLI_PROBLEM_H

#include "../solver/config_scope.h"
#include "../solver/params.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_problem_params {
    char backend[64];              /* "cpu", "cuda" or "cpu,cuda" (default "cpu") */
    char spmv_format[KS_NAME_MAX]; /* default "auto" */
    ks_spmv_params spmv;
    char matrix_file[KS_PATH_MAX]; /* "" when the generator is used */
    ks_gen_params gen;             /* default: poisson3d_7 sized to take seconds */
    char rhs_file[KS_PATH_MAX];    /* "" when rhs_kind is used */
    char rhs_kind[KS_NAME_MAX];    /* "A_ones" (b = A*1, default), "ones", "A_sin", "zero" */
    int nrhs;                      /* right-hand sides (--nrhs): 0 = the file's columns, or 1 */
    char x0_file[KS_PATH_MAX];     /* initial guess; "" = x0 = 0 */
    char solution_file[KS_PATH_MAX]; /* "" = do not write */
    int threads;                   /* OpenMP threads; 0 = OpenMP's default (OMP_NUM_THREADS) */
    char gpu_map[64];              /* the GPU each process takes; "" = KS_GPU_MAP, else "local" */
} ks_problem_params;

/* Documented defaults (docs/config.md lists the same values). */
void ks_problem_params_default(ks_problem_params *p);

/* The keys, their rules and their dump (problem_keys.c): pass it to
 * ks_config_create_*_scoped. */
extern const ks_config_scope ks_problem_scope;

/* The problem of a config created with ks_problem_scope; NULL for a config
 * without it. Valid until the next set or destroy of cfg. */
const ks_problem_params *ks_problem_params_of(const ks_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
