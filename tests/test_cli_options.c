/* The ksolve tool's --x0, --quiet and --threads (and their keys), the AMG
 * setup progress a terminal gets, and the memory check of its vectors: run
 * as a child process (KSOLVE_EXE), stderr on a file or on a pseudo-terminal;
 * the progress decision also as a function of the tool's code. */
#include "cli/cli.h"
#include "cli_run.h"
#include "ks_test.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXPECT_RC KS_CLI_EXPECT_RC
#define EXPECT_OUT KS_CLI_EXPECT_OUT
#define EXPECT_ERR KS_CLI_EXPECT_ERR

/* The text after "label" up to the end of its report line. */
static const char *report_value(const char *label, char *buf, size_t len)
{
    const char *p = strstr(ks_cli_out, label);
    ck_assert_msg(p != NULL, "no '%s' in:\n%s", label, ks_cli_out);
    p += strlen(label);
    while (*p == ' ')
        p++;
    size_t n = strcspn(p, "\n");
    snprintf(buf, len, "%.*s", (int)n, p);
    return buf;
}

/* ---------------------------------------------------------------- --x0 */
START_TEST(test_x0)
{
    char x[1100], args[4096], text[KS_CLI_OUT_MAX], want[1300];
    snprintf(x, sizeof x, "%s", ks_test_tmpfile(".mtx"));
    const char *common = "-p matrix.n=10 -p solver.preconditioner=JACOBI -p solver.tolerance=1e-9";
    snprintf(args, sizeof args, "%s -x '%s'", common, x);
    EXPECT_RC(args, 0);
    EXPECT_OUT("initial guess             x0 = 0");
    char it0[64];
    ck_assert_int_gt(atoi(report_value("\n  iterations", it0, sizeof it0)), 5);

    /* From its own solution the solve has nothing left to do. */
    const char *json = ks_test_tmpfile(".json");
    snprintf(args, sizeof args, "%s --x0 '%s' --json '%s'", common, x, json);
    EXPECT_RC(args, 0);
    snprintf(want, sizeof want, "initial guess             %s", x);
    EXPECT_OUT(want);
    char it[64];
    ck_assert_str_eq(report_value("\n  iterations", it, sizeof it), "0");
    ks_cli_slurp(json, text, sizeof text);
    json_t *root = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(root);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(root, "problem"), "x0")),
                     x);
    json_decref(root);
    remove(json);

    /* The key does the same, and --print-config writes it absolute. */
    snprintf(args, sizeof args, "%s -p x0.file='%s'", common, x);
    EXPECT_RC(args, 0);
    ck_assert_str_eq(report_value("\n  iterations", it, sizeof it), "0");
    EXPECT_RC("--print-config --x0 rel_x0.mtx", 0);
    EXPECT_OUT("\"x0\": {");
    char cwd[1024];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(want, sizeof want, "\"file\": \"%s/rel_x0.mtx\"", cwd);
    EXPECT_OUT(want);

    /* Wrong length: refused at its size line, before the solve. */
    snprintf(args, sizeof args, "-p matrix.n=11 --x0 '%s'", x);
    EXPECT_RC(args, 2);
    snprintf(want, sizeof want, "ksolve: error: %s:3: x0 has 1000 rows but A has 1331", x);
    EXPECT_ERR(want);
    ck_assert_str_eq(ks_cli_out, "");
    /* Missing and malformed files name the file. */
    EXPECT_RC("-p matrix.n=4 --x0 /nonexistent/x0.mtx", 2);
    EXPECT_ERR("cannot open /nonexistent/x0.mtx");
    const char *bad = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix array real general\n"
                                                "2 1\n1\nx\n");
    snprintf(args, sizeof args, "-p matrix.generator=poisson2d_5 -p matrix.n=[2,1] --x0 '%s'",
             bad);
    EXPECT_RC(args, 2);
    snprintf(want, sizeof want, "%s:4: bad value 'x'", bad);
    EXPECT_ERR(want);
    remove(bad);
    EXPECT_RC("--x0", 2);
    EXPECT_ERR("option '--x0' needs a value");
    remove(x);
}
END_TEST

/* -------------------------------------------------------------- --quiet */
START_TEST(test_quiet)
{
    /* Nothing on either stream when all goes well, monitor included. */
    EXPECT_RC("-p matrix.n=8 --quiet -p solver.monitor_residual=1 -p solver.print_solve_stats=1",
              0);
    ck_assert_str_eq(ks_cli_out, "");
    ck_assert_str_eq(ks_cli_err, "");
    /* Not converged: the exit status says so, silently. */
    EXPECT_RC("-q -p matrix.n=8 -p solver.preconditioner=NOSOLVER -p solver.max_iters=2", 1);
    ck_assert_str_eq(ks_cli_out, "");
    ck_assert_str_eq(ks_cli_err, "");
    /* --json - still gives the JSON asked for, and only that. */
    EXPECT_RC("-q -p matrix.n=8 --json -", 0);
    json_t *root = json_loads(ks_cli_out, 0, NULL);
    ck_assert_msg(root != NULL, "stdout is not JSON:\n%s", ks_cli_out);
    json_decref(root);
    ck_assert_str_eq(ks_cli_err, "");
    /* Without --quiet, --json - keeps stdout for the JSON: the report, the
     * monitor and the library's summary go to stderr. */
    EXPECT_RC("-p matrix.n=8 --json - -p solver.monitor_residual=1 -p solver.print_solve_stats=1",
              0);
    root = json_loads(ks_cli_out, 0, NULL);
    ck_assert_msg(root != NULL, "stdout is not JSON:\n%s", ks_cli_out);
    json_decref(root);
    EXPECT_ERR("residual monitor: PCG + AMG on cpu");
    EXPECT_ERR("    iter        residual      rate");
    EXPECT_ERR("\n  status                    CONVERGED");
    /* Files are still written, without the lines saying so. */
    const char *x = ks_test_tmpfile(".mtx"), *json = ks_test_tmpfile(".json");
    char args[3000];
    snprintf(args, sizeof args, "-q -p matrix.n=8 -x '%s' --json '%s'", x, json);
    EXPECT_RC(args, 0);
    ck_assert_str_eq(ks_cli_out, "");
    ck_assert_int_eq(access(x, F_OK), 0);
    ck_assert_int_eq(access(json, F_OK), 0);
    remove(x);
    remove(json);
    /* Errors still come, on stderr. */
    EXPECT_RC("-q -A /nonexistent/A.mtx", 2);
    EXPECT_ERR("ksolve: error: cannot open /nonexistent/A.mtx");
    ck_assert_str_eq(ks_cli_out, "");
    EXPECT_RC("--quiet=1", 2);
    EXPECT_ERR("option '--quiet' takes no value");
}
END_TEST

/* ------------------------------------------------------------ --threads */
START_TEST(test_threads)
{
    char a[256], b[256];
    const char *solve = "-p matrix.n=12 -p rhs.type=A_sin";
    char args[1024];
    snprintf(args, sizeof args, "%s --threads 1", solve);
    EXPECT_RC(args, 0);
    EXPECT_OUT("1 OpenMP threads");
    report_value("final relative residual", a, sizeof a);
    snprintf(args, sizeof args, "%s -p threads=3", solve);
    EXPECT_RC(args, 0);
    EXPECT_OUT("3 OpenMP threads");
    /* Results do not depend on the thread count. */
    ck_assert_str_eq(report_value("final relative residual", b, sizeof b), a);
    /* 0 (the default) leaves OpenMP's own: OMP_NUM_THREADS=2 in the tests. */
    snprintf(args, sizeof args, "%s --threads=0", solve);
    EXPECT_RC(args, 0);
    EXPECT_OUT("2 OpenMP threads");
    /* From a config file, and checked like every key. */
    const char *cfg = ks_test_write_tmp(".json", "{\"threads\": 1, \"matrix\": {\"n\": 6}}");
    snprintf(args, sizeof args, "'%s'", cfg);
    EXPECT_RC(args, 0);
    EXPECT_OUT("1 OpenMP threads");
    remove(cfg);
    EXPECT_RC("--threads -1", 2);
    EXPECT_ERR("threads: must be in [0, 65536] (got -1)");
    EXPECT_RC("--threads four", 2);
    EXPECT_ERR("threads: expected an integer");
    EXPECT_RC("--threads 2 -p threads=1", 2);
    EXPECT_ERR("'threads' is given twice");
}
END_TEST

/* ------------------------------------------------------------- progress */
/* The decision: an AMG setup, a terminal, no --quiet, not on already. */
START_TEST(test_progress_decision)
{
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_default_scoped(&ks_problem_scope, &cfg));
    const ks_solver_params *sp = ks_config_solver_params(cfg);
    ck_assert_str_eq(ks_cli_progress_key(sp), "solver.preconditioner.print_setup_progress");
    ck_assert_int_eq(ks_cli_progress_auto(sp, 0, 1), 1);
    ck_assert_int_eq(ks_cli_progress_auto(sp, 1, 1), 0); /* --quiet */
    ck_assert_int_eq(ks_cli_progress_auto(sp, 0, 0), 0); /* stderr not a terminal */
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.print_setup_progress", "1"));
    ck_assert_int_eq(ks_cli_progress_auto(ks_config_solver_params(cfg), 0, 1), 0); /* on */
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner", "\"JACOBI\""));
    sp = ks_config_solver_params(cfg);
    ck_assert_ptr_null(ks_cli_progress_key(sp)); /* no AMG setup */
    ck_assert_int_eq(ks_cli_progress_auto(sp, 0, 1), 0);
    ks_config_destroy(&cfg);
    KS_CHECK(ks_config_create_from_string_scoped("{\"solver\": {\"solver\": \"AMG\"}}",
                                                 &ks_problem_scope, &cfg));
    ck_assert_str_eq(ks_cli_progress_key(ks_config_solver_params(cfg)),
                     "solver.print_setup_progress");
    ck_assert_int_eq(ks_cli_progress_auto(ks_config_solver_params(cfg), 0, 1), 1);
    ks_config_destroy(&cfg);
}
END_TEST

/* ksolve ARGS with stdout to /dev/null and stderr on a pseudo-terminal;
 * what the terminal got into buf. */
static void run_on_terminal(const char *args, char *buf, size_t len)
{
    int master, slave;
    ck_assert_int_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec '%s' %s >/dev/null", getenv("KSOLVE_EXE"), args);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(master);
        dup2(slave, STDERR_FILENO);
        close(slave);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(slave);
    size_t n = 0;
    for (;;) { /* until the child closes the terminal (EIO on Linux) */
        ssize_t got = read(master, buf + n, len - 1 - n);
        if (got > 0 && (n += (size_t)got) < len - 1)
            continue;
        if (got < 0 && errno == EINTR)
            continue;
        break;
    }
    buf[n] = '\0';
    close(master);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ksolve %s failed:\n%s", args, buf);
}

/* A terminal on stderr gets a line per AMG level as the setup builds it;
 * a pipe or a file does not, nor --quiet, nor a solve without AMG. */
START_TEST(test_progress_on_terminal)
{
    static char tty[1 << 14];
    run_on_terminal("-p matrix.n=16", tty, sizeof tty);
    ck_assert_msg(strstr(tty, "AMG setup: level 0: 4096 rows, 27136 nonzeros") &&
                      strstr(tty, "AMG setup: level 1: ") &&
                      strstr(tty, "coarse solve and smoothers ready"),
                  "the terminal got:\n%s", tty);
    run_on_terminal("-p matrix.n=16 --quiet", tty, sizeof tty);
    ck_assert_msg(!strstr(tty, "AMG setup"), "--quiet, yet the terminal got:\n%s", tty);
    run_on_terminal("-p matrix.n=16 -p solver.preconditioner=JACOBI", tty, sizeof tty);
    ck_assert_msg(!strstr(tty, "AMG setup"), "no AMG, yet the terminal got:\n%s", tty);
    EXPECT_RC("-p matrix.n=16", 0); /* stderr on a file */
    ck_assert_str_eq(ks_cli_err, "");
    /* Asked for in the config, it comes on a file too. */
    EXPECT_RC("-p matrix.n=16 -p solver.preconditioner.print_setup_progress=1", 0);
    EXPECT_ERR("AMG setup: level 0: 4096 rows");
}
END_TEST

/* --------------------------------------------------------------- memory */
/* The vectors a solve needs are counted before the matrix is read (with
 * the reader's own memory) or after it is generated: a machine too small
 * is told so, naming the file and line, what is asked and what there is. */
START_TEST(test_vectors_memory)
{
    const char *A = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix coordinate real general\n"
                                              "100000 100000 1\n1 1 1\n");
    char args[1200], want[1400];
    setenv("KS_MEM_AVAILABLE", "1M", 1);
    /* The matrix alone (0.4 MB) would fit; with b, x for b = A x, and the
     * cpu's b, x and two work vectors (48 bytes a row) it does not. */
    snprintf(args, sizeof args, "-A '%s'", A);
    EXPECT_RC(args, 2);
    snprintf(want, sizeof want, "ksolve: error: %s:2: reading this 100000 x 100000 matrix (1 "
             "entries declared) and the solve's vectors needs 5.2 MB, but 1.0 MB of memory is "
             "available (KS_MEM_AVAILABLE)", A);
    EXPECT_ERR(want);
    ck_assert_str_eq(ks_cli_out, "");
    /* A generated matrix: its vectors are checked once it exists. */
    EXPECT_RC("-p matrix.n=30", 2);
    EXPECT_ERR("ksolve: error: poisson3d_7 30x30x30 (generated): storing the solve's vectors of "
               "27000 rows needs 1.3 MB, but 1.0 MB of memory is available (KS_MEM_AVAILABLE)");
    /* What fits runs. */
    EXPECT_RC("-p matrix.n=8 -p solver.preconditioner=JACOBI", 0);
    unsetenv("KS_MEM_AVAILABLE");
    remove(A);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_options");
    TCase *tc = tcase_create("cli_options");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_x0);
    tcase_add_test(tc, test_quiet);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_progress_decision);
    tcase_add_test(tc, test_progress_on_terminal);
    tcase_add_test(tc, test_vectors_memory);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
