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
    strcpy(p->pc.solver, "JACOBI");
    p->pc.relaxation_factor = 1.0;
}

void ks_problem_params_default(ks_problem_params *p)
{
    memset(p, 0, sizeof *p);
    strcpy(p->backend, "cpu");
    strcpy(p->spmv_format, "auto");
    ks_gen_params_default(&p->gen);
    /* The embedded default problem: 3D Poisson 7-point, 64^3 (262,144 rows),
     * which finishes in seconds with PCG + Jacobi on either backend. */
    p->gen.kind = KS_GEN_POISSON3D_7;
    p->gen.nx = p->gen.ny = p->gen.nz = 64;
    strcpy(p->rhs_kind, "A_ones");
}
