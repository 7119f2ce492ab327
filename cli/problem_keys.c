/* The ksolve tool's config keys as a scope of the library's config engine:
 * the table (what each key takes and where it goes), the defaults, the
 * rules between keys (a matrix file or a generator, an rhs file or a type,
 * grid sizes that fit the generator) and the values the dump shows. */
#include "problem.h"
#include "../vec/gpu.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* What the keys fill: the problem, plus matrix.n as given, which means
 * nx, ny, nz only once the generator (2D or 3D) is known. */
typedef struct problem_block {
    ks_problem_params p;
    json_int_t grid[3];
    int ngrid; /* 1 (one size for every axis), 2 or 3 (an array), 0 (not given) */
} problem_block;

enum { XG_MATRIX = 1, XG_RHS }; /* groups of mutually exclusive keys */
/* When a key applies (problem_applies; the library's rule for keys that do
 * not apply judges them, ks_config_keys_not_applying): C_GENERATED only
 * without matrix.file, C_COEFF where the generator reads the coefficients,
 * C_VELOCITY where it reads the velocity. */
enum { C_ALWAYS, C_GENERATED, C_COEFF, C_VELOCITY };

static const ks_name backend_choices[] = {
    {"cpu", 0, 0}, {"cuda", 1, 0}, {"cpu,cuda", 2, 0}, {NULL, 0, 0}};
static const ks_name rhs_choices[] = {
    {"A_ones", 0, 0}, {"ones", 1, 0}, {"A_sin", 2, 0}, {"zero", 3, 0}, {NULL, 0, 0}};
static const int tpr_set[] = {0, 1, 2, 4, 8, 16, 32, -1};
/* ks_comm_set_halo_transport's names (docs/mpi.md "Halo transports") */
static const ks_name halo_choices[] = {
    {"auto", 0, 0}, {"staged", 1, 0}, {"direct", 2, 0}, {"nccl", 3, 0}, {"ipc", 4, 0},
    {NULL, 0, 0}};

static int gen_is_2d(ks_gen_kind k) { return k == KS_GEN_POISSON2D_5 || k == KS_GEN_POISSON2D_9; }

/* Which generators read matrix.coefficients and matrix.velocity
 * (matrices/generators.c: the 9- and 27-point stencils have fixed weights;
 * only convection-diffusion has a velocity). */
static int gen_reads_coefficients(ks_gen_kind k)
{
    return k == KS_GEN_POISSON2D_5 || k == KS_GEN_POISSON3D_7 || k == KS_GEN_ANISO3D ||
           k == KS_GEN_CONVDIFF3D;
}
static int gen_reads_velocity(ks_gen_kind k) { return k == KS_GEN_CONVDIFF3D; }

/* ------------------------------------------------- the generator's keys */
static ks_error parse_generator(void *block, const ks_key_spec *k, const char *path,
                                const json_t *v)
{
    (void)k;
    if (!json_is_string(v))
        return ks_config_type_error(path, "a generator name (string)", v);
    ks_gen_kind kind;
    if (ks_gen_kind_from_name(json_string_value(v), &kind) != KS_OK) {
        char list[256] = "";
        size_t used = 0;
        for (int g = 0; g <= (int)KS_GEN_CONVDIFF3D; g++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                                     ks_gen_kind_name((ks_gen_kind)g));
        return ks_seterr(KS_ERR_CONFIG, "%s: unknown value '%s' (allowed: %s)", path,
                         json_string_value(v), list);
    }
    ((problem_block *)block)->p.gen.kind = kind;
    return KS_OK;
}

static json_t *dump_generator(const void *block, const ks_key_spec *k)
{
    (void)k;
    return json_string(ks_gen_kind_name(((const problem_block *)block)->p.gen.kind));
}

/* matrix.n: one size, or [nx, ny] / [nx, ny, nz]; problem_check sizes the grid. */
static ks_error parse_grid(void *block, const ks_key_spec *k, const char *path, const json_t *v)
{
    problem_block *b = block;
    char sub[300];
    if (json_is_integer(v)) {
        KS_TRY(ks_config_check_int(k, path, v, &b->grid[0]));
        b->ngrid = 1;
        return KS_OK;
    }
    if (!json_is_array(v))
        return ks_config_type_error(path, "an integer or an array [nx, ny(, nz)]", v);
    size_t n = json_array_size(v);
    if (n < 2 || n > 3)
        return ks_seterr(KS_ERR_CONFIG, "%s: expected 2 or 3 sizes, got %zu", path, n);
    for (size_t i = 0; i < n; i++) {
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        KS_TRY(ks_config_check_int(k, sub, json_array_get(v, i), &b->grid[i]));
    }
    b->ngrid = (int)n;
    return KS_OK;
}

/* One size when every axis has it, else the sizes of the generator's axes. */
static json_t *dump_grid(const void *block, const ks_key_spec *k)
{
    (void)k;
    const ks_gen_params *g = &((const problem_block *)block)->p.gen;
    if (gen_is_2d(g->kind))
        return g->nx == g->ny ? json_integer(g->nx) : json_pack("[ii]", (int)g->nx, (int)g->ny);
    if (g->nx == g->ny && g->ny == g->nz)
        return json_integer(g->nx);
    return json_pack("[iii]", (int)g->nx, (int)g->ny, (int)g->nz);
}

/* matrix.coefficients, matrix.velocity: 3 numbers in k's range, stored as
 * 3 doubles from k->off (cx, cy, cz / vx, vy, vz; k->size covers the three,
 * so the engine tells a value that repeats the default). */
static ks_error parse_vec3(void *block, const ks_key_spec *k, const char *path, const json_t *v)
{
    char sub[300];
    if (!json_is_array(v))
        return ks_config_type_error(path, "an array of 3 numbers", v);
    if (json_array_size(v) != 3)
        return ks_seterr(KS_ERR_CONFIG, "%s: expected 3 numbers [x, y, z], got %zu", path,
                         json_array_size(v));
    for (size_t i = 0; i < 3; i++) {
        double x;
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        KS_TRY(ks_config_check_num(k, sub, json_array_get(v, i), &x));
        memcpy((char *)block + k->off + i * sizeof x, &x, sizeof x);
    }
    return KS_OK;
}

static json_t *dump_vec3(const void *block, const ks_key_spec *k)
{
    double v[3];
    memcpy(v, (const char *)block + k->off, sizeof v);
    return json_pack("[fff]", v[0], v[1], v[2]);
}

/* gpu_map: its syntax now (the GPUs are counted where the backend is made). */
static ks_error parse_gpu_map(void *block, const ks_key_spec *k, const char *path,
                              const json_t *v)
{
    char *dst = ((problem_block *)block)->p.gpu_map;
    const size_t cap = sizeof ((problem_block *)block)->p.gpu_map;
    (void)k;
    char num[32];
    if (json_is_integer(v)) /* -p gpu_map=1 reads as a number */
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (!json_is_string(v))
        return ks_config_type_error(path, "a GPU map (local, none, N or \"N,M,...\")", v);
    const char *s = json_is_integer(v) ? num : json_string_value(v);
    int dev;
    if (strlen(s) >= cap)
        return ks_seterr(KS_ERR_CONFIG, "%s: \"%.20s...\" is longer than %zu characters", path,
                         s, cap - 1);
    if (ks_gpu_map_pick(s, path, 0, INT_MAX, &dev) != KS_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", ks_last_error());
        return ks_seterr(KS_ERR_CONFIG, "%s", why);
    }
    snprintf(dst, cap, "%s", s);
    return KS_OK;
}

/* Not given: the map that applies (KS_GPU_MAP, else local). */
static json_t *dump_gpu_map(const void *block, const ks_key_spec *k)
{
    (void)k;
    const char *m = ((const problem_block *)block)->p.gpu_map, *what;
    return json_string(ks_gpu_map_resolve(m[0] ? m : NULL, &what));
}

/* ------------------------------------------------------------ the table */
#define P_(m) .off = offsetof(problem_block, p.m), .size = sizeof(((problem_block *)0)->p.m)
#define P3_(m) .off = offsetof(problem_block, p.m), .size = 3 * sizeof(double)

/* Order = dump order (after the library's keys). Parents precede their children. */
static const ks_key_spec keys[] = {
    {.path = "backend", .type = KT_ENUM, .choices = backend_choices, .store = ST_STRING,
     P_(backend)},
    {.path = "spmv_format", .type = KT_FORMAT, .store = ST_STRING, P_(spmv_format)},
    {.path = "threads", .type = KT_INT, .lo = 0, .hi = 65536, .store = ST_INT, P_(threads)},
    {.path = "gpu_map", .type = KT_CUSTOM, .parse = parse_gpu_map, .dump = dump_gpu_map},
    {.path = "spmv", .type = KT_SCOPE},
    {.path = "spmv.threads_per_row", .type = KT_INT, .lo = 0, .hi = 32, .int_set = tpr_set,
     .store = ST_INT, P_(spmv.threads_per_row)},
    {.path = "mpi", .type = KT_SCOPE},
    {.path = "mpi.halo", .type = KT_ENUM, .choices = halo_choices, .store = ST_STRING, P_(halo)},
    {.path = "matrix", .type = KT_SCOPE},
    {.path = "matrix.file", .type = KT_PATH, .store = ST_STRING, P_(matrix_file),
     .xgroup = XG_MATRIX, .xside = 0},
    {.path = "matrix.generator", .type = KT_CUSTOM, .parse = parse_generator,
     .dump = dump_generator, .xgroup = XG_MATRIX, .xside = 1, .cond = C_GENERATED},
    {.path = "matrix.n", .type = KT_CUSTOM, .lo = 1, .hi = INT_MAX, .parse = parse_grid,
     .dump = dump_grid, .xgroup = XG_MATRIX, .xside = 1, .cond = C_GENERATED},
    {.path = "matrix.coefficients", .type = KT_CUSTOM, .lo = 0, .hi = INFINITY, .lo_open = 1,
     .hi_open = 1, P3_(gen.cx), .parse = parse_vec3, .dump = dump_vec3, .xgroup = XG_MATRIX,
     .xside = 1, .cond = C_COEFF},
    {.path = "matrix.velocity", .type = KT_CUSTOM, .lo = -INFINITY, .hi = INFINITY,
     .lo_open = 1, .hi_open = 1, P3_(gen.vx), .parse = parse_vec3, .dump = dump_vec3,
     .xgroup = XG_MATRIX, .xside = 1, .cond = C_VELOCITY},
    {.path = "rhs", .type = KT_SCOPE},
    {.path = "rhs.file", .type = KT_PATH, .store = ST_STRING, P_(rhs_file), .xgroup = XG_RHS,
     .xside = 0},
    {.path = "rhs.type", .type = KT_ENUM, .choices = rhs_choices, .store = ST_STRING,
     P_(rhs_kind), .xgroup = XG_RHS, .xside = 1},
    {.path = "rhs.count", .type = KT_INT, .lo = 0, .hi = KS_BLOCK_MAX_COLS, .store = ST_INT, P_(nrhs)},
    {.path = "x0", .type = KT_SCOPE},
    {.path = "x0.file", .type = KT_PATH, .store = ST_STRING, P_(x0_file)},
    {.path = "solution", .type = KT_SCOPE},
    {.path = "solution.file", .type = KT_PATH, .store = ST_STRING, P_(solution_file)},
};
#define NKEYS ((int)(sizeof keys / sizeof keys[0]))

_Static_assert(offsetof(ks_gen_params, cz) - offsetof(ks_gen_params, cx) == 2 * sizeof(double) &&
                   offsetof(ks_gen_params, vz) - offsetof(ks_gen_params, vx) ==
                       2 * sizeof(double),
               "matrix.coefficients and matrix.velocity fill 3 consecutive doubles");

/* ------------------------------------------------------------ the rules */
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
    strcpy(p->halo, "auto");
}

static void problem_defaults(void *block)
{
    problem_block *b = block;
    memset(b, 0, sizeof *b);
    ks_problem_params_default(&b->p);
}

static int given(const unsigned char *g, const char *path)
{
    return ks_config_given(&ks_problem_scope, g, path);
}

static int problem_applies(const void *block, int cond)
{
    const ks_problem_params *p = &((const problem_block *)block)->p;
    if (cond == C_ALWAYS)
        return 1;
    if (p->matrix_file[0])
        return 0;
    return cond == C_GENERATED || (cond == C_COEFF && gen_reads_coefficients(p->gen.kind)) ||
           (cond == C_VELOCITY && gen_reads_velocity(p->gen.kind));
}

/* Why key k does not apply (for the library's rule: "path: <why>"). */
static void problem_why(const void *block, const ks_key_spec *k, char *buf, size_t len)
{
    const ks_problem_params *p = &((const problem_block *)block)->p;
    const char *gen = ks_gen_kind_name(p->gen.kind);
    if (p->matrix_file[0])
        snprintf(buf, len, "describes a generated matrix, but matrix.file is given (remove the "
                           "key, or matrix.file)");
    else if (k->cond == C_COEFF)
        snprintf(buf, len, "applies to the poisson2d_5, poisson3d_7, aniso3d and convdiff3d "
                           "generators only, but matrix.generator is %s (its stencil's weights "
                           "are fixed: remove the key, or choose one of them)", gen);
    else if (k->cond == C_VELOCITY)
        snprintf(buf, len, "applies to the convdiff3d generator only, but matrix.generator is "
                           "%s (remove the key, or choose convdiff3d)", gen);
    else
        snprintf(buf, len, "internal schema error");
}

/* Rules that involve more than one key. */
static ks_error problem_check(void *block, const unsigned char *g)
{
    problem_block *b = block;
    ks_problem_params *p = &b->p;
    if (given(g, "matrix.file")) {
        static const char *const genkeys[] = {"generator", "n", "coefficients", "velocity"};
        for (int i = 0; i < 4; i++) {
            char path[64];
            snprintf(path, sizeof path, "matrix.%s", genkeys[i]);
            if (given(g, path))
                return ks_seterr(KS_ERR_CONFIG,
                                 "matrix: give either 'file' or 'generator', not both "
                                 "('%s' describes a generated matrix)",
                                 path);
        }
    }
    if (given(g, "rhs.file") && given(g, "rhs.type"))
        return ks_seterr(KS_ERR_CONFIG, "rhs: give either 'file' or 'type', not both");
    /* coefficients or a velocity the generator does not read: the library's
     * rule (an error, or one warning where they repeat the default) */
    KS_TRY(ks_config_keys_not_applying(&ks_problem_scope, block, g, problem_applies, problem_why));
    if (!p->matrix_file[0] && p->gen.kind == KS_GEN_POISSON2D_5 && given(g, "matrix.coefficients")) {
        ks_gen_params d;
        ks_gen_params_default(&d);
        if (p->gen.cz != d.cz)
            return ks_seterr(KS_ERR_CONFIG,
                             "matrix.coefficients[2]: cz = %g, but matrix.generator is "
                             "poisson2d_5, which is 2D and reads cx and cy only (give %g, the "
                             "default, or choose a 3D generator)",
                             p->gen.cz, d.cz);
    }

    ks_gen_params *gp = &p->gen;
    int is2d = gen_is_2d(gp->kind);
    if (b->ngrid == 1) {
        gp->nx = gp->ny = (ks_int)b->grid[0];
        gp->nz = is2d ? 1 : (ks_int)b->grid[0];
    } else if (b->ngrid == 2 || b->ngrid == 3) {
        if (b->ngrid == 2 && !is2d)
            return ks_seterr(KS_ERR_CONFIG, "matrix.n: %s is 3D: give [nx, ny, nz] or one size",
                             ks_gen_kind_name(gp->kind));
        if (b->ngrid == 3 && is2d)
            return ks_seterr(KS_ERR_CONFIG, "matrix.n: %s is 2D: give [nx, ny] or one size",
                             ks_gen_kind_name(gp->kind));
        gp->nx = (ks_int)b->grid[0];
        gp->ny = (ks_int)b->grid[1];
        gp->nz = b->ngrid == 3 ? (ks_int)b->grid[2] : 1;
    } else if (is2d) {
        gp->nz = 1;
    }
    if (!p->matrix_file[0]) {
        double rows = (double)gp->nx * gp->ny * (is2d ? 1.0 : gp->nz);
        if (rows > (double)INT32_MAX)
            return ks_seterr(KS_ERR_CONFIG,
                             "matrix.n: the grid has %.0f rows, more than ks_int holds (%d)", rows,
                             INT32_MAX);
    }
    int uses_c = gp->kind == KS_GEN_POISSON2D_5 || gp->kind == KS_GEN_POISSON3D_7 ||
                 gp->kind == KS_GEN_ANISO3D || gp->kind == KS_GEN_CONVDIFF3D;
    if (!p->matrix_file[0] && uses_c) {
        /* Each value is finite, but the stencil's diagonal sums them: with
         * values near DBL_MAX it overflows, and the generated matrix would
         * be refused later as "not finite" without naming the key. */
        double c = 2.0 * (gp->cx + gp->cy + (is2d ? 0.0 : gp->cz));
        if (!isfinite(c))
            return ks_seterr(KS_ERR_CONFIG,
                             "matrix.coefficients: [%g, %g, %g] overflow: the diagonal "
                             "2*(cx+cy%s) is not a finite number",
                             gp->cx, gp->cy, gp->cz, is2d ? "" : "+cz");
        if (gp->kind == KS_GEN_CONVDIFF3D &&
            !isfinite(c + fabs(gp->vx) + fabs(gp->vy) + fabs(gp->vz)))
            return ks_seterr(KS_ERR_CONFIG,
                             "matrix.velocity: [%g, %g, %g] with the coefficients overflow "
                             "the diagonal (not a finite number)",
                             gp->vx, gp->vy, gp->vz);
    }
    if (p->rhs_file[0])
        p->rhs_kind[0] = '\0';
    return KS_OK;
}

const ks_config_scope ks_problem_scope = {
    keys, NKEYS, sizeof(problem_block), problem_defaults, problem_check, problem_applies,
};

const ks_problem_params *ks_problem_params_of(const ks_config *cfg)
{
    const problem_block *b = ks_config_scope_block(cfg, &ks_problem_scope);
    return b ? &b->p : NULL;
}
