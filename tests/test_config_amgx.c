/* AmgX's configs load (docs/config.md, "AmgX's configs"): the key sets of
 * AmgX's shipped example configs (the .json files of its src/configs folder), written out
 * here, load with their keys mapped, each diagnostic key warned about once
 * through the library's log, and what has no counterpart (a solver, a
 * smoother, a cycle) refused with every problem in one message. */
#include "config_cases.h"
#include "solver/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char logged[16384];
static int nlogged;

static void collect(const char *msg, int len, void *ctx)
{
    (void)ctx;
    size_t used = strlen(logged);
    if (used + (size_t)len < sizeof logged)
        memcpy(logged + used, msg, (size_t)len + 1);
    nlogged++;
}

/* Load json, which must succeed, with the warnings collected. */
static ks_config *load_logged(const char *json)
{
    logged[0] = '\0';
    nlogged = 0;
    ks_set_log_level(KS_LOG_WARN);
    ks_set_print_callback(collect, NULL);
    ks_config *cfg = NULL;
    ks_error e = ks_config_create_from_string(json, &cfg);
    ks_set_print_callback(NULL, NULL);
    ck_assert_msg(e == KS_OK, "%s\n%s", ks_last_error(), json);
    return cfg;
}

/* Each of paths[] was warned about exactly once, and nothing else. */
static void expect_warnings(const char *const *paths, int n)
{
    for (int i = 0; i < n; i++) {
        char want[200];
        snprintf(want, sizeof want, "warning: %s: ", paths[i]);
        const char *p = strstr(logged, want);
        ck_assert_msg(p != NULL, "no warning for %s in:\n%s", paths[i], logged);
        ck_assert_msg(!strstr(p + 1, want), "%s warned twice:\n%s", paths[i], logged);
    }
    ck_assert_msg(nlogged == n, "%d warnings, expected %d:\n%s", nlogged, n, logged);
}

/* PCG_CLASSICAL_V_JACOBI.json: nine keys of no meaning here (the ones the
 * issue had to remove by hand), one warning each. */
START_TEST(test_pcg_classical_v_jacobi)
{
    ks_config *cfg = load_logged(
        "{\"config_version\": 2, \"solver\": {\"preconditioner\": {\"print_grid_stats\": 1,"
        " \"print_vis_data\": 0, \"solver\": \"AMG\", \"smoother\": {\"scope\": \"jacobi\","
        " \"solver\": \"BLOCK_JACOBI\", \"monitor_residual\": 0, \"print_solve_stats\": 0},"
        " \"print_solve_stats\": 0, \"aggressive_levels\": 2, \"presweeps\": 1,"
        " \"interpolator\": \"D2\", \"max_iters\": 1, \"monitor_residual\": 0,"
        " \"store_res_history\": 0, \"scope\": \"amg\", \"max_levels\": 50, \"cycle\": \"V\","
        " \"postsweeps\": 1}, \"solver\": \"PCG\", \"print_solve_stats\": 1,"
        " \"obtain_timings\": 1, \"max_iters\": 100, \"monitor_residual\": 1,"
        " \"convergence\": \"RELATIVE_INI\", \"scope\": \"main\", \"tolerance\": 1e-06,"
        " \"norm\": \"L2\"}}");
    static const char *const w[] = {
        "solver.preconditioner.print_grid_stats", "solver.preconditioner.print_vis_data",
        "solver.preconditioner.smoother.monitor_residual",
        "solver.preconditioner.smoother.print_solve_stats",
        "solver.preconditioner.print_solve_stats", "solver.preconditioner.max_iters",
        "solver.preconditioner.monitor_residual", "solver.preconditioner.store_res_history",
        "solver.obtain_timings"};
    expect_warnings(w, 9);
    const ks_solver_params *s = ks_config_solver_params(cfg);
    ck_assert_str_eq(s->solver, "PCG");
    ck_assert_int_eq(s->max_iters, 100);
    ck_assert(s->tolerance == 1e-6);
    ck_assert_int_eq(s->convergence, KS_CONV_RELATIVE_INI);
    ck_assert_int_eq(s->monitor_residual, 1);
    ck_assert_str_eq(s->pc.solver, "AMG");
    ck_assert_int_eq(s->pc.amg.aggressive_levels, 2);
    ck_assert_int_eq(s->pc.amg.smoother.solver, KS_SMOOTHER_JACOBI);
    ck_assert_int_eq(s->pc.amg.max_levels, 50);
    ck_assert_int_eq(s->pc.amg.cycle, KS_AMG_V);
    /* the dump holds our keys only: it loads without a warning */
    char *d = ks_config_dump(cfg);
    ck_assert_ptr_null(strstr(d, "print_grid_stats"));
    ks_config *again = load_logged(d);
    ck_assert_int_eq(nlogged, 0);
    free(d);
    ks_config_destroy(&again);
    ks_config_destroy(&cfg);
}
END_TEST

/* PCG_AGGREGATION_JACOBI.json: AmgX's aggregation selector and NOSOLVER
 * coarse solver have no counterpart (warned, defaults kept); its
 * interpolator, which aggregation does not read, repeats the default. */
START_TEST(test_pcg_aggregation_jacobi)
{
    ks_config *cfg = load_logged(
        "{\"config_version\": 2, \"determinism_flag\": 1, \"solver\": {\"preconditioner\": {"
        "\"print_grid_stats\": 1, \"algorithm\": \"AGGREGATION\", \"print_vis_data\": 0,"
        " \"solver\": \"AMG\", \"smoother\": {\"relaxation_factor\": 0.8, \"scope\": \"jacobi\","
        " \"solver\": \"BLOCK_JACOBI\", \"monitor_residual\": 0, \"print_solve_stats\": 0},"
        " \"print_solve_stats\": 0, \"presweeps\": 0, \"interpolator\": \"D2\","
        " \"selector\": \"SIZE_2\", \"coarse_solver\": \"NOSOLVER\", \"max_iters\": 1,"
        " \"monitor_residual\": 0, \"store_res_history\": 0, \"scope\": \"amg\","
        " \"max_levels\": 100, \"postsweeps\": 3, \"cycle\": \"V\"}, \"solver\": \"PCG\","
        " \"print_solve_stats\": 1, \"obtain_timings\": 1, \"max_iters\": 1000,"
        " \"monitor_residual\": 1, \"convergence\": \"RELATIVE_INI\", \"scope\": \"main\","
        " \"tolerance\": 0.0001, \"norm\": \"L2\"}}");
    static const char *const w[] = {
        "determinism_flag", "solver.preconditioner.print_grid_stats",
        "solver.preconditioner.print_vis_data", "solver.preconditioner.smoother.monitor_residual",
        "solver.preconditioner.smoother.print_solve_stats",
        "solver.preconditioner.print_solve_stats", "solver.preconditioner.interpolator",
        "solver.preconditioner.selector", "solver.preconditioner.coarse_solver",
        "solver.preconditioner.max_iters", "solver.preconditioner.monitor_residual",
        "solver.preconditioner.store_res_history", "solver.obtain_timings"};
    expect_warnings(w, 13);
    ck_assert(strstr(logged, "AmgX's aggregation selector"));
    ck_assert(strstr(logged, "solves it directly (DENSE_LU)"));
    const ks_amg_params *a = &ks_config_solver_params(cfg)->pc.amg;
    ck_assert_int_eq(a->algorithm, KS_AMG_AGGREGATION);
    ck_assert_int_eq(a->smoother.solver, KS_SMOOTHER_JACOBI);
    ck_assert(a->smoother.relaxation_factor == 0.8);
    ck_assert_int_eq(a->presweeps, 0);
    ck_assert_int_eq(a->postsweeps, 3);
    ck_assert_int_eq(a->coarse_solver, KS_AMG_DENSE_LU);
    ck_assert(a->strength_threshold == 0.0); /* aggregation's default */
    ks_config_destroy(&cfg);
}
END_TEST

/* PBICGSTAB_CLASSICAL_JACOBI.json and PBICGSTAB_AGGREGATION_W_JACOBI.json. */
START_TEST(test_pbicgstab_jacobi)
{
    ks_config *cfg = load_logged(
        "{\"config_version\": 2, \"solver\": {\"preconditioner\": {\"print_vis_data\": 0,"
        " \"solver\": \"AMG\", \"smoother\": {\"scope\": \"jacobi\", \"solver\": \"BLOCK_JACOBI\","
        " \"monitor_residual\": 0, \"print_solve_stats\": 0}, \"print_solve_stats\": 0,"
        " \"presweeps\": 1, \"interpolator\": \"D2\", \"max_iters\": 1, \"monitor_residual\": 0,"
        " \"store_res_history\": 0, \"scope\": \"amg\", \"max_levels\": 100, \"cycle\": \"V\","
        " \"postsweeps\": 1}, \"solver\": \"PBICGSTAB\", \"print_solve_stats\": 1,"
        " \"obtain_timings\": 1, \"max_iters\": 100, \"monitor_residual\": 1,"
        " \"convergence\": \"RELATIVE_INI\", \"scope\": \"main\", \"tolerance\": 1e-06,"
        " \"norm\": \"L2\"}}");
    ck_assert_int_eq(nlogged, 8);
    ck_assert_str_eq(ks_config_solver_params(cfg)->solver, "PBICGSTAB");
    ks_config_destroy(&cfg);
    cfg = load_logged(
        "{\"config_version\": 2, \"solver\": {\"preconditioner\": {\"error_scaling\": 2,"
        " \"algorithm\": \"AGGREGATION\", \"solver\": \"AMG\", \"smoother\": {"
        "\"relaxation_factor\": 0.9, \"scope\": \"amg_smoother\", \"solver\": \"BLOCK_JACOBI\"},"
        " \"presweeps\": 1, \"selector\": \"SIZE_2\", \"max_iters\": 1, \"scope\": \"amg\","
        " \"cycle\": \"W\", \"max_levels\": 50, \"norm\": \"L1\", \"postsweeps\": 2},"
        " \"solver\": \"PBICGSTAB\", \"print_solve_stats\": 1, \"obtain_timings\": 1,"
        " \"max_iters\": 100, \"monitor_residual\": 1, \"convergence\": \"RELATIVE_INI\","
        " \"scope\": \"main\", \"tolerance\": 1e-06, \"norm\": \"L2\"}}");
    static const char *const w[] = {
        "solver.preconditioner.error_scaling", "solver.preconditioner.selector",
        "solver.preconditioner.max_iters", "solver.preconditioner.norm", "solver.obtain_timings"};
    expect_warnings(w, 5);
    const ks_solver_params *s = ks_config_solver_params(cfg);
    ck_assert_int_eq(s->pc.amg.cycle, KS_AMG_W);
    ck_assert_int_eq(s->norm, KS_NORM_L2); /* the preconditioner's norm is not the solver's */
    ck_assert(s->pc.amg.smoother.relaxation_factor == 0.9);
    ks_config_destroy(&cfg);
}
END_TEST

/* CLASSICAL_V_CYCLE.json and CLASSICAL_W_CYCLE.json: AMG as the solver. */
START_TEST(test_classical_cycles)
{
    static const char *const cycles[2][2] = {{"V", "ABSOLUTE"}, {"W", "RELATIVE_INI"}};
    for (int i = 0; i < 2; i++) {
        char json[1024];
        snprintf(json, sizeof json,
                 "{\"config_version\": 2, \"solver\": {\"print_grid_stats\": 1, \"solver\": "
                 "\"AMG\", \"print_solve_stats\": 1, \"presweeps\": 1, \"interpolator\": \"D2\","
                 " \"obtain_timings\": 1, \"max_iters\": 100, \"monitor_residual\": 1,"
                 " \"convergence\": \"%s\", \"scope\": \"main\", \"max_levels\": %d,"
                 " \"cycle\": \"%s\", \"tolerance\": 1e-06, \"norm\": \"L2\", \"postsweeps\": 1}}",
                 cycles[i][1], i ? 50 : 100, cycles[i][0]);
        ks_config *cfg = load_logged(json);
        static const char *const w[] = {"solver.print_grid_stats", "solver.obtain_timings"};
        expect_warnings(w, 2);
        const ks_solver_params *s = ks_config_solver_params(cfg);
        ck_assert_str_eq(s->solver, "AMG");
        ck_assert_int_eq(s->pc.amg.cycle, i ? KS_AMG_W : KS_AMG_V);
        ck_assert_int_eq(s->convergence, i ? KS_CONV_RELATIVE_INI : KS_CONV_ABSOLUTE);
        ck_assert_int_eq(s->pc.amg.max_levels, i ? 50 : 100);
        ks_config_destroy(&cfg);
    }
}
END_TEST

/* PCG_NOPREC.json, and V-cheby-smoother.json: AmgX's Chebyshev order is
 * our degree; its eigenvalue mode and inner preconditioner are warned. */
START_TEST(test_noprec_and_chebyshev)
{
    ks_config *cfg = load_logged(
        "{\"config_version\": 2, \"solver\": {\"preconditioner\": {\"scope\": \"amg\","
        " \"solver\": \"NOSOLVER\"}, \"use_scalar_norm\": 1, \"solver\": \"PCG\","
        " \"print_solve_stats\": 1, \"obtain_timings\": 1, \"monitor_residual\": 1,"
        " \"convergence\": \"RELATIVE_INI\", \"scope\": \"main\", \"tolerance\": 1e-06,"
        " \"norm\": \"L2\"}}");
    static const char *const w1[] = {"solver.use_scalar_norm", "solver.obtain_timings"};
    expect_warnings(w1, 2);
    ck_assert_str_eq(ks_config_solver_params(cfg)->pc.solver, "NOSOLVER");
    ks_config_destroy(&cfg);
    cfg = load_logged(
        "{\"config_version\": 2, \"determinism_flag\": 1, \"solver\": {\"scope\": \"main\","
        " \"print_grid_stats\": 1, \"solver\": \"AMG\", \"scaling\": \"DIAGONAL_SYMMETRIC\","
        " \"interpolator\": \"D2\", \"aggressive_levels\": 0, \"interp_max_elements\": 4,"
        " \"coarse_solver\": \"NOSOLVER\", \"print_solve_stats\": 1, \"obtain_timings\": 1,"
        " \"max_iters\": 100, \"monitor_residual\": 1, \"convergence\": \"RELATIVE_INI\","
        " \"max_levels\": 100, \"cycle\": \"V\", \"smoother\": {\"solver\": \"CHEBYSHEV\","
        " \"preconditioner\": {\"solver\": \"NOSOLVER\", \"max_iters\": 1}, \"max_iters\": 1,"
        " \"chebyshev_polynomial_order\": 4, \"chebyshev_lambda_estimate_mode\": 2},"
        " \"tolerance\": 1e-06, \"norm\": \"L2\", \"presweeps\": 0, \"postsweeps\": 1}}");
    static const char *const w2[] = {
        "determinism_flag", "solver.print_grid_stats", "solver.scaling", "solver.coarse_solver",
        "solver.obtain_timings", "solver.smoother.preconditioner", "solver.smoother.max_iters",
        "solver.smoother.chebyshev_lambda_estimate_mode"};
    expect_warnings(w2, 8);
    const ks_amg_params *a = &ks_config_solver_params(cfg)->pc.amg;
    ck_assert_int_eq(a->smoother.solver, KS_SMOOTHER_CHEBYSHEV);
    ck_assert_int_eq(a->smoother.chebyshev_degree, 4);
    ck_assert_int_eq(a->presweeps, 0);
    ks_config_destroy(&cfg);
    /* the mapped name is checked as ours, under its own name */
    cfgtest_expect_fail(NULL,
                        "{\"solver\": {\"solver\": \"AMG\", \"smoother\": {\"solver\": "
                        "\"CHEBYSHEV\", \"chebyshev_polynomial_order\": 12}}}",
                        KS_ERR_CONFIG, "solver.smoother.chebyshev_polynomial_order: must be in",
                        NULL);
    cfgtest_expect_fail(NULL,
                        "{\"solver\": {\"solver\": \"AMG\", \"smoother\": {\"solver\": "
                        "\"CHEBYSHEV\", \"chebyshev_polynomial_order\": 3, "
                        "\"chebyshev_degree\": 3}}}",
                        KS_ERR_CONFIG, "AmgX's name for 'solver.smoother.chebyshev_degree'", NULL);
}
END_TEST

/* What AmgX has and ksolve does not: one error with every problem of the
 * config, each naming its key and what exists. */
START_TEST(test_amgx_refused)
{
    /* AMG_AGGRREGATION_CG.json: AmgX's CG cycle */
    cfgtest_expect_fail(NULL,
                        "{\"config_version\": 2, \"solver\": {\"print_grid_stats\": 1, \"solver\":"
                        " \"AMG\", \"algorithm\": \"AGGREGATION\", \"selector\": \"SIZE_4\","
                        " \"print_solve_stats\": 1, \"smoother\": \"JACOBI_L1\", \"presweeps\": 0,"
                        " \"postsweeps\": 3, \"obtain_timings\": 1, \"max_iters\": 100,"
                        " \"monitor_residual\": 1, \"convergence\": \"RELATIVE_INI\","
                        " \"scope\": \"main\", \"max_levels\": 100, \"cycle\": \"CG\","
                        " \"tolerance\": 1e-06, \"norm\": \"L2\"}}",
                        KS_ERR_CONFIG, "solver.cycle: unknown value 'CG' (allowed: V, W, F)", NULL);
    /* IDR (IDR_DILU.json's solver), a DILU smoother, a convergence test and
     * keys ksolve does not know: all in one message, in the file's order */
    cfgtest_expect_fail(
        NULL,
        "{\"solver\": {\"solver\": \"IDRMSYNC\", \"subspace_dim_s\": 8, \"convergence\": "
        "\"RELATIVE_MAX_CORE\", \"preconditioner\": {\"solver\": \"AMG\", \"smoother\": "
        "\"MULTICOLOR_DILU\", \"dense_lu_num_rows\": 2, \"relaxation_factor\": 0.75}}}",
        KS_ERR_CONFIG, "5 problems: solver.solver: unknown value 'IDRMSYNC' (allowed: PCG, CG",
        "unknown key 'solver.subspace_dim_s'");
    const char *msg = ks_last_error();
    ck_assert_msg(strstr(msg, "solver.convergence: unknown value 'RELATIVE_MAX_CORE' (allowed:"),
                  "%s", msg);
    ck_assert_msg(strstr(msg, "solver.preconditioner.smoother: unknown value 'MULTICOLOR_DILU' "
                              "(allowed: JACOBI, JACOBI_L1, CHEBYSHEV, GS, SGS)"),
                  "%s", msg);
    ck_assert_msg(strstr(msg, "unknown key 'solver.preconditioner.dense_lu_num_rows'"), "%s", msg);
    /* AmgX's keys only where AmgX has them: a diagnostic key deep in an
     * unknown place is still unknown */
    cfgtest_expect_fail(NULL, "{\"solver\": {\"max_iters\": 5, \"preconditioner\": {\"solver\": "
                              "\"JACOBI\"}}, \"chebyshev_polynomial_order\": 3}",
                        KS_ERR_CONFIG, "unknown key 'chebyshev_polynomial_order'", NULL);
}
END_TEST

/* AmgX's relaxation_factor in an AMG scope whose smoother is given by name
 * (AmgX's smoother reads it there): the smoother's relaxation_factor, in
 * the preconditioner scope and in the solver scope of AMG alone; both keys
 * with different values are an error naming both; under CHEBYSHEV, which
 * it does not damp, the rule for keys that do not apply. */
START_TEST(test_amg_scope_damping)
{
    /* FGMRES_AGGREGATION.json's preconditioner, its smoother a name */
    ks_config *cfg = load_logged(
        "{\"config_version\": 2, \"solver\": {\"solver\": \"PCG\", \"preconditioner\": {"
        "\"solver\": \"AMG\", \"algorithm\": \"AGGREGATION\", \"smoother\": \"JACOBI_L1\","
        " \"relaxation_factor\": 0.8, \"presweeps\": 0, \"postsweeps\": 3}}}");
    ck_assert_int_eq(nlogged, 0);
    const ks_solver_params *s = ks_config_solver_params(cfg);
    ck_assert_int_eq(s->pc.amg.smoother.solver, KS_SMOOTHER_JACOBI_L1);
    ck_assert(s->pc.amg.smoother.relaxation_factor == 0.8);
    ck_assert(s->pc.relaxation_factor == 1.0); /* Jacobi's, which AMG does not read */
    /* the dump says it once, as the smoother's key, and loads the same */
    json_t *t = cfgtest_dump_tree(cfg);
    json_t *pc = cfgtest_at(t, "solver", "preconditioner", NULL);
    ck_assert_ptr_null(json_object_get(pc, "relaxation_factor"));
    ck_assert(json_number_value(cfgtest_at(pc, "smoother", "relaxation_factor", NULL)) == 0.8);
    json_decref(t);
    char *d = ks_config_dump(cfg);
    ks_config *again = cfgtest_load(NULL, d);
    ck_assert(ks_config_solver_params(again)->pc.amg.smoother.relaxation_factor == 0.8);
    ks_config_destroy(&again);
    free(d);
    /* through ks_config_set too */
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.relaxation_factor", "0.6"));
    ck_assert(ks_config_solver_params(cfg)->pc.amg.smoother.relaxation_factor == 0.6);
    ks_config_destroy(&cfg);

    /* AMG alone: the solver scope is the AMG scope */
    cfg = load_logged("{\"solver\": {\"solver\": \"AMG\", \"smoother\": \"BLOCK_JACOBI\","
                      " \"relaxation_factor\": 0.75, \"max_iters\": 20}}");
    ck_assert_int_eq(nlogged, 0);
    s = ks_config_solver_params(cfg);
    ck_assert_int_eq(s->pc.amg.smoother.solver, KS_SMOOTHER_JACOBI);
    ck_assert(s->pc.amg.smoother.relaxation_factor == 0.75);
    t = cfgtest_dump_tree(cfg);
    ck_assert_ptr_null(json_object_get(cfgtest_at(t, "solver", NULL, NULL), "relaxation_factor"));
    ck_assert(json_number_value(cfgtest_at(t, "solver", "smoother", "relaxation_factor")) == 0.75);
    json_decref(t);
    ks_config_destroy(&cfg);
    /* GS and SGS are damped by it too; the same value twice is one value */
    cfg = load_logged("{\"solver\": {\"preconditioner\": {\"solver\": \"AMG\", \"smoother\": "
                      "{\"solver\": \"SGS\", \"relaxation_factor\": 0.9}, "
                      "\"relaxation_factor\": 0.9}}}");
    ck_assert(ks_config_solver_params(cfg)->pc.amg.smoother.relaxation_factor == 0.9);
    ks_config_destroy(&cfg);

    /* both, with different values: an error naming both, in either scope */
    cfgtest_expect_fail(NULL,
                        "{\"solver\": {\"preconditioner\": {\"solver\": \"AMG\", "
                        "\"relaxation_factor\": 0.8, \"smoother\": {\"solver\": \"GS\", "
                        "\"relaxation_factor\": 0.6}}}}",
                        KS_ERR_CONFIG,
                        "solver.preconditioner.relaxation_factor: AmgX's name here for "
                        "solver.preconditioner.smoother.relaxation_factor, which is given too",
                        "(0.8 and 0.6)");
    cfgtest_expect_fail(NULL,
                        "{\"solver\": {\"solver\": \"AMG\", \"smoother\": {\"solver\": "
                        "\"JACOBI\", \"relaxation_factor\": 0.6}, \"relaxation_factor\": 0.8}}",
                        KS_ERR_CONFIG, "solver.relaxation_factor: AmgX's name here for "
                        "solver.smoother.relaxation_factor", "give one of them");
    /* the smoother's range: 2 is Jacobi's largest damping, not the smoother's */
    cfgtest_expect_fail(NULL,
                        "{\"solver\": {\"preconditioner\": {\"solver\": \"AMG\", "
                        "\"smoother\": \"JACOBI\", \"relaxation_factor\": 2}}}",
                        KS_ERR_CONFIG, "solver.preconditioner.relaxation_factor: must be in [0, 2)",
                        NULL);
    cfgtest_expect_fail(NULL,
                        "{\"solver\": {\"solver\": \"AMG\", \"smoother\": \"JACOBI\", "
                        "\"relaxation_factor\": 2}}",
                        KS_ERR_CONFIG, "solver.relaxation_factor: must be in [0, 2)", NULL);

    /* CHEBYSHEV (also the default smoother) does not read it: an error
     * when it asks for a damping, one warning when it repeats the default */
    cfgtest_expect_fail(NULL,
                        "{\"solver\": {\"preconditioner\": {\"solver\": \"AMG\", "
                        "\"smoother\": \"CHEBYSHEV\", \"relaxation_factor\": 0.8}}}",
                        KS_ERR_CONFIG,
                        "solver.preconditioner.relaxation_factor: applies to the JACOBI, "
                        "JACOBI_L1, GS and SGS smoothers only, but "
                        "solver.preconditioner.smoother.solver is CHEBYSHEV",
                        "(remove the key, or choose one of them)");
    cfgtest_expect_fail(NULL, "{\"solver\": {\"solver\": \"AMG\", \"relaxation_factor\": 0.8}}",
                        KS_ERR_CONFIG,
                        "solver.relaxation_factor: applies to the JACOBI, JACOBI_L1, GS and SGS "
                        "smoothers only, but solver.smoother.solver is CHEBYSHEV", NULL);
    cfg = load_logged("{\"solver\": {\"solver\": \"AMG\", \"smoother\": \"CHEBYSHEV\", "
                      "\"relaxation_factor\": 1.0}}");
    static const char *const w[] = {"solver.relaxation_factor"};
    expect_warnings(w, 1);
    ck_assert(strstr(logged, "ignored (its value is the default)"));
    ck_assert_int_eq(ks_config_solver_params(cfg)->pc.amg.smoother.solver, KS_SMOOTHER_CHEBYSHEV);
    ks_config_destroy(&cfg);

    /* outside an AMG scope it is AMG's setting, as the scope's other keys */
    cfgtest_expect_fail(NULL, "{\"solver\": {\"solver\": \"PCG\", \"relaxation_factor\": 0.8}}",
                        KS_ERR_CONFIG, "solver.relaxation_factor: an AMG setting, but "
                        "solver.solver is PCG", NULL);
}
END_TEST

/* AMG_CLASSICAL_PMIS.json preconditions GMRES: refused naming the solver
 * while ksolve has no GMRES, loaded with its AMG settings once it has. */
START_TEST(test_amg_classical_pmis)
{
    const char *json =
        "{\"config_version\": 2, \"determinism_flag\": 1, \"solver\": {\"scope\": \"main\","
        " \"print_grid_stats\": 1, \"store_res_history\": 1, \"obtain_timings\": 1,"
        " \"solver\": \"GMRES\", \"print_solve_stats\": 1, \"preconditioner\": {"
        "\"interpolator\": \"D2\", \"solver\": \"AMG\", \"cycle\": \"V\", \"smoother\": {"
        "\"relaxation_factor\": 1, \"scope\": \"jacobi\", \"solver\": \"JACOBI_L1\"},"
        " \"presweeps\": 2, \"postsweeps\": 2, \"selector\": \"PMIS\", \"coarsest_sweeps\": 2,"
        " \"coarse_solver\": \"NOSOLVER\", \"max_iters\": 1, \"max_row_sum\": 0.9,"
        " \"min_coarse_rows\": 2, \"scope\": \"amg_solver\", \"max_levels\": 50,"
        " \"print_grid_stats\": 1, \"aggressive_levels\": 1, \"interp_max_elements\": 4},"
        " \"max_iters\": 100, \"monitor_residual\": 1, \"gmres_n_restart\": 10,"
        " \"convergence\": \"RELATIVE_INI\", \"tolerance\": 1e-06, \"norm\": \"L2\"}}";
    /* jansson refuses the duplicate print_grid_stats of AmgX's file: ours
     * has it once */
    ks_config *probe = NULL;
    ks_error has_gmres =
        ks_config_create_from_string("{\"solver\": {\"solver\": \"GMRES\"}}", &probe);
    ks_config_destroy(&probe);
    if (has_gmres != KS_OK) {
        cfgtest_expect_fail(NULL, json, KS_ERR_CONFIG,
                            "solver.solver: unknown value 'GMRES' (allowed: PCG", NULL);
        return;
    }
    ks_config *cfg = load_logged(json);
    const ks_amg_params *a = &ks_config_solver_params(cfg)->pc.amg;
    ck_assert_int_eq(a->presweeps, 2);
    ck_assert_int_eq(a->aggressive_levels, 1);
    ck_assert_int_eq(a->smoother.solver, KS_SMOOTHER_JACOBI_L1);
    ck_assert(strstr(logged, "solver.preconditioner.coarsest_sweeps"));
    ks_config_destroy(&cfg);
}
END_TEST

/* Several unknown keys: one error listing each path. */
START_TEST(test_all_unknown_keys_at_once)
{
    cfgtest_expect_fail(NULL,
                        "{\"solver\": {\"max_iter\": 5, \"preconditioner\": {\"solver\": \"AMG\","
                        " \"foo\": 1, \"smoother\": {\"bar\": 2}}}, \"baz\": {\"x\": 1}}",
                        KS_ERR_CONFIG,
                        "4 problems: unknown key 'solver.max_iter' (did you mean 'max_iters'?); "
                        "unknown key 'solver.preconditioner.foo'",
                        "unknown key 'solver.preconditioner.smoother.bar'");
    ck_assert_msg(strstr(ks_last_error(), "; unknown key 'baz'"), "%s", ks_last_error());
    /* one problem keeps the one-problem message */
    cfgtest_expect_fail(NULL, "{\"solver\": {\"max_iter\": 5}}", KS_ERR_CONFIG,
                        "unknown key 'solver.max_iter' (did you mean 'max_iters'?)", NULL);
    ck_assert_ptr_null(strstr(ks_last_error(), "problems"));
}
END_TEST


/* The loaded AmgX configs solve: 3D Poisson 8^3 with each of them, on the
 * cpu, to their tolerance. */
static void solve_with(ks_config *cfg)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create("cpu", &be));
    ks_gen_params gp;
    ks_gen_params_default(&gp);
    gp.nx = gp.ny = gp.nz = 8;
    ks_csr A;
    KS_CHECK(ks_generate(&gp, &A));
    ks_matrix *M;
    KS_CHECK(ks_matrix_create(be, &A, "auto", NULL, &M));
    ks_set_log_level(KS_LOG_ERROR); /* the configs ask for a residual monitor */
    ks_solver *s;
    KS_CHECK(ks_solver_create(be, cfg, &s));
    KS_CHECK(ks_solver_setup(s, M));
    ks_vec *b, *x;
    KS_CHECK(ks_matrix_vec_create(M, &b));
    KS_CHECK(ks_matrix_vec_create(M, &x));
    KS_CHECK(ks_vec_fill(b, 1.0));
    KS_CHECK(ks_vec_fill(x, 0.0));
    KS_CHECK(ks_solver_solve(s, b, x));
    ks_set_log_level(KS_LOG_INFO);
    ck_assert_int_eq(ks_solver_stats(s)->status, KS_SOLVE_CONVERGED);
    ks_vec_destroy(&x);
    ks_vec_destroy(&b);
    ks_solver_destroy(&s);
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
    ks_backend_destroy(&be);
}

START_TEST(test_amgx_configs_solve)
{
    static const char *const cfgs[] = {
        /* PCG_AGGREGATION_JACOBI's settings */
        "{\"config_version\": 2, \"determinism_flag\": 1, \"solver\": {\"preconditioner\": {"
        "\"algorithm\": \"AGGREGATION\", \"solver\": \"AMG\", \"smoother\": {"
        "\"relaxation_factor\": 0.8, \"scope\": \"jacobi\", \"solver\": \"BLOCK_JACOBI\"},"
        " \"presweeps\": 0, \"interpolator\": \"D2\", \"selector\": \"SIZE_2\","
        " \"coarse_solver\": \"NOSOLVER\", \"max_iters\": 1, \"scope\": \"amg\","
        " \"max_levels\": 100, \"postsweeps\": 3, \"cycle\": \"V\"}, \"solver\": \"PCG\","
        " \"obtain_timings\": 1, \"max_iters\": 1000, \"convergence\": \"RELATIVE_INI\","
        " \"scope\": \"main\", \"tolerance\": 0.0001, \"norm\": \"L2\"}}",
        /* V-cheby-smoother's */
        "{\"config_version\": 2, \"solver\": {\"scope\": \"main\", \"solver\": \"AMG\","
        " \"scaling\": \"DIAGONAL_SYMMETRIC\", \"interpolator\": \"D2\", \"coarse_solver\":"
        " \"NOSOLVER\", \"max_iters\": 100, \"convergence\": \"RELATIVE_INI\", \"cycle\": \"V\","
        " \"smoother\": {\"solver\": \"CHEBYSHEV\", \"preconditioner\": {\"solver\": "
        "\"NOSOLVER\", \"max_iters\": 1}, \"max_iters\": 1, \"chebyshev_polynomial_order\": 4,"
        " \"chebyshev_lambda_estimate_mode\": 2}, \"tolerance\": 1e-06, \"norm\": \"L2\","
        " \"presweeps\": 0, \"postsweeps\": 1}}",
    };
    for (int i = 0; i < 2; i++) {
        ks_config *cfg = load_logged(cfgs[i]);
        ck_assert_int_gt(nlogged, 0);
        solve_with(cfg);
        ks_config_destroy(&cfg);
    }
}
END_TEST

/* The ksolve tool with AmgX's PCG_CLASSICAL_V_JACOBI key set: it solves
 * (exit 0) and prints each warning once on stderr. */
START_TEST(test_tool_loads_amgx_config)
{
    const char *exe = getenv("KSOLVE_EXE");
    ck_assert_ptr_nonnull(exe);
    const char *cfg = ks_test_write_tmp(".json",
        "{\"config_version\": 2, \"solver\": {\"preconditioner\": {\"print_grid_stats\": 1,"
        " \"print_vis_data\": 0, \"solver\": \"AMG\", \"smoother\": {\"scope\": \"jacobi\","
        " \"solver\": \"BLOCK_JACOBI\", \"monitor_residual\": 0, \"print_solve_stats\": 0},"
        " \"print_solve_stats\": 0, \"aggressive_levels\": 2, \"presweeps\": 1,"
        " \"interpolator\": \"D2\", \"max_iters\": 1, \"monitor_residual\": 0,"
        " \"store_res_history\": 0, \"scope\": \"amg\", \"max_levels\": 50, \"cycle\": \"V\","
        " \"postsweeps\": 1}, \"solver\": \"PCG\", \"print_solve_stats\": 1,"
        " \"obtain_timings\": 1, \"max_iters\": 100, \"monitor_residual\": 1,"
        " \"convergence\": \"RELATIVE_INI\", \"scope\": \"main\", \"tolerance\": 1e-06,"
        " \"norm\": \"L2\"}}\n");
    const char *err = ks_test_tmpfile(".err");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' -p matrix.n=10 >/dev/null 2>'%s'", exe, cfg, err);
    int rc = system(cmd);
    ck_assert_msg(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s: exit %d", cmd, rc);
    FILE *f = fopen(err, "r");
    ck_assert_ptr_nonnull(f);
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    ck_assert_msg(strstr(text, "warning: solver.obtain_timings: "), "%s", text);
    const char *p = strstr(text, "warning: solver.preconditioner.max_iters: ");
    ck_assert_msg(p && !strstr(p + 1, "warning: solver.preconditioner.max_iters: "), "%s", text);
    remove(err);
    remove(cfg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config_amgx");
    TCase *tc = tcase_create("amgx");
    tcase_add_test(tc, test_pcg_classical_v_jacobi);
    tcase_add_test(tc, test_pcg_aggregation_jacobi);
    tcase_add_test(tc, test_pbicgstab_jacobi);
    tcase_add_test(tc, test_classical_cycles);
    tcase_add_test(tc, test_noprec_and_chebyshev);
    tcase_add_test(tc, test_amgx_refused);
    tcase_add_test(tc, test_amg_scope_damping);
    tcase_add_test(tc, test_amg_classical_pmis);
    tcase_add_test(tc, test_all_unknown_keys_at_once);
    tcase_add_test(tc, test_amgx_configs_solve);
    const char *exe = getenv("KSOLVE_EXE");
    if (exe && access(exe, X_OK) == 0)
        tcase_add_test(tc, test_tool_loads_amgx_config);
    else /* scripts/test's sanitizer build makes the library's test programs only */
        ks_test_skip(1, "the ksolve tool is not built here");
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
