/* The ksolve command-line tool, run as a separate process (KSOLVE_EXE):
 * exit codes, report contents, output files and error messages. */
#include "cli_run.h"
#include "ks_test.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* One run's output. */
#define out_buf ks_cli_out
#define err_buf ks_cli_err
#define slurp ks_cli_slurp

static int ksolve(const char *args) { return ks_cli_run(0, args); }

#define EXPECT_RC(args, want)                                                                   \
    do {                                                                                        \
        int rc_ = ksolve(args);                                                                 \
        ck_assert_msg(rc_ == (want), "ksolve %s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s", \
                      args, rc_, want, out_buf, err_buf);                                      \
    } while (0)

#define EXPECT_OUT(sub) ck_assert_msg(strstr(out_buf, sub), "stdout lacks '%s':\n%s", sub, out_buf)
#define EXPECT_ERR(sub) ck_assert_msg(strstr(err_buf, sub), "stderr lacks '%s':\n%s", sub, err_buf)

/* A small SPD matrix file: 1D Laplacian tridiag(-1, 2, -1) with n rows,
 * the (1,1) entry split in two lines (a duplicate, summed on reading). */
static const char *write_laplace1d(int n)
{
    const char *path = ks_test_tmpfile(".mtx");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", n, n, 3 * n - 1);
    fprintf(f, "1 1 1.5\n1 1 0.5\n");
    for (int i = 1; i <= n; i++) {
        if (i > 1)
            fprintf(f, "%d %d 2\n", i, i);
        if (i < n)
            fprintf(f, "%d %d -1\n%d %d -1\n", i, i + 1, i + 1, i);
    }
    fclose(f);
    return path;
}

START_TEST(test_generator_converges)
{
    EXPECT_RC("-p matrix.generator=poisson2d_5 -p 'matrix.n=[30,30]'", 0);
    EXPECT_OUT("poisson2d_5 30x30");
    EXPECT_OUT("900");
    EXPECT_OUT("PCG + AMG"); /* the default */
    EXPECT_OUT("CONVERGED");
    /* The AMG settings and the setup summary come after the problem
     * header, before the table. */
    EXPECT_OUT("amg                       CLASSICAL, PMIS, D2 interpolation");
    EXPECT_OUT("amg cycle                 V(1,1), smoother ");
    const char *setup = strstr(out_buf, "\n  setup on cpu:\n");
    const char *table = strstr(out_buf, "spmv format");
    ck_assert_msg(setup && table && setup < table && strstr(setup, "grid complexity") < table,
                  "setup summary missing or misplaced:\n%s", out_buf);
    EXPECT_OUT("amg levels");
    EXPECT_OUT("operator complexity");
    EXPECT_OUT("true relative residual");
    EXPECT_OUT("b = A*1 (no right-hand side given)");
    EXPECT_OUT("spmv format");
    EXPECT_OUT("time per iteration");
    ck_assert_str_eq(err_buf, "");

    /* Other methods, preconditioners and right-hand sides. */
    EXPECT_RC("-p matrix.generator=convdiff3d -p matrix.n=8 -p solver.solver=PBICGSTAB"
              " -p solver.preconditioner=JACOBI_L1 -p rhs.type=A_sin",
              0);
    EXPECT_OUT("PBICGSTAB + JACOBI_L1");
    EXPECT_OUT("sin(i)");
    EXPECT_OUT("CONVERGED");
}
END_TEST

/* The no-argument run solves the built-in 64^3 problem. */
START_TEST(test_default_problem)
{
    EXPECT_RC("", 0);
    EXPECT_OUT("poisson3d_7 64x64x64");
    EXPECT_OUT("262,144");
    EXPECT_OUT("PCG + AMG");
    EXPECT_OUT("CONVERGED");
}
END_TEST

START_TEST(test_matrix_file)
{
    const char *A = write_laplace1d(50);
    char args[2048];
    snprintf(args, sizeof args, "-A '%s' -p solver.max_iters=200", A);
    EXPECT_RC(args, 0);
    EXPECT_OUT(A);
    EXPECT_OUT("duplicates summed         1");
    EXPECT_OUT("CONVERGED");
    remove(A);

    /* A sample with a right-hand side from a file. */
    snprintf(args, sizeof args, "-A '%s' -b '%s' -p solver.solver=BICGSTAB",
             ks_test_sample("symmetric.mtx"), ks_test_sample("vector_array.mtx"));
    EXPECT_RC(args, 0);
    EXPECT_OUT("vector_array.mtx");
    EXPECT_OUT("BICGSTAB + NOSOLVER");
    EXPECT_OUT("CONVERGED");
}
END_TEST

START_TEST(test_input_errors)
{
    char args[2048];
    /* b of the wrong size. */
    snprintf(args, sizeof args, "-p matrix.generator=poisson2d_5 -p 'matrix.n=[3,4]' -b '%s'",
             ks_test_sample("vector_array.mtx"));
    EXPECT_RC(args, 2);
    EXPECT_ERR("ksolve: error:");
    EXPECT_ERR("b has 4 rows but A has 12");
    ck_assert_str_eq(out_buf, "");

    /* Missing matrix file. */
    EXPECT_RC("-A /nonexistent/A.mtx", 2);
    EXPECT_ERR("/nonexistent/A.mtx");

    /* Non-square matrix. */
    snprintf(args, sizeof args, "-A '%s'", ks_test_sample("general_real.mtx"));
    EXPECT_RC(args, 2);
    EXPECT_ERR("square");

    /* Zero diagonal: AMG (the default) cannot be built, nor can Jacobi. */
    snprintf(args, sizeof args, "-A '%s'", ks_test_sample("symmetric.mtx"));
    EXPECT_RC(args, 2);
    EXPECT_ERR("diagonal");
    snprintf(args, sizeof args, "-A '%s' -p solver.preconditioner=JACOBI",
             ks_test_sample("symmetric.mtx"));
    EXPECT_RC(args, 2);
    EXPECT_ERR("diagonal");

    /* An unknown SpMV format names the choices. */
    EXPECT_RC("-p matrix.n=4 -p spmv_format=nosuch", 2);
    EXPECT_ERR("nosuch");
}
END_TEST

START_TEST(test_bad_config)
{
    char args[2048];
    const char *cfg = ks_test_write_tmp(".json", "{\"solver\": {\"max_iters\": \"ten\"}}");
    snprintf(args, sizeof args, "'%s'", cfg);
    EXPECT_RC(args, 2);
    EXPECT_ERR("ksolve: error:");
    EXPECT_ERR("solver.max_iters: expected an integer, got string");

    cfg = ks_test_write_tmp(".json", "{\n  \"solver\": {\n    \"tolerance\": 1e-6,\n  }\n}\n");
    snprintf(args, sizeof args, "'%s'", cfg);
    EXPECT_RC(args, 2);
    char want[1200];
    snprintf(want, sizeof want, "%s:4:3:", cfg);
    EXPECT_ERR(want);

    EXPECT_RC("-p solver.preconditioner.relaxation_factor=3", 2);
    EXPECT_ERR("solver.preconditioner.relaxation_factor: must be in (0, 2] (got 3)");
    EXPECT_RC("-p solver.max_iter=5", 2);
    EXPECT_ERR("did you mean 'max_iters'?");
    EXPECT_RC("/nonexistent/config.json", 2);
    EXPECT_ERR("cannot open config file");
}
END_TEST

/* A config file's relative paths are relative to its folder, and command-
 * line flags override the file. */
START_TEST(test_config_file)
{
    const char *dir = ks_test_tmpfile("_cli");
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    const char *A = write_laplace1d(40);
    char path[1200], args[4096];
    snprintf(path, sizeof path, "%s/A.mtx", dir);
    ck_assert_int_eq(rename(A, path), 0);
    snprintf(path, sizeof path, "%s/run.json", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"config_version\": 2, \"solver\": {\"solver\": \"PCG\", \"max_iters\": 100,"
          " \"tolerance\": 1e-10, \"preconditioner\": {\"solver\": \"JACOBI_L1\"}},"
          " \"matrix\": {\"file\": \"A.mtx\"}}",
          f);
    fclose(f);
    snprintf(args, sizeof args, "'%s'", path);
    EXPECT_RC(args, 0);
    EXPECT_OUT("/A.mtx");
    EXPECT_OUT("PCG + JACOBI_L1");
    EXPECT_OUT("1.0e-10");

    /* Flags win: a generated matrix replaces the file, -p the solver. */
    snprintf(args, sizeof args,
             "'%s' -p matrix.generator=poisson2d_9 -p matrix.n=12 -p solver.solver=CG"
             " -p solver.preconditioner=NOSOLVER",
             path);
    EXPECT_RC(args, 0);
    EXPECT_OUT("poisson2d_9 12x12");
    EXPECT_OUT("CG + NOSOLVER");

    /* --print-config shows the merged config with defaults. */
    snprintf(args, sizeof args, "'%s' --print-config -p solver.max_iters=7", path);
    EXPECT_RC(args, 0);
    json_error_t err;
    json_t *t = json_loads(out_buf, 0, &err);
    ck_assert_msg(t != NULL, "--print-config is not JSON: %s\n%s", err.text, out_buf);
    json_t *solver = json_object_get(t, "solver");
    ck_assert_int_eq(json_integer_value(json_object_get(solver, "max_iters")), 7);
    ck_assert(json_number_value(json_object_get(solver, "divergence_factor")) == 1e10);
    json_decref(t);

    char p2[1200];
    snprintf(p2, sizeof p2, "%s/A.mtx", dir);
    remove(p2);
    remove(path);
    rmdir(dir);
}
END_TEST

START_TEST(test_not_converged)
{
    EXPECT_RC("-p matrix.n=10 -p solver.max_iters=2", 1);
    EXPECT_OUT("MAX_ITERS");
    EXPECT_OUT("iterations                2");
    ck_assert_str_eq(err_buf, "");
    /* A breakdown is also "not converged": CG on diag(1, -1) with b = A*1
     * has p'Ap = 0 in the first iteration. */
    const char *A = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix coordinate real general\n"
                                              "2 2 2\n1 1 1\n2 2 -1\n");
    char args[1200];
    snprintf(args, sizeof args, "-A '%s' -p solver.solver=CG", A);
    EXPECT_RC(args, 1);
    EXPECT_OUT("status                    BREAKDOWN: ");
    remove(A);
}
END_TEST

START_TEST(test_solution_and_json)
{
    char xpath[1100], jpath[1100], args[4096];
    snprintf(xpath, sizeof xpath, "%s", ks_test_tmpfile("_x.mtx"));
    snprintf(jpath, sizeof jpath, "%s", ks_test_tmpfile(".json"));
    snprintf(args, sizeof args,
             "-p matrix.generator=poisson2d_5 -p matrix.n=20 -p solver.tolerance=1e-10"
             " -x '%s' --json '%s'",
             xpath, jpath);
    EXPECT_RC(args, 0);
    EXPECT_OUT(xpath);

    /* b = A*1, so x is all ones. */
    double *x = NULL;
    ks_int n = 0;
    KS_CHECK(ks_mm_read_vector(xpath, &x, &n));
    ck_assert_int_eq(n, 400);
    for (ks_int i = 0; i < n; i++)
        ck_assert_msg(fabs(x[i] - 1.0) < 1e-6, "x[%d] = %g", (int)i, x[i]);
    free(x);

    json_error_t err;
    json_t *t = json_load_file(jpath, 0, &err);
    ck_assert_msg(t != NULL, "--json output is not JSON: %s", err.text);
    json_t *prob = json_object_get(t, "problem");
    ck_assert_int_eq(json_integer_value(json_object_get(prob, "rows")), 400);
    ck_assert_int_eq(json_integer_value(json_object_get(prob, "nnz")), 400 * 5 - 4 * 20);
    json_t *runs = json_object_get(t, "runs");
    ck_assert_int_eq(json_array_size(runs), 1);
    json_t *r = json_array_get(runs, 0);
    ck_assert_str_eq(json_string_value(json_object_get(r, "backend")), "cpu");
    ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "CONVERGED");
    ck_assert(json_is_true(json_object_get(r, "converged")));
    json_int_t it = json_integer_value(json_object_get(r, "iterations"));
    ck_assert(it > 0);
    json_t *hist = json_object_get(r, "history");
    ck_assert_int_eq(json_array_size(hist), it + 1);
    double rel = json_number_value(json_object_get(r, "relative_residual"));
    double last = json_number_value(json_array_get(hist, (size_t)it));
    double rhs = json_number_value(json_object_get(r, "rhs_norm"));
    ck_assert(rel < 1e-10 && fabs(last / rhs - rel) <= 1e-12 * rel + 1e-300);
    ck_assert(json_number_value(json_object_get(r, "true_relative_residual")) < 1e-9);
    ck_assert(json_number_value(json_object_get(r, "solve_seconds")) >= 0.0);
    ck_assert_ptr_nonnull(json_object_get(r, "spmv_format"));
    /* The default AMG: its settings and the hierarchy it built. */
    json_t *jamg = json_object_get(json_object_get(t, "solver"), "amg");
    ck_assert_str_eq(json_string_value(json_object_get(jamg, "algorithm")), "CLASSICAL");
    ck_assert_int_eq(json_integer_value(json_object_get(jamg, "presweeps")), 1);
    json_t *ramg = json_object_get(r, "amg");
    ck_assert_ptr_nonnull(ramg);
    json_int_t levels = json_integer_value(json_object_get(ramg, "levels"));
    ck_assert(levels >= 2);
    json_t *lrows = json_object_get(ramg, "level_rows");
    ck_assert_int_eq(json_array_size(lrows), levels);
    ck_assert_int_eq(json_integer_value(json_array_get(lrows, 0)), 400);
    json_t *lnnz = json_object_get(ramg, "level_nnz");
    ck_assert_int_eq(json_integer_value(json_array_get(lnnz, 0)), 400 * 5 - 4 * 20);
    /* Complexities agree with the level sizes. */
    double rows = 0.0, nnz = 0.0;
    for (json_int_t l = 0; l < levels; l++) {
        rows += (double)json_integer_value(json_array_get(lrows, (size_t)l));
        nnz += (double)json_integer_value(json_array_get(lnnz, (size_t)l));
    }
    ck_assert(fabs(json_number_value(json_object_get(ramg, "grid_complexity")) - rows / 400) <
              1e-12);
    ck_assert(fabs(json_number_value(json_object_get(ramg, "operator_complexity")) -
                   nnz / (400 * 5 - 4 * 20)) < 1e-12);
    ck_assert(json_number_value(json_object_get(json_object_get(ramg, "setup_phase_seconds"),
                                                "RAP")) >= 0.0);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(r, "setup_summary")),
                                 "grid complexity"));
    json_decref(t);

    /* Without AMG there is no hierarchy in the JSON. */
    snprintf(args, sizeof args, "-p matrix.n=6 -p solver.preconditioner=JACOBI --json '%s'", jpath);
    EXPECT_RC(args, 0);
    t = json_load_file(jpath, 0, &err);
    ck_assert_ptr_nonnull(t);
    r = json_array_get(json_object_get(t, "runs"), 0);
    ck_assert_ptr_null(json_object_get(r, "amg"));
    ck_assert_ptr_null(json_object_get(json_object_get(t, "solver"), "amg"));
    json_decref(t);
    remove(xpath);
    remove(jpath);

    /* An unwritable output is an error (2), reported after the report. */
    EXPECT_RC("-p matrix.n=4 -x /nonexistent/dir/x.mtx", 2);
    EXPECT_ERR("/nonexistent/dir/x.mtx");
}
END_TEST

/* Each example config runs (on a small problem) and converges. */
START_TEST(test_example_configs)
{
    static const struct {
        const char *file, *want, *want2;
    } ex[] = {
        {"pcg_amg_classical.json", "PCG + AMG", "CLASSICAL, HMIS, D2"},
        {"pcg_amg_aggressive.json", "PCG + AMG", "CLASSICAL, HMIS, D2"},
        {"pcg_amg_aggregation.json", "PCG + AMG", "AGGREGATION"},
        {"bicgstab_amg.json", "PBICGSTAB + AMG", "convdiff3d 10x10x10"},
        {"amg_standalone.json", "AMG (one cycle per iteration", "V(2,2)"},
        {"pcg_jacobi.json", "PCG + JACOBI", "relaxation factor"},
        {"pcg_amg_gpu_fast.json", "PCG + AMG", "float32 values below level 0"},
        {"pcg_amg_classical_gpu.json", "PCG + AMG", "float32 values below level 0"},
        {"pcg_amg_gpu.json", "PCG + AMG", "CLASSICAL, PMIS, D2"},
    };
    const char *src = getenv("KS_TEST_DATA"); /* <source>/matrices/samples */
    ck_assert_ptr_nonnull(src);
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        char args[2048];
        snprintf(args, sizeof args, "'%s/../../examples/configs/%s' --backend cpu -p matrix.n=10", src,
                 ex[i].file);
        EXPECT_RC(args, 0);
        EXPECT_OUT(ex[i].want);
        EXPECT_OUT(ex[i].want2);
        EXPECT_OUT("CONVERGED");
    }
}
END_TEST

/* AMG settings from the command line, and their errors. */
START_TEST(test_amg_options)
{
    EXPECT_RC("-p matrix.n=10 -p solver.preconditioner.selector=PMIS"
              " -p solver.preconditioner.cycle=W -p solver.preconditioner.smoother=CHEBYSHEV",
              0);
    EXPECT_OUT("CLASSICAL, PMIS");
    EXPECT_OUT("W(1,1), smoother CHEBYSHEV degree 2");
    EXPECT_OUT("CONVERGED");
    EXPECT_RC("-p matrix.n=10 -p solver.solver=AMG -p solver.max_iters=3", 1);
    EXPECT_OUT("AMG (one cycle per iteration");
    EXPECT_OUT("MAX_ITERS");

    EXPECT_RC("-p matrix.n=4 -p solver.preconditioner.strength_threshold=2", 2);
    EXPECT_ERR("solver.preconditioner.strength_threshold: must be in [0, 1] (got 2)");
    ck_assert_str_eq(out_buf, "");
    EXPECT_RC("-p matrix.n=4 -p solver.preconditioner.presweeps=0"
              " -p solver.preconditioner.postsweeps=0",
              2);
    EXPECT_ERR("presweeps and postsweeps are both 0: the cycle would not smooth");
    EXPECT_RC("-p matrix.n=4 -p solver.preconditioner.selector=RS", 2);
    EXPECT_ERR("solver.preconditioner.selector: unknown value 'RS' (allowed: PMIS, HMIS)");
    EXPECT_RC("-p matrix.n=4 -p solver.preconditioner.solver=JACOBI"
              " -p solver.preconditioner.cycle=W",
              2);
    EXPECT_ERR("an AMG setting, but solver.preconditioner.solver is JACOBI");

    /* The hierarchy's SpMV format: a named one on every level, a bad one
     * refused with the backend's list. */
    EXPECT_RC("-p matrix.n=10 -p solver.preconditioner.spmv_format=csr", 0);
    EXPECT_OUT("CONVERGED");
    EXPECT_RC("-p matrix.n=10 -p solver.preconditioner.spmv_format=bogus", 2);
    EXPECT_ERR("bogus");
}
END_TEST

START_TEST(test_usage)
{
    EXPECT_RC("--help", 0);
    EXPECT_OUT("Usage: ksolve");
    EXPECT_OUT("--backend");
    EXPECT_RC("-h", 0);
    EXPECT_OUT("Usage: ksolve");
    EXPECT_RC("--version", 0);
    EXPECT_OUT(KS_VERSION_STRING);

    EXPECT_RC("--frobnicate", 2);
    EXPECT_ERR("unknown option '--frobnicate'");
    EXPECT_RC("-k", 2);
    EXPECT_ERR("unknown option '-k'");
    EXPECT_RC("-p solver.max_iters", 2);
    EXPECT_ERR("KEY=VALUE");
    EXPECT_RC("-A", 2);
    EXPECT_ERR("needs a value");
    EXPECT_RC("a.json b.json", 2);
    EXPECT_ERR("more than one config file");
    EXPECT_RC("--backend gpu", 2);
    EXPECT_ERR("backend: unknown value 'gpu'");
}
END_TEST

/* Overrides that would drop one another are an error naming both, in
 * either order; a parent before its child merges. */
START_TEST(test_override_conflicts)
{
    const char *A = write_laplace1d(8);
    char args[2048];
    snprintf(args, sizeof args, "-A '%s' -p matrix.n=16", A);
    EXPECT_RC(args, 2);
    EXPECT_ERR("'matrix.file' and 'matrix.n' exclude each other");
    snprintf(args, sizeof args, "-p matrix.n=16 -A '%s'", A);
    EXPECT_RC(args, 2);
    EXPECT_ERR("'matrix.n' and 'matrix.file' exclude each other");
    snprintf(args, sizeof args, "-A '%s' -A '%s'", A, A);
    EXPECT_RC(args, 2);
    EXPECT_ERR("'matrix.file' is given twice");
    EXPECT_RC("-p solver.preconditioner.selector=PMIS -p solver.preconditioner=JACOBI", 2);
    EXPECT_ERR("'solver.preconditioner' would replace 'solver.preconditioner.selector'");
    /* (a non-default value: a key that does not apply but repeats its default only warns) */
    EXPECT_RC("-p solver.preconditioner=JACOBI -p solver.preconditioner.selector=HMIS", 2);
    EXPECT_ERR("solver.preconditioner.selector");
    EXPECT_RC("-p matrix.n=8 -p solver.preconditioner=AMG -p solver.preconditioner.selector=PMIS",
              0);
    /* The command line still replaces what a config file chose. */
    const char *cfg = ks_test_tmpfile(".json");
    FILE *f = fopen(cfg, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"matrix\": {\"file\": \"%s\"}}\n", A);
    fclose(f);
    snprintf(args, sizeof args, "'%s' -p matrix.n=6", cfg);
    EXPECT_RC(args, 0);
    EXPECT_OUT("6x6x6");
    remove(cfg);
    remove(A);
}
END_TEST

/* Coefficients that are each finite but overflow the stencil's diagonal
 * are refused naming the key, not later as a non-finite matrix entry. */
/* The generator's keys follow the rule for keys that do not apply: an
 * error naming the key and the generator, or one warning for a default. */
START_TEST(test_generator_keys_rule)
{
    EXPECT_RC("-p matrix.generator=poisson3d_27 -p matrix.n=4 -p 'matrix.coefficients=[1,1,2]'",
              2);
    EXPECT_ERR("matrix.coefficients: applies to the poisson2d_5, poisson3d_7, aniso3d and "
               "convdiff3d generators only, but matrix.generator is poisson3d_27");
    EXPECT_RC("-p matrix.n=4 -p 'matrix.velocity=[2,0,0]'", 2);
    EXPECT_ERR("matrix.velocity: applies to the convdiff3d generator only, but matrix.generator "
               "is poisson3d_7 (remove the key, or choose convdiff3d)");
    EXPECT_RC("-p matrix.n=4 -p 'matrix.velocity=[1,1,1]'", 0);
    EXPECT_ERR("warning: matrix.velocity: ignored (its value is the default)");
    EXPECT_RC("-p matrix.generator=convdiff3d -p matrix.n=4 -p 'matrix.velocity=[2,0,0]'", 0);
    /* a generator key beside -A: both sides of the matrix, an error */
    EXPECT_RC("-A /nonexistent.mtx -p 'matrix.velocity=[1,1,1]'", 2);
    EXPECT_ERR("'matrix.file' and 'matrix.velocity' exclude each other");
}
END_TEST

START_TEST(test_coefficients_overflow)
{
    EXPECT_RC("-p matrix.n=4 -p 'matrix.coefficients=[1e308,1e308,1e308]'", 2);
    EXPECT_ERR("matrix.coefficients: [1e+308, 1e+308, 1e+308] overflow");
    EXPECT_RC("-p matrix.n=4 -p matrix.generator=convdiff3d "
              "-p 'matrix.velocity=[1.7e308,1.7e308,1]'",
              2);
    EXPECT_ERR("matrix.velocity:");
    EXPECT_RC("-p matrix.n=4 -p 'matrix.coefficients=[1e307,1e307,1e307]'", 0);
}
END_TEST

/* Output paths are checked before the solve; --json - is standard output. */
START_TEST(test_output_paths)
{
    EXPECT_RC("-p matrix.n=8 -x /nonexistent/x.mtx", 2);
    EXPECT_ERR("cannot write the solution to '/nonexistent/x.mtx'");
    ck_assert_str_eq(out_buf, ""); /* nothing solved */
    EXPECT_RC("-p matrix.n=8 --json /nonexistent/s.json", 2);
    EXPECT_ERR("'/nonexistent/s.json'");
    ck_assert_str_eq(out_buf, "");
    EXPECT_RC("-p matrix.n=8 --json -", 0);
    json_error_t jerr;
    json_t *root = json_loads(out_buf, 0, &jerr);
    ck_assert_msg(root != NULL, "stdout is not JSON (%s):\n%s", jerr.text, out_buf);
    ck_assert_ptr_nonnull(json_object_get(root, "runs"));
    json_decref(root);
    EXPECT_ERR("CONVERGED"); /* the report moved to stderr */
    struct stat sb;
    ck_assert_msg(stat("-", &sb) != 0, "a file named '-' was written");
}
END_TEST

/* A matrix where the config goes; --print-config's file keys are absolute. */
START_TEST(test_matrix_as_config_and_paths)
{
    EXPECT_RC("some/A.mtx.gz", 2);
    EXPECT_ERR("'some/A.mtx.gz' is a Matrix Market file, not a config: give a matrix with -A");
    const char *A = write_laplace1d(4);
    char args[2048];
    snprintf(args, sizeof args, "'%s'", A); /* a temporary name: found by its first line */
    EXPECT_RC(args, 2);
    EXPECT_ERR("is a Matrix Market file");
    remove(A);
    EXPECT_RC("-A rel_dir/A.mtx -x x.mtx --print-config", 0);
    char cwd[1024], want[1200];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(want, sizeof want, "\"%s/rel_dir/A.mtx\"", cwd);
    EXPECT_OUT(want);
    snprintf(want, sizeof want, "\"%s/x.mtx\"", cwd);
    EXPECT_OUT(want);
}
END_TEST

START_TEST(test_cuda_missing)
{
    EXPECT_RC("--backend cuda -p matrix.n=4", 2);
    EXPECT_ERR("ksolve: error:");
    EXPECT_ERR("cuda");
    EXPECT_ERR("--backend cpu solves on the CPU");
    EXPECT_RC("--backend cpu,cuda -p matrix.n=4", 2);
    EXPECT_ERR("cuda");
    ck_assert_str_eq(out_buf, ""); /* fails before any solve */
}
END_TEST

START_TEST(test_cpu_and_cuda)
{
    EXPECT_RC("--backend cpu,cuda -p matrix.n=16", 0);
    EXPECT_OUT("speedup");
    EXPECT_OUT("backend cuda");
    /* One grid table: the hierarchy does not depend on the backend. */
    EXPECT_OUT("setup on cpu:");
    EXPECT_OUT("setup on cuda: the same hierarchy as on cpu");
    const char *line = strstr(out_buf, "\n  status");
    ck_assert_ptr_nonnull(line);
    const char *first = strstr(line, "CONVERGED");
    ck_assert_msg(first && strstr(first + 1, "CONVERGED") && strchr(line + 1, '\n') > first,
                  "both runs must converge:\n%s", out_buf);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_generator_converges);
    tcase_add_test(tc, test_default_problem);
    tcase_add_test(tc, test_matrix_file);
    tcase_add_test(tc, test_input_errors);
    tcase_add_test(tc, test_bad_config);
    tcase_add_test(tc, test_config_file);
    tcase_add_test(tc, test_not_converged);
    tcase_add_test(tc, test_solution_and_json);
    tcase_add_test(tc, test_example_configs);
    tcase_add_test(tc, test_amg_options);
    tcase_add_test(tc, test_usage);
    tcase_add_test(tc, test_override_conflicts);
    tcase_add_test(tc, test_output_paths);
    tcase_add_test(tc, test_coefficients_overflow);
    tcase_add_test(tc, test_generator_keys_rule);
    tcase_add_test(tc, test_matrix_as_config_and_paths);
    if (ks_test_have_cuda()) {
        tcase_add_test(tc, test_cpu_and_cuda);
        ks_test_skip(1, "CUDA device present: the missing-device error is not testable");
    } else {
        tcase_add_test(tc, test_cuda_missing);
        ks_test_skip(1, "no CUDA device: cpu,cuda comparison not run");
    }
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
