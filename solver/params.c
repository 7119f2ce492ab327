/* Documented defaults (docs/config.md lists the same values). */
#include "params.h"

#include <string.h>

void ks_solver_params_default(ks_solver_params *p)
{
    memset(p, 0, sizeof *p);
    strcpy(p->solver, "PCG");
    p->max_iters = 1000;
    p->tolerance = 1e-8;
    p->convergence = KS_CONV_RELATIVE_RHS;
    p->norm = KS_NORM_L2;
    p->monitor_residual = 0;
    p->print_solve_stats = 0;
    p->store_res_history = 1;
    p->divergence_factor = 1e10;
    /* The default problem of ksolve is PCG + classical AMG. */
    strcpy(p->pc.solver, "AMG");
    p->pc.relaxation_factor = 1.0;
    ks_amg_params_default(&p->pc.amg);
}

void ks_amg_params_default(ks_amg_params *p)
{
    memset(p, 0, sizeof *p);
    strcpy(p->algorithm, "CLASSICAL");
    strcpy(p->selector, "HMIS");
    strcpy(p->interpolator, "D2");
    p->strength_threshold = 0.25;
    p->max_row_sum = 0.9;
    p->interp_max_elements = 4;
    p->interp_truncation_factor = 0.0;
    p->aggressive_levels = 0;
    strcpy(p->smoother.solver, "CHEBYSHEV");
    p->smoother.relaxation_factor = 1.0;
    p->smoother.chebyshev_degree = 2;
    p->smoother.chebyshev_lower = 0.3;
    p->presweeps = 1;
    p->postsweeps = 1;
    strcpy(p->cycle, "V");
    p->max_levels = 25;
    p->min_coarse_rows = 2;
    p->coarse_max_rows = 300;
    strcpy(p->coarse_solver, "DENSE_LU");
    p->seed = 1;
    strcpy(p->level_format, "auto");
    strcpy(p->hierarchy_precision, "DOUBLE");
}

void ks_problem_params_default(ks_problem_params *p)
{
    memset(p, 0, sizeof *p);
    strcpy(p->backend, "cpu");
    strcpy(p->spmv_format, "auto");
    ks_gen_params_default(&p->gen);
    /* The embedded default problem: 3D Poisson 7-point, 64^3 (262,144 rows),
     * which finishes in seconds with PCG + AMG (or PCG + Jacobi) on either
     * backend. */
    p->gen.kind = KS_GEN_POISSON3D_7;
    p->gen.nx = p->gen.ny = p->gen.nz = 64;
    strcpy(p->rhs_kind, "A_ones");
}
