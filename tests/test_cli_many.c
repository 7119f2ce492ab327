/* The ksolve tool with many right-hand sides: --nrhs k on a generated
 * problem (per-column lines in the report and "columns" in the JSON, the
 * first column as the one-column solve, the solution file n x k), -b with a
 * multi-column Matrix Market file (a zero column converges at once), one x0
 * for every column or one per column, and the errors (a count that
 * disagrees with the file, rows that do not match, x0 of the wrong width,
 * too many columns). Run as a child process (KSOLVE_EXE). */
#include "cli/cli.h"
#include "cli_run.h"
#include "ks_test.h"
#include "matrices/mmio_sized.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT_RC KS_CLI_EXPECT_RC
#define EXPECT_OUT KS_CLI_EXPECT_OUT
#define EXPECT_ERR KS_CLI_EXPECT_ERR

static json_t *load_json(const char *path)
{
    static char text[KS_CLI_OUT_MAX];
    ks_cli_slurp(path, text, sizeof text);
    json_t *root = json_loads(text, 0, NULL);
    ck_assert_msg(root != NULL, "%s is not JSON:\n%s", path, text);
    return root;
}

static json_t *run0(json_t *root) { return json_array_get(json_object_get(root, "runs"), 0); }

START_TEST(test_nrhs_generated)
{
    const char *json = ks_test_tmpfile(".json"), *x = ks_test_tmpfile(".mtx");
    char args[4096];
    const char *common = "-p matrix.n=10 -p solver.tolerance=1e-9";
    snprintf(args, sizeof args, "%s --json '%s'", common, json);
    EXPECT_RC(args, 0);
    json_t *one = load_json(json);
    json_int_t it1 = json_integer_value(json_object_get(run0(one), "iterations"));
    ck_assert_ptr_null(json_object_get(run0(one), "columns"));

    snprintf(args, sizeof args, "%s --nrhs 3 --json '%s' -x '%s'", common, json, x);
    EXPECT_RC(args, 0);
    EXPECT_OUT("3 right-hand sides solved together");
    EXPECT_OUT("b_j = A*x_j with x_j[i] = sin(j (i+1)) for j > 0");
    json_t *root = load_json(json);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(root, "problem"),
                                                        "nrhs")), 3);
    json_t *cols = json_object_get(run0(root), "columns");
    ck_assert_int_eq((int)json_array_size(cols), 3);
    json_int_t most = 0;
    for (int j = 0; j < 3; j++) {
        json_t *c = json_array_get(cols, (size_t)j);
        ck_assert_int_eq(json_integer_value(json_object_get(c, "column")), j);
        ck_assert_str_eq(json_string_value(json_object_get(c, "status")), "CONVERGED");
        ck_assert(json_real_value(json_object_get(c, "true_relative_residual")) < 1e-8);
        json_int_t it = json_integer_value(json_object_get(c, "iterations"));
        ck_assert_int_gt(it, 0);
        most = it > most ? it : most;
    }
    /* column 0 is the one-column problem (b = A*1), solved alike */
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(cols, 0), "iterations")),
                     it1);
    ck_assert_int_eq(json_integer_value(json_object_get(run0(root), "iterations")), most);
    json_decref(root);
    json_decref(one);

    /* the solution: 1000 x 3, column 0 the all-ones x of b = A*1 */
    double *v;
    ks_int n;
    int k;
    KS_CHECK(ks_mm_read_block_sized(x, 1000, "x", "A", &v, &n, &k));
    ck_assert_int_eq(k, 3);
    for (ks_int i = 0; i < n; i++)
        ck_assert(fabs(v[i] - 1.0) < 1e-6);
    for (ks_int i = 0; i < n; i += 97)
        ck_assert(fabs(v[n + i] - sin((double)(i + 1))) < 1e-6);
    free(v);

    /* every column from the solution: nothing left to do */
    snprintf(args, sizeof args, "%s --nrhs 3 --x0 '%s' --json '%s'", common, x, json);
    EXPECT_RC(args, 0);
    root = load_json(json);
    ck_assert_int_eq(json_integer_value(json_object_get(run0(root), "iterations")), 0);
    json_decref(root);
    remove(json);
    remove(x);
}
END_TEST

START_TEST(test_rhs_file_columns)
{
    /* A 5-point 2D problem 12 x 12 and three columns: 1, 0, A*1 */
    const ks_int n = 144;
    double *b = calloc(3 * (size_t)n, sizeof *b);
    for (ks_int i = 0; i < n; i++) {
        b[i] = 1.0;
        b[2 * (size_t)n + i] = 0.5 * i;
    }
    char bf[1100], args[4096];
    snprintf(bf, sizeof bf, "%s", ks_test_tmpfile(".mtx"));
    KS_CHECK(ks_mm_write_block(bf, b, n, 3));
    const char *json = ks_test_tmpfile(".json");
    const char *common = "-p matrix.generator=poisson2d_5 -p matrix.n=12 "
                         "-p solver.preconditioner=JACOBI";
    snprintf(args, sizeof args, "%s -b '%s' --json '%s'", common, bf, json);
    EXPECT_RC(args, 0);
    json_t *root = load_json(json);
    json_t *cols = json_object_get(run0(root), "columns");
    ck_assert_int_eq((int)json_array_size(cols), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(cols, 1), "iterations")),
                     0);
    ck_assert_int_gt(json_integer_value(json_object_get(json_array_get(cols, 2), "iterations")),
                     0);
    json_decref(root);

    /* --nrhs that agrees is fine, one that does not is refused */
    snprintf(args, sizeof args, "%s -b '%s' --nrhs 3 -q", common, bf);
    EXPECT_RC(args, 0);
    snprintf(args, sizeof args, "%s -b '%s' --nrhs 2", common, bf);
    EXPECT_RC(args, 2);
    EXPECT_ERR("b has 3 columns but rhs.count (--nrhs) is 2");
    /* x0 of two columns for three systems */
    char x0[1100];
    snprintf(x0, sizeof x0, "%s", ks_test_tmpfile(".mtx"));
    KS_CHECK(ks_mm_write_block(x0, b, n, 2));
    snprintf(args, sizeof args, "%s -b '%s' --x0 '%s'", common, bf, x0);
    EXPECT_RC(args, 2);
    EXPECT_ERR("x0 has 2 columns, b 3");
    /* rows that are not A's */
    snprintf(args, sizeof args, "-p matrix.generator=poisson2d_5 -p matrix.n=11 -b '%s'", bf);
    EXPECT_RC(args, 2);
    EXPECT_ERR("b has 144 rows but A has 121");
    /* too many right-hand sides */
    EXPECT_RC("-p matrix.n=4 --nrhs 65", 2);
    EXPECT_ERR("rhs.count");
    remove(bf);
    remove(x0);
    remove(json);
    free(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_many");
    TCase *tc = tcase_create("cli_many");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_nrhs_generated);
    tcase_add_test(tc, test_rhs_file_columns);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
