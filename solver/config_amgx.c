/* AmgX's keys and values that are not the library's: the tables behind
 * config_amgx.h. AmgX's configs carry diagnostic keys (print_grid_stats,
 * obtain_timings, ...) and, since every AmgX scope is a solver, a
 * solver's controls inside the preconditioner and smoother scopes
 * (max_iters: 1, monitor_residual: 0, ...). Here they have no meaning, so
 * each is accepted with one warning that says why, instead of stopping a
 * config that would otherwise solve the same system. Everything else that
 * is not a key of ours stays an unknown key. */
#include "config_amgx.h"

#include <string.h>

/* Where a key may stand: the scope that holds it. */
enum {
    W_TOP = 1,     /* the top level, beside config_version */
    W_MAIN = 2,    /* "solver" */
    W_PC = 4,      /* "solver.preconditioner" */
    W_SM = 8,      /* a smoother: "solver.smoother", "solver.preconditioner.smoother" */
    W_AMG = W_MAIN | W_PC,
    W_INNER = W_PC | W_SM,
    W_SOLVERS = W_MAIN | W_PC | W_SM
};

typedef struct amgx_key {
    const char *name;
    int where;
    const char *maps_to; /* our key's name in the same scope, or NULL: ignored */
    const char *why;     /* the warning's reason (ignored keys) */
} amgx_key;

static const amgx_key amgx_keys[] = {
    /* diagnostics and run-time switches */
    {"determinism_flag", W_TOP | W_MAIN, NULL,
     "ksolve's results are always deterministic (the same bits for any thread count)"},
    {"exception_handling", W_TOP | W_MAIN, NULL,
     "the library never aborts: every call returns a ks_error"},
    {"print_config", W_TOP | W_MAIN, NULL,
     "ksolve prints the configuration with ks_config_dump (ksolve --print-config)"},
    {"print_grid_stats", W_SOLVERS, NULL,
     "ksolve prints the grid table with ks_solver_print_setup (the ksolve tool always does)"},
    {"print_vis_data", W_SOLVERS, NULL, "ksolve writes no visualisation data"},
    {"obtain_timings", W_SOLVERS, NULL,
     "ksolve always times setup and solve (ks_solve_stats, the ksolve tool's report)"},
    {"use_scalar_norm", W_SOLVERS, NULL,
     "ksolve's unknowns are scalars (block size 1): every norm is a scalar norm"},
    /* a solver's controls inside a preconditioner or smoother */
    {"max_iters", W_INNER, NULL,
     "a preconditioner applies one AMG cycle or one Jacobi step per iteration, a smoother "
     "sweeps presweeps/postsweeps times"},
    {"monitor_residual", W_INNER, NULL,
     "a preconditioner or smoother has no residual monitor of its own (solver.monitor_residual "
     "is the solver's)"},
    {"print_solve_stats", W_INNER, NULL,
     "a preconditioner or smoother prints no statistics of its own (solver.print_solve_stats "
     "is the solver's)"},
    {"store_res_history", W_INNER, NULL,
     "a preconditioner or smoother keeps no residual history (solver.store_res_history is the "
     "solver's)"},
    {"tolerance", W_INNER, NULL,
     "a preconditioner or smoother runs a fixed number of cycles or sweeps and tests no "
     "convergence"},
    {"convergence", W_INNER, NULL,
     "a preconditioner or smoother runs a fixed number of cycles or sweeps and tests no "
     "convergence"},
    {"norm", W_INNER, NULL,
     "a preconditioner or smoother runs a fixed number of cycles or sweeps and computes no norm"},
    /* settings ksolve does not have */
    {"scaling", W_MAIN, NULL,
     "ksolve solves the system as given, without scaling the matrix (the solution is the same)"},
    {"error_scaling", W_AMG, NULL, "ksolve's cycle adds each coarse correction unscaled"},
    {"coarsest_sweeps", W_AMG, NULL,
     "ksolve solves the coarsest level directly (coarse_solver DENSE_LU): no sweeps there"},
    {"structure_reuse_levels", W_AMG, NULL,
     "ks_solver_resetup reuses the structure of every level when only values change"},
    {"aggressive_selector", W_AMG, NULL,
     "aggressive levels here split with the level's own selector"},
    {"strength", W_AMG, NULL,
     "ksolve's strength of connection is the classical measure (CLASSICAL) or the symmetric "
     "one (AGGREGATION), chosen by algorithm"},
    {"matrix_coloring_scheme", W_SOLVERS, NULL,
     "ksolve's GS and SGS smoothers are hybrid (Gauss-Seidel within row blocks), not "
     "multicolour: nothing is coloured"},
    {"max_uncolored_percentage", W_SOLVERS, NULL,
     "ksolve's GS and SGS smoothers are hybrid (Gauss-Seidel within row blocks), not "
     "multicolour: nothing is coloured"},
    {"coloring_level", W_SOLVERS, NULL,
     "ksolve's GS and SGS smoothers are hybrid (Gauss-Seidel within row blocks), not "
     "multicolour: nothing is coloured"},
    /* AmgX's CHEBYSHEV smoother */
    {"chebyshev_polynomial_order", W_SM, "chebyshev_degree", NULL},
    {"chebyshev_lambda_estimate_mode", W_SM, NULL,
     "ksolve estimates the largest eigenvalue of D^-1 A by Lanczos steps at setup"},
    {"cheby_max_lambda", W_SM, NULL,
     "ksolve estimates the largest eigenvalue of D^-1 A itself (chebyshev_lower sets the "
     "interval's lower end)"},
    {"cheby_min_lambda", W_SM, NULL,
     "ksolve sets the interval's lower end by chebyshev_lower"},
    {"preconditioner", W_SM, NULL,
     "ksolve's CHEBYSHEV smoother is always Jacobi-scaled (a polynomial in D^-1 A)"},
};
#define NKEYS ((int)(sizeof amgx_keys / sizeof amgx_keys[0]))

/* The scope that holds path, as a W_ bit (0: not one of the library's). */
static int where_is(const char *path, const char **name)
{
    const char *dot = strrchr(path, '.');
    *name = dot ? dot + 1 : path;
    size_t n = dot ? (size_t)(dot - path) : 0;
    if (n == 0)
        return W_TOP;
    if (n == 6 && strncmp(path, "solver", 6) == 0)
        return W_MAIN;
    if (n == 21 && strncmp(path, "solver.preconditioner", 21) == 0)
        return W_PC;
    if ((n == 15 && strncmp(path, "solver.smoother", 15) == 0) ||
        (n == 30 && strncmp(path, "solver.preconditioner.smoother", 30) == 0))
        return W_SM;
    return 0;
}

ks_foreign_kind ks_config_amgx_key(const char *path, char *to, size_t tolen, const char **why)
{
    const char *name;
    int w = where_is(path, &name);
    for (int i = 0; i < NKEYS && w; i++) {
        const amgx_key *k = &amgx_keys[i];
        if (!(k->where & w) || strcmp(k->name, name) != 0)
            continue;
        if (k->maps_to) {
            size_t n = (size_t)(name - path);
            if (n + strlen(k->maps_to) + 1 > tolen)
                return KS_FOREIGN_NONE;
            memcpy(to, path, n);
            strcpy(to + n, k->maps_to);
            return KS_FOREIGN_MAP;
        }
        *why = k->why;
        return KS_FOREIGN_WARN;
    }
    return KS_FOREIGN_NONE;
}

/* AmgX's values of our choice keys that have no counterpart here. */
typedef struct amgx_value {
    const char *key, *value, *why;
} amgx_value;

#define AGG_SELECTOR                                                                              \
    "AmgX's aggregation selector: ksolve's AGGREGATION forms its aggregates from a distance-2 "   \
    "maximal independent set, and the selector applies to CLASSICAL only (PMIS, HMIS)"
static const amgx_value amgx_values[] = {
    {"selector", "SIZE_2", AGG_SELECTOR},
    {"selector", "SIZE_4", AGG_SELECTOR},
    {"selector", "SIZE_8", AGG_SELECTOR},
    {"selector", "MULTI_PAIRWISE", AGG_SELECTOR},
    {"selector", "PARALLEL_GREEDY_SELECTOR", AGG_SELECTOR},
    {"coarse_solver", "NOSOLVER",
     "AmgX's NOSOLVER only smooths the coarsest level; ksolve solves it directly (DENSE_LU)"},
};

const char *ks_config_amgx_value(const char *path, const char *value)
{
    const char *name;
    int w = where_is(path, &name);
    if (!(w & W_AMG))
        return NULL;
    for (size_t i = 0; i < sizeof amgx_values / sizeof amgx_values[0]; i++)
        if (strcmp(amgx_values[i].key, name) == 0 && strcmp(amgx_values[i].value, value) == 0)
            return amgx_values[i].why;
    return NULL;
}
