/* JSON configuration: AmgX-style scopes ("solver": {...}) plus ksolve's own
 * problem keys. One schema table below describes every key (path, type,
 * range or choices, where the value goes); validation, ks_config_set,
 * ks_config_dump and docs/config.md all follow that table. The JSON tree is
 * kept as given (for dump and set); after every create/set it is validated
 * from scratch into ks_solver_params + ks_problem_params, starting from the
 * defaults of params.c, so a config is never half-applied. */
#include "config_scope.h"
#include "params.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

typedef struct cfg_params {
    ks_solver_params s;
    ks_problem_params p;
} cfg_params;

struct ks_config {
    json_t *root;   /* the user's tree (paths resolved, sets applied) */
    cfg_params prm; /* parsed and validated */
};

/* ------------------------------------------------------------- the schema */
typedef enum key_type {
    KT_SCOPE,   /* object holding more keys */
    KT_INT,     /* integer in [lo, hi] or in int_set */
    KT_NUM,     /* finite number in the range lo..hi (open ends per flags) */
    KT_BOOL,    /* true/false or 0/1 */
    KT_ENUM,    /* one of `choices` (exact spelling) */
    KT_STR,     /* non-empty string */
    KT_PATH,    /* non-empty file path (relative to a config file's folder) */
    KT_GEN,     /* generator name (ks_gen_kind_from_name) */
    KT_GRID,    /* integer or array of 2..3 integers */
    KT_VEC3,    /* array of 3 numbers */
    KT_IGNORED  /* accepted and ignored (AmgX's "scope" labels) */
} key_type;

/* Allowed values of an enum key (core/names.h): the enum's own table for
 * keys stored as an enum (ST_ENUM_INT); for keys stored as a string, value
 * is the index of the canonical name to store. */
typedef ks_name choice;

enum store { ST_NONE, ST_INT, ST_DOUBLE, ST_STRING, ST_ENUM_INT, ST_ULL };
enum { XG_NONE, XG_MATRIX, XG_RHS }; /* groups of mutually exclusive keys */

/* When a key applies (checked after parsing; keys that do not apply are an
 * error when given and are left out of the dump). AMG settings live in the
 * preconditioner scope when AMG preconditions a Krylov method, and in the
 * solver scope when AMG is the solver; both fill ks_precond_params.amg. */
enum cond {
    C_ALL,            /* always */
    C_NOT_SOLVER_AMG, /* the preconditioner scope: not with "solver": "AMG" */
    C_PC_PLAIN,       /* Jacobi's damping: preconditioner present and not AMG */
    C_PC_AMG,         /* AMG keys of the preconditioner scope */
    C_SOLVER_AMG      /* AMG keys of the solver scope */
};

typedef struct key_spec {
    const char *path;
    key_type type;
    double lo, hi;
    unsigned char lo_open, hi_open;
    const int *int_set; /* KT_INT: allowed values, terminated by -1 */
    const choice *choices; /* KT_ENUM: terminated by a NULL name */
    enum store store;
    size_t off, size;   /* destination inside cfg_params */
    const char *shorthand; /* KT_SCOPE: a string value means {shorthand: value} */
    int xgroup, xside;  /* setting one side removes the other (ks_config_set) */
    int cond;           /* enum cond */
} key_spec;

static const choice solver_choices[] = {
    {"PCG", 0, 0}, {"CG", 1, 0}, {"PBICGSTAB", 2, 0}, {"BICGSTAB", 3, 0}, {"AMG", 4, 0},
    {NULL, 0, 0}};
#define conv_choices ks_conv_names
#define norm_choices ks_norm_names
static const choice pc_choices[] = {
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
static const choice backend_choices[] = {
    {"cpu", 0, 0}, {"cuda", 1, 0}, {"cpu,cuda", 2, 0}, {NULL, 0, 0}};
static const choice rhs_choices[] = {
    {"A_ones", 0, 0}, {"ones", 1, 0}, {"A_sin", 2, 0}, {"zero", 3, 0}, {NULL, 0, 0}};
static const int tpr_set[] = {0, 1, 2, 4, 8, 16, 32, -1};

#define S_(m) offsetof(cfg_params, s.m), sizeof(((cfg_params *)0)->s.m)
#define P_(m) offsetof(cfg_params, p.m), sizeof(((cfg_params *)0)->p.m)
#define NOOFF 0, 0
#define A_(m) offsetof(cfg_params, s.pc.amg.m), sizeof(((cfg_params *)0)->s.pc.amg.m)
#define SM_(m) A_(smoother.m)

/* The AMG keys below scope P, applying under condition C. */
#define AMG_SPECS(P, C)                                                                        \
    {P ".algorithm", KT_ENUM, 0, 0, 0, 0, NULL, algorithm_choices, ST_ENUM_INT, A_(algorithm),   \
     NULL, 0, 0, C},                                                                           \
    {P ".selector", KT_ENUM, 0, 0, 0, 0, NULL, selector_choices, ST_ENUM_INT, A_(selector), NULL, \
     0, 0, C},                                                                                 \
    {P ".hmis_block_rows", KT_INT, -1, INT_MAX, 0, 0, NULL, NULL, ST_INT, A_(hmis_block_rows),  \
     NULL, 0, 0, C},                                                                           \
    {P ".interpolator", KT_ENUM, 0, 0, 0, 0, NULL, interp_choices, ST_ENUM_INT,                  \
     A_(interpolator), NULL, 0, 0, C},                                                         \
    {P ".strength_threshold", KT_NUM, 0, 1, 0, 0, NULL, NULL, ST_DOUBLE,                       \
     A_(strength_threshold), NULL, 0, 0, C},                                                   \
    {P ".max_row_sum", KT_NUM, 0, 1, 1, 0, NULL, NULL, ST_DOUBLE, A_(max_row_sum), NULL, 0, 0, \
     C},                                                                                       \
    {P ".interp_max_elements", KT_INT, 0, INT_MAX, 0, 0, NULL, NULL, ST_INT,                   \
     A_(interp_max_elements), NULL, 0, 0, C},                                                  \
    {P ".interp_truncation_factor", KT_NUM, 0, 1, 0, 1, NULL, NULL, ST_DOUBLE,                 \
     A_(interp_truncation_factor), NULL, 0, 0, C},                                             \
    {P ".aggressive_levels", KT_INT, 0, 100, 0, 0, NULL, NULL, ST_INT,                         \
     A_(aggressive_levels), NULL, 0, 0, C},                                                    \
    {P ".smoother", KT_SCOPE, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, "solver", 0, 0, C},      \
    {P ".smoother.scope", KT_IGNORED, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, 0, 0, C},  \
    {P ".smoother.solver", KT_ENUM, 0, 0, 0, 0, NULL, smoother_choices, ST_ENUM_INT,             \
     SM_(solver), NULL, 0, 0, C},                                                              \
    {P ".smoother.relaxation_factor", KT_NUM, 0, 2, 0, 1, NULL, NULL, ST_DOUBLE,               \
     SM_(relaxation_factor), NULL, 0, 0, C},                                                   \
    {P ".smoother.chebyshev_degree", KT_INT, 1, 10, 0, 0, NULL, NULL, ST_INT,                  \
     SM_(chebyshev_degree), NULL, 0, 0, C},                                                    \
    {P ".smoother.chebyshev_lower", KT_NUM, 0, 1, 1, 1, NULL, NULL, ST_DOUBLE,                 \
     SM_(chebyshev_lower), NULL, 0, 0, C},                                                     \
    {P ".presweeps", KT_INT, 0, 100, 0, 0, NULL, NULL, ST_INT, A_(presweeps), NULL, 0, 0,      \
     C},                                                                                       \
    {P ".postsweeps", KT_INT, 0, 100, 0, 0, NULL, NULL, ST_INT, A_(postsweeps), NULL, 0,       \
     0, C},                                                                                    \
    {P ".cycle", KT_ENUM, 0, 0, 0, 0, NULL, cycle_choices, ST_ENUM_INT, A_(cycle), NULL, 0, 0,   \
     C},                                                                                       \
    {P ".max_levels", KT_INT, 1, 100, 0, 0, NULL, NULL, ST_INT, A_(max_levels), NULL, 0, 0,    \
     C},                                                                                       \
    {P ".min_coarse_rows", KT_INT, 1, INT_MAX, 0, 0, NULL, NULL, ST_INT, A_(min_coarse_rows),  \
     NULL, 0, 0, C},                                                                           \
    {P ".coarse_max_rows", KT_INT, 1, 8192, 0, 0, NULL, NULL, ST_INT, A_(coarse_max_rows),     \
     NULL, 0, 0, C},                                                                           \
    {P ".coarse_solver", KT_ENUM, 0, 0, 0, 0, NULL, coarse_choices, ST_ENUM_INT,                 \
     A_(coarse_solver), NULL, 0, 0, C},                                                        \
    {P ".seed", KT_INT, 0, INFINITY, 0, 0, NULL, NULL, ST_ULL, A_(seed), NULL, 0, 0, C},      \
    {P ".spmv_format", KT_STR, 0, 0, 0, 0, NULL, NULL, ST_STRING, A_(level_format), NULL, 0,  \
     0, C},                                                                                    \
    {P ".hierarchy_precision", KT_ENUM, 0, 0, 0, 0, NULL, precision_choices, ST_ENUM_INT,        \
     A_(hierarchy_precision), NULL, 0, 0, C},

/* Order = dump order. Parents precede their children. */
static const key_spec specs[] = {
    {"config_version", KT_INT, 2, 2, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, 0, 0, C_ALL},
    {"solver", KT_SCOPE, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, 0, 0, C_ALL},
    {"solver.scope", KT_IGNORED, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, 0, 0, C_ALL},
    {"solver.solver", KT_ENUM, 0, 0, 0, 0, NULL, solver_choices, ST_STRING, S_(solver), NULL, 0, 0, C_ALL},
    {"solver.max_iters", KT_INT, 1, INT_MAX, 0, 0, NULL, NULL, ST_INT, S_(max_iters), NULL, 0, 0, C_ALL},
    {"solver.tolerance", KT_NUM, 0, INFINITY, 0, 1, NULL, NULL, ST_DOUBLE, S_(tolerance), NULL, 0, 0, C_ALL},
    {"solver.convergence", KT_ENUM, 0, 0, 0, 0, NULL, conv_choices, ST_ENUM_INT, S_(convergence), NULL, 0, 0, C_ALL},
    {"solver.norm", KT_ENUM, 0, 0, 0, 0, NULL, norm_choices, ST_ENUM_INT, S_(norm), NULL, 0, 0, C_ALL},
    {"solver.monitor_residual", KT_BOOL, 0, 0, 0, 0, NULL, NULL, ST_INT, S_(monitor_residual), NULL, 0, 0, C_ALL},
    {"solver.print_solve_stats", KT_BOOL, 0, 0, 0, 0, NULL, NULL, ST_INT, S_(print_solve_stats), NULL, 0, 0, C_ALL},
    {"solver.store_res_history", KT_BOOL, 0, 0, 0, 0, NULL, NULL, ST_INT, S_(store_res_history), NULL, 0, 0, C_ALL},
    {"solver.divergence_factor", KT_NUM, 1, INFINITY, 1, 1, NULL, NULL, ST_DOUBLE, S_(divergence_factor), NULL, 0, 0, C_ALL},
    {"solver.preconditioner", KT_SCOPE, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, "solver", 0, 0, C_NOT_SOLVER_AMG},
    {"solver.preconditioner.scope", KT_IGNORED, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, 0, 0, C_NOT_SOLVER_AMG},
    {"solver.preconditioner.solver", KT_ENUM, 0, 0, 0, 0, NULL, pc_choices, ST_STRING, S_(pc.solver), NULL, 0, 0, C_NOT_SOLVER_AMG},
    {"solver.preconditioner.relaxation_factor", KT_NUM, 0, 2, 1, 0, NULL, NULL, ST_DOUBLE, S_(pc.relaxation_factor), NULL, 0, 0, C_PC_PLAIN},
    AMG_SPECS("solver.preconditioner", C_PC_AMG)
    AMG_SPECS("solver", C_SOLVER_AMG)
    {"backend", KT_ENUM, 0, 0, 0, 0, NULL, backend_choices, ST_STRING, P_(backend), NULL, 0, 0, C_ALL},
    {"spmv_format", KT_STR, 0, 0, 0, 0, NULL, NULL, ST_STRING, P_(spmv_format), NULL, 0, 0, C_ALL},
    {"spmv", KT_SCOPE, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, 0, 0, C_ALL},
    {"spmv.threads_per_row", KT_INT, 0, 32, 0, 0, tpr_set, NULL, ST_INT, P_(spmv.threads_per_row), NULL, 0, 0, C_ALL},
    {"matrix", KT_SCOPE, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, 0, 0, C_ALL},
    {"matrix.file", KT_PATH, 0, 0, 0, 0, NULL, NULL, ST_STRING, P_(matrix_file), NULL, XG_MATRIX, 0, C_ALL},
    {"matrix.generator", KT_GEN, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, XG_MATRIX, 1, C_ALL},
    {"matrix.n", KT_GRID, 1, INT_MAX, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, XG_MATRIX, 1, C_ALL},
    {"matrix.coefficients", KT_VEC3, 0, INFINITY, 1, 1, NULL, NULL, ST_DOUBLE, P_(gen.cx), NULL, XG_MATRIX, 1, C_ALL},
    {"matrix.velocity", KT_VEC3, -INFINITY, INFINITY, 1, 1, NULL, NULL, ST_DOUBLE, P_(gen.vx), NULL, XG_MATRIX, 1, C_ALL},
    {"rhs", KT_SCOPE, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, 0, 0, C_ALL},
    {"rhs.file", KT_PATH, 0, 0, 0, 0, NULL, NULL, ST_STRING, P_(rhs_file), NULL, XG_RHS, 0, C_ALL},
    {"rhs.type", KT_ENUM, 0, 0, 0, 0, NULL, rhs_choices, ST_STRING, P_(rhs_kind), NULL, XG_RHS, 1, C_ALL},
    {"solution", KT_SCOPE, 0, 0, 0, 0, NULL, NULL, ST_NONE, NOOFF, NULL, 0, 0, C_ALL},
    {"solution.file", KT_PATH, 0, 0, 0, 0, NULL, NULL, ST_STRING, P_(solution_file), NULL, 0, 0, C_ALL},
};
#define NSPECS ((int)(sizeof specs / sizeof specs[0]))

_Static_assert(sizeof(ks_conv_kind) == sizeof(int) && sizeof(ks_norm_kind) == sizeof(int) &&
                   sizeof(ks_amg_algorithm) == sizeof(int) &&
                   sizeof(ks_amg_smoother_kind) == sizeof(int),
               "enum-valued keys are stored as int");

static int spec_index(const char *path)
{
    for (int i = 0; i < NSPECS; i++)
        if (strcmp(specs[i].path, path) == 0)
            return i;
    return -1;
}

/* Length of the parent part of a dotted path ("solver.max_iters" -> 6). */
static size_t parent_len(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? (size_t)(dot - path) : 0;
}

static const char *last_part(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

/* -------------------------------------------------------------- messages */
static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "value";
}

static int edit_distance(const char *a, const char *b)
{
    enum { M = 64 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= M || lb >= M)
        return M;
    int d[M + 1];
    for (size_t j = 0; j <= lb; j++)
        d[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = d[0];
        d[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = d[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (d[j - 1] + 1 < best)
                best = d[j - 1] + 1;
            d[j] = best;
            diag = up;
        }
    }
    return d[lb];
}

/* "unknown key 'solver.max_iter' (did you mean 'max_iters'?)": suggest the
 * closest sibling, else the same name in another scope, else list the
 * keys of the scope. */
static ks_error unknown_key(const char *path)
{
    size_t plen = parent_len(path);
    const char *name = last_part(path);
    int best = -1, bestd = 1 << 20;
    for (int i = 0; i < NSPECS; i++) {
        if (parent_len(specs[i].path) != plen || strncmp(specs[i].path, path, plen) != 0 ||
            specs[i].type == KT_IGNORED)
            continue;
        const char *cand = last_part(specs[i].path);
        int d = edit_distance(name, cand);
        size_t ln = strlen(name), lc = strlen(cand);
        /* a truncated or extended name ("relaxation") counts as close */
        if (ln >= 4 && lc >= 4 && strncmp(name, cand, ln < lc ? ln : lc) == 0)
            d = d < 1 ? d : 1;
        if (d < bestd) {
            bestd = d;
            best = i;
        }
    }
    size_t nlen = strlen(name);
    int limit = nlen <= 4 ? 1 : nlen <= 8 ? 2 : 3;
    if (best >= 0 && bestd <= limit)
        return ks_seterr(KS_ERR_CONFIG, "unknown key '%s' (did you mean '%s'?)", path,
                         last_part(specs[best].path));
    for (int i = 0; i < NSPECS; i++)
        if (specs[i].type != KT_IGNORED && strcmp(last_part(specs[i].path), name) == 0)
            return ks_seterr(KS_ERR_CONFIG, "unknown key '%s' (did you mean '%s'?)", path,
                             specs[i].path);
    char list[512] = "";
    size_t used = 0;
    for (int i = 0; i < NSPECS; i++) {
        if (parent_len(specs[i].path) != plen || strncmp(specs[i].path, path, plen) != 0 ||
            specs[i].type == KT_IGNORED)
            continue;
        int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                         last_part(specs[i].path));
        if (w < 0 || (size_t)w >= sizeof list - used)
            break;
        used += (size_t)w;
    }
    return ks_seterr(KS_ERR_CONFIG, "unknown key '%s' (keys allowed here: %s)", path, list);
}

static ks_error type_error(const char *path, const char *expected, const json_t *v)
{
    return ks_seterr(KS_ERR_CONFIG, "%s: expected %s, got %s", path, expected, json_type_name(v));
}

static ks_error range_error(const key_spec *k, const char *path, double got)
{
    if (k->lo == k->hi)
        return ks_seterr(KS_ERR_CONFIG, "%s: must be %g (got %g)", path, k->lo, got);
    if (isinf(k->hi) || k->hi == INT_MAX)
        return ks_seterr(KS_ERR_CONFIG, "%s: must be %s %g (got %g)", path,
                         k->lo_open ? ">" : ">=", k->lo, got);
    return ks_seterr(KS_ERR_CONFIG, "%s: must be in %c%g, %g%c (got %g)", path,
                     k->lo_open ? '(' : '[', k->lo, k->hi, k->hi_open ? ')' : ']', got);
}

static int in_range(const key_spec *k, double x)
{
    if (!isfinite(x))
        return 0;
    if (k->lo_open ? !(x > k->lo) : !(x >= k->lo))
        return 0;
    if (k->hi_open ? !(x < k->hi) : !(x <= k->hi))
        return 0;
    return 1;
}

/* ----------------------------------------------------------- validation */
typedef struct parse_ctx {
    cfg_params prm;
    unsigned char present[sizeof specs / sizeof specs[0]];
    json_int_t grid[3]; /* matrix.n as given */
    int ngrid;          /* 1 (scalar) or the array length */
    char gen_name[KS_NAME_MAX];
} parse_ctx;

static void store_int(parse_ctx *c, const key_spec *k, int v)
{
    memcpy((char *)&c->prm + k->off, &v, sizeof v);
}

static void store_double(parse_ctx *c, const key_spec *k, size_t i, double v)
{
    memcpy((char *)&c->prm + k->off + i * sizeof v, &v, sizeof v);
}

static ks_error store_string(parse_ctx *c, const key_spec *k, const char *path, const char *s)
{
    size_t n = strlen(s);
    if (n >= k->size)
        return ks_seterr(KS_ERR_CONFIG, "%s: longer than %zu characters", path, k->size - 1);
    memcpy((char *)&c->prm + k->off, s, n + 1);
    return KS_OK;
}

static ks_error check_enum(const key_spec *k, const char *path, const json_t *v,
                           const choice **out)
{
    if (!json_is_string(v))
        return type_error(path, "a string", v);
    const char *s = json_string_value(v);
    const choice *nocase = NULL;
    for (const choice *c = k->choices; c->name; c++) {
        if (strcmp(c->name, s) == 0) {
            *out = c;
            return KS_OK;
        }
        if (!nocase && strcasecmp(c->name, s) == 0)
            nocase = c;
    }
    char list[256] = "";
    size_t used = 0;
    for (const choice *c = k->choices; c->name; c++) {
        if (c->alias)
            continue;
        int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", c->name);
        if (w < 0 || (size_t)w >= sizeof list - used)
            break;
        used += (size_t)w;
    }
    if (nocase)
        return ks_seterr(KS_ERR_CONFIG, "%s: unknown value '%s' (did you mean '%s'? allowed: %s)",
                         path, s, nocase->name, list);
    return ks_seterr(KS_ERR_CONFIG, "%s: unknown value '%s' (allowed: %s)", path, s, list);
}

static ks_error check_int(const key_spec *k, const char *path, const json_t *v, json_int_t *out)
{
    if (!json_is_integer(v))
        return type_error(path, "an integer", v);
    json_int_t x = json_integer_value(v);
    if (k->int_set) {
        for (const int *p = k->int_set; *p >= 0; p++)
            if (x == *p) {
                *out = x;
                return KS_OK;
            }
        char list[128] = "";
        size_t used = 0;
        for (const int *p = k->int_set; *p >= 0; p++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d", used ? ", " : "",
                                     *p);
        return ks_seterr(KS_ERR_CONFIG, "%s: must be one of %s (got %lld)", path, list,
                         (long long)x);
    }
    if ((double)x < k->lo || (double)x > k->hi)
        return range_error(k, path, (double)x);
    *out = x;
    return KS_OK;
}

static ks_error check_num(const key_spec *k, const char *path, const json_t *v, double *out)
{
    if (!json_is_number(v))
        return type_error(path, "a number", v);
    double x = json_number_value(v);
    if (!in_range(k, x))
        return range_error(k, path, x);
    *out = x;
    return KS_OK;
}

static ks_error apply_leaf(parse_ctx *c, const key_spec *k, const char *path, const json_t *v)
{
    switch (k->type) {
    case KT_INT: {
        json_int_t x;
        KS_TRY(check_int(k, path, v, &x));
        if (k->store == ST_INT) {
            store_int(c, k, (int)x);
        } else if (k->store == ST_ULL) {
            unsigned long long u = (unsigned long long)x; /* x >= 0 checked */
            memcpy((char *)&c->prm + k->off, &u, sizeof u);
        }
        return KS_OK;
    }
    case KT_NUM: {
        double x;
        KS_TRY(check_num(k, path, v, &x));
        store_double(c, k, 0, x);
        return KS_OK;
    }
    case KT_BOOL: {
        int b;
        if (json_is_boolean(v))
            b = json_is_true(v);
        else if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1))
            b = (int)json_integer_value(v);
        else if (json_is_integer(v))
            return ks_seterr(KS_ERR_CONFIG, "%s: expected 0, 1 or a boolean, got %lld", path,
                             (long long)json_integer_value(v));
        else
            return type_error(path, "0, 1 or a boolean", v);
        store_int(c, k, b);
        return KS_OK;
    }
    case KT_ENUM: {
        const choice *ch = NULL;
        KS_TRY(check_enum(k, path, v, &ch));
        if (k->store == ST_ENUM_INT)
            store_int(c, k, ch->value);
        else
            KS_TRY(store_string(c, k, path, k->choices[ch->value].name));
        return KS_OK;
    }
    case KT_STR:
    case KT_PATH:
        if (!json_is_string(v))
            return type_error(path, k->type == KT_PATH ? "a file path (string)" : "a string", v);
        if (json_string_value(v)[0] == '\0')
            return ks_seterr(KS_ERR_CONFIG, "%s: must not be empty", path);
        return store_string(c, k, path, json_string_value(v));
    case KT_GEN: {
        if (!json_is_string(v))
            return type_error(path, "a generator name (string)", v);
        ks_gen_kind kind;
        if (ks_gen_kind_from_name(json_string_value(v), &kind) != KS_OK) {
            char list[256] = "";
            size_t used = 0;
            for (int g = 0; g <= (int)KS_GEN_CONVDIFF3D; g++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                                         used ? ", " : "", ks_gen_kind_name((ks_gen_kind)g));
            return ks_seterr(KS_ERR_CONFIG, "%s: unknown value '%s' (allowed: %s)", path,
                             json_string_value(v), list);
        }
        c->prm.p.gen.kind = kind;
        snprintf(c->gen_name, sizeof c->gen_name, "%s", json_string_value(v));
        return KS_OK;
    }
    case KT_GRID: {
        char sub[300];
        if (json_is_integer(v)) {
            KS_TRY(check_int(k, path, v, &c->grid[0]));
            c->ngrid = 1;
            return KS_OK;
        }
        if (!json_is_array(v))
            return type_error(path, "an integer or an array [nx, ny(, nz)]", v);
        size_t n = json_array_size(v);
        if (n < 2 || n > 3)
            return ks_seterr(KS_ERR_CONFIG, "%s: expected 2 or 3 sizes, got %zu", path, n);
        for (size_t i = 0; i < n; i++) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            KS_TRY(check_int(k, sub, json_array_get(v, i), &c->grid[i]));
        }
        c->ngrid = (int)n;
        return KS_OK;
    }
    case KT_VEC3: {
        char sub[300];
        if (!json_is_array(v))
            return type_error(path, "an array of 3 numbers", v);
        if (json_array_size(v) != 3)
            return ks_seterr(KS_ERR_CONFIG, "%s: expected 3 numbers [x, y, z], got %zu", path,
                             json_array_size(v));
        for (size_t i = 0; i < 3; i++) {
            double x;
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            KS_TRY(check_num(k, sub, json_array_get(v, i), &x));
            store_double(c, k, i, x);
        }
        return KS_OK;
    }
    case KT_IGNORED:
        if (!json_is_string(v))
            return type_error(path, "a string", v);
        return KS_OK;
    case KT_SCOPE:
        break;
    }
    return ks_seterr(KS_ERR_CONFIG, "%s: internal schema error", path);
}

static ks_error walk(parse_ctx *c, const json_t *obj, const char *prefix)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        char path[256];
        if (snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", key) >=
            (int)sizeof path)
            return ks_seterr(KS_ERR_CONFIG, "unknown key '%s' (name too long)", path);
        if (strchr(key, '.'))
            return ks_seterr(KS_ERR_CONFIG,
                             "unknown key '%s' (a key name has no dots: nest objects instead, "
                             "e.g. {\"solver\": {\"max_iters\": 100}})",
                             path);
        int i = spec_index(path);
        if (i < 0)
            return unknown_key(path);
        const key_spec *k = &specs[i];
        c->present[i] = 1;
        if (k->type != KT_SCOPE) {
            KS_TRY(apply_leaf(c, k, path, v));
        } else if (json_is_object(v)) {
            KS_TRY(walk(c, v, path));
        } else if (k->shorthand && json_is_string(v)) {
            char sub[300];
            snprintf(sub, sizeof sub, "%s.%s", path, k->shorthand);
            int j = spec_index(sub);
            c->present[j] = 1;
            KS_TRY(apply_leaf(c, &specs[j], path, v));
        } else {
            return type_error(path, k->shorthand ? "an object or a name (string)" : "an object", v);
        }
    }
    return KS_OK;
}

static int present(const parse_ctx *c, const char *path) { return c->present[spec_index(path)]; }

static int gen_is_2d(ks_gen_kind k) { return k == KS_GEN_POISSON2D_5 || k == KS_GEN_POISSON2D_9; }

/* Default strength threshold of AGGREGATION (see cross_check). */
#define KS_AGGREGATION_THETA 0.0

static int solver_is_amg(const ks_solver_params *s) { return strcmp(s->solver, "AMG") == 0; }

static int cond_holds(const ks_solver_params *s, int cond)
{
    int samg = solver_is_amg(s);
    int pcamg = !samg && strcmp(s->pc.solver, "AMG") == 0;
    switch (cond) {
    case C_NOT_SOLVER_AMG: return !samg;
    case C_PC_PLAIN: return !samg && !pcamg;
    case C_PC_AMG: return pcamg;
    case C_SOLVER_AMG: return samg;
    default: return 1;
    }
}

/* A key that was given but does not apply to the chosen method. */
static ks_error cond_error(const ks_solver_params *s, const key_spec *k)
{
    switch (k->cond) {
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
static ks_error cross_check(parse_ctx *c)
{
    ks_solver_params *s = &c->prm.s;
    ks_problem_params *p = &c->prm.p;

    int unpre = strcmp(s->solver, "CG") == 0 || strcmp(s->solver, "BICGSTAB") == 0;
    if (unpre) {
        if (present(c, "solver.preconditioner.solver") && strcmp(s->pc.solver, "NOSOLVER") != 0)
            return ks_seterr(KS_ERR_CONFIG, "solver.preconditioner: %s is unpreconditioned; use %s",
                             s->solver, strcmp(s->solver, "CG") == 0 ? "PCG" : "PBICGSTAB");
        strcpy(s->pc.solver, "NOSOLVER"); /* the default AMG does not apply */
    }
    if (solver_is_amg(s))
        strcpy(s->pc.solver, "AMG"); /* standalone AMG: its settings are pc.amg */
    for (int i = 0; i < NSPECS; i++)
        if (c->present[i] && !cond_holds(s, specs[i].cond))
            return cond_error(s, &specs[i]);
    if (solver_is_amg(s) || strcmp(s->pc.solver, "AMG") == 0) {
        const char *scope = solver_is_amg(s) ? "solver" : "solver.preconditioner";
        char path[64];
        snprintf(path, sizeof path, "%s.strength_threshold", scope);
        /* Aggregation's symmetric measure |a_ij| / sqrt(a_ii a_jj) is 1/6
         * for the 7-point Laplacian and 1/26 for the 27-point one: the
         * classical default 0.25 would leave every point unconnected, so
         * aggregation defaults to 0 (every connection strong, like PyAMG). */
        if (s->pc.amg.algorithm == KS_AMG_AGGREGATION && !present(c, path))
            s->pc.amg.strength_threshold = KS_AGGREGATION_THETA;
        KS_TRY(check_amg(&s->pc.amg, scope));
    }

    if (present(c, "matrix.file")) {
        static const char *const genkeys[] = {"generator", "n", "coefficients", "velocity"};
        for (int i = 0; i < 4; i++) {
            char path[64];
            snprintf(path, sizeof path, "matrix.%s", genkeys[i]);
            if (present(c, path))
                return ks_seterr(KS_ERR_CONFIG,
                                 "matrix: give either 'file' or 'generator', not both "
                                 "('%s' describes a generated matrix)",
                                 path);
        }
    }
    if (present(c, "rhs.file") && present(c, "rhs.type"))
        return ks_seterr(KS_ERR_CONFIG, "rhs: give either 'file' or 'type', not both");

    ks_gen_params *g = &p->gen;
    int is2d = gen_is_2d(g->kind);
    if (c->ngrid == 1) {
        g->nx = g->ny = (ks_int)c->grid[0];
        g->nz = is2d ? 1 : (ks_int)c->grid[0];
    } else if (c->ngrid == 2 || c->ngrid == 3) {
        if (c->ngrid == 2 && !is2d)
            return ks_seterr(KS_ERR_CONFIG, "matrix.n: %s is 3D: give [nx, ny, nz] or one size",
                             ks_gen_kind_name(g->kind));
        if (c->ngrid == 3 && is2d)
            return ks_seterr(KS_ERR_CONFIG, "matrix.n: %s is 2D: give [nx, ny] or one size",
                             ks_gen_kind_name(g->kind));
        g->nx = (ks_int)c->grid[0];
        g->ny = (ks_int)c->grid[1];
        g->nz = c->ngrid == 3 ? (ks_int)c->grid[2] : 1;
    } else if (is2d) {
        g->nz = 1;
    }
    if (!p->matrix_file[0]) {
        double rows = (double)g->nx * g->ny * (is2d ? 1.0 : g->nz);
        if (rows > (double)INT32_MAX)
            return ks_seterr(KS_ERR_CONFIG,
                             "matrix.n: the grid has %.0f rows, more than ks_int holds (%d)", rows,
                             INT32_MAX);
    }
    if (p->rhs_file[0])
        p->rhs_kind[0] = '\0';
    return KS_OK;
}

static ks_error validate(const json_t *root, cfg_params *out)
{
    parse_ctx *c = ks_calloc(1, sizeof *c, "config parser");
    if (!c)
        return KS_ERR_MEMORY;
    ks_solver_params_default(&c->prm.s);
    ks_problem_params_default(&c->prm.p);
    ks_error e = walk(c, root, "");
    if (e == KS_OK)
        e = cross_check(c);
    if (e == KS_OK)
        *out = c->prm;
    free(c);
    return e;
}

/* ----------------------------------------------------------- tree access */
/* Node at a dotted path or NULL. */
static json_t *tree_get(json_t *root, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *node = root;
    for (char *save = NULL, *part = strtok_r(buf, ".", &save); part;
         part = strtok_r(NULL, ".", &save)) {
        if (!json_is_object(node))
            return NULL;
        node = json_object_get(node, part);
        if (!node)
            return NULL;
    }
    return node;
}

/* Make relative paths of a config file relative to its folder, so the
 * config works from any working directory. */
static ks_error resolve_paths(json_t *root, const char *cfgpath)
{
    const char *slash = strrchr(cfgpath, '/');
    if (!slash)
        return KS_OK; /* same folder as the working directory */
    int dirlen = (int)(slash - cfgpath);
    for (int i = 0; i < NSPECS; i++) {
        if (specs[i].type != KT_PATH)
            continue;
        json_t *v = tree_get(root, specs[i].path);
        if (!v || !json_is_string(v))
            continue; /* validation reports wrong types */
        const char *s = json_string_value(v);
        if (s[0] == '\0' || s[0] == '/')
            continue;
        char full[KS_PATH_MAX];
        if (snprintf(full, sizeof full, "%.*s/%s", dirlen, cfgpath, s) >= (int)sizeof full)
            return ks_seterr(KS_ERR_CONFIG, "%s: path longer than %d characters", specs[i].path,
                             KS_PATH_MAX - 1);
        if (json_string_set(v, full) != 0)
            return ks_seterr(KS_ERR_MEMORY, "out of memory resolving %s", specs[i].path);
    }
    return KS_OK;
}

static ks_error config_from_tree(json_t *root, ks_config **cfg)
{
    if (!json_is_object(root)) {
        ks_error e = ks_seterr(KS_ERR_CONFIG, "the top level must be a JSON object, got %s",
                               json_type_name(root));
        json_decref(root);
        return e;
    }
    ks_config *c = ks_calloc(1, sizeof *c, "config");
    if (!c) {
        json_decref(root);
        return KS_ERR_MEMORY;
    }
    c->root = root;
    ks_error e = validate(root, &c->prm);
    if (e != KS_OK) {
        ks_config_destroy(c);
        return e;
    }
    *cfg = c;
    return KS_OK;
}

/* ------------------------------------------------------------ public API */
ks_error ks_config_create_from_file(const char *path, ks_config **cfg)
{
    if (!path || !cfg)
        return ks_seterr(KS_ERR_ARG, "ks_config_create_from_file: NULL argument");
    *cfg = NULL;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return ks_seterr(KS_ERR_IO, "cannot read config file '%s': it is a directory", path);
    json_error_t err;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        if (json_error_code(&err) == json_error_cannot_open_file)
            return ks_seterr(KS_ERR_IO, "cannot open config file '%s': %s", path, err.text);
        return ks_seterr(KS_ERR_CONFIG, "%s:%d:%d: %s", path, err.line, err.column, err.text);
    }
    ks_error e = resolve_paths(root, path);
    if (e != KS_OK) {
        json_decref(root);
        return ks_adderr(e, "%s", path);
    }
    e = config_from_tree(root, cfg);
    return e == KS_OK ? e : ks_adderr(e, "%s", path);
}

ks_error ks_config_create_from_string(const char *json, ks_config **cfg)
{
    if (!json || !cfg)
        return ks_seterr(KS_ERR_ARG, "ks_config_create_from_string: NULL argument");
    *cfg = NULL;
    json_error_t err;
    json_t *root = json_loads(json, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return ks_seterr(KS_ERR_CONFIG, "config string:%d:%d: %s", err.line, err.column, err.text);
    return config_from_tree(root, cfg);
}

ks_error ks_config_create_default(ks_config **cfg)
{
    if (!cfg)
        return ks_seterr(KS_ERR_ARG, "ks_config_create_default: NULL argument");
    *cfg = NULL;
    json_t *root = json_object();
    if (!root)
        return ks_seterr(KS_ERR_MEMORY, "out of memory creating a config");
    return config_from_tree(root, cfg);
}

void ks_config_destroy(ks_config *cfg)
{
    if (!cfg)
        return;
    json_decref(cfg->root);
    free(cfg);
}

const ks_solver_params *ks_config_solver_params(const ks_config *cfg)
{
    return cfg ? &cfg->prm.s : NULL;
}

const ks_problem_params *ks_config_problem_params(const ks_config *cfg)
{
    return cfg ? &cfg->prm.p : NULL;
}

/* Put value at keypath in root (steals value), creating objects on the way
 * and removing the keys it excludes. */
static ks_error tree_set(json_t *root, const char *keypath, json_t *value)
{
    char buf[256];
    size_t len = strlen(keypath);
    if (len == 0 || len >= sizeof buf || keypath[0] == '.' || keypath[len - 1] == '.' ||
        strstr(keypath, "..")) {
        json_decref(value);
        return ks_seterr(KS_ERR_CONFIG, "invalid key path '%s'", keypath);
    }
    memcpy(buf, keypath, len + 1);
    json_t *node = root;
    char *part = buf;
    for (char *dot; (dot = strchr(part, '.')) != NULL; part = dot + 1) {
        *dot = '\0';
        json_t *next = json_object_get(node, part);
        if (next && !json_is_object(next)) {
            int i = spec_index(buf);
            if (i >= 0 && specs[i].shorthand && json_is_string(next)) {
                /* "preconditioner": "JACOBI" -> {"solver": "JACOBI"} */
                json_t *obj = json_pack("{sO}", specs[i].shorthand, next);
                if (!obj || json_object_set_new(node, part, obj) != 0) {
                    json_decref(value);
                    return ks_seterr(KS_ERR_MEMORY, "out of memory setting '%s'", keypath);
                }
                next = obj;
            } else {
                ks_error e = ks_seterr(KS_ERR_CONFIG, "cannot set '%s': '%s' is %s %s, not an object",
                                       keypath, buf, json_is_integer(next) || json_is_array(next) ? "an" : "a",
                                       json_type_name(next));
                json_decref(value);
                return e;
            }
        } else if (!next) {
            next = json_object();
            if (!next || json_object_set_new(node, part, next) != 0) {
                json_decref(value);
                return ks_seterr(KS_ERR_MEMORY, "out of memory setting '%s'", keypath);
            }
        }
        node = next;
        *dot = '.';
    }
    int i = spec_index(keypath);
    if (i >= 0 && specs[i].xgroup != XG_NONE) {
        for (int j = 0; j < NSPECS; j++)
            if (specs[j].xgroup == specs[i].xgroup && specs[j].xside != specs[i].xside)
                json_object_del(node, last_part(specs[j].path));
    }
    if (json_object_set_new(node, part, value) != 0)
        return ks_seterr(KS_ERR_MEMORY, "out of memory setting '%s'", keypath);
    return KS_OK;
}

/* A command-line value: JSON when it parses ("200", "[30,30]", "true"),
 * otherwise the text itself as a string ("PCG", "cpu,cuda"). */
static json_t *parse_value(const char *value)
{
    json_error_t err;
    json_t *v = json_loads(value, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
    return v ? v : json_string(value);
}

ks_error ks_config_set_many(ks_config *cfg, int n, const char *const *keys,
                            const char *const *values)
{
    if (!cfg || n < 0 || (n > 0 && (!keys || !values)))
        return ks_seterr(KS_ERR_ARG, "ks_config_set: NULL argument");
    for (int i = 0; i < n; i++)
        if (!keys[i] || !values[i])
            return ks_seterr(KS_ERR_ARG, "ks_config_set: NULL key or value");
    json_t *copy = json_deep_copy(cfg->root);
    if (!copy)
        return ks_seterr(KS_ERR_MEMORY, "out of memory copying the config");
    ks_error e = KS_OK;
    for (int i = 0; i < n && e == KS_OK; i++) {
        json_t *v = parse_value(values[i]);
        if (!v)
            e = ks_seterr(KS_ERR_CONFIG, "%s: value is not valid UTF-8 text", keys[i]);
        else
            e = tree_set(copy, keys[i], v);
    }
    cfg_params prm;
    if (e == KS_OK)
        e = validate(copy, &prm);
    if (e != KS_OK) {
        json_decref(copy);
        return e;
    }
    json_decref(cfg->root);
    cfg->root = copy;
    cfg->prm = prm;
    return KS_OK;
}

ks_error ks_config_set(ks_config *cfg, const char *keypath, const char *value)
{
    return ks_config_set_many(cfg, 1, &keypath, &value);
}

/* ------------------------------------------------------------------ dump */
static json_t *dump_value(const cfg_params *prm, const key_spec *k)
{
    const char *base = (const char *)prm + k->off;
    const ks_problem_params *p = &prm->p;
    int gen = !p->matrix_file[0];
    switch (k->type) {
    case KT_INT:
        if (k->store == ST_ULL) {
            unsigned long long u;
            memcpy(&u, base, sizeof u);
            return json_integer((json_int_t)u);
        }
        if (k->store != ST_INT)
            return strcmp(k->path, "config_version") == 0 ? json_integer(2) : NULL;
        /* fallthrough */
    case KT_BOOL: {
        int v;
        memcpy(&v, base, sizeof v);
        return json_integer(v);
    }
    case KT_NUM: {
        double v;
        memcpy(&v, base, sizeof v);
        return json_real(v);
    }
    case KT_ENUM:
        if (k->store == ST_ENUM_INT) {
            int v;
            memcpy(&v, base, sizeof v);
            for (const choice *c = k->choices; c->name; c++)
                if (!c->alias && c->value == v)
                    return json_string(c->name);
            return NULL;
        }
        /* fallthrough */
    case KT_STR:
    case KT_PATH:
        return base[0] ? json_string(base) : NULL; /* unset file: omitted */
    case KT_GEN:
        return gen ? json_string(ks_gen_kind_name(p->gen.kind)) : NULL;
    case KT_GRID:
        if (!gen)
            return NULL;
        if (gen_is_2d(p->gen.kind))
            return p->gen.nx == p->gen.ny ? json_integer(p->gen.nx)
                                          : json_pack("[ii]", (int)p->gen.nx, (int)p->gen.ny);
        if (p->gen.nx == p->gen.ny && p->gen.ny == p->gen.nz)
            return json_integer(p->gen.nx);
        return json_pack("[iii]", (int)p->gen.nx, (int)p->gen.ny, (int)p->gen.nz);
    case KT_VEC3: {
        if (!gen)
            return NULL;
        double v[3];
        memcpy(v, base, sizeof v);
        return json_pack("[fff]", v[0], v[1], v[2]);
    }
    case KT_SCOPE:
    case KT_IGNORED:
        break;
    }
    return NULL;
}

char *ks_config_dump(const ks_config *cfg)
{
    if (!cfg) {
        ks_seterr(KS_ERR_ARG, "ks_config_dump: NULL config");
        return NULL;
    }
    json_t *root = json_object();
    int ok = root != NULL;
    for (int i = 0; i < NSPECS && ok; i++) {
        if (!cond_holds(&cfg->prm.s, specs[i].cond))
            continue; /* e.g. AMG settings when AMG is not selected */
        json_t *v = dump_value(&cfg->prm, &specs[i]);
        if (v)
            ok = tree_set(root, specs[i].path, v) == KS_OK;
    }
    char *text = ok ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(root);
    if (!text)
        ks_seterr(KS_ERR_MEMORY, "out of memory writing the config");
    return text;
}
