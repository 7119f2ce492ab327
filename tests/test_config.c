/* JSON config: every key's valid values, defaults, each error class,
 * ks_config_set and path resolution. */
#include "ks_test.h"
#include "solver/config_scope.h"
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

/* <source root>/rel: KS_TEST_DATA is <source>/matrices/samples, so strip two
 * components by text (the folder need not exist). */
static const char *source_path(const char *rel)
{
    static char path[1200];
    const char *data = getenv("KS_TEST_DATA");
    snprintf(path, sizeof path, "%s", data ? data : "./matrices/samples");
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(path, '/');
        if (slash)
            *slash = '\0';
    }
    strncat(path, "/", sizeof path - strlen(path) - 1);
    strncat(path, rel, sizeof path - strlen(path) - 1);
    return path;
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
    /* PCG + classical AMG, with every AMG setting; Jacobi's damping does
     * not apply to AMG and is left out. */
    ck_assert_str_eq(ds.pc.solver, "AMG");
    ck_assert_str_eq(json_string_value(at(t, "solver", "preconditioner", "solver")), "AMG");
    ck_assert_ptr_null(json_object_get(at(t, "solver", "preconditioner", NULL),
                                       "relaxation_factor"));
    const ks_amg_params *a = &ds.pc.amg;
    ck_assert_str_eq(ks_name_of(ks_amg_algorithm_names, a->algorithm), "CLASSICAL");
    ck_assert_str_eq(json_string_value(at(t, "solver", "preconditioner", "algorithm")),
                     ks_name_of(ks_amg_algorithm_names, a->algorithm));
    ck_assert_str_eq(json_string_value(at(t, "solver", "preconditioner", "selector")),
                     ks_name_of(ks_amg_selector_names, a->selector));
    ck_assert_int_eq(a->hmis_block_rows, 0);
    ck_assert_int_eq(json_integer_value(at(t, "solver", "preconditioner", "hmis_block_rows")),
                     a->hmis_block_rows);
    ck_assert_str_eq(json_string_value(at(t, "solver", "preconditioner", "interpolator")),
                     ks_name_of(ks_amg_interp_names, a->interpolator));
    ck_assert(json_number_value(at(t, "solver", "preconditioner", "strength_threshold")) ==
              a->strength_threshold);
    ck_assert(json_number_value(at(t, "solver", "preconditioner", "max_row_sum")) ==
              a->max_row_sum);
    ck_assert_int_eq(json_integer_value(at(t, "solver", "preconditioner", "interp_max_elements")),
                     a->interp_max_elements);
    ck_assert(json_number_value(at(t, "solver", "preconditioner", "interp_truncation_factor")) ==
              a->interp_truncation_factor);
    ck_assert_int_eq(json_integer_value(at(t, "solver", "preconditioner", "aggressive_levels")),
                     a->aggressive_levels);
    json_t *sm = at(t, "solver", "preconditioner", "smoother");
    ck_assert_str_eq(json_string_value(json_object_get(sm, "solver")), ks_name_of(ks_amg_smoother_names, a->smoother.solver));
    ck_assert(json_number_value(json_object_get(sm, "relaxation_factor")) ==
              a->smoother.relaxation_factor);
    ck_assert_int_eq(json_integer_value(json_object_get(sm, "chebyshev_degree")),
                     a->smoother.chebyshev_degree);
    ck_assert(json_number_value(json_object_get(sm, "chebyshev_lower")) ==
              a->smoother.chebyshev_lower);
    ck_assert_int_eq(json_integer_value(at(t, "solver", "preconditioner", "presweeps")),
                     a->presweeps);
    ck_assert_int_eq(json_integer_value(at(t, "solver", "preconditioner", "postsweeps")),
                     a->postsweeps);
    ck_assert_str_eq(json_string_value(at(t, "solver", "preconditioner", "cycle")), ks_name_of(ks_amg_cycle_names, a->cycle));
    ck_assert_int_eq(json_integer_value(at(t, "solver", "preconditioner", "max_levels")),
                     a->max_levels);
    ck_assert_int_eq(json_integer_value(at(t, "solver", "preconditioner", "min_coarse_rows")),
                     a->min_coarse_rows);
    ck_assert_int_eq(json_integer_value(at(t, "solver", "preconditioner", "coarse_max_rows")),
                     a->coarse_max_rows);
    ck_assert_str_eq(json_string_value(at(t, "solver", "preconditioner", "coarse_solver")),
                     ks_name_of(ks_amg_coarse_solver_names, a->coarse_solver));
    ck_assert_int_eq(json_integer_value(at(t, "solver", "preconditioner", "seed")),
                     (json_int_t)a->seed);
    ck_assert_mem_eq(&s->pc.amg, a, sizeof *a);
    /* The standalone keys (solver.selector, ...) apply only to "solver": "AMG". */
    ck_assert_ptr_null(json_object_get(at(t, "solver", NULL, NULL), "selector"));
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
        ks_config_destroy(a);
        ks_config_destroy(b);
    }
}
END_TEST

/* ------------------------------------------------------- valid values */
START_TEST(test_solver_keys)
{
    static const char *const solvers[] = {"PCG", "CG", "PBICGSTAB", "BICGSTAB", "AMG"};
    static const char *const pcs[] = {"AMG", "NOSOLVER", "AMG", "NOSOLVER", "AMG"};
    for (int i = 0; i < 5; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"config_version\": 2, \"solver\": {\"solver\": \"%s\"}}",
                 solvers[i]);
        ks_config *cfg = load(json);
        const ks_solver_params *s = ks_config_solver_params(cfg);
        ck_assert_str_eq(s->solver, solvers[i]);
        /* Unpreconditioned methods drop the default AMG; the AMG solver
         * keeps its settings in pc.amg. */
        ck_assert_str_eq(s->pc.solver, pcs[i]);
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
    expect_fail("{\"solver\": {\"preconditioner\": \"AMGX\"}}", KS_ERR_CONFIG,
                "solver.preconditioner: unknown value 'AMGX'", "NOSOLVER, JACOBI, JACOBI_L1, AMG");
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

/* ------------------------------------------------------------------ AMG */
#define PC_AMG(keys) "{\"solver\": {\"preconditioner\": {\"solver\": \"AMG\", " keys "}}}"
#define SOLVER_AMG(keys) "{\"solver\": {\"solver\": \"AMG\", " keys "}}"

/* Every AMG key, in the preconditioner scope and (standalone) in the solver
 * scope, lands in pc.amg. */
START_TEST(test_amg_keys)
{
    static const char *const scopes[2][2] = {
        {"{\"solver\": {\"solver\": \"PBICGSTAB\", \"preconditioner\": {\"solver\": \"AMG\", ",
         "}}}"},
        {"{\"solver\": {\"solver\": \"AMG\", \"max_iters\": 40, ", "}}"},
    };
    for (int sc = 0; sc < 2; sc++) {
        char json[2048];
        snprintf(json, sizeof json,
                 "%s\"algorithm\": \"AGGREGATION\", \"selector\": \"PMIS\","
                 " \"interpolator\": \"D1\", \"strength_threshold\": 0.5, \"max_row_sum\": 1,"
                 " \"interp_max_elements\": 0, \"interp_truncation_factor\": 0.2,"
                 " \"aggressive_levels\": 0, \"smoother\": {\"scope\": \"sm\", \"solver\": "
                 "\"CHEBYSHEV\", \"relaxation_factor\": 0.75, \"chebyshev_degree\": 3,"
                 " \"chebyshev_lower\": 0.1}, \"presweeps\": 0, \"postsweeps\": 3,"
                 " \"cycle\": \"W\", \"max_levels\": 7, \"min_coarse_rows\": 10,"
                 " \"coarse_max_rows\": 50, \"coarse_solver\": \"DENSE_LU\","
                 " \"seed\": 4294967301%s",
                 scopes[sc][0], scopes[sc][1]);
        ks_config *cfg = load(json);
        const ks_solver_params *s = ks_config_solver_params(cfg);
        const ks_amg_params *a = &s->pc.amg;
        ck_assert_str_eq(s->solver, sc ? "AMG" : "PBICGSTAB");
        ck_assert_str_eq(s->pc.solver, "AMG");
        ck_assert_str_eq(ks_name_of(ks_amg_algorithm_names, a->algorithm), "AGGREGATION");
        ck_assert_str_eq(ks_name_of(ks_amg_selector_names, a->selector), "PMIS");
        ck_assert_str_eq(ks_name_of(ks_amg_interp_names, a->interpolator), "D1");
        ck_assert(a->strength_threshold == 0.5);
        ck_assert(a->max_row_sum == 1.0);
        ck_assert_int_eq(a->interp_max_elements, 0);
        ck_assert(a->interp_truncation_factor == 0.2);
        ck_assert_int_eq(a->aggressive_levels, 0);
        ck_assert_str_eq(ks_name_of(ks_amg_smoother_names, a->smoother.solver), "CHEBYSHEV");
        ck_assert(a->smoother.relaxation_factor == 0.75);
        ck_assert_int_eq(a->smoother.chebyshev_degree, 3);
        ck_assert(a->smoother.chebyshev_lower == 0.1);
        ck_assert_int_eq(a->presweeps, 0);
        ck_assert_int_eq(a->postsweeps, 3);
        ck_assert_str_eq(ks_name_of(ks_amg_cycle_names, a->cycle), "W");
        ck_assert_int_eq(a->max_levels, 7);
        ck_assert_int_eq(a->min_coarse_rows, 10);
        ck_assert_int_eq(a->coarse_max_rows, 50);
        ck_assert_str_eq(ks_name_of(ks_amg_coarse_solver_names, a->coarse_solver), "DENSE_LU");
        ck_assert(a->seed == 4294967301ULL);
        /* The dump puts the settings back where they were given. */
        json_t *t = dump_tree(cfg);
        json_t *scope = sc ? at(t, "solver", NULL, NULL) : at(t, "solver", "preconditioner", NULL);
        ck_assert_str_eq(json_string_value(json_object_get(scope, "selector")), "PMIS");
        ck_assert_int_eq(json_integer_value(json_object_get(scope, "seed")), 4294967301LL);
        if (sc)
            ck_assert_ptr_null(json_object_get(scope, "preconditioner"));
        else
            ck_assert_ptr_null(json_object_get(at(t, "solver", NULL, NULL), "selector"));
        json_decref(t);
        ks_config_destroy(cfg);
    }

    /* The string shorthand of the smoother, AmgX's spellings, other values. */
    static const char *const smoothers[] = {"JACOBI", "JACOBI_L1", "CHEBYSHEV", "GS", "SGS"};
    for (int i = 0; i < 5; i++) {
        char json[256];
        snprintf(json, sizeof json,
                 "{\"solver\": {\"preconditioner\": {\"solver\": \"AMG\", \"smoother\": \"%s\","
                 " \"cycle\": \"%s\"}}}",
                 smoothers[i], i % 3 == 0 ? "V" : i % 3 == 1 ? "W" : "F");
        ks_config *cfg = load(json);
        ck_assert_str_eq(ks_name_of(ks_amg_smoother_names, ks_config_solver_params(cfg)->pc.amg.smoother.solver), smoothers[i]);
        ks_config_destroy(cfg);
    }
    ks_config *cfg = load("{\"solver\": {\"preconditioner\": {\"solver\": \"AMG\","
                          " \"smoother\": {\"solver\": \"BLOCK_JACOBI\", \"relaxation_factor\": 0},"
                          " \"coarse_solver\": \"DENSE_LU_SOLVER\", \"strength_threshold\": 0,"
                          " \"selector\": \"HMIS\", \"interpolator\": \"D2\"}}}");
    const ks_amg_params *a = &ks_config_solver_params(cfg)->pc.amg;
    ck_assert_str_eq(ks_name_of(ks_amg_smoother_names, a->smoother.solver), "JACOBI");
    ck_assert_str_eq(ks_name_of(ks_amg_coarse_solver_names, a->coarse_solver), "DENSE_LU");
    ck_assert(a->strength_threshold == 0.0);
    ck_assert(a->smoother.relaxation_factor == 0.0); /* 0: the smoother's own default */
    ck_assert_str_eq(ks_name_of(ks_amg_selector_names, a->selector), "HMIS");
    ck_assert_str_eq(ks_name_of(ks_amg_interp_names, a->interpolator), "D2");
    ks_config_destroy(cfg);
    cfg = load(SOLVER_AMG("\"aggressive_levels\": 2"));
    ck_assert_int_eq(ks_config_solver_params(cfg)->pc.amg.aggressive_levels, 2);
    ks_config_destroy(cfg);
}
END_TEST


/* Aggregation's strength threshold defaults to 0 (the classical 0.25 would
 * find no strong connection in a Laplacian); a given value is kept. */
START_TEST(test_amg_aggregation_theta)
{
    ks_config *cfg = load(PC_AMG("\"algorithm\": \"AGGREGATION\""));
    ck_assert(ks_config_solver_params(cfg)->pc.amg.strength_threshold == 0.0);
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.strength_threshold", "0.08"));
    ck_assert(ks_config_solver_params(cfg)->pc.amg.strength_threshold == 0.08);
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.algorithm", "CLASSICAL"));
    ck_assert(ks_config_solver_params(cfg)->pc.amg.strength_threshold == 0.08);
    ks_config_destroy(cfg);
    cfg = load(SOLVER_AMG("\"algorithm\": \"AGGREGATION\""));
    ck_assert(ks_config_solver_params(cfg)->pc.amg.strength_threshold == 0.0);
    char *d = ks_config_dump(cfg);
    ks_config *back = load(d);
    ck_assert(ks_config_solver_params(back)->pc.amg.strength_threshold == 0.0);
    free(d);
    ks_config_destroy(back);
    ks_config_destroy(cfg);
    ks_amg_params a;
    ks_amg_params_default(&a);
    cfg = load(PC_AMG("\"algorithm\": \"CLASSICAL\""));
    ck_assert(ks_config_solver_params(cfg)->pc.amg.strength_threshold == a.strength_threshold);
    ks_config_destroy(cfg);
}
END_TEST

/* The AmgX config of the issue loads as it is. */
START_TEST(test_amgx_example)
{
    ks_config *cfg = load(
        "{\"config_version\": 2, \"solver\": {\"solver\": \"PCG\", \"max_iters\": 100,"
        " \"tolerance\": 1e-8, \"preconditioner\": {\"solver\": \"AMG\", \"algorithm\":"
        " \"CLASSICAL\", \"selector\": \"HMIS\", \"interpolator\": \"D2\", \"smoother\":"
        " {\"solver\": \"JACOBI_L1\"}, \"presweeps\": 1, \"postsweeps\": 1, \"cycle\": \"V\","
        " \"max_levels\": 25}}}");
    const ks_solver_params *s = ks_config_solver_params(cfg);
    ck_assert_str_eq(s->solver, "PCG");
    ck_assert_int_eq(s->max_iters, 100);
    ck_assert_str_eq(s->pc.solver, "AMG");
    ck_assert_str_eq(ks_name_of(ks_amg_algorithm_names, s->pc.amg.algorithm), "CLASSICAL");
    ck_assert_str_eq(ks_name_of(ks_amg_selector_names, s->pc.amg.selector), "HMIS");
    ck_assert_str_eq(ks_name_of(ks_amg_interp_names, s->pc.amg.interpolator), "D2");
    ck_assert_str_eq(ks_name_of(ks_amg_smoother_names, s->pc.amg.smoother.solver), "JACOBI_L1");
    ck_assert_int_eq(s->pc.amg.presweeps, 1);
    ck_assert_int_eq(s->pc.amg.postsweeps, 1);
    ck_assert_str_eq(ks_name_of(ks_amg_cycle_names, s->pc.amg.cycle), "V");
    ck_assert_int_eq(s->pc.amg.max_levels, 25);
    ks_config_destroy(cfg);
}
END_TEST

START_TEST(test_amg_errors)
{
    /* Out of range, with the key path. */
    expect_fail(PC_AMG("\"strength_threshold\": 1.5"), KS_ERR_CONFIG,
                "solver.preconditioner.strength_threshold: must be in [0, 1] (got 1.5)", NULL);
    expect_fail(PC_AMG("\"strength_threshold\": -0.1"), KS_ERR_CONFIG,
                "solver.preconditioner.strength_threshold: must be in [0, 1] (got -0.1)", NULL);
    expect_fail(SOLVER_AMG("\"strength_threshold\": 2"), KS_ERR_CONFIG,
                "solver.strength_threshold: must be in [0, 1] (got 2)", NULL);
    expect_fail(PC_AMG("\"max_row_sum\": 0"), KS_ERR_CONFIG,
                "solver.preconditioner.max_row_sum: must be in (0, 1] (got 0)", NULL);
    expect_fail(PC_AMG("\"interp_truncation_factor\": 1"), KS_ERR_CONFIG,
                "solver.preconditioner.interp_truncation_factor: must be in [0, 1) (got 1)", NULL);
    expect_fail(PC_AMG("\"interp_max_elements\": -1"), KS_ERR_CONFIG,
                "solver.preconditioner.interp_max_elements: must be >= 0 (got -1)", NULL);
    expect_fail(PC_AMG("\"presweeps\": -1"), KS_ERR_CONFIG,
                "solver.preconditioner.presweeps: must be in [0, 100] (got -1)", NULL);
    expect_fail(PC_AMG("\"max_levels\": 0"), KS_ERR_CONFIG,
                "solver.preconditioner.max_levels: must be in [1, 100] (got 0)", NULL);
    expect_fail(PC_AMG("\"max_levels\": 101"), KS_ERR_CONFIG, "max_levels", "(got 101)");
    expect_fail(PC_AMG("\"min_coarse_rows\": 0"), KS_ERR_CONFIG,
                "solver.preconditioner.min_coarse_rows: must be >= 1 (got 0)", NULL);
    expect_fail(PC_AMG("\"coarse_max_rows\": 0"), KS_ERR_CONFIG,
                "solver.preconditioner.coarse_max_rows: must be in [1, 8192] (got 0)", NULL);
    expect_fail(PC_AMG("\"seed\": -3"), KS_ERR_CONFIG,
                "solver.preconditioner.seed: must be >= 0 (got -3)", NULL);
    expect_fail(PC_AMG("\"smoother\": {\"relaxation_factor\": 2}"), KS_ERR_CONFIG,
                "solver.preconditioner.smoother.relaxation_factor: must be in [0, 2) (got 2)",
                NULL);
    expect_fail(PC_AMG("\"hmis_block_rows\": -2"), KS_ERR_CONFIG,
                "solver.preconditioner.hmis_block_rows: must be >= -1 (got -2)", NULL);
    expect_fail(SOLVER_AMG("\"hmis_block_rows\": 1"), KS_ERR_CONFIG,
                "solver.hmis_block_rows: 1 (expected 0: serial, -1: automatic blocks", NULL);
    expect_fail(PC_AMG("\"postsweeps\": 101"), KS_ERR_CONFIG,
                "solver.preconditioner.postsweeps: must be in [0, 100] (got 101)", NULL);
    expect_fail(SOLVER_AMG("\"coarse_max_rows\": 10000"), KS_ERR_CONFIG,
                "solver.coarse_max_rows: must be in [1, 8192] (got 10000)", NULL);
    expect_fail(PC_AMG("\"smoother\": {\"chebyshev_degree\": 11}"), KS_ERR_CONFIG,
                "solver.preconditioner.smoother.chebyshev_degree: must be in [1, 10] (got 11)",
                NULL);
    expect_fail(PC_AMG("\"smoother\": {\"chebyshev_lower\": 1}"), KS_ERR_CONFIG,
                "solver.preconditioner.smoother.chebyshev_lower: must be in (0, 1) (got 1)", NULL);
    expect_fail(PC_AMG("\"max_levels\": 2.5"), KS_ERR_CONFIG,
                "solver.preconditioner.max_levels: expected an integer, got number", NULL);
    expect_fail(PC_AMG("\"smoother\": 3"), KS_ERR_CONFIG,
                "solver.preconditioner.smoother: expected an object or a name (string), got "
                "integer",
                NULL);

    /* Zero sweeps. */
    expect_fail(PC_AMG("\"presweeps\": 0, \"postsweeps\": 0"), KS_ERR_CONFIG,
                "solver.preconditioner: presweeps and postsweeps are both 0: the cycle would not "
                "smooth",
                NULL);
    expect_fail(SOLVER_AMG("\"presweeps\": 0, \"postsweeps\": 0"), KS_ERR_CONFIG,
                "solver: presweeps and postsweeps are both 0", NULL);

    /* Unknown names list the allowed ones. */
    expect_fail(PC_AMG("\"selector\": \"RS\""), KS_ERR_CONFIG,
                "solver.preconditioner.selector: unknown value 'RS' (allowed: PMIS, HMIS)", NULL);
    expect_fail(PC_AMG("\"selector\": \"hmis\""), KS_ERR_CONFIG, "did you mean 'HMIS'?", NULL);
    expect_fail(PC_AMG("\"algorithm\": \"SA\""), KS_ERR_CONFIG,
                "solver.preconditioner.algorithm: unknown value 'SA' (allowed: CLASSICAL, "
                "AGGREGATION)",
                NULL);
    expect_fail(PC_AMG("\"interpolator\": \"D3\""), KS_ERR_CONFIG,
                "solver.preconditioner.interpolator", "allowed: D1, D2");
    expect_fail(PC_AMG("\"smoother\": \"ILU\""), KS_ERR_CONFIG,
                "solver.preconditioner.smoother: unknown value 'ILU' (allowed: JACOBI, "
                "JACOBI_L1, CHEBYSHEV, GS, SGS)",
                NULL);
    expect_fail(PC_AMG("\"cycle\": \"v\""), KS_ERR_CONFIG,
                "solver.preconditioner.cycle: unknown value 'v' (did you mean 'V'? allowed: V, W, "
                "F)",
                NULL);
    expect_fail(PC_AMG("\"coarse_solver\": \"SVD\""), KS_ERR_CONFIG,
                "solver.preconditioner.coarse_solver", "allowed: DENSE_LU)");
    expect_fail(PC_AMG("\"selectr\": \"PMIS\""), KS_ERR_CONFIG,
                "unknown key 'solver.preconditioner.selectr' (did you mean 'selector'?)", NULL);
    expect_fail(PC_AMG("\"smoother\": {\"degree\": 2}"), KS_ERR_CONFIG,
                "unknown key 'solver.preconditioner.smoother.degree'", NULL);

    /* AMG keys where AMG is not selected, and keys AMG does not use. */
    expect_fail("{\"solver\": {\"preconditioner\": {\"solver\": \"JACOBI\", \"selector\": \"PMIS\"}}}",
                KS_ERR_CONFIG,
                "solver.preconditioner.selector: an AMG setting, but solver.preconditioner.solver "
                "is JACOBI",
                NULL);
    expect_fail("{\"solver\": {\"cycle\": \"W\"}}", KS_ERR_CONFIG,
                "solver.cycle: an AMG setting, but solver.solver is PCG", "solver.preconditioner");
    expect_fail(PC_AMG("\"relaxation_factor\": 0.8"), KS_ERR_CONFIG,
                "solver.preconditioner.relaxation_factor: not used by AMG",
                "smoother.relaxation_factor");
    expect_fail("{\"solver\": {\"solver\": \"AMG\", \"preconditioner\": \"JACOBI\"}}",
                KS_ERR_CONFIG, "solver.preconditioner: the AMG solver takes no preconditioner",
                NULL);
    expect_fail("{\"solver\": {\"solver\": \"CG\", \"preconditioner\": \"AMG\"}}", KS_ERR_CONFIG,
                "CG is unpreconditioned; use PCG", NULL);
    expect_fail("{\"selector\": \"PMIS\"}", KS_ERR_CONFIG, "unknown key 'selector'",
                "solver.preconditioner.selector");
    /* Aggressive coarsening: classical only, at most max_levels. */
    expect_fail(PC_AMG("\"aggressive_levels\": 1, \"algorithm\": \"AGGREGATION\""),
                KS_ERR_CONFIG,
                "solver.preconditioner.aggressive_levels: aggressive coarsening applies to the "
                "CLASSICAL algorithm only",
                NULL);
    expect_fail(SOLVER_AMG("\"aggressive_levels\": -1"), KS_ERR_CONFIG,
                "solver.aggressive_levels: must be in [0, 100] (got -1)", NULL);
}
END_TEST

/* ks_config_set on AMG keys, and switching between preconditioners. */
START_TEST(test_amg_set)
{
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_default(&cfg));
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.selector", "PMIS"));
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.smoother", "CHEBYSHEV"));
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.smoother.chebyshev_degree", "4"));
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.strength_threshold", "0.5"));
    const ks_amg_params *a = &ks_config_solver_params(cfg)->pc.amg;
    ck_assert_str_eq(ks_name_of(ks_amg_selector_names, a->selector), "PMIS");
    ck_assert_str_eq(ks_name_of(ks_amg_smoother_names, a->smoother.solver), "CHEBYSHEV");
    ck_assert_int_eq(a->smoother.chebyshev_degree, 4);
    ck_assert(a->strength_threshold == 0.5);

    /* A bad value names the key and leaves the config unchanged. */
    ck_assert_int_eq(ks_config_set(cfg, "solver.preconditioner.strength_threshold", "1.5"),
                     KS_ERR_CONFIG);
    ck_assert(strstr(ks_last_error(), "solver.preconditioner.strength_threshold: must be in"));
    ck_assert(ks_config_solver_params(cfg)->pc.amg.strength_threshold == 0.5);
    const char *keys[] = {"solver.preconditioner.presweeps", "solver.preconditioner.postsweeps"};
    const char *zeros[] = {"0", "0"};
    ck_assert_int_eq(ks_config_set_many(cfg, 2, keys, zeros), KS_ERR_CONFIG);
    ck_assert(strstr(ks_last_error(), "presweeps and postsweeps are both 0"));
    /* Changing only the name keeps the AMG keys, which then do not apply;
     * replacing the whole preconditioner works. */
    ck_assert_int_eq(ks_config_set(cfg, "solver.preconditioner.solver", "JACOBI"), KS_ERR_CONFIG);
    ck_assert(strstr(ks_last_error(), "an AMG setting, but solver.preconditioner.solver is JACOBI"));
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner", "JACOBI"));
    ck_assert_str_eq(ks_config_solver_params(cfg)->pc.solver, "JACOBI");
    char *d = ks_config_dump(cfg);
    ck_assert_ptr_null(strstr(d, "selector"));
    ck_assert_ptr_nonnull(strstr(d, "relaxation_factor"));
    free(d);

    /* Standalone AMG from the command line. */
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner", "AMG"));
    const char *k2[] = {"solver", "solver.cycle"};
    const char *v2[] = {"{\"solver\": \"AMG\", \"max_iters\": 20}", "W"};
    KS_CHECK(ks_config_set_many(cfg, 2, k2, v2));
    ck_assert_str_eq(ks_config_solver_params(cfg)->solver, "AMG");
    ck_assert_str_eq(ks_config_solver_params(cfg)->pc.solver, "AMG");
    ck_assert_str_eq(ks_name_of(ks_amg_cycle_names, ks_config_solver_params(cfg)->pc.amg.cycle), "W");
    ks_config_destroy(cfg);
}
END_TEST

/* The files of examples/configs: each use case loads, with what its name says. */
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
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "examples/configs/%s", ex[i].file);
        ks_config *cfg = NULL;
        ks_error e = ks_config_create_from_file(source_path(rel), &cfg);
        ck_assert_msg(e == KS_OK, "%s: %s", ex[i].file, ks_last_error());
        const ks_solver_params *s = ks_config_solver_params(cfg);
        ck_assert_str_eq(s->solver, ex[i].solver);
        ck_assert_str_eq(s->pc.solver, ex[i].pc);
        if (ex[i].algorithm)
            ck_assert_str_eq(ks_name_of(ks_amg_algorithm_names, s->pc.amg.algorithm), ex[i].algorithm);
        ck_assert_str_eq(ks_name_of(ks_amg_precision_names, s->pc.amg.hierarchy_precision),
                         strstr(ex[i].file, "gpu") ? "FLOAT" : "DOUBLE");
        /* And its dump loads again. */
        char *d = ks_config_dump(cfg);
        ks_config *back = load(d);
        free(d);
        ks_config_destroy(back);
        ks_config_destroy(cfg);
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

/* Every leaf of a dumped tree is documented as `a.b.c` in doc. */
static void check_documented(const char *doc, json_t *node, const char *prefix)
{
    const char *k;
    json_t *v;
    json_object_foreach(node, k, v) {
        char path[200], want[210];
        snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", k);
        if (json_is_object(v)) {
            check_documented(doc, v, path);
            continue;
        }
        snprintf(want, sizeof want, "`%s`", path);
        ck_assert_msg(strstr(doc, want), "docs/config.md lacks %s", want);
    }
}

/* The "default" cell (4th) of the docs table row whose key cell holds
 * `path`, copied into cell; 0 when there is no such row. */
static int doc_default_cell(const char *doc, const char *path, char *cell, size_t len)
{
    char want[210];
    snprintf(want, sizeof want, "`%s`", path);
    for (const char *line = doc; *line;) {
        const char *eol = strchr(line, '\n');
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        const char *bar2 = line[0] == '|' ? memchr(line + 1, '|', n - 1) : NULL;
        const char *hit = bar2 ? strstr(line, want) : NULL;
        if (hit && hit < bar2) {
            const char *c = bar2;
            for (int k = 0; k < 2 && c; k++) /* skip type and allowed values */
                c = memchr(c + 1, '|', n - (size_t)(c + 1 - line));
            const char *e = c ? memchr(c + 1, '|', n - (size_t)(c + 1 - line)) : NULL;
            if (!e)
                return 0;
            snprintf(cell, len, "%.*s", (int)(e - c - 1), c + 1);
            return 1;
        }
        line += n + (eol ? 1 : 0);
    }
    return 0;
}

/* Each default leaf value appears as a `token` of its row's default cell
 * (numbers compared by value: `1e-8` documents 1e-08). */
static void check_defaults(const char *doc, json_t *node, const char *prefix)
{
    const char *k;
    json_t *v;
    json_object_foreach(node, k, v) {
        char path[200], cell[512];
        snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", k);
        if (json_is_object(v)) {
            check_defaults(doc, v, path);
            continue;
        }
        if (json_is_array(v))
            continue;
        ck_assert_msg(doc_default_cell(doc, path, cell, sizeof cell),
                      "docs/config.md has no table row for `%s`", path);
        int found = 0;
        for (char *t = strchr(cell, '`'); t && !found;) {
            char *e = strchr(t + 1, '`');
            if (!e)
                break;
            *e = '\0';
            const char *tok = t + 1;
            if (json_is_string(v)) {
                found = strcmp(tok, json_string_value(v)) == 0;
            } else {
                char *end;
                double x = strtod(tok, &end);
                found = end != tok && *end == '\0' && x == json_number_value(v);
            }
            t = strchr(e + 1, '`');
        }
        char *val = json_dumps(v, JSON_ENCODE_ANY);
        ck_assert_msg(found, "docs/config.md: the default of `%s` is %s, the table says '%s'",
                      path, val, cell);
        free(val);
    }
}

/* docs/config.md documents every key the dump shows (and the file keys),
 * for each kind of solver: the AMG keys appear only when AMG is chosen. */
START_TEST(test_docs_cover_keys)
{
    const char *docpath = source_path("docs/config.md");
    FILE *f = fopen(docpath, "r");
    ck_assert_msg(f != NULL, "cannot open %s", docpath);
    static char doc[1 << 18];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    ck_assert_msg(n < sizeof doc - 1, "docs/config.md is larger than the test's buffer");
    fclose(f);

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
        check_documented(doc, t, "");
        json_decref(t);
        ks_config_destroy(cfg);
    }
    /* And the documented defaults are the defaults. */
    ks_config *cfg = load("{}");
    json_t *t = dump_tree(cfg);
    check_defaults(doc, t, "");
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
    tcase_add_test(tc, test_amg_keys);
    tcase_add_test(tc, test_amgx_example);
    tcase_add_test(tc, test_amg_aggregation_theta);
    tcase_add_test(tc, test_amg_errors);
    tcase_add_test(tc, test_amg_set);
    tcase_add_test(tc, test_example_configs);
    tcase_add_test(tc, test_relative_paths);
    tcase_add_test(tc, test_docs_cover_keys);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
