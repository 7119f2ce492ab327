/* The hierarchy summary of the public API (ks_solver_hierarchy): sizes,
 * memory and format per level, complexities, setup phases, and the cycle
 * profile that cycle.c records step by step while profiling is on. */
#include "hierarchy.h"

#include <string.h>

static const char *const step_names[KS_NSTEPS] = {"presmooth", "residual", "restrict",
                                                  "prolong",   "coarse",   "postsmooth"};

ks_error ks_amg_info(ks_amg *amg, ks_hierarchy_info *info)
{
    memset(info, 0, sizeof *info);
    info->step_names = step_names;
    if (!amg || amg->nlevels < 1)
        return KS_OK;
    if (!amg->info) {
        amg->info = ks_calloc((size_t)amg->prm.max_levels, sizeof *amg->info, "AMG summary");
        if (!amg->info)
            return KS_ERR_MEMORY;
    }
    for (int l = 0; l < amg->nlevels; l++) {
        const ks_amg_level *L = &amg->levels[l];
        ks_hierarchy_level *h = &amg->info[l];
        memset(h, 0, sizeof *h);
        const int dist = amg->ranks > 0, last = l == amg->nlevels - 1;
        h->rows = dist ? (ks_int)L->rows_global : L->A.nrows;
        h->nnz = dist ? L->nnz_global : L->A.nnz;
        h->p_nnz = last ? 0 : dist ? L->p_nnz_global : L->P.nnz;
        h->r_nnz = last ? 0 : dist ? L->r_nnz_global : L->R.nnz;
        h->bytes = ks_amg_level_bytes(amg, l);
        h->format = ks_matrix_format(ks_amg_cycle_matrix(amg, l));
        if (amg->prof_seconds)
            for (int k = 0; k < KS_NSTEPS; k++) {
                h->step_seconds[k] = amg->prof_seconds[l][k];
                h->step_calls[k] = amg->prof_calls[l][k];
            }
    }
    /* the whole hierarchy as the backend counted it (per level: estimates) */
    info->bytes = amg->bytes;
    info->nlevels = amg->nlevels;
    info->coarse_direct = amg->coarse_inv != NULL;
    info->levels = amg->info;
    info->location = ks_backend_host_memory(amg->be) ? "host" : "device";
    info->ranks = amg->ranks;
    info->grid_complexity = amg->grid_complexity;
    info->operator_complexity = amg->operator_complexity;
    info->last_was_resetup = amg->last_was_resetup;
    info->resetup_rebuilt = amg->last_was_resetup && amg->resetup_fell_back;
    info->setup_seconds = amg->last_was_resetup ? amg->resetup_seconds : amg->setup_seconds;
    for (int k = 0; k < KS_AMG_NPHASES && k < KS_MAX_PHASES; k++) {
        info->phase_names[k] = ks_amg_phase_names[k];
        info->phase_seconds[k] = amg->phase_seconds[k];
        info->nphases = k + 1;
    }
    info->profiled_cycles = amg->profiled_cycles;
    return KS_OK;
}

ks_error ks_amg_profile(ks_amg *amg, int on)
{
    if (!amg)
        return ks_seterr(KS_ERR_ARG, "AMG profile: no hierarchy");
    amg->profile = 0;
    amg->profiled_cycles = 0;
    if (!on)
        return KS_OK;
    size_t nl = (size_t)amg->prm.max_levels;
    if (!amg->prof_seconds) {
        amg->prof_seconds = ks_calloc(nl, sizeof *amg->prof_seconds, "AMG cycle profile");
        amg->prof_calls = ks_calloc(nl, sizeof *amg->prof_calls, "AMG cycle profile");
        if (!amg->prof_seconds || !amg->prof_calls)
            return KS_ERR_MEMORY;
    }
    memset(amg->prof_seconds, 0, nl * sizeof *amg->prof_seconds);
    memset(amg->prof_calls, 0, nl * sizeof *amg->prof_calls);
    /* The graph replays the cycle as one launch: nothing to time per step. */
    ks_amg_graph_reset(amg);
    amg->profile = 1;
    return KS_OK;
}

void ks_amg_profile_add(ks_amg *amg, int l, ks_cycle_step step, double seconds)
{
    amg->prof_seconds[l][step] += seconds;
    amg->prof_calls[l][step]++;
}
