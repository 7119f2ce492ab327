/* The ksolve tool's config keys (cli/problem_keys.c), a scope of the
 * library's config engine: their values, defaults, errors, ks_config_set
 * on them, relative paths, and the dump and docs of the merged config. */
#include "config_cases.h"
#include "cli/problem.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every config here has the tool's scope. */
static ks_config *load(const char *json) { return cfgtest_load(&ks_problem_scope, json); }

static void expect_fail(const char *json, ks_error code, const char *sub1, const char *sub2)
{
    cfgtest_expect_fail(&ks_problem_scope, json, code, sub1, sub2);
}

#define dump_tree cfgtest_dump_tree
#define at cfgtest_at
#define source_path cfgtest_source_path

/* ------------------------------------------------------------- defaults */
START_TEST(test_defaults)
{
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_default_scoped(&ks_problem_scope, &cfg));
    ks_problem_params dp;
    ks_problem_params_default(&dp);
    const ks_problem_params *p = ks_problem_params_of(cfg);
    ck_assert_str_eq(p->backend, dp.backend);
    ck_assert_str_eq(p->spmv_format, dp.spmv_format);
    ck_assert_int_eq(p->gen.kind, dp.gen.kind);
    ck_assert_int_eq(p->gen.nx, dp.gen.nx);
    ck_assert_int_eq(p->gen.nz, dp.gen.nz);
    ck_assert_str_eq(p->matrix_file, "");
    ck_assert_str_eq(p->rhs_kind, "A_ones");
    /* The library's settings are there as without the scope. */
    ks_solver_params ds;
    ks_solver_params_default(&ds);
    ck_assert_str_eq(ks_config_solver_params(cfg)->solver, ds.solver);
    ck_assert_int_eq(ks_config_solver_params(cfg)->max_iters, ds.max_iters);

    /* The dump shows every default: the library's keys, then the tool's. */
    json_t *t = dump_tree(cfg);
    ck_assert_int_eq(json_integer_value(at(t, "config_version", NULL, NULL)), 2);
    ck_assert_str_eq(json_string_value(at(t, "solver", "solver", NULL)), "PCG");
    ck_assert_str_eq(json_string_value(at(t, "backend", NULL, NULL)), "cpu");
    ck_assert_str_eq(json_string_value(at(t, "spmv_format", NULL, NULL)), "auto");
    ck_assert_int_eq(json_integer_value(at(t, "spmv", "threads_per_row", NULL)), 0);
    ck_assert_str_eq(json_string_value(at(t, "matrix", "generator", NULL)), "poisson3d_7");
    ck_assert_int_eq(json_integer_value(at(t, "matrix", "n", NULL)), 64);
    ck_assert_int_eq(json_array_size(at(t, "matrix", "coefficients", NULL)), 3);
    /* poisson3d_7 reads no velocity: left out, as every key that does not apply */
    ck_assert_ptr_null(json_object_get(at(t, "matrix", NULL, NULL), "velocity"));
    ck_assert_str_eq(json_string_value(at(t, "rhs", "type", NULL)), "A_ones");
    ck_assert_ptr_null(json_object_get(t, "solution")); /* no file: nothing written */
    const char *key;
    json_t *v;
    ck_assert_int_eq(json_integer_value(at(t, "threads", NULL, NULL)), 0);
    ck_assert_ptr_null(json_object_get(t, "x0")); /* no file: x0 = 0 */
    ck_assert_str_eq(json_string_value(at(t, "gpu_map", NULL, NULL)), "local");
    const char *order[] = {"config_version", "solver", "backend", "spmv_format", "threads",
                           "gpu_map", "spmv", "matrix", "rhs"};
    int i = 0;
    json_object_foreach(t, key, v) {
        ck_assert_int_lt(i, 9);
        ck_assert_str_eq(key, order[i++]);
    }
    json_decref(t);
    ks_config_destroy(&cfg);
}
END_TEST

/* dump -> load -> dump is a fixed point, also for non-default values. */
START_TEST(test_dump_roundtrip)
{
    static const char *const cfgs[] = {
        "{}",
        "{\"solver\": {\"solver\": \"PBICGSTAB\", \"tolerance\": 1e-6, \"convergence\": "
        "\"RELATIVE_INI_CORE\", \"norm\": \"LMAX\", \"preconditioner\": \"JACOBI_L1\"},"
        " \"matrix\": {\"generator\": \"convdiff3d\", \"n\": [8, 9, 10], \"velocity\": [1, -2, 0.5]},"
        " \"rhs\": {\"file\": \"/tmp/b.mtx\"}, \"solution\": {\"file\": \"x.mtx\"},"
        " \"backend\": \"cpu,cuda\", \"spmv\": {\"threads_per_row\": 4}}",
        "{\"matrix\": {\"file\": \"/data/A.mtx.gz\"}}",
        "{\"matrix\": {\"generator\": \"poisson2d_9\", \"n\": [20, 30]}}",
        "{\"solver\": {\"preconditioner\": {\"solver\": \"AMG\", \"algorithm\": \"AGGREGATION\","
        " \"selector\": \"PMIS\", \"strength_threshold\": 0.08, \"smoother\": \"CHEBYSHEV\","
        " \"cycle\": \"W\", \"seed\": 12345678901, \"presweeps\": 0}}}",
        "{\"solver\": {\"solver\": \"AMG\", \"max_iters\": 30, \"interpolator\": \"D1\","
        " \"smoother\": {\"solver\": \"SGS\", \"relaxation_factor\": 0.8}, \"cycle\": \"F\"}}",
        "{\"solver\": {\"preconditioner\": \"JACOBI\"}}",
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        ks_config *a = load(cfgs[i]);
        char *d1 = ks_config_dump(a);
        ck_assert_ptr_nonnull(d1);
        ks_config *b = load(d1);
        char *d2 = ks_config_dump(b);
        ck_assert_str_eq(d1, d2);
        ck_assert_mem_eq(ks_config_solver_params(a)->solver, ks_config_solver_params(b)->solver,
                         KS_NAME_MAX);
        ck_assert(ks_config_solver_params(a)->tolerance == ks_config_solver_params(b)->tolerance);
        free(d1);
        free(d2);
        ks_config_destroy(&a);
        ks_config_destroy(&b);
    }
}
END_TEST

/* ------------------------------------------------------- valid values */
START_TEST(test_problem_keys)
{
    static const char *const backends[] = {"cpu", "cuda", "cpu,cuda"};
    for (int i = 0; i < 3; i++) {
        char json[96];
        snprintf(json, sizeof json, "{\"backend\": \"%s\"}", backends[i]);
        ks_config *cfg = load(json);
        ck_assert_str_eq(ks_problem_params_of(cfg)->backend, backends[i]);
        ks_config_destroy(&cfg);
    }
    static const int tpr[] = {0, 1, 2, 4, 8, 16, 32};
    for (int i = 0; i < 7; i++) {
        char json[96];
        snprintf(json, sizeof json, "{\"spmv\": {\"threads_per_row\": %d}}", tpr[i]);
        ks_config *cfg = load(json);
        ck_assert_int_eq(ks_problem_params_of(cfg)->spmv.threads_per_row, tpr[i]);
        ks_config_destroy(&cfg);
    }
    static const char *const rhs[] = {"A_ones", "ones", "A_sin", "zero"};
    for (int i = 0; i < 4; i++) {
        char json[96];
        snprintf(json, sizeof json, "{\"rhs\": {\"type\": \"%s\"}}", rhs[i]);
        ks_config *cfg = load(json);
        ck_assert_str_eq(ks_problem_params_of(cfg)->rhs_kind, rhs[i]);
        ck_assert_str_eq(ks_problem_params_of(cfg)->rhs_file, "");
        ks_config_destroy(&cfg);
    }
    for (int g = 0; g <= (int)KS_GEN_CONVDIFF3D; g++) {
        char json[128];
        snprintf(json, sizeof json, "{\"matrix\": {\"generator\": \"%s\", \"n\": 5}}",
                 ks_gen_kind_name((ks_gen_kind)g));
        ks_config *cfg = load(json);
        const ks_problem_params *p = ks_problem_params_of(cfg);
        ck_assert_int_eq(p->gen.kind, g);
        ck_assert_int_eq(p->gen.nx, 5);
        ck_assert_int_eq(p->gen.ny, 5);
        ck_assert_int_eq(p->gen.nz, g <= (int)KS_GEN_POISSON2D_9 ? 1 : 5);
        ks_config_destroy(&cfg);
    }

    ks_config *cfg = load("{\"spmv_format\": \"csr\", \"matrix\": {\"generator\": \"convdiff3d\","
                          " \"n\": [4, 5, 6], \"coefficients\": [1, 0.01, 100],"
                          " \"velocity\": [0, -1, 2.5]}, \"rhs\": {\"file\": \"b.mtx\"},"
                          " \"solution\": {\"file\": \"out/x.mtx\"}}");
    const ks_problem_params *p = ks_problem_params_of(cfg);
    ck_assert_str_eq(p->spmv_format, "csr");
    ck_assert_int_eq(p->gen.kind, KS_GEN_CONVDIFF3D);
    ck_assert_int_eq(p->gen.nx, 4);
    ck_assert_int_eq(p->gen.ny, 5);
    ck_assert_int_eq(p->gen.nz, 6);
    ck_assert(p->gen.cx == 1 && p->gen.cy == 0.01 && p->gen.cz == 100);
    ck_assert(p->gen.vx == 0 && p->gen.vy == -1 && p->gen.vz == 2.5);
    ck_assert_str_eq(p->rhs_file, "b.mtx"); /* from a string: not resolved */
    ck_assert_str_eq(p->rhs_kind, "");
    ck_assert_str_eq(p->solution_file, "out/x.mtx");
    ks_config_destroy(&cfg);

    cfg = load("{\"matrix\": {\"generator\": \"poisson2d_5\", \"n\": [7, 3]}}");
    p = ks_problem_params_of(cfg);
    ck_assert_int_eq(p->gen.nx, 7);
    ck_assert_int_eq(p->gen.ny, 3);
    ck_assert_int_eq(p->gen.nz, 1);
    ks_config_destroy(&cfg);

    cfg = load("{\"matrix\": {\"file\": \"/abs/A.mtx\"}}");
    ck_assert_str_eq(ks_problem_params_of(cfg)->matrix_file, "/abs/A.mtx");
    json_t *t = dump_tree(cfg);
    ck_assert_ptr_null(json_object_get(json_object_get(t, "matrix"), "generator"));
    json_decref(t);
    ks_config_destroy(&cfg);
}
END_TEST

/* ------------------------------------------------------------- errors */
START_TEST(test_unknown_keys)
{
    /* Nothing close: the keys of the scope are listed. */
    expect_fail("{\"matrix\": {\"zzzzzz\": 1}}", KS_ERR_CONFIG, "unknown key 'matrix.zzzzzz'",
                "file, generator, n, coefficients, velocity");
    /* Suggestions span the library's keys and the tool's. */
    expect_fail("{\"max_iters\": 5}", KS_ERR_CONFIG, "unknown key 'max_iters'",
                "did you mean 'solver.max_iters'?");
    expect_fail("{\"matrix\": {\"generatr\": \"aniso3d\"}}", KS_ERR_CONFIG,
                "unknown key 'matrix.generatr'", "(did you mean 'generator'?)");
    expect_fail("{\"nosuch\": 1}", KS_ERR_CONFIG, "unknown key 'nosuch'",
                "(keys allowed here: config_version, solver, backend, spmv_format, threads, "
                "gpu_map, spmv, matrix, rhs, x0, solution)");
    /* gpu_map: its syntax checked on load (the GPUs are counted at run time) */
    expect_fail("{\"gpu_map\": \"0,,1\"}", KS_ERR_CONFIG, "gpu_map \"0,,1\"",
                "expected local, none, a GPU index or a list");
    expect_fail("{\"gpu_map\": [0, 1]}", KS_ERR_CONFIG, "gpu_map", "got array");
}
END_TEST

START_TEST(test_wrong_types)
{
    expect_fail("{\"matrix\": {\"file\": 7}}", KS_ERR_CONFIG, "matrix.file: expected", "got integer");
    expect_fail("{\"matrix\": {\"n\": \"10\"}}", KS_ERR_CONFIG, "matrix.n: expected", "got string");
    expect_fail("{\"matrix\": {\"n\": [10, \"x\", 3]}}", KS_ERR_CONFIG,
                "matrix.n[1]: expected an integer, got string", NULL);
    expect_fail("{\"matrix\": {\"velocity\": [1, 2]}}", KS_ERR_CONFIG,
                "matrix.velocity: expected 3 numbers", NULL);
    expect_fail("{\"matrix\": {\"coefficients\": 1}}", KS_ERR_CONFIG,
                "matrix.coefficients: expected an array of 3 numbers, got integer", NULL);
    expect_fail("{\"spmv\": {\"threads_per_row\": true}}", KS_ERR_CONFIG,
                "spmv.threads_per_row: expected an integer, got boolean", NULL);
    expect_fail("{\"matrix\": {\"generator\": 3}}", KS_ERR_CONFIG,
                "matrix.generator: expected a generator name (string), got integer", NULL);
    expect_fail("{\"matrix\": 3}", KS_ERR_CONFIG, "matrix: expected an object, got integer", NULL);
}
END_TEST

START_TEST(test_out_of_range)
{
    expect_fail("{\"spmv\": {\"threads_per_row\": 3}}", KS_ERR_CONFIG,
                "spmv.threads_per_row: must be one of 0, 1, 2, 4, 8, 16, 32 (got 3)", NULL);
    expect_fail("{\"matrix\": {\"n\": 0}}", KS_ERR_CONFIG, "matrix.n: must be >= 1 (got 0)", NULL);
    expect_fail("{\"matrix\": {\"n\": [4, -1, 4]}}", KS_ERR_CONFIG,
                "matrix.n[1]: must be >= 1 (got -1)", NULL);
    expect_fail("{\"matrix\": {\"n\": [2000, 2000, 2000]}}", KS_ERR_CONFIG, "matrix.n",
                "more than ks_int holds");
    expect_fail("{\"matrix\": {\"coefficients\": [1, 0, 1]}}", KS_ERR_CONFIG,
                "matrix.coefficients[1]: must be > 0 (got 0)", NULL);
    expect_fail("{\"spmv_format\": \"\"}", KS_ERR_CONFIG, "spmv_format: must not be empty", NULL);
    expect_fail("{\"matrix\": {\"file\": \"\"}}", KS_ERR_CONFIG, "matrix.file: must not be empty",
                NULL);
    expect_fail("{\"matrix\": {\"n\": [4, 5, 6, 7]}}", KS_ERR_CONFIG,
                "matrix.n: expected 2 or 3 sizes, got 4", NULL);
}
END_TEST

START_TEST(test_bad_enums)
{
    expect_fail("{\"backend\": \"gpu\"}", KS_ERR_CONFIG, "backend: unknown value 'gpu'",
                "cpu, cuda, cpu,cuda");
    expect_fail("{\"rhs\": {\"type\": \"random\"}}", KS_ERR_CONFIG, "rhs.type", "A_ones, ones");
    expect_fail("{\"matrix\": {\"generator\": \"laplace\"}}", KS_ERR_CONFIG,
                "matrix.generator: unknown value 'laplace'", "poisson2d_5");
}
END_TEST

START_TEST(test_conflicts)
{
    expect_fail("{\"matrix\": {\"file\": \"A.mtx\", \"generator\": \"poisson2d_5\"}}",
                KS_ERR_CONFIG, "matrix: give either 'file' or 'generator', not both", NULL);
    expect_fail("{\"matrix\": {\"n\": 10, \"file\": \"A.mtx\"}}", KS_ERR_CONFIG,
                "matrix: give either 'file' or 'generator'", "'matrix.n'");
    expect_fail("{\"rhs\": {\"file\": \"b.mtx\", \"type\": \"ones\"}}", KS_ERR_CONFIG,
                "rhs: give either 'file' or 'type', not both", NULL);
    expect_fail("{\"matrix\": {\"n\": [10, 10]}}", KS_ERR_CONFIG,
                "matrix.n: poisson3d_7 is 3D: give [nx, ny, nz]", NULL);
    expect_fail("{\"matrix\": {\"n\": [10, 10, 10], \"generator\": \"poisson2d_9\"}}",
                KS_ERR_CONFIG, "matrix.n: poisson2d_9 is 2D: give [nx, ny]", NULL);
    /* The library's rules still hold beside the tool's keys. */
    expect_fail("{\"solver\": {\"solver\": \"CG\", \"preconditioner\": \"JACOBI\"},"
                " \"matrix\": {\"n\": 8}}",
                KS_ERR_CONFIG, "solver.preconditioner: CG is unpreconditioned; use PCG", NULL);
}
END_TEST

/* Warnings the library logged (ks_set_print_callback). */
static char logged[4096];
static int nlogged;

static void collect(const char *msg, int len, void *ctx)
{
    (void)ctx;
    size_t used = strlen(logged);
    if (used + (size_t)len < sizeof logged)
        memcpy(logged + used, msg, (size_t)len + 1);
    nlogged++;
}

/* json loads with exactly one warning, naming path and "the default". */
static void expect_one_warning(const char *json, const char *path)
{
    logged[0] = '\0';
    nlogged = 0;
    ks_set_log_level(KS_LOG_WARN);
    ks_set_print_callback(collect, NULL);
    ks_config *cfg = load(json);
    ks_set_print_callback(NULL, NULL);
    char want[128];
    snprintf(want, sizeof want, "warning: %s: ignored (its value is the default)", path);
    ck_assert_msg(nlogged == 1 && strstr(logged, want), "%s: %d warnings:\n%s", json, nlogged,
                  logged);
    json_t *t = dump_tree(cfg); /* left out of the dump, as the library's keys */
    ck_assert_ptr_null(json_object_get(at(t, "matrix", NULL, NULL), strchr(path, '.') + 1));
    json_decref(t);
    ks_config_destroy(&cfg);
}

/* The tool's generator keys follow the library's rule for keys that do not
 * apply: given to a generator that does not read them, an error naming the
 * key and the generator (and what to choose), or one warning where the
 * value is the default. */
START_TEST(test_generator_keys_apply)
{
    static const char *const fixed[] = {"poisson2d_9", "poisson3d_27"};
    for (int i = 0; i < 2; i++) {
        char json[256], want[256];
        snprintf(json, sizeof json,
                 "{\"matrix\": {\"coefficients\": [1, 1, 2], \"generator\": \"%s\", \"n\": 4}}",
                 fixed[i]);
        snprintf(want, sizeof want,
                 "matrix.coefficients: applies to the poisson2d_5, poisson3d_7, aniso3d and "
                 "convdiff3d generators only, but matrix.generator is %s",
                 fixed[i]);
        expect_fail(json, KS_ERR_CONFIG, want, "choose one of them");
        snprintf(json, sizeof json,
                 "{\"matrix\": {\"generator\": \"%s\", \"coefficients\": [1, 1, 1], \"n\": 4}}",
                 fixed[i]);
        expect_one_warning(json, "matrix.coefficients");
    }
    for (int g = 0; g <= (int)KS_GEN_CONVDIFF3D; g++) {
        if (g == (int)KS_GEN_CONVDIFF3D)
            continue;
        char json[256], want[256];
        snprintf(json, sizeof json,
                 "{\"matrix\": {\"generator\": \"%s\", \"velocity\": [2, 0, 1], \"n\": 4}}",
                 ks_gen_kind_name((ks_gen_kind)g));
        snprintf(want, sizeof want,
                 "matrix.velocity: applies to the convdiff3d generator only, but "
                 "matrix.generator is %s",
                 ks_gen_kind_name((ks_gen_kind)g));
        expect_fail(json, KS_ERR_CONFIG, want, "(remove the key, or choose convdiff3d)");
    }
    expect_one_warning("{\"matrix\": {\"velocity\": [1, 1, 1]}}", "matrix.velocity");
    /* poisson2d_5 reads cx and cy: a cz other than the default is lost */
    expect_fail("{\"matrix\": {\"generator\": \"poisson2d_5\", \"coefficients\": [1, 2, 3]}}",
                KS_ERR_CONFIG, "matrix.coefficients[2]: cz = 3, but matrix.generator is "
                "poisson2d_5, which is 2D and reads cx and cy only", NULL);
    ks_config *cfg = load("{\"matrix\": {\"generator\": \"poisson2d_5\", "
                          "\"coefficients\": [1, 2, 1]}}");
    ck_assert(ks_problem_params_of(cfg)->gen.cy == 2);
    ks_config_destroy(&cfg);
    /* where they apply: taken and dumped */
    cfg = load("{\"matrix\": {\"generator\": \"convdiff3d\", \"coefficients\": [1, 1, 2],"
               " \"velocity\": [3, 0, 1]}}");
    json_t *t = dump_tree(cfg);
    ck_assert_int_eq(json_array_size(at(t, "matrix", "velocity", NULL)), 3);
    ck_assert_int_eq(json_array_size(at(t, "matrix", "coefficients", NULL)), 3);
    json_decref(t);
    /* ks_config_set: switching the generator away from a key it would drop
     * fails and leaves the config as it was */
    ck_assert_int_eq(ks_config_set(cfg, "matrix.generator", "poisson3d_7"), KS_ERR_CONFIG);
    ck_assert_msg(strstr(ks_last_error(), "matrix.velocity: applies to the convdiff3d "
                                          "generator only, but matrix.generator is poisson3d_7"),
                  "%s", ks_last_error());
    ck_assert_int_eq(ks_problem_params_of(cfg)->gen.kind, KS_GEN_CONVDIFF3D);
    ks_config_destroy(&cfg);
    /* with a matrix file the generator's keys are a conflict (as before) */
    expect_fail("{\"matrix\": {\"file\": \"A.mtx\", \"velocity\": [1, 1, 1]}}", KS_ERR_CONFIG,
                "matrix: give either 'file' or 'generator'", "'matrix.velocity'");
}
END_TEST

/* ---------------------------------------------------------- ks_config_set */
START_TEST(test_set)
{
    ks_config *cfg = load("{\"solver\": {\"preconditioner\": \"JACOBI\"}}");
    KS_CHECK(ks_config_set(cfg, "solver.max_iters", "200"));
    ck_assert_int_eq(ks_config_solver_params(cfg)->max_iters, 200);
    KS_CHECK(ks_config_set(cfg, "solver.tolerance", "1e-6"));
    ck_assert(ks_config_solver_params(cfg)->tolerance == 1e-6);
    /* Expands the string shorthand into an object. */
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.relaxation_factor", "0.7"));
    ck_assert_str_eq(ks_config_solver_params(cfg)->pc.solver, "JACOBI");
    ck_assert(ks_config_solver_params(cfg)->pc.relaxation_factor == 0.7);
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.solver", "JACOBI_L1"));
    ck_assert_str_eq(ks_config_solver_params(cfg)->pc.solver, "JACOBI_L1");
    /* Non-JSON text is a string; JSON text is parsed. */
    KS_CHECK(ks_config_set(cfg, "backend", "cpu,cuda"));
    ck_assert_str_eq(ks_problem_params_of(cfg)->backend, "cpu,cuda");
    KS_CHECK(ks_config_set(cfg, "backend", "\"cpu\""));
    ck_assert_str_eq(ks_problem_params_of(cfg)->backend, "cpu");
    KS_CHECK(ks_config_set(cfg, "solver.monitor_residual", "true"));
    ck_assert_int_eq(ks_config_solver_params(cfg)->monitor_residual, 1);
    /* Intermediate objects are created. */
    KS_CHECK(ks_config_set(cfg, "spmv.threads_per_row", "8"));
    ck_assert_int_eq(ks_problem_params_of(cfg)->spmv.threads_per_row, 8);
    KS_CHECK(ks_config_set(cfg, "matrix.generator", "poisson2d_5"));
    KS_CHECK(ks_config_set(cfg, "matrix.n", "[30,20]"));
    ck_assert_int_eq(ks_problem_params_of(cfg)->gen.kind, KS_GEN_POISSON2D_5);
    ck_assert_int_eq(ks_problem_params_of(cfg)->gen.nx, 30);
    ck_assert_int_eq(ks_problem_params_of(cfg)->gen.ny, 20);
    /* The whole config object can be given as JSON. */
    KS_CHECK(ks_config_set(cfg, "solution", "{\"file\": \"x.mtx\"}"));
    ck_assert_str_eq(ks_problem_params_of(cfg)->solution_file, "x.mtx");

    /* A failing set leaves the config as it was. */
    char *before = ks_config_dump(cfg);
    ks_solver_params sp = *ks_config_solver_params(cfg);
    ck_assert_int_eq(ks_config_set(cfg, "solver.max_iters", "-5"), KS_ERR_CONFIG);
    ck_assert(strstr(ks_last_error(), "solver.max_iters: must be >= 1 (got -5)"));
    ck_assert_int_eq(ks_config_set(cfg, "solver.max_iter", "5"), KS_ERR_CONFIG);
    ck_assert(strstr(ks_last_error(), "unknown key 'solver.max_iter' (did you mean 'max_iters'?)"));
    ck_assert_int_eq(ks_config_set(cfg, "solver.solver", "CG"), KS_ERR_CONFIG);
    ck_assert(strstr(ks_last_error(), "CG is unpreconditioned"));
    ck_assert_int_eq(ks_config_set(cfg, "solver.max_iters.x", "1"), KS_ERR_CONFIG);
    ck_assert(strstr(ks_last_error(), "'solver.max_iters' is an integer, not an object"));
    ck_assert_int_eq(ks_config_set(cfg, "solver..x", "1"), KS_ERR_CONFIG);
    ck_assert_int_eq(ks_config_set(cfg, "", "1"), KS_ERR_CONFIG);
    ck_assert_int_eq(ks_config_set(cfg, "solver.max_iters", NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_config_set(NULL, "solver.max_iters", "1"), KS_ERR_ARG);
    char *after = ks_config_dump(cfg);
    ck_assert_str_eq(before, after);
    ck_assert_int_eq(ks_config_solver_params(cfg)->max_iters, sp.max_iters);
    ck_assert_str_eq(ks_config_solver_params(cfg)->solver, sp.solver);
    free(before);
    free(after);
    ks_config_destroy(&cfg);
}
END_TEST

/* Setting one of two exclusive keys replaces the other, so command-line
 * flags override a config file's choice. */
START_TEST(test_set_exclusive)
{
    ks_config *cfg = load("{\"matrix\": {\"generator\": \"poisson2d_5\", \"n\": 10},"
                          " \"rhs\": {\"type\": \"ones\"}}");
    KS_CHECK(ks_config_set(cfg, "matrix.file", "/tmp/A.mtx"));
    ck_assert_str_eq(ks_problem_params_of(cfg)->matrix_file, "/tmp/A.mtx");
    KS_CHECK(ks_config_set(cfg, "rhs.file", "/tmp/b.mtx"));
    ck_assert_str_eq(ks_problem_params_of(cfg)->rhs_file, "/tmp/b.mtx");
    ck_assert_str_eq(ks_problem_params_of(cfg)->rhs_kind, "");
    KS_CHECK(ks_config_set(cfg, "rhs.type", "zero"));
    ck_assert_str_eq(ks_problem_params_of(cfg)->rhs_file, "");
    ck_assert_str_eq(ks_problem_params_of(cfg)->rhs_kind, "zero");
    KS_CHECK(ks_config_set(cfg, "matrix.n", "12"));
    ck_assert_str_eq(ks_problem_params_of(cfg)->matrix_file, "");
    ck_assert_int_eq(ks_problem_params_of(cfg)->gen.nx, 12);
    ks_config_destroy(&cfg);
}
END_TEST

/* Command-line overrides of the tool's keys and the library's validate
 * together: the order does not matter. */
START_TEST(test_set_many)
{
    ks_config *cfg = load("{}");
    const char *keys[] = {"matrix.n", "solver.solver", "matrix.generator", "solver.preconditioner"};
    const char *vals[] = {"[7,3]", "CG", "poisson2d_5", "NOSOLVER"};
    KS_CHECK(ks_config_set_many(cfg, 4, keys, vals));
    ck_assert_int_eq(ks_problem_params_of(cfg)->gen.kind, KS_GEN_POISSON2D_5);
    ck_assert_int_eq(ks_problem_params_of(cfg)->gen.nx, 7);
    ck_assert_int_eq(ks_problem_params_of(cfg)->gen.ny, 3);
    ck_assert_str_eq(ks_config_solver_params(cfg)->solver, "CG");
    /* One bad value leaves both parts as they were. */
    const char *keys2[] = {"rhs.type", "solver.max_iters"};
    const char *vals2[] = {"ones", "0"};
    ck_assert_int_eq(ks_config_set_many(cfg, 2, keys2, vals2), KS_ERR_CONFIG);
    ck_assert(strstr(ks_last_error(), "solver.max_iters"));
    ck_assert_str_eq(ks_problem_params_of(cfg)->rhs_kind, "A_ones");
    ks_config_destroy(&cfg);
}
END_TEST

/* The tool's struct belongs to configs created with its scope; a scope
 * adds keys, it does not replace the library's. */
START_TEST(test_scope_block)
{
    ks_config *lib = NULL, *tool = NULL;
    KS_CHECK(ks_config_create_default(&lib));
    KS_CHECK(ks_config_create_default_scoped(&ks_problem_scope, &tool));
    ck_assert_ptr_null(ks_problem_params_of(lib));
    ck_assert_ptr_null(ks_config_scope_block(lib, &ks_problem_scope));
    ck_assert_ptr_nonnull(ks_problem_params_of(tool));
    ck_assert_ptr_eq(ks_config_scope_block(tool, &ks_problem_scope), ks_problem_params_of(tool));
    ck_assert_ptr_null(ks_problem_params_of(NULL));
    ks_config_destroy(&lib);
    ks_config_destroy(&tool);

    /* A scope may not redefine a key of the library's. */
    static const ks_key_spec clash_keys[] = {{.path = "solver", .type = KT_SCOPE}};
    static const ks_config_scope clash = {clash_keys, 1, 1, NULL, NULL, NULL};
    ks_config *cfg = (ks_config *)0x1;
    ck_assert_int_eq(ks_config_create_default_scoped(&clash, &cfg), KS_ERR_ARG);
    ck_assert_ptr_null(cfg);
    ck_assert(strstr(ks_last_error(), "'solver' is one of the library's keys"));
}
END_TEST

/* The files of examples/configs: each use case loads in the tool, with
 * what its name says (bicgstab_amg.json names its problem too, the GPU
 * configs their backend). */
START_TEST(test_example_configs)
{
    static const struct {
        const char *file, *solver, *pc, *algorithm;
    } ex[] = {
        {"pcg_amg_classical.json", "PCG", "AMG", "CLASSICAL"},
        {"pcg_amg_aggressive.json", "PCG", "AMG", "CLASSICAL"},
        {"pcg_amg_aggregation.json", "PCG", "AMG", "AGGREGATION"},
        {"bicgstab_amg.json", "PBICGSTAB", "AMG", "CLASSICAL"},
        {"amg_standalone.json", "AMG", "AMG", "CLASSICAL"},
        {"pcg_jacobi.json", "PCG", "JACOBI", NULL},
        {"pcg_amg_gpu_fast.json", "PCG", "AMG", "AGGREGATION"},
        {"pcg_amg_classical_gpu.json", "PCG", "AMG", "CLASSICAL"},
        {"pcg_amg_gpu.json", "PCG", "AMG", "CLASSICAL"},
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "examples/configs/%s", ex[i].file);
        ks_config *cfg = NULL;
        ks_error e = ks_config_create_from_file_scoped(source_path(rel), &ks_problem_scope, &cfg);
        ck_assert_msg(e == KS_OK, "%s: %s", ex[i].file, ks_last_error());
        const ks_solver_params *s = ks_config_solver_params(cfg);
        ck_assert_str_eq(s->solver, ex[i].solver);
        ck_assert_str_eq(s->pc.solver, ex[i].pc);
        if (ex[i].algorithm)
            ck_assert_str_eq(ks_name_of(ks_amg_algorithm_names, s->pc.amg.algorithm), ex[i].algorithm);
        ck_assert_str_eq(ks_name_of(ks_amg_precision_names, s->pc.amg.hierarchy_precision),
                         strstr(ex[i].file, "gpu") ? "FLOAT" : "DOUBLE");
        /* the GPU configs say where they run */
        ck_assert_str_eq(ks_problem_params_of(cfg)->backend,
                         strstr(ex[i].file, "gpu") ? "cuda" : "cpu");
        /* And its dump loads again. */
        char *d = ks_config_dump(cfg);
        ks_config *back = load(d);
        free(d);
        ks_config_destroy(&back);
        ks_config_destroy(&cfg);
    }
}
END_TEST

/* ------------------------------------------------------- relative paths */
START_TEST(test_relative_paths)
{
    const char *dir = ks_test_tmpfile("_cfgdir");
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    char path[1200], want[1200];
    snprintf(path, sizeof path, "%s/run.json", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"matrix\": {\"file\": \"A.mtx\"}, \"rhs\": {\"file\": \"../b.mtx\"},"
          " \"solution\": {\"file\": \"/abs/x.mtx\"}}",
          f);
    fclose(f);
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_from_file_scoped(path, &ks_problem_scope, &cfg));
    const ks_problem_params *p = ks_problem_params_of(cfg);
    snprintf(want, sizeof want, "%s/A.mtx", dir);
    ck_assert_str_eq(p->matrix_file, want);
    snprintf(want, sizeof want, "%s/../b.mtx", dir);
    ck_assert_str_eq(p->rhs_file, want);
    ck_assert_str_eq(p->solution_file, "/abs/x.mtx");
    /* Values set later (command line) stay relative to the working directory. */
    KS_CHECK(ks_config_set(cfg, "solution.file", "x.mtx"));
    ck_assert_str_eq(ks_problem_params_of(cfg)->solution_file, "x.mtx");
    /* The dump carries the resolved paths, so it works from anywhere. */
    char *d = ks_config_dump(cfg);
    snprintf(want, sizeof want, "\"%s/A.mtx\"", dir);
    ck_assert_msg(strstr(d, want), "%s", d);
    free(d);
    ks_config_destroy(&cfg);
    remove(path);
    rmdir(dir);
}
END_TEST

/* docs/config.md documents every key the tool's dump shows (and the file keys),
 * for each kind of solver: the AMG keys appear only when AMG is chosen. */
START_TEST(test_docs_cover_keys)
{
    const char *doc = cfgtest_config_doc();

    const char *extra[] = {"matrix.file", "rhs.file"};
    for (int i = 0; i < 2; i++) {
        char want[64];
        snprintf(want, sizeof want, "`%s`", extra[i]);
        ck_assert_msg(strstr(doc, want), "docs/config.md lacks %s", want);
    }
    static const char *const cfgs[] = {
        "{\"solution\": {\"file\": \"x\"}}",     /* PCG + AMG (default) */
        "{\"solver\": {\"solver\": \"AMG\"}}",     /* standalone AMG */
        "{\"solver\": {\"preconditioner\": \"JACOBI\"}}",
    };
    for (int c = 0; c < 3; c++) {
        ks_config *cfg = load(cfgs[c]);
        json_t *t = dump_tree(cfg);
        cfgtest_check_documented(doc, t, "");
        json_decref(t);
        ks_config_destroy(&cfg);
    }
    /* And the documented defaults are the defaults. */
    ks_config *cfg = load("{}");
    json_t *t = dump_tree(cfg);
    cfgtest_check_defaults(doc, t, "");
    json_decref(t);
    ks_config_destroy(&cfg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_config");
    TCase *tc = tcase_create("cli_config");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_dump_roundtrip);
    tcase_add_test(tc, test_problem_keys);
    tcase_add_test(tc, test_unknown_keys);
    tcase_add_test(tc, test_wrong_types);
    tcase_add_test(tc, test_out_of_range);
    tcase_add_test(tc, test_bad_enums);
    tcase_add_test(tc, test_conflicts);
    tcase_add_test(tc, test_generator_keys_apply);
    tcase_add_test(tc, test_set);
    tcase_add_test(tc, test_set_exclusive);
    tcase_add_test(tc, test_set_many);
    tcase_add_test(tc, test_scope_block);
    tcase_add_test(tc, test_example_configs);
    tcase_add_test(tc, test_relative_paths);
    tcase_add_test(tc, test_docs_cover_keys);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
