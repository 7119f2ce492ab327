/* The library's config keys: config_version and the "solver" tree (AmgX
 * names), the values they may take, and the rules between them. The engine
 * (config.c) reads this table for validation, ks_config_set and the dump;
 * docs/config.md documents the same keys. A client's keys (the ksolve
 * tool's) come in a scope of their own (config_scope.h). */
#include "config_scope.h"
#include "params.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const ks_name solver_choices[] = {
    {"PCG", 0, 0}, {"CG", 1, 0}, {"PBICGSTAB", 2, 0}, {"BICGSTAB", 3, 0}, {"AMG", 4, 0},
    {"GMRES", 5, 0}, {"FGMRES", 6, 0}, {"PIPECG", 7, 0}, {"PIPEBICGSTAB", 8, 0},
    {NULL, 0, 0}};
#define conv_choices ks_conv_names
#define norm_choices ks_norm_names
static const ks_name pc_choices[] = {
    {"NOSOLVER", 0, 0}, {"JACOBI", 1, 0}, {"JACOBI_L1", 2, 0}, {"AMG", 3, 0},
    {"BLOCK_JACOBI", 1, 1}, /* scalar Jacobi: blocks of size 1 */
    {NULL, 0, 0}};
/* AMG enums: amg/params.c's tables (AmgX names and spellings). */
#define algorithm_choices ks_amg_algorithm_names
#define selector_choices ks_amg_selector_names
#define interp_choices ks_amg_interp_names
#define smoother_choices ks_amg_smoother_names
#define cycle_choices ks_amg_cycle_names
#define coarse_choices ks_amg_coarse_solver_names
#define precision_choices ks_amg_precision_names

/* When a key applies (checked after parsing: keys that do not apply are an
 * error when given, and are left out of the dump). AMG settings live in the
 * preconditioner scope when AMG preconditions a Krylov method, and in the
 * solver scope when AMG is the solver; both fill ks_precond_params.amg. */
enum cond {
    C_ALL,            /* always */
    C_NOT_SOLVER_AMG, /* the preconditioner scope: not with "solver": "AMG" */
    C_PC_PLAIN,       /* Jacobi's damping: preconditioner present and not AMG */
    C_PC_AMG,         /* AMG keys of the preconditioner scope */
    C_SOLVER_AMG,     /* AMG keys of the solver scope */
    C_GMRES           /* the restart keys: solver GMRES or FGMRES */
};
/* Keys that only one choice of a component reads carry a flag beside their
 * scope's condition, under the rule for every key that does not apply: given
 * where it does not apply, an error naming the key and the choice. */
#define C_BASE 0xff
#define F_CHEB 0x100 /* the smoother is CHEBYSHEV */

/* One entry: path, type, range (lo, hi, open ends), allowed values
 * (int_set, choices), storage, shorthand and cond; the library's keys
 * exclude no others and need no custom parser. */
#define KEY(path, type, lo, hi, lo_open, hi_open, int_set, choices, store, offsize, shorthand,  \
            cond)                                                                              \
    {path, type, lo, hi, lo_open, hi_open, int_set, choices, store, offsize, shorthand, 0, 0,   \
     cond, NULL, NULL}
#define S_(m) offsetof(ks_solver_params, m), sizeof(((ks_solver_params *)0)->m)
#define NOOFF 0, 0
#define A_(m) S_(pc.amg.m)
#define SM_(m) A_(smoother.m)

/* The AMG keys below scope P, applying under condition C. */
#define AMG_SPECS(P, C)                                                                            \
    KEY(P ".algorithm", KT_ENUM, 0, 0, 0, 0,                                                       \
        NULL, algorithm_choices, ST_ENUM_INT, A_(algorithm), NULL, C),                             \
    KEY(P ".selector", KT_ENUM, 0, 0, 0, 0,                                                        \
        NULL, selector_choices, ST_ENUM_INT, A_(selector), NULL, C),                               \
    KEY(P ".hmis_block_rows", KT_INT, -1, INT_MAX, 0, 0,                                           \
        NULL, NULL, ST_INT, A_(hmis_block_rows), NULL, C),                                         \
    KEY(P ".interpolator", KT_ENUM, 0, 0, 0, 0,                                                    \
        NULL, interp_choices, ST_ENUM_INT, A_(interpolator), NULL, C),                             \
    KEY(P ".strength_threshold", KT_NUM, 0, 1, 0, 0,                                               \
        NULL, NULL, ST_DOUBLE, A_(strength_threshold), NULL, C),                                   \
    KEY(P ".max_row_sum", KT_NUM, 0, 1, 1, 0, NULL, NULL, ST_DOUBLE, A_(max_row_sum), NULL, C),    \
    KEY(P ".interp_max_elements", KT_INT, 0, INT_MAX, 0, 0,                                        \
        NULL, NULL, ST_INT, A_(interp_max_elements), NULL, C),                                     \
    KEY(P ".interp_truncation_factor", KT_NUM, 0, 1, 0, 1,                                         \
        NULL, NULL, ST_DOUBLE, A_(interp_truncation_factor), NULL, C),                             \
    KEY(P ".aggressive_levels", KT_INT, 0, 100, 0, 0,                                              \
        NULL, NULL, ST_INT, A_(aggressive_levels), NULL, C),                                       \
    KEY(P ".aggressive_interpolator", KT_ENUM, 0, 0, 0, 0,                                         \
        NULL, interp_choices, ST_ENUM_INT, A_(aggressive_interpolator), NULL, C),                  \
    KEY(P ".smoother", KT_SCOPE, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, "solver", C),             \
    KEY(P ".smoother.scope", KT_IGNORED, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, C),         \
    KEY(P ".smoother.solver", KT_ENUM, 0, 0, 0, 0,                                                 \
        NULL, smoother_choices, ST_ENUM_INT, SM_(solver), NULL, C),                                \
    KEY(P ".smoother.relaxation_factor", KT_NUM, 0, 2, 0, 1,                                       \
        NULL, NULL, ST_DOUBLE, SM_(relaxation_factor), NULL, C),                                   \
    KEY(P ".smoother.chebyshev_degree", KT_INT, 1, 10, 0, 0,                                       \
        NULL, NULL, ST_INT, SM_(chebyshev_degree), NULL, C | F_CHEB),                              \
    KEY(P ".smoother.chebyshev_lower", KT_NUM, 0, 1, 1, 1,                                         \
        NULL, NULL, ST_DOUBLE, SM_(chebyshev_lower), NULL, C | F_CHEB),                            \
    KEY(P ".presweeps", KT_INT, 0, 100, 0, 0, NULL, NULL, ST_INT, A_(presweeps), NULL, C),         \
    KEY(P ".postsweeps", KT_INT, 0, 100, 0, 0, NULL, NULL, ST_INT, A_(postsweeps), NULL, C),       \
    KEY(P ".cycle", KT_ENUM, 0, 0, 0, 0, NULL, cycle_choices, ST_ENUM_INT, A_(cycle), NULL, C),    \
    KEY(P ".max_levels", KT_INT, 1, 100, 0, 0, NULL, NULL, ST_INT, A_(max_levels), NULL, C),       \
    KEY(P ".min_coarse_rows", KT_INT, 1, INT_MAX, 0, 0,                                            \
        NULL, NULL, ST_INT, A_(min_coarse_rows), NULL, C),                                         \
    KEY(P ".coarse_max_rows", KT_INT, 1, 8192, 0, 0,                                               \
        NULL, NULL, ST_INT, A_(coarse_max_rows), NULL, C),                                         \
    KEY(P ".coarse_solver", KT_ENUM, 0, 0, 0, 0,                                                   \
        NULL, coarse_choices, ST_ENUM_INT, A_(coarse_solver), NULL, C),                            \
    KEY(P ".seed", KT_INT, 0, INFINITY, 0, 0, NULL, NULL, ST_ULL, A_(seed), NULL, C),              \
    KEY(P ".spmv_format", KT_FORMAT, 0, 0, 0, 0,                                                   \
        NULL, NULL, ST_STRING, A_(level_format), NULL, C),                                         \
    KEY(P ".hierarchy_precision", KT_ENUM, 0, 0, 0, 0,                                             \
        NULL, precision_choices, ST_ENUM_INT, A_(hierarchy_precision), NULL, C),                    \
    KEY(P ".print_setup_progress", KT_BOOL, 0, 0, 0, 0,                                            \
        NULL, NULL, ST_INT, A_(print_setup_progress), NULL, C),

/* Order = dump order. Parents precede their children. */
static const ks_key_spec keys[] = {
    KEY("config_version", KT_INT, 2, 2, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, C_ALL),
    KEY("solver", KT_SCOPE, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, C_ALL),
    KEY("solver.scope", KT_IGNORED, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, C_ALL),
    KEY("solver.solver", KT_ENUM, 0, 0, 0, 0, NULL, solver_choices, ST_STRING, S_(solver), NULL, C_ALL),
    KEY("solver.max_iters", KT_INT, 1, INT_MAX, 0, 0, NULL, NULL, ST_INT, S_(max_iters), NULL, C_ALL),
    KEY("solver.tolerance", KT_NUM, 0, INFINITY, 0, 1, NULL, NULL, ST_DOUBLE, S_(tolerance), NULL, C_ALL),
    KEY("solver.convergence", KT_ENUM, 0, 0, 0, 0, NULL, conv_choices, ST_ENUM_INT, S_(convergence), NULL, C_ALL),
    KEY("solver.norm", KT_ENUM, 0, 0, 0, 0, NULL, norm_choices, ST_ENUM_INT, S_(norm), NULL, C_ALL),
    KEY("solver.monitor_residual", KT_BOOL, 0, 0, 0, 0, NULL, NULL, ST_INT, S_(monitor_residual), NULL, C_ALL),
    KEY("solver.print_solve_stats", KT_BOOL, 0, 0, 0, 0, NULL, NULL, ST_INT, S_(print_solve_stats), NULL, C_ALL),
    KEY("solver.store_res_history", KT_BOOL, 0, 0, 0, 0, NULL, NULL, ST_INT, S_(store_res_history), NULL, C_ALL),
    KEY("solver.divergence_factor", KT_NUM, 1, INFINITY, 1, 1, NULL, NULL, ST_DOUBLE, S_(divergence_factor), NULL, C_ALL),
    KEY("solver.gmres_n_restart", KT_INT, 1, 100000, 0, 0, NULL, NULL, ST_INT, S_(gmres_n_restart), NULL, C_GMRES),
    KEY("solver.gmres_krylov_dim", KT_INT, 0, 100000, 0, 0, NULL, NULL, ST_INT, S_(gmres_krylov_dim), NULL, C_GMRES),
    KEY("solver.preconditioner", KT_SCOPE, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, "solver", C_NOT_SOLVER_AMG),
    KEY("solver.preconditioner.scope", KT_IGNORED, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, C_NOT_SOLVER_AMG),
    KEY("solver.preconditioner.solver", KT_ENUM, 0, 0, 0, 0, NULL, pc_choices, ST_STRING, S_(pc.solver), NULL, C_NOT_SOLVER_AMG),
    KEY("solver.preconditioner.relaxation_factor", KT_NUM, 0, 2, 1, 0, NULL, NULL, ST_DOUBLE, S_(pc.relaxation_factor), NULL, C_PC_PLAIN),
    AMG_SPECS("solver.preconditioner", C_PC_AMG)
    AMG_SPECS("solver", C_SOLVER_AMG)
};
#define NKEYS ((int)(sizeof keys / sizeof keys[0]))

_Static_assert(sizeof(ks_conv_kind) == sizeof(int) && sizeof(ks_norm_kind) == sizeof(int) &&
                   sizeof(ks_amg_algorithm) == sizeof(int) &&
                   sizeof(ks_amg_smoother_kind) == sizeof(int),
               "enum-valued keys are stored as int");

static int given(const unsigned char *g, const char *path)
{
    return ks_config_given(&ks_config_solver_scope, g, path);
}

/* Default strength threshold of AGGREGATION (see solver_check). */
#define KS_AGGREGATION_THETA 0.0

static int solver_is_amg(const ks_solver_params *s) { return strcmp(s->solver, "AMG") == 0; }

static int cond_holds(const ks_solver_params *s, int cond)
{
    int samg = solver_is_amg(s);
    int pcamg = !samg && strcmp(s->pc.solver, "AMG") == 0;
    if (cond & F_CHEB) /* the scope first: its message is the one that helps */
        return cond_holds(s, cond & C_BASE) &&
               s->pc.amg.smoother.solver == KS_SMOOTHER_CHEBYSHEV;
    switch (cond) {
    case C_NOT_SOLVER_AMG: return !samg;
    case C_PC_PLAIN: return !samg && !pcamg;
    case C_PC_AMG: return pcamg;
    case C_SOLVER_AMG: return samg;
    case C_GMRES: return ks_solver_params_is_gmres(s);
    default: return 1;
    }
}

static int solver_applies(const void *block, int cond) { return cond_holds(block, cond); }

/* A key that was given but does not apply to the chosen method. */
static ks_error cond_error(const ks_solver_params *s, const ks_key_spec *k)
{
    if ((k->cond & F_CHEB) && cond_holds(s, k->cond & C_BASE)) {
        /* the scope applies, the smoother does not use the key: name the smoother */
        const char *sm = ks_name_of(ks_amg_smoother_names, s->pc.amg.smoother.solver);
        int n = (int)(strrchr(k->path, '.') - k->path);
        return ks_seterr(KS_ERR_CONFIG, "%s: applies to the CHEBYSHEV smoother only, but "
                         "%.*s.solver is %s (remove the key, or choose CHEBYSHEV)",
                         k->path, n, k->path, sm);
    }
    switch (k->cond & C_BASE) {
    case C_NOT_SOLVER_AMG:
        return ks_seterr(KS_ERR_CONFIG,
                         "%s: the AMG solver takes no preconditioner (its AMG settings, e.g. "
                         "'smoother', go directly in the solver scope)",
                         k->path);
    case C_PC_PLAIN:
        return ks_seterr(KS_ERR_CONFIG,
                         "%s: not used by AMG (the smoother's damping is "
                         "solver.preconditioner.smoother.relaxation_factor)",
                         k->path);
    case C_PC_AMG:
        return ks_seterr(KS_ERR_CONFIG,
                         "%s: an AMG setting, but solver.preconditioner.solver is %s (set it to "
                         "AMG, or remove the key)",
                         k->path, s->pc.solver);
    case C_SOLVER_AMG:
        return ks_seterr(KS_ERR_CONFIG,
                         "%s: an AMG setting, but solver.solver is %s (for AMG as the "
                         "preconditioner put it in solver.preconditioner; for AMG alone set "
                         "solver.solver to AMG)",
                         k->path, s->solver);
    case C_GMRES:
        return ks_seterr(KS_ERR_CONFIG,
                         "%s: a GMRES setting, but solver.solver is %s (it applies to GMRES and "
                         "FGMRES)",
                         k->path, s->solver);
    default:
        return ks_seterr(KS_ERR_CONFIG, "%s: internal schema error", k->path);
    }
}

/* Rules between AMG keys; scope is where they were given. */
static ks_error check_amg(const ks_amg_params *a, const char *scope)
{
    if (a->presweeps == 0 && a->postsweeps == 0)
        return ks_seterr(KS_ERR_CONFIG,
                         "%s: presweeps and postsweeps are both 0: the cycle would not smooth",
                         scope);
    if (a->aggressive_levels > 0 && a->algorithm == KS_AMG_AGGREGATION)
        return ks_seterr(KS_ERR_CONFIG,
                         "%s.aggressive_levels: aggressive coarsening applies to the CLASSICAL "
                         "algorithm only (got %d with AGGREGATION, which coarsens aggressively "
                         "already)",
                         scope, a->aggressive_levels);
    /* Whatever the table lets through, the hierarchy's own check must
     * accept too, so a config that loads never fails at setup on a value. */
    return ks_amg_params_check(a, scope);
}

/* Rules that involve more than one key. */
static ks_error solver_check(void *block, const unsigned char *g)
{
    ks_solver_params *s = block;
    int unpre = strcmp(s->solver, "CG") == 0 || strcmp(s->solver, "BICGSTAB") == 0;
    if (unpre) {
        if (given(g, "solver.preconditioner.solver") && strcmp(s->pc.solver, "NOSOLVER") != 0)
            return ks_seterr(KS_ERR_CONFIG, "solver.preconditioner: %s is unpreconditioned; use %s",
                             s->solver, strcmp(s->solver, "CG") == 0 ? "PCG" : "PBICGSTAB");
        strcpy(s->pc.solver, "NOSOLVER"); /* the default AMG does not apply */
    }
    if (solver_is_amg(s))
        strcpy(s->pc.solver, "AMG"); /* standalone AMG: its settings are pc.amg */
    if (ks_solver_params_is_gmres(s) && s->norm != KS_NORM_L2)
        return ks_seterr(KS_ERR_CONFIG,
                         "solver.norm: %s minimises the residual's 2-norm and measures no "
                         "other; use L2 (got %s)",
                         s->solver, ks_name_of(ks_norm_names, s->norm));
    for (int i = 0; i < NKEYS; i++)
        if (g[i] && !cond_holds(s, keys[i].cond))
            return cond_error(s, &keys[i]);
    if (solver_is_amg(s) || strcmp(s->pc.solver, "AMG") == 0) {
        const char *scope = solver_is_amg(s) ? "solver" : "solver.preconditioner";
        char path[64];
        snprintf(path, sizeof path, "%s.strength_threshold", scope);
        /* Aggregation's symmetric measure |a_ij| / sqrt(a_ii a_jj) is 1/6
         * for the 7-point Laplacian and 1/26 for the 27-point one: the
         * classical default 0.25 would leave every point unconnected, so
         * aggregation defaults to 0 (every connection strong, like PyAMG). */
        if (s->pc.amg.algorithm == KS_AMG_AGGREGATION && !given(g, path))
            s->pc.amg.strength_threshold = KS_AGGREGATION_THETA;
        KS_TRY(check_amg(&s->pc.amg, scope));
    }
    return KS_OK;
}

static void solver_defaults(void *block) { ks_solver_params_default(block); }

const ks_config_scope ks_config_solver_scope = {
    keys, NKEYS, sizeof(ks_solver_params), solver_defaults, solver_check, solver_applies,
};
