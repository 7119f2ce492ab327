/* JSON config: every key's valid values, defaults, each error class,
 * ks_config_set and path resolution. */
#include "ks_test.h"
#include "solver/cli.h"
#include "solver/params.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static ks_config *load(const char *json)
{
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_from_string(json, &cfg));
    ck_assert_ptr_nonnull(cfg);
    return cfg;
}

/* The config must fail with `code` and a message holding every substring. */
static void expect_fail(const char *json, ks_error code, const char *sub1, const char *sub2)
{
    ks_config *cfg = (ks_config *)0x1;
    ks_clear_error();
    ks_error e = ks_config_create_from_string(json, &cfg);
    ck_assert_msg(e == code, "%s: expected %s, got %s (%s)", json, ks_error_name(code),
                  ks_error_name(e), ks_last_error());
    ck_assert_ptr_null(cfg);
    ck_assert_msg(strstr(ks_last_error(), sub1), "message '%s' lacks '%s'", ks_last_error(), sub1);
    if (sub2)
        ck_assert_msg(strstr(ks_last_error(), sub2), "message '%s' lacks '%s'", ks_last_error(),
                      sub2);
}

static json_t *dump_tree(const ks_config *cfg)
{
    char *text = ks_config_dump(cfg);
    ck_assert_ptr_nonnull(text);
    json_error_t err;
    json_t *t = json_loads(text, 0, &err);
    ck_assert_msg(t != NULL, "dump is not JSON: %s\n%s", err.text, text);
    free(text);
    return t;
}

static json_t *at(json_t *root, const char *a, const char *b, const char *c)
{
    json_t *v = json_object_get(root, a);
    if (v && b)
        v = json_object_get(v, b);
    if (v && c)
        v = json_object_get(v, c);
    ck_assert_msg(v != NULL, "dump lacks %s%s%s%s%s", a, b ? "." : "", b ? b : "", c ? "." : "",
                  c ? c : "");
    return v;
}

/* ------------------------------------------------------------- defaults */
START_TEST(test_defaults)
{
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_default(&cfg));
    ks_solver_params ds;
    ks_problem_params dp;
    ks_solver_params_default(&ds);
    ks_problem_params_default(&dp);
    const ks_solver_params *s = ks_config_solver_params(cfg);
    const ks_problem_params *p = ks_config_problem_params(cfg);
    ck_assert_str_eq(s->solver, ds.solver);
    ck_assert_int_eq(s->max_iters, ds.max_iters);
    ck_assert(s->tolerance == ds.tolerance);
    ck_assert_int_eq(s->convergence, ds.convergence);
    ck_assert_int_eq(s->norm, ds.norm);
    ck_assert_int_eq(s->store_res_history, ds.store_res_history);
    ck_assert(s->divergence_factor == ds.divergence_factor);
    ck_assert_str_eq(s->pc.solver, ds.pc.solver);
    ck_assert(s->pc.relaxation_factor == ds.pc.relaxation_factor);
    ck_assert_str_eq(p->backend, dp.backend);
    ck_assert_str_eq(p->spmv_format, dp.spmv_format);
    ck_assert_int_eq(p->gen.kind, dp.gen.kind);
    ck_assert_int_eq(p->gen.nx, dp.gen.nx);
    ck_assert_int_eq(p->gen.nz, dp.gen.nz);
    ck_assert_str_eq(p->matrix_file, "");
    ck_assert_str_eq(p->rhs_kind, "A_ones");

    /* The dump shows every default. */
    json_t *t = dump_tree(cfg);
    ck_assert_int_eq(json_integer_value(at(t, "config_version", NULL, NULL)), 2);
    ck_assert_str_eq(json_string_value(at(t, "solver", "solver", NULL)), "PCG");
    ck_assert_int_eq(json_integer_value(at(t, "solver", "max_iters", NULL)), 1000);
    ck_assert(json_number_value(at(t, "solver", "tolerance", NULL)) == 1e-8);
    ck_assert_str_eq(json_string_value(at(t, "solver", "convergence", NULL)), "RELATIVE_RHS");
    ck_assert_str_eq(json_string_value(at(t, "solver", "norm", NULL)), "L2");
    ck_assert_int_eq(json_integer_value(at(t, "solver", "monitor_residual", NULL)), 0);
    ck_assert_int_eq(json_integer_value(at(t, "solver", "print_solve_stats", NULL)), 0);
    ck_assert_int_eq(json_integer_value(at(t, "solver", "store_res_history", NULL)), 1);
    ck_assert(json_number_value(at(t, "solver", "divergence_factor", NULL)) == 1e10);
    ck_assert_str_eq(json_string_value(at(t, "solver", "preconditioner", "solver")), "JACOBI");
    ck_assert(json_number_value(at(t, "solver", "preconditioner", "relaxation_factor")) == 1.0);
    ck_assert_str_eq(json_string_value(at(t, "backend", NULL, NULL)), "cpu");
    ck_assert_str_eq(json_string_value(at(t, "spmv_format", NULL, NULL)), "auto");
    ck_assert_int_eq(json_integer_value(at(t, "spmv", "threads_per_row", NULL)), 0);
    ck_assert_str_eq(json_string_value(at(t, "matrix", "generator", NULL)), "poisson3d_7");
    ck_assert_int_eq(json_integer_value(at(t, "matrix", "n", NULL)), 64);
    ck_assert_int_eq(json_array_size(at(t, "matrix", "coefficients", NULL)), 3);
    ck_assert_int_eq(json_array_size(at(t, "matrix", "velocity", NULL)), 3);
    ck_assert_str_eq(json_string_value(at(t, "rhs", "type", NULL)), "A_ones");
    ck_assert_ptr_null(json_object_get(t, "solution")); /* no file: nothing written */
    json_decref(t);
    ks_config_destroy(cfg);
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
        ks_config_destroy(a);
        ks_config_destroy(b);
    }
}
END_TEST

/* ------------------------------------------------------- valid values */
START_TEST(test_solver_keys)
{
    static const char *const solvers[] = {"PCG", "CG", "PBICGSTAB", "BICGSTAB"};
    for (int i = 0; i < 4; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"config_version\": 2, \"solver\": {\"solver\": \"%s\"}}",
                 solvers[i]);
        ks_config *cfg = load(json);
        const ks_solver_params *s = ks_config_solver_params(cfg);
        ck_assert_str_eq(s->solver, solvers[i]);
        /* Unpreconditioned methods drop the default Jacobi. */
        ck_assert_str_eq(s->pc.solver, (i & 1) ? "NOSOLVER" : "JACOBI");
        ks_config_destroy(cfg);
    }

    ks_config *cfg = load("{\"solver\": {\"scope\": \"main\", \"max_iters\": 7, \"tolerance\": 0,"
                          " \"convergence\": \"ABSOLUTE\", \"norm\": \"L1\","
                          " \"monitor_residual\": 1, \"print_solve_stats\": true,"
                          " \"store_res_history\": false, \"divergence_factor\": 1e3,"
                          " \"preconditioner\": {\"scope\": \"pc\", \"solver\": \"BLOCK_JACOBI\","
                          " \"relaxation_factor\": 2}}}");
    const ks_solver_params *s = ks_config_solver_params(cfg);
    ck_assert_int_eq(s->max_iters, 7);
    ck_assert(s->tolerance == 0.0);
    ck_assert_int_eq(s->convergence, KS_CONV_ABSOLUTE);
    ck_assert_int_eq(s->norm, KS_NORM_L1);
    ck_assert_int_eq(s->monitor_residual, 1);
    ck_assert_int_eq(s->print_solve_stats, 1);
    ck_assert_int_eq(s->store_res_history, 0);
    ck_assert(s->divergence_factor == 1e3);
    ck_assert_str_eq(s->pc.solver, "JACOBI"); /* BLOCK_JACOBI is an alias */
    ck_assert(s->pc.relaxation_factor == 2.0);
    ks_config_destroy(cfg);

    cfg = load("{\"solver\": {\"convergence\": \"RELATIVE_INI_CORE\", \"norm\": \"LMAX\","
               " \"tolerance\": 1e-12, \"monitor_residual\": false, \"store_res_history\": 1,"
               " \"preconditioner\": \"NOSOLVER\"}}");
    s = ks_config_solver_params(cfg);
    ck_assert_int_eq(s->convergence, KS_CONV_RELATIVE_INI);
    ck_assert_int_eq(s->norm, KS_NORM_LMAX);
    ck_assert(s->tolerance == 1e-12);
    ck_assert_int_eq(s->monitor_residual, 0);
    ck_assert_int_eq(s->store_res_history, 1);
    ck_assert_str_eq(s->pc.solver, "NOSOLVER");
    ks_config_destroy(cfg);

    cfg = load("{\"solver\": {\"convergence\": \"RELATIVE_INI\", \"norm\": \"L2\","
               " \"preconditioner\": {\"solver\": \"JACOBI_L1\", \"relaxation_factor\": 0.5}}}");
    s = ks_config_solver_params(cfg);
    ck_assert_int_eq(s->convergence, KS_CONV_RELATIVE_INI);
    ck_assert_int_eq(s->norm, KS_NORM_L2);
    ck_assert_str_eq(s->pc.solver, "JACOBI_L1");
    ck_assert(s->pc.relaxation_factor == 0.5);
    ks_config_destroy(cfg);

    /* CG with an explicit NOSOLVER is fine. */
    cfg = load("{\"solver\": {\"solver\": \"CG\", \"preconditioner\": \"NOSOLVER\"}}");
    ck_assert_str_eq(ks_config_solver_params(cfg)->pc.solver, "NOSOLVER");
    ks_config_destroy(cfg);
}
END_TEST

START_TEST(test_problem_keys)
{
    static const char *const backends[] = {"cpu", "cuda", "cpu,cuda"};
    for (int i = 0; i < 3; i++) {
        char json[96];
        snprintf(json, sizeof json, "{\"backend\": \"%s\"}", backends[i]);
        ks_config *cfg = load(json);
        ck_assert_str_eq(ks_config_problem_params(cfg)->backend, backends[i]);
        ks_config_destroy(cfg);
    }
    static const int tpr[] = {0, 1, 2, 4, 8, 16, 32};
    for (int i = 0; i < 7; i++) {
        char json[96];
        snprintf(json, sizeof json, "{\"spmv\": {\"threads_per_row\": %d}}", tpr[i]);
        ks_config *cfg = load(json);
        ck_assert_int_eq(ks_config_problem_params(cfg)->spmv.threads_per_row, tpr[i]);
        ks_config_destroy(cfg);
    }
    static const char *const rhs[] = {"A_ones", "ones", "A_sin", "zero"};
    for (int i = 0; i < 4; i++) {
        char json[96];
        snprintf(json, sizeof json, "{\"rhs\": {\"type\": \"%s\"}}", rhs[i]);
        ks_config *cfg = load(json);
        ck_assert_str_eq(ks_config_problem_params(cfg)->rhs_kind, rhs[i]);
        ck_assert_str_eq(ks_config_problem_params(cfg)->rhs_file, "");
        ks_config_destroy(cfg);
    }
    for (int g = 0; g <= (int)KS_GEN_CONVDIFF3D; g++) {
        char json[128];
        snprintf(json, sizeof json, "{\"matrix\": {\"generator\": \"%s\", \"n\": 5}}",
                 ks_gen_kind_name((ks_gen_kind)g));
        ks_config *cfg = load(json);
        const ks_problem_params *p = ks_config_problem_params(cfg);
        ck_assert_int_eq(p->gen.kind, g);
        ck_assert_int_eq(p->gen.nx, 5);
        ck_assert_int_eq(p->gen.ny, 5);
        ck_assert_int_eq(p->gen.nz, g <= (int)KS_GEN_POISSON2D_9 ? 1 : 5);
        ks_config_destroy(cfg);
    }

    ks_config *cfg = load("{\"spmv_format\": \"csr\", \"matrix\": {\"generator\": \"aniso3d\","
                          " \"n\": [4, 5, 6], \"coefficients\": [1, 0.01, 100],"
                          " \"velocity\": [0, -1, 2.5]}, \"rhs\": {\"file\": \"b.mtx\"},"
                          " \"solution\": {\"file\": \"out/x.mtx\"}}");
    const ks_problem_params *p = ks_config_problem_params(cfg);
    ck_assert_str_eq(p->spmv_format, "csr");
    ck_assert_int_eq(p->gen.kind, KS_GEN_ANISO3D);
    ck_assert_int_eq(p->gen.nx, 4);
    ck_assert_int_eq(p->gen.ny, 5);
    ck_assert_int_eq(p->gen.nz, 6);
    ck_assert(p->gen.cx == 1 && p->gen.cy == 0.01 && p->gen.cz == 100);
    ck_assert(p->gen.vx == 0 && p->gen.vy == -1 && p->gen.vz == 2.5);
    ck_assert_str_eq(p->rhs_file, "b.mtx"); /* from a string: not resolved */
    ck_assert_str_eq(p->rhs_kind, "");
    ck_assert_str_eq(p->solution_file, "out/x.mtx");
    ks_config_destroy(cfg);

    cfg = load("{\"matrix\": {\"generator\": \"poisson2d_5\", \"n\": [7, 3]}}");
    p = ks_config_problem_params(cfg);
    ck_assert_int_eq(p->gen.nx, 7);
    ck_assert_int_eq(p->gen.ny, 3);
    ck_assert_int_eq(p->gen.nz, 1);
    ks_config_destroy(cfg);

    cfg = load("{\"matrix\": {\"file\": \"/abs/A.mtx\"}}");
    ck_assert_str_eq(ks_config_problem_params(cfg)->matrix_file, "/abs/A.mtx");
    json_t *t = dump_tree(cfg);
    ck_assert_ptr_null(json_object_get(json_object_get(t, "matrix"), "generator"));
    json_decref(t);
    ks_config_destroy(cfg);
}
END_TEST

/* ------------------------------------------------------------- errors */
START_TEST(test_unknown_keys)
{
    expect_fail("{\"solver\": {\"max_iter\": 5}}", KS_ERR_CONFIG,
                "unknown key 'solver.max_iter'", "(did you mean 'max_iters'?)");
    expect_fail("{\"solver\": {\"preconditioner\": {\"relaxation\": 1}}}", KS_ERR_CONFIG,
                "unknown key 'solver.preconditioner.relaxation'", "'relaxation_factor'");
    /* Right name, wrong scope. */
    expect_fail("{\"max_iters\": 5}", KS_ERR_CONFIG, "unknown key 'max_iters'",
                "did you mean 'solver.max_iters'?");
    /* Nothing close: the keys of the scope are listed. */
    expect_fail("{\"matrix\": {\"zzzzzz\": 1}}", KS_ERR_CONFIG, "unknown key 'matrix.zzzzzz'",
                "file, generator, n, coefficients, velocity");
    expect_fail("{\"solver.max_iters\": 5}", KS_ERR_CONFIG, "unknown key 'solver.max_iters'",
                "nest objects");
}
END_TEST

START_TEST(test_wrong_types)
{
    expect_fail("{\"solver\": {\"max_iters\": \"100\"}}", KS_ERR_CONFIG,
                "solver.max_iters: expected an integer, got string", NULL);
    expect_fail("{\"solver\": {\"max_iters\": 10.5}}", KS_ERR_CONFIG,
                "solver.max_iters: expected an integer, got number", NULL);
    expect_fail("{\"solver\": {\"tolerance\": \"1e-8\"}}", KS_ERR_CONFIG,
                "solver.tolerance: expected a number, got string", NULL);
    expect_fail("{\"solver\": {\"monitor_residual\": \"yes\"}}", KS_ERR_CONFIG,
                "solver.monitor_residual: expected 0, 1 or a boolean, got string", NULL);
    expect_fail("{\"solver\": {\"monitor_residual\": 2}}", KS_ERR_CONFIG,
                "solver.monitor_residual: expected 0, 1 or a boolean, got 2", NULL);
    expect_fail("{\"solver\": 3}", KS_ERR_CONFIG, "solver: expected an object, got integer", NULL);
    expect_fail("{\"solver\": {\"preconditioner\": 1}}", KS_ERR_CONFIG,
                "solver.preconditioner: expected an object or a name (string), got integer", NULL);
    expect_fail("{\"solver\": {\"solver\": null}}", KS_ERR_CONFIG,
                "solver.solver: expected a string, got null", NULL);
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
    expect_fail("[1, 2]", KS_ERR_CONFIG, "top level must be a JSON object, got array", NULL);
}
END_TEST

START_TEST(test_out_of_range)
{
    expect_fail("{\"solver\": {\"tolerance\": -1}}", KS_ERR_CONFIG,
                "solver.tolerance: must be >= 0 (got -1)", NULL);
    expect_fail("{\"solver\": {\"max_iters\": 0}}", KS_ERR_CONFIG,
                "solver.max_iters: must be >= 1 (got 0)", NULL);
    expect_fail("{\"solver\": {\"max_iters\": 3000000000}}", KS_ERR_CONFIG, "solver.max_iters",
                "got 3e+09");
    expect_fail("{\"solver\": {\"divergence_factor\": 1}}", KS_ERR_CONFIG,
                "solver.divergence_factor: must be > 1 (got 1)", NULL);
    expect_fail("{\"solver\": {\"preconditioner\": {\"relaxation_factor\": 0}}}", KS_ERR_CONFIG,
                "solver.preconditioner.relaxation_factor: must be in (0, 2] (got 0)", NULL);
    expect_fail("{\"solver\": {\"preconditioner\": {\"relaxation_factor\": 2.5}}}", KS_ERR_CONFIG,
                "must be in (0, 2] (got 2.5)", NULL);
    expect_fail("{\"spmv\": {\"threads_per_row\": 3}}", KS_ERR_CONFIG,
                "spmv.threads_per_row: must be one of 0, 1, 2, 4, 8, 16, 32 (got 3)", NULL);
    expect_fail("{\"matrix\": {\"n\": 0}}", KS_ERR_CONFIG, "matrix.n: must be >= 1 (got 0)", NULL);
    expect_fail("{\"matrix\": {\"n\": [4, -1, 4]}}", KS_ERR_CONFIG,
                "matrix.n[1]: must be >= 1 (got -1)", NULL);
    expect_fail("{\"matrix\": {\"n\": [2000, 2000, 2000]}}", KS_ERR_CONFIG, "matrix.n",
                "more than ks_int holds");
    expect_fail("{\"matrix\": {\"coefficients\": [1, 0, 1]}}", KS_ERR_CONFIG,
                "matrix.coefficients[1]: must be > 0 (got 0)", NULL);
    expect_fail("{\"config_version\": 1}", KS_ERR_CONFIG, "config_version: must be 2 (got 1)",
                NULL);
    expect_fail("{\"spmv_format\": \"\"}", KS_ERR_CONFIG, "spmv_format: must not be empty", NULL);
    expect_fail("{\"matrix\": {\"file\": \"\"}}", KS_ERR_CONFIG, "matrix.file: must not be empty",
                NULL);
}
END_TEST

START_TEST(test_bad_enums)
{
    expect_fail("{\"solver\": {\"solver\": \"pcg\"}}", KS_ERR_CONFIG,
                "solver.solver: unknown value 'pcg'", "allowed: PCG, CG, PBICGSTAB, BICGSTAB");
    expect_fail("{\"solver\": {\"solver\": \"pcg\"}}", KS_ERR_CONFIG, "did you mean 'PCG'", NULL);
    expect_fail("{\"solver\": {\"solver\": \"GMRES\"}}", KS_ERR_CONFIG,
                "unknown value 'GMRES' (allowed: PCG", NULL);
    expect_fail("{\"solver\": {\"convergence\": \"RELATIVE\"}}", KS_ERR_CONFIG,
                "solver.convergence: unknown value 'RELATIVE'",
                "allowed: ABSOLUTE, RELATIVE_INI, RELATIVE_RHS)");
    expect_fail("{\"solver\": {\"norm\": \"L3\"}}", KS_ERR_CONFIG, "solver.norm", "L1, L2, LMAX");
    expect_fail("{\"solver\": {\"preconditioner\": \"AMG\"}}", KS_ERR_CONFIG,
                "solver.preconditioner: unknown value 'AMG'", "NOSOLVER, JACOBI, JACOBI_L1");
    expect_fail("{\"backend\": \"gpu\"}", KS_ERR_CONFIG, "backend: unknown value 'gpu'",
                "cpu, cuda, cpu,cuda");
    expect_fail("{\"rhs\": {\"type\": \"random\"}}", KS_ERR_CONFIG, "rhs.type", "A_ones, ones");
    expect_fail("{\"matrix\": {\"generator\": \"laplace\"}}", KS_ERR_CONFIG,
                "matrix.generator: unknown value 'laplace'", "poisson2d_5");
}
END_TEST

START_TEST(test_syntax_errors)
{
    /* Trailing comma: jansson reports line 4, column 3 (the '}'). */
    expect_fail("{\n  \"solver\": {\n    \"max_iters\": 10,\n  }\n}", KS_ERR_CONFIG,
                "config string:4:3:", "string or '}' expected");
    expect_fail("{\"solver\": {\"max_iters\": 1, \"max_iters\": 2}}", KS_ERR_CONFIG,
                "duplicate object key", NULL);
    expect_fail("", KS_ERR_CONFIG, "config string:", NULL);

    const char *path = ks_test_write_tmp(".json", "{\n\"backend\": \"cpu\"\n\"x\": 1}\n");
    ks_config *cfg = (ks_config *)0x1;
    ck_assert_int_eq(ks_config_create_from_file(path, &cfg), KS_ERR_CONFIG);
    ck_assert_ptr_null(cfg);
    char want[1100];
    snprintf(want, sizeof want, "%s:3:3:", path);
    ck_assert_msg(strstr(ks_last_error(), want), "'%s' lacks '%s'", ks_last_error(), want);

    /* A bad key in a file names the file and the key. */
    path = ks_test_write_tmp(".json", "{\"solver\": {\"tolerance\": -2}}");
    ck_assert_int_eq(ks_config_create_from_file(path, &cfg), KS_ERR_CONFIG);
    ck_assert(strstr(ks_last_error(), path) && strstr(ks_last_error(), "solver.tolerance"));

    ck_assert_int_eq(ks_config_create_from_file("/nonexistent/dir/c.json", &cfg), KS_ERR_IO);
    ck_assert(strstr(ks_last_error(), "/nonexistent/dir/c.json"));
    ck_assert_int_eq(ks_config_create_from_file(NULL, &cfg), KS_ERR_ARG);
    ck_assert_int_eq(ks_config_create_from_string(NULL, &cfg), KS_ERR_ARG);
    ck_assert_int_eq(ks_config_create_default(NULL), KS_ERR_ARG);
    ck_assert_ptr_null(ks_config_dump(NULL));
    ks_config_destroy(NULL);
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
    expect_fail("{\"solver\": {\"solver\": \"CG\", \"preconditioner\": \"JACOBI\"}}", KS_ERR_CONFIG,
                "solver.preconditioner: CG is unpreconditioned; use PCG", NULL);
    expect_fail("{\"solver\": {\"preconditioner\": {\"solver\": \"JACOBI_L1\"},"
                " \"solver\": \"BICGSTAB\"}}",
                KS_ERR_CONFIG, "BICGSTAB is unpreconditioned; use PBICGSTAB", NULL);
    expect_fail("{\"matrix\": {\"n\": [10, 10]}}", KS_ERR_CONFIG,
                "matrix.n: poisson3d_7 is 3D: give [nx, ny, nz]", NULL);
    expect_fail("{\"matrix\": {\"n\": [10, 10, 10], \"generator\": \"poisson2d_9\"}}",
                KS_ERR_CONFIG, "matrix.n: poisson2d_9 is 2D: give [nx, ny]", NULL);
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
    ck_assert_str_eq(ks_config_problem_params(cfg)->backend, "cpu,cuda");
    KS_CHECK(ks_config_set(cfg, "backend", "\"cpu\""));
    ck_assert_str_eq(ks_config_problem_params(cfg)->backend, "cpu");
    KS_CHECK(ks_config_set(cfg, "solver.monitor_residual", "true"));
    ck_assert_int_eq(ks_config_solver_params(cfg)->monitor_residual, 1);
    /* Intermediate objects are created. */
    KS_CHECK(ks_config_set(cfg, "spmv.threads_per_row", "8"));
    ck_assert_int_eq(ks_config_problem_params(cfg)->spmv.threads_per_row, 8);
    KS_CHECK(ks_config_set(cfg, "matrix.generator", "poisson2d_5"));
    KS_CHECK(ks_config_set(cfg, "matrix.n", "[30,20]"));
    ck_assert_int_eq(ks_config_problem_params(cfg)->gen.kind, KS_GEN_POISSON2D_5);
    ck_assert_int_eq(ks_config_problem_params(cfg)->gen.nx, 30);
    ck_assert_int_eq(ks_config_problem_params(cfg)->gen.ny, 20);
    /* The whole config object can be given as JSON. */
    KS_CHECK(ks_config_set(cfg, "solution", "{\"file\": \"x.mtx\"}"));
    ck_assert_str_eq(ks_config_problem_params(cfg)->solution_file, "x.mtx");

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
    ks_config_destroy(cfg);
}
END_TEST

/* Setting one of two exclusive keys replaces the other, so command-line
 * flags override a config file's choice. */
START_TEST(test_set_exclusive)
{
    ks_config *cfg = load("{\"matrix\": {\"generator\": \"poisson2d_5\", \"n\": 10},"
                          " \"rhs\": {\"type\": \"ones\"}}");
    KS_CHECK(ks_config_set(cfg, "matrix.file", "/tmp/A.mtx"));
    ck_assert_str_eq(ks_config_problem_params(cfg)->matrix_file, "/tmp/A.mtx");
    KS_CHECK(ks_config_set(cfg, "rhs.file", "/tmp/b.mtx"));
    ck_assert_str_eq(ks_config_problem_params(cfg)->rhs_file, "/tmp/b.mtx");
    ck_assert_str_eq(ks_config_problem_params(cfg)->rhs_kind, "");
    KS_CHECK(ks_config_set(cfg, "rhs.type", "zero"));
    ck_assert_str_eq(ks_config_problem_params(cfg)->rhs_file, "");
    ck_assert_str_eq(ks_config_problem_params(cfg)->rhs_kind, "zero");
    KS_CHECK(ks_config_set(cfg, "matrix.n", "12"));
    ck_assert_str_eq(ks_config_problem_params(cfg)->matrix_file, "");
    ck_assert_int_eq(ks_config_problem_params(cfg)->gen.nx, 12);
    ks_config_destroy(cfg);
}
END_TEST

/* Several overrides validate together: order does not matter. */
START_TEST(test_set_many)
{
    ks_config *cfg = load("{\"solver\": {\"preconditioner\": \"JACOBI_L1\"}}");
    const char *keys[] = {"solver.solver", "solver.preconditioner"};
    const char *vals[] = {"CG", "NOSOLVER"};
    KS_CHECK(ks_config_set_many(cfg, 2, keys, vals));
    ck_assert_str_eq(ks_config_solver_params(cfg)->solver, "CG");
    ck_assert_str_eq(ks_config_solver_params(cfg)->pc.solver, "NOSOLVER");
    const char *keys2[] = {"solver.max_iters", "solver.norm"};
    const char *vals2[] = {"77", "L7"};
    ck_assert_int_eq(ks_config_set_many(cfg, 2, keys2, vals2), KS_ERR_CONFIG);
    ck_assert(strstr(ks_last_error(), "solver.norm"));
    ck_assert_int_eq(ks_config_solver_params(cfg)->max_iters, 1000);
    ks_config_destroy(cfg);
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
    KS_CHECK(ks_config_create_from_file(path, &cfg));
    const ks_problem_params *p = ks_config_problem_params(cfg);
    snprintf(want, sizeof want, "%s/A.mtx", dir);
    ck_assert_str_eq(p->matrix_file, want);
    snprintf(want, sizeof want, "%s/../b.mtx", dir);
    ck_assert_str_eq(p->rhs_file, want);
    ck_assert_str_eq(p->solution_file, "/abs/x.mtx");
    /* Values set later (command line) stay relative to the working directory. */
    KS_CHECK(ks_config_set(cfg, "solution.file", "x.mtx"));
    ck_assert_str_eq(ks_config_problem_params(cfg)->solution_file, "x.mtx");
    /* The dump carries the resolved paths, so it works from anywhere. */
    char *d = ks_config_dump(cfg);
    snprintf(want, sizeof want, "\"%s/A.mtx\"", dir);
    ck_assert_msg(strstr(d, want), "%s", d);
    free(d);
    ks_config_destroy(cfg);
    remove(path);
    rmdir(dir);
}
END_TEST

/* docs/config.md documents every key the dump shows (and the file keys). */
START_TEST(test_docs_cover_keys)
{
    /* KS_TEST_DATA is <source>/matrices/samples: strip two components by
     * text (the folder need not exist for this test). */
    const char *data = getenv("KS_TEST_DATA");
    char docpath[1200];
    snprintf(docpath, sizeof docpath, "%s", data ? data : "./matrices/samples");
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(docpath, '/');
        if (slash)
            *slash = '\0';
    }
    strncat(docpath, "/docs/config.md", sizeof docpath - strlen(docpath) - 1);
    FILE *f = fopen(docpath, "r");
    ck_assert_msg(f != NULL, "cannot open %s", docpath);
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    fclose(f);

    ks_config *cfg = load("{\"solution\": {\"file\": \"x\"}}");
    json_t *t = dump_tree(cfg);
    const char *extra[] = {"matrix.file", "rhs.file"};
    for (int i = 0; i < 2; i++) {
        char want[64];
        snprintf(want, sizeof want, "`%s`", extra[i]);
        ck_assert_msg(strstr(doc, want), "docs/config.md lacks %s", want);
    }
    /* Walk two levels of leaves. */
    const char *k1, *k2, *k3;
    json_t *v1, *v2, *v3;
    json_object_foreach(t, k1, v1) {
        char want[160];
        if (!json_is_object(v1)) {
            snprintf(want, sizeof want, "`%s`", k1);
            ck_assert_msg(strstr(doc, want), "docs/config.md lacks %s", want);
            continue;
        }
        json_object_foreach(v1, k2, v2) {
            if (!json_is_object(v2)) {
                snprintf(want, sizeof want, "`%s.%s`", k1, k2);
                ck_assert_msg(strstr(doc, want), "docs/config.md lacks %s", want);
                continue;
            }
            json_object_foreach(v2, k3, v3) {
                snprintf(want, sizeof want, "`%s.%s.%s`", k1, k2, k3);
                ck_assert_msg(strstr(doc, want), "docs/config.md lacks %s", want);
            }
        }
    }
    json_decref(t);
    ks_config_destroy(cfg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_dump_roundtrip);
    tcase_add_test(tc, test_solver_keys);
    tcase_add_test(tc, test_problem_keys);
    tcase_add_test(tc, test_unknown_keys);
    tcase_add_test(tc, test_wrong_types);
    tcase_add_test(tc, test_out_of_range);
    tcase_add_test(tc, test_bad_enums);
    tcase_add_test(tc, test_syntax_errors);
    tcase_add_test(tc, test_conflicts);
    tcase_add_test(tc, test_set);
    tcase_add_test(tc, test_set_exclusive);
    tcase_add_test(tc, test_set_many);
    tcase_add_test(tc, test_relative_paths);
    tcase_add_test(tc, test_docs_cover_keys);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
