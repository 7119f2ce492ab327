/* examples/embed_solve runs and converges. The example is built at
 * <builddir>/examples/embed_solve, beside <builddir>/ksolve (KSOLVE_EXE). */
#include "ks_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char example[1200];
static char output[1 << 14];

static int run_example(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", example, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(output, 1, sizeof output - 1, p);
    output[n] = '\0';
    int st = pclose(p);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_embed_generated)
{
    int rc = run_example("");
    ck_assert_msg(rc == 0, "embed_solve exited %d:\n%s", rc, output);
    ck_assert_msg(strstr(output, "PCG + JACOBI"), "%s", output);
    ck_assert_msg(strstr(output, "10000 rows"), "%s", output);
    ck_assert_msg(strstr(output, "status CONVERGED after"), "%s", output);
    /* The reported relative residual meets the JSON tolerance (1e-10). */
    const char *p = strstr(output, "relative residual ");
    ck_assert_ptr_nonnull(p);
    double rel = strtod(p + strlen("relative residual "), NULL);
    ck_assert_msg(rel < 1e-10, "relative residual %g", rel);
}
END_TEST

START_TEST(test_embed_file)
{
    /* A file argument is read; a bad one fails with the library's message. */
    const char *A = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix coordinate real symmetric\n"
                                              "5 5 9\n1 1 2\n2 2 2\n3 3 2\n4 4 2\n5 5 2\n"
                                              "2 1 -1\n3 2 -1\n4 3 -1\n5 4 -1\n");
    char args[1200];
    snprintf(args, sizeof args, "'%s'", A);
    int rc = run_example(args);
    remove(A);
    ck_assert_msg(rc == 0, "embed_solve exited %d:\n%s", rc, output);
    ck_assert_msg(strstr(output, ", 5 rows"), "%s", output);
    ck_assert_msg(strstr(output, "status CONVERGED"), "%s", output);

    rc = run_example("/nonexistent/A.mtx");
    ck_assert_int_eq(rc, 2);
    ck_assert_msg(strstr(output, "embed_solve: ") && strstr(output, "/nonexistent/A.mtx"), "%s",
                  output);
}
END_TEST

int main(void)
{
    /* Locate the example from the ksolve executable's folder. */
    const char *exe = getenv("KSOLVE_EXE");
    snprintf(example, sizeof example, "%s", exe ? exe : "./ksolve");
    char *slash = strrchr(example, '/');
    size_t dirlen = slash ? (size_t)(slash - example + 1) : 0;
    snprintf(example + dirlen, sizeof example - dirlen, "examples/embed_solve");

    Suite *s = suite_create("example");
    TCase *tc = tcase_create("example");
    if (access(example, X_OK) == 0) {
        tcase_add_test(tc, test_embed_generated);
        tcase_add_test(tc, test_embed_file);
    } else {
        /* The example target is part of every build; missing means a broken
         * build tree, so fail rather than skip. */
        fprintf(stderr, "test_example: %s not found (KSOLVE_EXE=%s)\n", example,
                exe ? exe : "(unset)");
        return EXIT_FAILURE;
    }
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
