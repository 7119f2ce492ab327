/* The ksolve tool under mpirun (KS_MPIRUN, KSOLVE_EXE): a generated problem
 * solved over 3 ranks reports the ranks, converges in the iterations of the
 * one-process run (within one) and writes the same solution to 1e-8; one
 * report, not one per rank; JSON from rank 0; what is not done yet (AMG,
 * a matrix file) fails with exit status 2 and says so. This program itself
 * never calls MPI: it starts mpirun as a child. */
#include "ks_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char out_buf[1 << 16];
static char err_buf[1 << 14];

static void slurp(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* "ksolve ARGS" on np ranks (np 0: without mpirun); stdout and stderr in
 * out_buf / err_buf; the exit status, or -1. */
static int ksolve(int np, const char *args)
{
    const char *exe = getenv("KSOLVE_EXE"), *mpirun = getenv("KS_MPIRUN");
    ck_assert_msg(exe && mpirun, "KSOLVE_EXE and KS_MPIRUN must be set");
    char outp[1100], errp[1100], launcher[1200] = "", cmd[8192];
    snprintf(outp, sizeof outp, "%s", ks_test_tmpfile(".out"));
    snprintf(errp, sizeof errp, "%s", ks_test_tmpfile(".err"));
    if (np > 0)
        snprintf(launcher, sizeof launcher, "'%s' --oversubscribe -np %d ", mpirun, np);
    snprintf(cmd, sizeof cmd, "%s'%s' %s >'%s' 2>'%s'", launcher, exe, args, outp, errp);
    int st = system(cmd);
    slurp(outp, out_buf, sizeof out_buf);
    slurp(errp, err_buf, sizeof err_buf);
    remove(outp);
    remove(errp);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define EXPECT_RC(np, args, want)                                                            \
    do {                                                                                     \
        int rc_ = ksolve(np, args);                                                          \
        ck_assert_msg(rc_ == (want), "%d ranks, ksolve %s: exit %d, expected %d\nstdout:\n%s" \
                      "\nstderr:\n%s", np, args, rc_, want, out_buf, err_buf);               \
    } while (0)

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static int iterations(void)
{
    const char *p = strstr(out_buf, "iterations ");
    ck_assert_msg(p != NULL, "no iterations in:\n%s", out_buf);
    return atoi(p + strlen("iterations "));
}

/* The entries of a Matrix Market array file (n x 1). */
static double *read_vector(const char *path, int *n)
{
    double *v = NULL;
    ks_int len = 0;
    KS_CHECK(ks_mm_read_vector(path, &v, &len));
    *n = len;
    return v;
}

START_TEST(test_generated_over_ranks)
{
    const char *xs = ks_test_tmpfile(".mtx"), *xd = ks_test_tmpfile(".mtx");
    const char *json = ks_test_tmpfile(".json");
    const char *common = "-p solver.solver=PCG -p solver.preconditioner.solver=JACOBI_L1 "
                         "-p matrix.generator=poisson3d_7 -p matrix.n=12 -p rhs.type=A_sin "
                         "-p solver.tolerance=1e-11";
    char args[2048];
    snprintf(args, sizeof args, "%s -p solution.file='%s'", common, xs);
    EXPECT_RC(0, args, 0);
    const int it1 = iterations();
    ck_assert_msg(!strstr(out_buf, "MPI ranks"), "%s", out_buf);
    snprintf(args, sizeof args, "%s -p solution.file='%s' --json '%s'", common, xd, json);
    EXPECT_RC(3, args, 0);
    const int it3 = iterations();
    ck_assert_msg(strstr(out_buf, "3 MPI ranks") && strstr(out_buf, "CONVERGED"), "%s", out_buf);
    ck_assert_msg(count_of(out_buf, "ksolve 0.1.0") == 1, "one report, not one a rank:\n%s",
                  out_buf);
    ck_assert_msg(abs(it1 - it3) <= 1, "iterations: 1 process %d, 3 ranks %d", it1, it3);
    int n1, n3;
    double *a = read_vector(xs, &n1), *b = read_vector(xd, &n3);
    ck_assert_int_eq(n1, 1728);
    ck_assert_int_eq(n3, n1);
    double err = ks_test_max_relerr(b, a, n1);
    ck_assert_msg(err <= 1e-8, "solutions differ by %g", err);
    free(a);
    free(b);
    char text[4096];
    slurp(json, text, sizeof text);
    ck_assert_msg(strstr(text, "\"rows\": 1728") && strstr(text, "3 MPI ranks"), "%s", text);
    remove(xs);
    remove(xd);
    remove(json);
}
END_TEST

START_TEST(test_not_done_yet)
{
    /* The default preconditioner is AMG: refused, every rank alike. */
    EXPECT_RC(2, "-p matrix.n=8", 2);
    ck_assert_msg(strstr(err_buf, "distributed AMG is not done yet") &&
                      count_of(err_buf, "ksolve: error") == 1,
                  "%s", err_buf);
    char args[1200];
    snprintf(args, sizeof args, "-A '%s' -p solver.preconditioner.solver=JACOBI",
             ks_test_sample("symmetric.mtx"));
    EXPECT_RC(2, args, 2);
    ck_assert_msg(strstr(err_buf, "reading the matrix from a file") &&
                      strstr(err_buf, "not done yet"),
                  "%s", err_buf);
    /* not converged: status 1 on every rank */
    EXPECT_RC(2, "-p solver.preconditioner.solver=JACOBI -p matrix.n=10 -p solver.max_iters=3", 1);
    ck_assert_msg(strstr(out_buf, "MAX_ITERS"), "%s", out_buf);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_mpi");
    TCase *t = tcase_create("cli_mpi");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_generated_over_ranks);
    tcase_add_test(t, test_not_done_yet);
    suite_add_tcase(s, t);
    return ks_test_run(s);
}
