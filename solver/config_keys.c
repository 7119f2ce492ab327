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

/* When a key applies: every key that depends on another key's choice says
 * so here, and one rule (key_applies, in solver_check; the dump uses it
 * too) treats them all. AMG settings live in the preconditioner scope when
 * AMG preconditions a Krylov method, and in the solver scope when AMG is
 * the solver; both fill ks_precond_params.amg. */
enum cond {
    C_ALL,            /* always */
    C_NOT_SOLVER_AMG, /* the preconditioner scope: not with "solver": "AMG" */
    C_PC_RELAX,       /* the preconditioner's relaxation_factor: Jacobi's damping (JACOBI,
                       * JACOBI_L1), or under AMG AmgX's name of the smoother's */
    C_PC_AMG,         /* AMG keys of the preconditioner scope */
    C_SOLVER_AMG,     /* AMG keys of the solver scope */
    C_GMRES           /* the restart keys: solver GMRES or FGMRES */
};
/* Keys that only one choice of an AMG component reads carry flags beside
 * their scope's condition (needs[] says which choice each flag asks for). */
#define C_BASE 0xff
#define F_CLASSICAL 0x100  /* the algorithm is CLASSICAL */
#define F_HMIS 0x200       /* the selector is HMIS */
#define F_AGGRESSIVE 0x400 /* aggressive_levels > 0 */
#define F_CHEB 0x800       /* the smoother is CHEBYSHEV */
#define F_DAMPED 0x1000    /* the smoother is damped by relaxation_factor: not CHEBYSHEV */
#define F_ALIAS 0x2000     /* AmgX's name of another key: never dumped (that key shows it) */

/* The library's block: the solver settings, then what only the validation
 * needs. ks_config_solver_params reads the block as its first member. */
typedef struct solver_block {
    ks_solver_params s;
    /* "solver.relaxation_factor" (standalone AMG): AmgX's smoother, given by
     * name, reads its damping from the AMG scope; mapped to
     * smoother.relaxation_factor by solver_check */
    double amg_relaxation_factor;
} solver_block;

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
#define B_(m) offsetof(solver_block, m), sizeof(((solver_block *)0)->m)

/* The AMG keys below scope P, applying under condition C. */
#define AMG_SPECS(P, C)                                                                            \
    KEY(P ".algorithm", KT_ENUM, 0, 0, 0, 0,                                                       \
        NULL, algorithm_choices, ST_ENUM_INT, A_(algorithm), NULL, C),                             \
    KEY(P ".selector", KT_ENUM, 0, 0, 0, 0,                                                        \
        NULL, selector_choices, ST_ENUM_INT, A_(selector), NULL, C | F_CLASSICAL),                 \
    KEY(P ".hmis_block_rows", KT_INT, -1, INT_MAX, 0, 0,                                           \
        NULL, NULL, ST_INT, A_(hmis_block_rows), NULL, C | F_CLASSICAL | F_HMIS),                  \
    KEY(P ".interpolator", KT_ENUM, 0, 0, 0, 0,                                                    \
        NULL, interp_choices, ST_ENUM_INT, A_(interpolator), NULL, C | F_CLASSICAL),               \
    KEY(P ".strength_threshold", KT_NUM, 0, 1, 0, 0,                                               \
        NULL, NULL, ST_DOUBLE, A_(strength_threshold), NULL, C),                                   \
    KEY(P ".max_row_sum", KT_NUM, 0, 1, 1, 0,                                                      \
        NULL, NULL, ST_DOUBLE, A_(max_row_sum), NULL, C | F_CLASSICAL),                            \
    KEY(P ".interp_max_elements", KT_INT, 0, INT_MAX, 0, 0,                                        \
        NULL, NULL, ST_INT, A_(interp_max_elements), NULL, C | F_CLASSICAL),                       \
    KEY(P ".interp_truncation_factor", KT_NUM, 0, 1, 0, 1,                                         \
        NULL, NULL, ST_DOUBLE, A_(interp_truncation_factor), NULL, C | F_CLASSICAL),               \
    KEY(P ".aggressive_levels", KT_INT, 0, 100, 0, 0,                                              \
        NULL, NULL, ST_INT, A_(aggressive_levels), NULL, C | F_CLASSICAL),                         \
    KEY(P ".aggressive_interpolator", KT_ENUM, 0, 0, 0, 0, NULL, interp_choices, ST_ENUM_INT,      \
        A_(aggressive_interpolator), NULL, C | F_CLASSICAL | F_AGGRESSIVE),                        \
    KEY(P ".smoother", KT_SCOPE, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, "solver", C),             \
    KEY(P ".smoother.scope", KT_IGNORED, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, C),         \
    KEY(P ".smoother.solver", KT_ENUM, 0, 0, 0, 0,                                                 \
        NULL, smoother_choices, ST_ENUM_INT, SM_(solver), NULL, C),                                \
    KEY(P ".smoother.relaxation_factor", KT_NUM, 0, 2, 0, 1,                                       \
        NULL, NULL, ST_DOUBLE, SM_(relaxation_factor), NULL, C | F_DAMPED),                        \
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
    KEY("solver.preconditioner.relaxation_factor", KT_NUM, 0, 2, 1, 0, NULL, NULL, ST_DOUBLE, S_(pc.relaxation_factor), NULL, C_PC_RELAX),
    AMG_SPECS("solver.preconditioner", C_PC_AMG)
    AMG_SPECS("solver", C_SOLVER_AMG)
    /* AmgX's damping in the AMG scope (the preconditioner scope's is the
     * key above): the smoother's range and default */
    KEY("solver.relaxation_factor", KT_NUM, 0, 2, 0, 1, NULL, NULL, ST_DOUBLE, B_(amg_relaxation_factor), NULL, C_SOLVER_AMG | F_DAMPED | F_ALIAS),
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

/* The choice each flag asks for: the key it depends on (relative to the
 * AMG scope), what reads the flagged keys, and what to choose instead. In
 * check order: a CLASSICAL-only key under AGGREGATION names the algorithm,
 * not the selector. */
typedef struct need {
    int flag;
    const char *choice, *reader, *instead;
} need;
static const need needs[] = {
    {F_CLASSICAL, "algorithm", "the CLASSICAL algorithm", "choose CLASSICAL"},
    {F_HMIS, "selector", "the HMIS selector", "choose HMIS"},
    {F_AGGRESSIVE, "aggressive_levels", "aggressive coarsening", "set aggressive_levels >= 1"},
    {F_CHEB, "smoother.solver", "the CHEBYSHEV smoother", "choose CHEBYSHEV"},
    {F_DAMPED, "smoother.solver", "the JACOBI, JACOBI_L1, GS and SGS smoothers",
     "choose one of them"},
};
#define NNEEDS ((int)(sizeof needs / sizeof needs[0]))

static int need_holds(const ks_amg_params *a, int flag)
{
    switch (flag) {
    case F_CLASSICAL: return a->algorithm == KS_AMG_CLASSICAL;
    case F_HMIS: return a->selector == KS_AMG_HMIS;
    case F_AGGRESSIVE: return a->aggressive_levels > 0;
    case F_CHEB: return a->smoother.solver == KS_SMOOTHER_CHEBYSHEV;
    case F_DAMPED: return a->smoother.solver != KS_SMOOTHER_CHEBYSHEV;
    default: return 1;
    }
}

/* The value of a need's choice key, as written in a config. */
static const char *need_value(const ks_amg_params *a, int flag, char *buf, size_t len)
{
    switch (flag) {
    case F_CLASSICAL: return ks_name_of(ks_amg_algorithm_names, a->algorithm);
    case F_HMIS: return ks_name_of(ks_amg_selector_names, a->selector);
    case F_AGGRESSIVE: snprintf(buf, len, "%d", a->aggressive_levels); return buf;
    default: return ks_name_of(ks_amg_smoother_names, a->smoother.solver);
    }
}

/* The scope's condition of a key (before the choice flags). */
static int base_holds(const ks_solver_params *s, int cond)
{
    int samg = solver_is_amg(s);
    int pcamg = !samg && strcmp(s->pc.solver, "AMG") == 0;
    switch (cond & C_BASE) {
    case C_NOT_SOLVER_AMG: return !samg;
    case C_PC_RELAX:
        return !samg && (pcamg || strcmp(s->pc.solver, "JACOBI") == 0 ||
                         strcmp(s->pc.solver, "JACOBI_L1") == 0);
    case C_PC_AMG: return pcamg;
    case C_SOLVER_AMG: return samg;
    case C_GMRES: return ks_solver_params_is_gmres(s);
    default: return 1;
    }
}

/* The first flag of cond whose choice does not hold (0: none). */
static int failed_need(const ks_solver_params *s, int cond)
{
    for (int j = 0; j < NNEEDS; j++)
        if ((cond & needs[j].flag) && !need_holds(&s->pc.amg, needs[j].flag))
            return j + 1;
    return 0;
}

/* cond as it holds for s: the preconditioner's relaxation_factor under
 * AMG is the smoother's damping, read by the damped smoothers only. */
static int cond_for(const ks_solver_params *s, int cond)
{
    if ((cond & C_BASE) == C_PC_RELAX && !solver_is_amg(s) && strcmp(s->pc.solver, "AMG") == 0)
        cond |= F_DAMPED | F_ALIAS;
    return cond;
}

/* Whether a key with this cond applies to the configuration s. */
static int key_applies(const ks_solver_params *s, int cond)
{
    cond = cond_for(s, cond);
    return base_holds(s, cond) && failed_need(s, cond) == 0;
}

static int rule_applies(const void *block, int cond) { return key_applies(block, cond); }

/* The dump's: AmgX's names (F_ALIAS) are left out, the key they name
 * shows the value. */
static int solver_applies(const void *block, int cond)
{
    return !(cond_for(block, cond) & F_ALIAS) && key_applies(block, cond);
}

/* Why key k does not apply: "<why>" after "path: " (the scope first: its
 * message is the one that helps). */
static void why_not(const ks_solver_params *s, const ks_key_spec *k, char *buf, size_t len)
{
    int cond = cond_for(s, k->cond);
    if (base_holds(s, cond)) {
        const need *nd = &needs[failed_need(s, cond) - 1];
        const char *scope = (k->cond & C_BASE) == C_SOLVER_AMG ? "solver" : "solver.preconditioner";
        char v[32];
        snprintf(buf, len, "applies to %s only, but %s.%s is %s (remove the key, or %s)",
                 nd->reader, scope, nd->choice, need_value(&s->pc.amg, nd->flag, v, sizeof v),
                 nd->instead);
        return;
    }
    switch (cond & C_BASE) {
    case C_NOT_SOLVER_AMG:
        snprintf(buf, len, "the AMG solver takes no preconditioner (its AMG settings, e.g. "
                           "'smoother', go directly in the solver scope)");
        return;
    case C_PC_RELAX:
        if (solver_is_amg(s))
            snprintf(buf, len, "the AMG solver takes no preconditioner (its smoother's damping "
                               "is solver.smoother.relaxation_factor)");
        else
            snprintf(buf, len, "applies to the JACOBI and JACOBI_L1 preconditioners and AMG's "
                               "smoother only, but solver.preconditioner.solver is %s (remove "
                               "the key, or choose JACOBI or JACOBI_L1)",
                     s->pc.solver);
        return;
    case C_PC_AMG:
        snprintf(buf, len, "an AMG setting, but solver.preconditioner.solver is %s (set it to "
                           "AMG, or remove the key)", s->pc.solver);
        return;
    case C_SOLVER_AMG:
        snprintf(buf, len, "an AMG setting, but solver.solver is %s (for AMG as the "
                           "preconditioner put it in solver.preconditioner; for AMG alone set "
                           "solver.solver to AMG)", s->solver);
        return;
    case C_GMRES:
        snprintf(buf, len, "a GMRES setting, but solver.solver is %s (it applies to GMRES and "
                           "FGMRES)", s->solver);
        return;
    default:
        snprintf(buf, len, "internal schema error");
    }
}

static void why_not_cb(const void *block, const ks_key_spec *k, char *buf, size_t len)
{
    why_not(block, k, buf, len);
}

/* AmgX's relaxation_factor in an AMG scope (solver.preconditioner with
 * AMG, or solver for AMG alone): AmgX's smoother, given there by name,
 * reads its damping from that scope; here it is the smoother's own
 * relaxation_factor. Where the smoother is not damped (CHEBYSHEV) the rule
 * for keys that do not apply has already refused it, or warned about it
 * when it is the default; here it goes to the smoother, and giving both
 * keys with different values is an error naming both. */
static ks_error amg_scope_damping(solver_block *b, const unsigned char *g)
{
    ks_solver_params *s = &b->s;
    int samg = solver_is_amg(s);
    if (!samg && strcmp(s->pc.solver, "AMG") != 0)
        return KS_OK;
    const char *scope = samg ? "solver" : "solver.preconditioner";
    char path[64], own[80];
    snprintf(path, sizeof path, "%s.relaxation_factor", scope);
    snprintf(own, sizeof own, "%s.smoother.relaxation_factor", scope);
    if (!given(g, path) || !need_holds(&s->pc.amg, F_DAMPED))
        return KS_OK;
    double w = samg ? b->amg_relaxation_factor : s->pc.relaxation_factor;
    if (given(g, own) && s->pc.amg.smoother.relaxation_factor != w)
        return ks_seterr(KS_ERR_CONFIG,
                         "%s: AmgX's name here for %s, which is given too with another value "
                         "(%g and %g): give one of them",
                         path, own, w, s->pc.amg.smoother.relaxation_factor);
    if (!(w < 2.0)) /* the preconditioner's key allows 2, the smoother's not */
        return ks_seterr(KS_ERR_CONFIG, "%s: must be in [0, 2) as the damping of AMG's smoother "
                                        "(got %g)", path, w);
    s->pc.amg.smoother.relaxation_factor = w;
    if (!samg) { /* Jacobi's damping stays its default: nothing reads it under AMG */
        ks_solver_params d;
        ks_solver_params_default(&d);
        s->pc.relaxation_factor = d.pc.relaxation_factor;
    }
    return KS_OK;
}

/* Rules between AMG keys; scope is where they were given. */
static ks_error check_amg(const ks_amg_params *a, const char *scope)
{
    if (a->presweeps == 0 && a->postsweeps == 0)
        return ks_seterr(KS_ERR_CONFIG,
                         "%s: presweeps and postsweeps are both 0: the cycle would not smooth",
                         scope);
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
    KS_TRY(ks_config_keys_not_applying(&ks_config_solver_scope, s, g, rule_applies, why_not_cb));
    KS_TRY(amg_scope_damping(block, g));
    if (solver_is_amg(s))
        strcpy(s->pc.solver, "AMG"); /* standalone AMG: its settings are pc.amg */
    if (ks_solver_params_is_gmres(s) && s->norm != KS_NORM_L2)
        return ks_seterr(KS_ERR_CONFIG,
                         "solver.norm: %s minimises the residual's 2-norm and measures no "
                         "other; use L2 (got %s)",
                         s->solver, ks_name_of(ks_norm_names, s->norm));
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

static void solver_defaults(void *block)
{
    solver_block *b = block;
    ks_solver_params_default(&b->s);
    b->amg_relaxation_factor = b->s.pc.amg.smoother.relaxation_factor;
}

const ks_config_scope ks_config_solver_scope = {
    keys, NKEYS, sizeof(solver_block), solver_defaults, solver_check, solver_applies,
};
