/* Documented defaults (docs/config.md lists the same values). */
#include "params.h"

#include <string.h>

const ks_name ks_conv_names[] = {
    {"ABSOLUTE", KS_CONV_ABSOLUTE, 0},
    {"RELATIVE_INI", KS_CONV_RELATIVE_INI, 0},
    {"RELATIVE_RHS", KS_CONV_RELATIVE_RHS, 0},
    {"RELATIVE_INI_CORE", KS_CONV_RELATIVE_INI, 1}, /* AmgX's name */
    {NULL, 0, 0}};
const ks_name ks_norm_names[] = {
    {"L1", KS_NORM_L1, 0}, {"L2", KS_NORM_L2, 0}, {"LMAX", KS_NORM_LMAX, 0}, {NULL, 0, 0}};

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
    p->gmres_n_restart = 30;
    p->gmres_krylov_dim = 0;
    /* The default problem of ksolve is PCG + classical AMG. */
    strcpy(p->pc.solver, "AMG");
    p->pc.relaxation_factor = 1.0;
    ks_amg_params_default(&p->pc.amg);
}

int ks_solver_params_is_gmres(const ks_solver_params *p)
{
    return strcmp(p->solver, "GMRES") == 0 || strcmp(p->solver, "FGMRES") == 0;
}

int ks_solver_params_gmres_m(const ks_solver_params *p)
{
    int m = p->gmres_n_restart;
    if (p->gmres_krylov_dim > 0 && p->gmres_krylov_dim < m)
        m = p->gmres_krylov_dim;
    if (p->max_iters > 0 && p->max_iters < m)
        m = p->max_iters;
    return m < 1 ? 1 : m;
}
