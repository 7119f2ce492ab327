/* The run-time version, the log levels and the print callback: every
 * message of a solve reaches the callback whole, the level filters them,
 * and without a callback the output goes where it always went. */
#include "ks_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

START_TEST(test_version)
{
    ck_assert_str_eq(ks_version(), KS_VERSION_STRING);
    char macro[32];
    snprintf(macro, sizeof macro, "%d.%d.%d", KS_VERSION_MAJOR, KS_VERSION_MINOR,
             KS_VERSION_PATCH);
    ck_assert_str_eq(ks_version(), macro);
    /* The header agrees with meson.build's project version. */
    const char *proj = getenv("KS_PROJECT_VERSION");
    ck_assert_ptr_nonnull(proj);
    ck_assert_str_eq(ks_version(), proj);
}
END_TEST

typedef struct sink {
    char text[1 << 16];
    size_t used;
    int calls;
    int bad; /* messages not ending in '\n' or whose len is wrong */
} sink;

static void collect(const char *msg, int len, void *ctx)
{
    sink *k = ctx;
    k->calls++;
    if (len <= 0 || (size_t)len != strlen(msg) || msg[len - 1] != '\n')
        k->bad++;
    if (k->used + (size_t)len < sizeof k->text) {
        memcpy(k->text + k->used, msg, (size_t)len);
        k->used += (size_t)len;
        k->text[k->used] = '\0';
    }
}

static const char *extra_keys[3]; /* more "key=value" for solve(), NULL-ended */

/* Solve a 6^3 Poisson problem with the monitor and the summary on. */
static void solve(const char *pc)
{
    ks_backend *be;
    ck_assert_int_eq(ks_backend_create("cpu", &be), KS_OK);
    ks_gen_params gp;
    ks_gen_params_default(&gp);
    gp.nx = gp.ny = gp.nz = 6;
    ks_csr A;
    ck_assert_int_eq(ks_generate(&gp, &A), KS_OK);
    ks_matrix *M;
    ck_assert_int_eq(ks_matrix_create(be, &A, "auto", NULL, &M), KS_OK);
    ks_config *cfg;
    ck_assert_int_eq(ks_config_create_default(&cfg), KS_OK);
    ck_assert_int_eq(ks_config_set(cfg, "solver.monitor_residual", "1"), KS_OK);
    ck_assert_int_eq(ks_config_set(cfg, "solver.print_solve_stats", "1"), KS_OK);
    ck_assert_msg(ks_config_set(cfg, "solver.preconditioner.solver", pc) == KS_OK, "%s",
                  ks_last_error());
    for (int i = 0; extra_keys[i]; i++) {
        char key[128];
        snprintf(key, sizeof key, "%s", extra_keys[i]);
        char *eq = strchr(key, '=');
        *eq = '\0';
        ck_assert_msg(ks_config_set(cfg, key, eq + 1) == KS_OK, "%s", ks_last_error());
    }
    ks_solver *s;
    ck_assert_msg(ks_solver_create(be, cfg, &s) == KS_OK, "%s", ks_last_error());
    ck_assert_int_eq(ks_solver_setup(s, M), KS_OK);
    ks_vec *b, *x;
    ck_assert_int_eq(ks_matrix_vec_create(M, &b), KS_OK);
    ck_assert_int_eq(ks_matrix_vec_create(M, &x), KS_OK);
    ck_assert_int_eq(ks_vec_fill(b, 1.0), KS_OK);
    ck_assert_int_eq(ks_vec_fill(x, 0.0), KS_OK);
    ck_assert_int_eq(ks_solver_solve(s, b, x), KS_OK);
    ck_assert_int_eq(ks_solver_stats(s)->status, KS_SOLVE_CONVERGED);
    ks_vec_destroy(&x);
    ks_vec_destroy(&b);
    ks_solver_destroy(&s);
    ks_config_destroy(&cfg);
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
    ks_backend_destroy(&be);
}

START_TEST(test_callback_gets_monitor_and_summary)
{
    static sink k;
    memset(&k, 0, sizeof k);
    ks_set_print_callback(collect, &k);
    solve("JACOBI");
    ks_set_print_callback(NULL, NULL);
    ck_assert_int_eq(k.bad, 0);
    ck_assert_msg(strstr(k.text, "    iter        residual      rate\n"), "%s", k.text);
    ck_assert_msg(strstr(k.text, "       0  "), "%s", k.text);
    ck_assert_msg(strstr(k.text, "PCG + JACOBI on cpu: CONVERGED after "), "%s", k.text);
    ck_assert_msg(strstr(k.text, "  true relative residual ||b-Ax||/||b|| = "), "%s", k.text);
    ck_assert_msg(strstr(k.text, "  setup ") && strstr(k.text, " ms/iteration)\n"), "%s", k.text);
    /* No AMG trace at the default level (KS_AMG_TRACE is not set here). */
    ck_assert_ptr_null(strstr(k.text, "ksolve AMG level"));
    /* One message per line: header + iterations + 4 summary lines. */
    int lines = 0;
    for (const char *p = k.text; *p; p++)
        lines += *p == '\n';
    ck_assert_int_eq(lines, k.calls);
}
END_TEST

START_TEST(test_levels_filter)
{
    static sink k;
    memset(&k, 0, sizeof k);
    ks_set_print_callback(collect, &k);
    /* Warnings only: the monitor and the summary are information. */
    ks_set_log_level(KS_LOG_WARN);
    solve("AMG");
    ck_assert_int_eq(k.calls, 0);
    /* Debug: the information plus the AMG setup trace. */
    ks_set_log_level(KS_LOG_DEBUG);
    solve("AMG");
    ck_assert_int_eq(k.bad, 0);
    ck_assert_msg(strstr(k.text, "ksolve AMG level 0: "), "%s", k.text);
    ck_assert_msg(strstr(k.text, "PCG + AMG on cpu: CONVERGED"), "%s", k.text);
    /* Out-of-range levels clamp rather than silence everything. */
    memset(&k, 0, sizeof k);
    ks_set_log_level(-5);
    solve("AMG");
    ck_assert_int_eq(k.calls, 0);
    memset(&k, 0, sizeof k);
    ks_set_log_level(99);
    solve("AMG");
    ck_assert_msg(strstr(k.text, "ksolve AMG level 0: "), "%s", k.text);
    ks_set_log_level(KS_LOG_INFO);
    ks_set_print_callback(NULL, NULL);
}
END_TEST

/* Run solve(pc) with stdout and stderr sent to files; return their text. */
static void capture(const char *pc, char *out, char *err, size_t cap)
{
    const char *fo = ks_test_tmpfile(".out");
    char po[1024];
    snprintf(po, sizeof po, "%s", fo);
    const char *pe = ks_test_tmpfile(".err");
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    FILE *o = fopen(po, "w"), *e = fopen(pe, "w");
    ck_assert(o && e);
    dup2(fileno(o), 1);
    dup2(fileno(e), 2);
    solve(pc);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    fclose(o);
    fclose(e);
    FILE *r = fopen(po, "r");
    size_t n = fread(out, 1, cap - 1, r);
    out[n] = '\0';
    fclose(r);
    r = fopen(pe, "r");
    n = fread(err, 1, cap - 1, r);
    err[n] = '\0';
    fclose(r);
    remove(po);
    remove(pe);
}

START_TEST(test_default_streams)
{
    static char out[1 << 16], err[1 << 16];
    /* No callback: the monitor and the summary on stdout, nothing on stderr. */
    capture("JACOBI", out, err, sizeof out);
    ck_assert_msg(strstr(out, "    iter        residual      rate\n"), "%s", out);
    ck_assert_msg(strstr(out, "PCG + JACOBI on cpu: CONVERGED"), "%s", out);
    ck_assert_msg(err[0] == '\0', "%s", err);
    /* The AMG trace at debug level on stderr, never on stdout. */
    ks_set_log_level(KS_LOG_DEBUG);
    capture("AMG", out, err, sizeof out);
    ks_set_log_level(KS_LOG_INFO);
    ck_assert_msg(strstr(err, "ksolve AMG level 0: "), "%s", err);
    ck_assert_ptr_null(strstr(out, "ksolve AMG level"));
    ck_assert_msg(strstr(out, "PCG + AMG on cpu: CONVERGED"), "%s", out);
}
END_TEST

START_TEST(test_setup_progress)
{
    static sink k;
    memset(&k, 0, sizeof k);
    ks_set_print_callback(collect, &k);
    /* Off by default: no progress lines. */
    solve("AMG");
    ck_assert_ptr_null(strstr(k.text, "AMG setup:"));
    /* On: a line per level, in order, with its size, then one at the end. */
    memset(&k, 0, sizeof k);
    extra_keys[0] = "solver.preconditioner.print_setup_progress=1";
    /* 6^3 = 216 rows would stop at level 0 (coarse_max_rows 300). */
    solve("AMG");
    ck_assert_int_eq(k.bad, 0);
    const char *l0 = strstr(k.text, "AMG setup: level 0: 216 rows, 1296 nonzeros, ");
    ck_assert_msg(l0, "%s", k.text);
    ck_assert_msg(strstr(k.text, "AMG setup: 1 level, coarse solve and smoothers ready, "),
                  "%s", k.text);
    /* Information: silenced below KS_LOG_INFO. */
    memset(&k, 0, sizeof k);
    ks_set_log_level(KS_LOG_WARN);
    solve("AMG");
    ks_set_log_level(KS_LOG_INFO);
    ck_assert_int_eq(k.calls, 0);
    extra_keys[0] = NULL;
    ks_set_print_callback(NULL, NULL);
}
END_TEST

START_TEST(test_setup_progress_levels)
{
    /* More levels (coarse_max_rows low enough that the hierarchy grows):
     * each level's line once, in order, on stderr by default (stdout keeps
     * the results a pipe wants). */
    static char out[1 << 16], err[1 << 16];
    extra_keys[0] = "solver.preconditioner.print_setup_progress=1";
    extra_keys[1] = "solver.preconditioner.coarse_max_rows=10";
    capture("AMG", out, err, sizeof out);
    extra_keys[0] = extra_keys[1] = NULL;
    ck_assert_ptr_null(strstr(out, "AMG setup:"));
    const char *l0 = strstr(err, "AMG setup: level 0: 216 rows, 1296 nonzeros, ");
    const char *l1 = strstr(err, "AMG setup: level 1: ");
    ck_assert_msg(l0 && l1 && l0 < l1, "%s", err);
    ck_assert_ptr_null(strstr(l1 + 1, "AMG setup: level 1: "));
    /* The last line counts the levels the lines named. */
    int nlev = 0;
    for (const char *p = err; (p = strstr(p, "AMG setup: level ")); p++)
        nlev++;
    char done[96];
    snprintf(done, sizeof done, "AMG setup: %d levels, coarse solve and smoothers ready, ", nlev);
    ck_assert_msg(nlev >= 2 && strstr(err, done), "%s", err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("log");
    tcase_add_test(tc, test_version);
    tcase_add_test(tc, test_callback_gets_monitor_and_summary);
    tcase_add_test(tc, test_levels_filter);
    tcase_add_test(tc, test_default_streams);
    tcase_add_test(tc, test_setup_progress);
    tcase_add_test(tc, test_setup_progress_levels);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
