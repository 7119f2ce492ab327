/* JSON config, the library's keys: every key's valid values, defaults,
 * each error class, ks_config_set, and keys outside the library's table
 * (the ksolve tool's) refused as unknown. */
#include "config_cases.h"
#include "solver/params.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Without a scope: the library's keys alone (the tool's own keys are
 * tested with its scope in test_cli_config.c). */
static ks_config *load(const char *json) { return cfgtest_load(NULL, json); }

static void expect_fail(const char *json, ks_error code, const char *sub1, const char *sub2)
{
    cfgtest_expect_fail(NULL, json, code, sub1, sub2);
}

#define dump_tree cfgtest_dump_tree
#define at cfgtest_at
#define source_path cfgtest_source_path

/* ------------------------------------------------------------- defaults */
START_TEST(test_defaults)
{
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_default(&cfg));
    ks_solver_params ds;
    ks_solver_params_default(&ds);
    const ks_solver_params *s = ks_config_solver_params(cfg);
    ck_assert_str_eq(s->solver, ds.solver);
    ck_assert_int_eq(s->max_iters, ds.max_iters);
    ck_assert(s->tolerance == ds.tolerance);
    ck_assert_int_eq(s->convergence, ds.convergence);
    ck_assert_int_eq(s->norm, ds.norm);
    ck_assert_int_eq(s->store_res_history, ds.store_res_history);
    ck_assert(s->divergence_factor == ds.divergence_factor);
    ck_assert_str_eq(s->pc.solver, ds.pc.solver);
    ck_assert(s->pc.relaxation_factor == ds.pc.relaxation_factor);

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
    /* keys that do not apply (HMIS's blocks under PMIS) are not dumped */
    ck_assert_ptr_null(json_object_get(at(t, "solver", "preconditioner", NULL), "hmis_block_rows"));
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
    ck_assert_int_eq(a->aggressive_levels, 0); /* so the aggressive interpolator is not dumped */
    ck_assert_ptr_null(
        json_object_get(at(t, "solver", "preconditioner", NULL), "aggressive_interpolator"));
    json_t *sm = at(t, "solver", "preconditioner", "smoother");
    ck_assert_str_eq(json_string_value(json_object_get(sm, "solver")), ks_name_of(ks_amg_smoother_names, a->smoother.solver));
    ck_assert_ptr_null(json_object_get(sm, "relaxation_factor")); /* not CHEBYSHEV's */
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
    /* The library's keys only: config_version and the solver tree. */
    ck_assert_int_eq(json_object_size(t), 2);
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
        "\"RELATIVE_INI_CORE\", \"norm\": \"LMAX\", \"preconditioner\": \"JACOBI_L1\"}}",
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
        ks_config_destroy(&cfg);
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
    ks_config_destroy(&cfg);

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
    ks_config_destroy(&cfg);

    cfg = load("{\"solver\": {\"convergence\": \"RELATIVE_INI\", \"norm\": \"L2\","
               " \"preconditioner\": {\"solver\": \"JACOBI_L1\", \"relaxation_factor\": 0.5}}}");
    s = ks_config_solver_params(cfg);
    ck_assert_int_eq(s->convergence, KS_CONV_RELATIVE_INI);
    ck_assert_int_eq(s->norm, KS_NORM_L2);
    ck_assert_str_eq(s->pc.solver, "JACOBI_L1");
    ck_assert(s->pc.relaxation_factor == 0.5);
    ks_config_destroy(&cfg);

    /* CG with an explicit NOSOLVER is fine. */
    cfg = load("{\"solver\": {\"solver\": \"CG\", \"preconditioner\": \"NOSOLVER\"}}");
    ck_assert_str_eq(ks_config_solver_params(cfg)->pc.solver, "NOSOLVER");
    ks_config_destroy(&cfg);
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
    expect_fail("{\"solver\": {\"zzzzzz\": 1}}", KS_ERR_CONFIG, "unknown key 'solver.zzzzzz'",
                "(keys allowed here: solver, max_iters, tolerance, convergence");
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
    expect_fail("{\"config_version\": 1}", KS_ERR_CONFIG, "config_version: must be 2 (got 1)",
                NULL);
    expect_fail("{\"solver\": {\"solver\": \"AMG\", \"spmv_format\": \"\"}}", KS_ERR_CONFIG,
                "solver.spmv_format: must not be empty", NULL);
}
END_TEST

START_TEST(test_bad_enums)
{
    expect_fail("{\"solver\": {\"solver\": \"pcg\"}}", KS_ERR_CONFIG,
                "solver.solver: unknown value 'pcg'", "allowed: PCG, CG, PBICGSTAB, BICGSTAB");
    expect_fail("{\"solver\": {\"solver\": \"pcg\"}}", KS_ERR_CONFIG, "did you mean 'PCG'", NULL);
    expect_fail("{\"solver\": {\"solver\": \"IDRS\"}}", KS_ERR_CONFIG,
                "unknown value 'IDRS' (allowed: PCG", NULL);
    expect_fail("{\"solver\": {\"convergence\": \"RELATIVE\"}}", KS_ERR_CONFIG,
                "solver.convergence: unknown value 'RELATIVE'",
                "allowed: ABSOLUTE, RELATIVE_INI, RELATIVE_RHS)");
    expect_fail("{\"solver\": {\"norm\": \"L3\"}}", KS_ERR_CONFIG, "solver.norm", "L1, L2, LMAX");
    expect_fail("{\"solver\": {\"preconditioner\": \"AMGX\"}}", KS_ERR_CONFIG,
                "solver.preconditioner: unknown value 'AMGX'", "NOSOLVER, JACOBI, JACOBI_L1, AMG");
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
    expect_fail("{\"solver\": {\"solver\": \"CG\", \"preconditioner\": \"JACOBI\"}}", KS_ERR_CONFIG,
                "solver.preconditioner: CG is unpreconditioned; use PCG", NULL);
    expect_fail("{\"solver\": {\"preconditioner\": {\"solver\": \"JACOBI_L1\"},"
                " \"solver\": \"BICGSTAB\"}}",
                KS_ERR_CONFIG, "BICGSTAB is unpreconditioned; use PBICGSTAB", NULL);
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
    KS_CHECK(ks_config_set(cfg, "solver.solver", "PBICGSTAB"));
    ck_assert_str_eq(ks_config_solver_params(cfg)->solver, "PBICGSTAB");
    KS_CHECK(ks_config_set(cfg, "solver.solver", "\"PCG\""));
    ck_assert_str_eq(ks_config_solver_params(cfg)->solver, "PCG");
    KS_CHECK(ks_config_set(cfg, "solver.monitor_residual", "true"));
    ck_assert_int_eq(ks_config_solver_params(cfg)->monitor_residual, 1);
    /* A whole object can be given as JSON. */
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner", "{\"solver\": \"JACOBI\", \"relaxation_factor\": 0.9}"));
    ck_assert(ks_config_solver_params(cfg)->pc.relaxation_factor == 0.9);

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
    ks_config_destroy(&cfg);
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
                 "%s\"algorithm\": \"CLASSICAL\", \"selector\": \"HMIS\","
                 " \"hmis_block_rows\": 64,"
                 " \"interpolator\": \"D1\", \"strength_threshold\": 0.5, \"max_row_sum\": 1,"
                 " \"interp_max_elements\": 0, \"interp_truncation_factor\": 0.2,"
                 " \"aggressive_levels\": 1, \"aggressive_interpolator\": \"D1\","
                 " \"smoother\": {\"scope\": \"sm\", \"solver\": "
                 "\"CHEBYSHEV\", \"chebyshev_degree\": 3,"
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
        ck_assert_str_eq(ks_name_of(ks_amg_algorithm_names, a->algorithm), "CLASSICAL");
        ck_assert_str_eq(ks_name_of(ks_amg_selector_names, a->selector), "HMIS");
        ck_assert_int_eq(a->hmis_block_rows, 64);
        ck_assert_int_eq(a->aggressive_interpolator, KS_AMG_D1);
        ck_assert_str_eq(ks_name_of(ks_amg_interp_names, a->interpolator), "D1");
        ck_assert(a->strength_threshold == 0.5);
        ck_assert(a->max_row_sum == 1.0);
        ck_assert_int_eq(a->interp_max_elements, 0);
        ck_assert(a->interp_truncation_factor == 0.2);
        ck_assert_int_eq(a->aggressive_levels, 1);
        ck_assert_str_eq(ks_name_of(ks_amg_smoother_names, a->smoother.solver), "CHEBYSHEV");
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
        ck_assert_str_eq(json_string_value(json_object_get(scope, "selector")), "HMIS");
        ck_assert_int_eq(json_integer_value(json_object_get(scope, "seed")), 4294967301LL);
        if (sc)
            ck_assert_ptr_null(json_object_get(scope, "preconditioner"));
        else
            ck_assert_ptr_null(json_object_get(at(t, "solver", NULL, NULL), "selector"));
        json_decref(t);
        ks_config_destroy(&cfg);
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
        ks_config_destroy(&cfg);
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
    ks_config_destroy(&cfg);
    cfg = load(SOLVER_AMG("\"aggressive_levels\": 2, \"aggressive_interpolator\": \"D1\""));
    ck_assert_int_eq(ks_config_solver_params(cfg)->pc.amg.aggressive_levels, 2);
    ck_assert_int_eq(ks_config_solver_params(cfg)->pc.amg.aggressive_interpolator, KS_AMG_D1);
    ks_config_destroy(&cfg);
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
    ks_config_destroy(&cfg);
    cfg = load(SOLVER_AMG("\"algorithm\": \"AGGREGATION\""));
    ck_assert(ks_config_solver_params(cfg)->pc.amg.strength_threshold == 0.0);
    char *d = ks_config_dump(cfg);
    ks_config *back = load(d);
    ck_assert(ks_config_solver_params(back)->pc.amg.strength_threshold == 0.0);
    free(d);
    ks_config_destroy(&back);
    ks_config_destroy(&cfg);
    ks_amg_params a;
    ks_amg_params_default(&a);
    cfg = load(PC_AMG("\"algorithm\": \"CLASSICAL\""));
    ck_assert(ks_config_solver_params(cfg)->pc.amg.strength_threshold == a.strength_threshold);
    ks_config_destroy(&cfg);
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
    ks_config_destroy(&cfg);
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
    expect_fail(SOLVER_AMG("\"selector\": \"HMIS\", \"hmis_block_rows\": 1"), KS_ERR_CONFIG,
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
    expect_fail("{\"solver\": {\"preconditioner\": {\"solver\": \"JACOBI\", \"selector\": \"HMIS\"}}}",
                KS_ERR_CONFIG,
                "solver.preconditioner.selector: an AMG setting, but solver.preconditioner.solver "
                "is JACOBI",
                NULL);
    expect_fail("{\"solver\": {\"cycle\": \"W\"}}", KS_ERR_CONFIG,
                "solver.cycle: an AMG setting, but solver.solver is PCG", "solver.preconditioner");
    /* AmgX's name of the smoother's damping there, which CHEBYSHEV (the
     * default smoother) does not read */
    expect_fail(PC_AMG("\"relaxation_factor\": 0.8"), KS_ERR_CONFIG,
                "solver.preconditioner.relaxation_factor: applies to the JACOBI, JACOBI_L1, GS "
                "and SGS smoothers only, but solver.preconditioner.smoother.solver is CHEBYSHEV",
                NULL);
    expect_fail("{\"solver\": {\"solver\": \"AMG\", \"preconditioner\": \"JACOBI\"}}",
                KS_ERR_CONFIG, "solver.preconditioner.solver: the AMG solver takes no preconditioner",
                NULL);
    expect_fail("{\"solver\": {\"solver\": \"CG\", \"preconditioner\": \"AMG\"}}", KS_ERR_CONFIG,
                "CG is unpreconditioned; use PCG", NULL);
    expect_fail("{\"selector\": \"PMIS\"}", KS_ERR_CONFIG, "unknown key 'selector'",
                "solver.preconditioner.selector");
    /* Aggressive coarsening: classical only, at most max_levels. */
    expect_fail(PC_AMG("\"aggressive_levels\": 1, \"algorithm\": \"AGGREGATION\""),
                KS_ERR_CONFIG,
                "solver.preconditioner.aggressive_levels: applies to the CLASSICAL algorithm only, "
                "but solver.preconditioner.algorithm is AGGREGATION",
                NULL);
    expect_fail(SOLVER_AMG("\"aggressive_levels\": -1"), KS_ERR_CONFIG,
                "solver.aggressive_levels: must be in [0, 100] (got -1)", NULL);
}
END_TEST

/* ks_config_set on AMG keys, and switching between preconditioners. */
/* Choice keys are checked when the config loads: an SpMV format name must
 * be registered (any backend's, so a config loads in every build), and a
 * key the chosen smoother does not read is an error naming the smoother,
 * like every other key that does not apply. */
START_TEST(test_choices_checked_at_load)
{
    expect_fail(PC_AMG("\"spmv_format\": \"bogusfmt\""), KS_ERR_CONFIG,
                "solver.preconditioner.spmv_format: unknown SpMV format 'bogusfmt' (allowed: auto, csr",
                "dia");
    expect_fail(SOLVER_AMG("\"spmv_format\": \"CSR\""), KS_ERR_CONFIG,
                "solver.spmv_format: unknown SpMV format 'CSR'", NULL);
    static const char *const good[] = {"auto", "csr", "dia", "codsell"};
    for (int i = 0; i < 4; i++) {
        char json[128];
        snprintf(json, sizeof json, PC_AMG("\"spmv_format\": \"%s\""), good[i]);
        ks_config *c = load(json);
        ks_config_destroy(&c);
    }
    expect_fail(PC_AMG("\"smoother\": {\"solver\": \"GS\", \"chebyshev_degree\": 3}"),
                KS_ERR_CONFIG,
                "solver.preconditioner.smoother.chebyshev_degree: applies to the CHEBYSHEV "
                "smoother only, but solver.preconditioner.smoother.solver is GS",
                "remove the key");
    expect_fail(SOLVER_AMG("\"smoother\": {\"solver\": \"JACOBI_L1\", \"chebyshev_lower\": 0.2}"),
                KS_ERR_CONFIG, "solver.smoother.chebyshev_lower: applies to the CHEBYSHEV",
                "solver.smoother.solver is JACOBI_L1");
    /* the scope's own rule comes first */
    expect_fail("{\"config_version\": 2, \"solver\": {\"solver\": \"PCG\", \"preconditioner\": "
                "{\"solver\": \"JACOBI\", \"smoother\": {\"chebyshev_degree\": 3}}}}",
                KS_ERR_CONFIG, "an AMG setting, but solver.preconditioner.solver is JACOBI", NULL);
    ks_config *cfg = load(PC_AMG("\"smoother\": {\"solver\": \"CHEBYSHEV\", \"chebyshev_degree\": 3}"));
    /* through ks_config_set, whichever order the keys come in (a string
     * for the whole smoother replaces its object, degree included) */
    ck_assert_int_eq(ks_config_set(cfg, "solver.preconditioner.smoother.solver", "GS"),
                     KS_ERR_CONFIG);
    ck_assert_msg(strstr(ks_last_error(), "chebyshev_degree"), "%s", ks_last_error());
    ck_assert_int_eq(ks_config_set(cfg, "solver.preconditioner.spmv_format", "bogusfmt"),
                     KS_ERR_CONFIG);
    ks_config_destroy(&cfg);
    KS_CHECK(ks_config_create_default(&cfg));
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.smoother", "GS"));
    ck_assert_int_eq(ks_config_set(cfg, "solver.preconditioner.smoother.chebyshev_degree", "3"),
                     KS_ERR_CONFIG);
    char *d = ks_config_dump(cfg); /* keys that do not apply are not dumped */
    ck_assert_ptr_null(strstr(d, "chebyshev_degree"));
    free(d);
    ks_config_destroy(&cfg);
}
END_TEST

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
    ks_config_destroy(&cfg);
}
END_TEST

/* The files of examples/configs: each use case loads, with what its name
 * says. They hold library keys only, so any program loads them, except
 * bicgstab_amg.json, which also names its problem (a nonsymmetric
 * convection-diffusion matrix), and the GPU configs, which name their
 * backend: configs for the ksolve tool, loaded with its scope in
 * test_cli_config.c. */
START_TEST(test_example_configs)
{
    static const struct {
        const char *file, *solver, *pc, *algorithm;
    } ex[] = {
        {"pcg_amg_classical.json", "PCG", "AMG", "CLASSICAL"},
        {"pcg_amg_aggressive.json", "PCG", "AMG", "CLASSICAL"},
        {"pcg_amg_aggregation.json", "PCG", "AMG", "AGGREGATION"},
        {"amg_standalone.json", "AMG", "AMG", "CLASSICAL"},
        {"pcg_jacobi.json", "PCG", "JACOBI", NULL},
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
                         "DOUBLE");
        /* And its dump loads again. */
        char *d = ks_config_dump(cfg);
        ks_config *back = load(d);
        free(d);
        ks_config_destroy(&back);
        ks_config_destroy(&cfg);
    }
    ks_config *cfg = (ks_config *)0x1;
    ck_assert_int_eq(ks_config_create_from_file(source_path("examples/configs/bicgstab_amg.json"),
                                                &cfg),
                     KS_ERR_CONFIG);
    ck_assert_ptr_null(cfg);
    ck_assert_msg(strstr(ks_last_error(), "bicgstab_amg.json") &&
                      strstr(ks_last_error(), "unknown key 'matrix'"),
                  "%s", ks_last_error());
}
END_TEST

/* Without the tool's scope its keys (what to solve, where) are unknown
 * keys, named by their path, whether loaded or set. */
START_TEST(test_tool_keys_unknown)
{
    expect_fail("{\"matrix\": {\"n\": 10}}", KS_ERR_CONFIG, "unknown key 'matrix'",
                "(keys allowed here: config_version, solver)");
    expect_fail("{\"backend\": \"cpu\"}", KS_ERR_CONFIG, "unknown key 'backend'", NULL);
    expect_fail("{\"solver\": {\"max_iters\": 5}, \"rhs\": {\"type\": \"ones\"}}",
                KS_ERR_CONFIG, "unknown key 'rhs'", NULL);
    expect_fail("{\"spmv\": {\"threads_per_row\": 4}}", KS_ERR_CONFIG, "unknown key 'spmv'",
                NULL);
    /* The same name in the solver tree is suggested. */
    expect_fail("{\"spmv_format\": \"csr\"}", KS_ERR_CONFIG, "unknown key 'spmv_format'",
                "did you mean 'solver.preconditioner.spmv_format'?");

    ks_config *cfg = load("{}");
    ck_assert_int_eq(ks_config_set(cfg, "solution.file", "x.mtx"), KS_ERR_CONFIG);
    ck_assert_msg(strstr(ks_last_error(), "unknown key 'solution'"), "%s", ks_last_error());
    const char *keys[] = {"solver.max_iters", "matrix.file"};
    const char *vals[] = {"10", "A.mtx"};
    ck_assert_int_eq(ks_config_set_many(cfg, 2, keys, vals), KS_ERR_CONFIG);
    ck_assert_msg(strstr(ks_last_error(), "unknown key 'matrix'"), "%s", ks_last_error());
    ck_assert_int_eq(ks_config_solver_params(cfg)->max_iters, 1000); /* unchanged */
    /* The library's own block is reachable as a scope; no other is. */
    ck_assert_ptr_eq(ks_config_scope_block(cfg, &ks_config_solver_scope),
                     ks_config_solver_params(cfg));
    ks_config_destroy(&cfg);

    /* A config file's tool keys fail the same way, naming the file. */
    const char *path = ks_test_write_tmp(".json", "{\"matrix\": {\"file\": \"A.mtx\"}}");
    cfg = (ks_config *)0x1;
    ck_assert_int_eq(ks_config_create_from_file(path, &cfg), KS_ERR_CONFIG);
    ck_assert_ptr_null(cfg);
    ck_assert(strstr(ks_last_error(), path) && strstr(ks_last_error(), "unknown key 'matrix'"));
    remove(path);
}
END_TEST

/* docs/config.md documents every key the dump shows, for each kind of
 * solver: the AMG keys appear only when AMG is chosen. */
START_TEST(test_docs_cover_keys)
{
    const char *doc = cfgtest_config_doc();
    static const char *const cfgs[] = {
        "{}",                                      /* PCG + AMG (default) */
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
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_dump_roundtrip);
    tcase_add_test(tc, test_solver_keys);
    tcase_add_test(tc, test_unknown_keys);
    tcase_add_test(tc, test_wrong_types);
    tcase_add_test(tc, test_out_of_range);
    tcase_add_test(tc, test_bad_enums);
    tcase_add_test(tc, test_syntax_errors);
    tcase_add_test(tc, test_conflicts);
    tcase_add_test(tc, test_set);
    tcase_add_test(tc, test_set_many);
    tcase_add_test(tc, test_amg_keys);
    tcase_add_test(tc, test_amgx_example);
    tcase_add_test(tc, test_amg_aggregation_theta);
    tcase_add_test(tc, test_amg_errors);
    tcase_add_test(tc, test_amg_set);
    tcase_add_test(tc, test_choices_checked_at_load);
    tcase_add_test(tc, test_example_configs);
    tcase_add_test(tc, test_tool_keys_unknown);
    tcase_add_test(tc, test_docs_cover_keys);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
