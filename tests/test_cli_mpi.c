/* The ksolve tool under mpirun (KS_MPIRUN, KSOLVE_EXE): a generated problem
 * solved over 3 ranks reports the ranks, converges in the iterations of the
 * one-process run (within one) and writes the same solution to 1e-8; one
 * report, not one per rank; JSON from rank 0; a matrix file (symmetric, or
 * gzip) with -b and -x, against the one-process run the same way; a bad
 * file or b of the wrong length fails with exit status 2 and the file's
 * name (and line), and a header claiming more rows than the memory holds
 * is refused before allocating; what is not done yet (AMG, several backends) fails with
 * exit status 2 and says so; a malformed gpu_map is refused naming the key, and on
 * the cpu nothing about GPUs is printed; with a GPU, PCG + AMG on cuda over 2 ranks, each
 * rank's GPU named (rank r on GPU r mod G); without --threads and OMP_NUM_THREADS each
 * rank takes its share of the CPUs (two unbound ranks: half each). This program itself
 * never calls MPI: it
 * starts mpirun as a child. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "cli_run.h"
#include "ks_test.h"
#include "vec/gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#if defined(__linux__)
#include <sched.h>
#endif

/* One run's output. */
#define out_buf ks_cli_out
#define err_buf ks_cli_err
#define slurp ks_cli_slurp

static int ksolve(int np, const char *args) { return ks_cli_run(np, args); }

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
    /* 12^3 in three blocks of four planes: 144 ghosts on the outer ranks,
     * 288 on the middle one */
    ck_assert_msg(strstr(out_buf, "rows per rank             576 .. 576\n") &&
                      strstr(out_buf, "144 .. 288 values received per product, up to 2 "
                                      "neighbours, host transport") &&
                      strstr(out_buf, "solve communication       halo "),
                  "%s", out_buf);
    static char text[1 << 16];
    slurp(json, text, sizeof text);
    ck_assert_msg(strstr(text, "\"rows\": 1728") && strstr(text, "3 MPI ranks"), "%s", text);
    ck_assert_msg(strstr(text, "\"ranks\": 3") && strstr(text, "\"ghosts_max\": 288") &&
                      strstr(text, "\"halo_exchanges\"") &&
                      strstr(text, "\"halo_transport\": \"host\""),
                  "%s", text);
    /* the cpu backend: nothing about GPUs */
    ck_assert_msg(!strstr(out_buf, "GPU") && !strstr(text, "gpus"), "%s\n%s", out_buf, text);
    remove(xs);
    remove(xd);
    remove(json);
}
END_TEST

/* This process's CPUs (its affinity mask), which mpirun's unbound ranks
 * inherit; 0 where it cannot be read. */
static int my_cpus(void)
{
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
#else
    return 0;
#endif
}

/* Under mpirun with neither --threads nor OMP_NUM_THREADS, each rank takes
 * its share of the CPUs it may run on: two unbound ranks (one mask) half of
 * this process's each (at least one), not a thread a CPU each; --threads
 * and OMP_NUM_THREADS still decide where given. */
START_TEST(test_threads_over_ranks)
{
    const int cpus = my_cpus();
    const char *was = getenv("OMP_NUM_THREADS");
    char saved[64] = "";
    if (was)
        snprintf(saved, sizeof saved, "%s", was);
    unsetenv("OMP_NUM_THREADS");
    /* mpirun --bind-to none (Open MPI 4's variable; 5's launcher reads PRTE's) */
    setenv("OMPI_MCA_hwloc_base_binding_policy", "none", 1);
    setenv("PRTE_MCA_hwloc_default_binding_policy", "none", 1);
    const char *gen = "-p matrix.generator=poisson3d_7 -p matrix.n=8";
    EXPECT_RC(2, gen, 0);
    if (strstr(out_buf, "built without OpenMP") || cpus == 0) {
        printf("SKIPPED: 1 (threads under mpirun: %s)\n",
               cpus ? "built without OpenMP" : "the CPU mask cannot be read");
    } else {
        char want[64];
        snprintf(want, sizeof want, ", %d OpenMP threads x 2 ranks", cpus / 2 > 1 ? cpus / 2 : 1);
        ck_assert_msg(strstr(out_buf, want), "%d CPUs, 2 unbound ranks: want '%s' in\n%s",
                      cpus, want, out_buf);
        char args[256];
        snprintf(args, sizeof args, "%s --threads 3", gen);
        EXPECT_RC(2, args, 0);
        ck_assert_msg(strstr(out_buf, ", 3 OpenMP threads x 2 ranks"), "--threads 3:\n%s",
                      out_buf);
        setenv("OMP_NUM_THREADS", "3", 1);
        EXPECT_RC(2, gen, 0);
        ck_assert_msg(strstr(out_buf, ", 3 OpenMP threads x 2 ranks"), "OMP_NUM_THREADS=3:\n%s",
                      out_buf);
    }
    unsetenv("OMPI_MCA_hwloc_base_binding_policy");
    unsetenv("PRTE_MCA_hwloc_default_binding_policy");
    if (saved[0])
        setenv("OMP_NUM_THREADS", saved, 1);
    else
        unsetenv("OMP_NUM_THREADS");
}
END_TEST

START_TEST(test_default_amg_over_ranks)
{
    /* The default solve (PCG + AMG, Chebyshev smoother) over 4 ranks: the
     * one-process iterations within 2, the hierarchy's global sizes in
     * the report, the same as one process's. */
    const char *common = "-p matrix.n=14";
    EXPECT_RC(0, common, 0);
    const int it1 = iterations();
    const char *lv = strstr(out_buf, "level         rows");
    ck_assert_msg(lv != NULL, "%s", out_buf);
    char table[512];
    snprintf(table, sizeof table, "%.*s", (int)(strstr(lv, "grid complexity") - lv), lv);
    EXPECT_RC(4, common, 0);
    const int it4 = iterations();
    ck_assert_msg(strstr(out_buf, "4 MPI ranks") && strstr(out_buf, "CONVERGED") &&
                      strstr(out_buf, "gathered on every rank"),
                  "%s", out_buf);
    ck_assert_msg(abs(it1 - it4) <= 2, "iterations: 1 process %d, 4 ranks %d", it1, it4);
    /* the level table's rows and nonzeros columns: the same numbers */
    for (const char *line = strstr(table, "\n"); line && line[1]; line = strstr(line + 1, "\n")) {
        int l;
        long rows, nnz;
        if (sscanf(line + 1, " %d %ld %ld", &l, &rows, &nnz) != 3)
            continue;
        char want[96];
        snprintf(want, sizeof want, " %d %12ld %14ld ", l, rows, nnz);
        ck_assert_msg(strstr(out_buf, want + 1), "level %d (%ld rows, %ld nonzeros) not in\n%s",
                      l, rows, nnz, out_buf);
    }
    /* the options the distributed setup took last: SGS (hybrid over the
     * ranks) with a float32 hierarchy */
    EXPECT_RC(3, "-p matrix.n=8 -p solver.preconditioner.smoother.solver=SGS "
                 "-p solver.preconditioner.hierarchy_precision=FLOAT", 0);
    ck_assert_msg(strstr(out_buf, "3 MPI ranks") && strstr(out_buf, "CONVERGED"), "%s",
                  out_buf);
}
END_TEST

/* gpu_map: a malformed map is refused when the config loads, naming the key. */
START_TEST(test_gpu_map_over_ranks)
{
    EXPECT_RC(2, "-p matrix.n=6 -p gpu_map=0,x", 2);
    ck_assert_msg(strstr(err_buf, "gpu_map \"0,x\": expected local, none") &&
                      count_of(err_buf, "ksolve: error") == 1,
                  "%s", err_buf);
    /* on the cpu backend the map is not used: no GPU needed */
    EXPECT_RC(2, "-p matrix.n=6 -p gpu_map=3 -p solver.preconditioner.solver=JACOBI", 0);
    ck_assert_msg(!strstr(out_buf, "GPU"), "%s", out_buf);
}
END_TEST

START_TEST(test_not_done_yet)
{
    EXPECT_RC(2, "--backend cpu,cuda -p solver.preconditioner.solver=JACOBI -p matrix.n=8", 2);
    ck_assert_msg(strstr(err_buf, "several backends in one run is not done yet"), "%s", err_buf);
    /* not converged: status 1 on every rank */
    EXPECT_RC(2, "-p solver.preconditioner.solver=JACOBI -p matrix.n=10 -p solver.max_iters=3", 1);
    ck_assert_msg(strstr(out_buf, "MAX_ITERS"), "%s", out_buf);
    /* the halo transport (mpi.halo, --halo): staged runs on the cpu too
     * (copies through host buffers); nccl and ipc move device memory only */
    EXPECT_RC(2, "-p solver.preconditioner.solver=JACOBI -p matrix.n=10 --halo staged", 0);
    ck_assert_msg(strstr(out_buf, "up to 1 neighbours, staged transport"), "%s", out_buf);
    EXPECT_RC(2, "-p solver.preconditioner.solver=JACOBI -p matrix.n=10 -p mpi.halo=nccl", 2);
    ck_assert_msg(strstr(err_buf, "halo transport nccl: "), "%s", err_buf);
    EXPECT_RC(2, "-p solver.preconditioner.solver=JACOBI -p matrix.n=10 --halo ipc", 2);
    ck_assert_msg(strstr(err_buf, "halo transport ipc: "), "%s", err_buf);
    EXPECT_RC(2, "-p matrix.n=10 --halo fast", 2);
    ck_assert_msg(strstr(err_buf, "mpi.halo") && strstr(err_buf, "nccl"), "%s", err_buf);
}
END_TEST

/* The number after "key": in a JSON text (NAN when the key is absent). */
static double json_number(const char *text, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(text, k);
    return p ? strtod(p + strlen(k), NULL) : NAN;
}

/* PCG + AMG on the cuda backend under mpirun -np 2 (both ranks may share
 * one GPU): the default configuration and PMIS with D1 and JACOBI_L1
 * within 2 iterations of one process on cuda and of 2 ranks on the cpu;
 * the report's MPI lines and JSON's halo figures (the staged exchange's
 * time, with its copies) there. Added only where a CUDA device exists. */
START_TEST(test_cuda_amg_over_ranks)
{
    const char *json = ks_test_tmpfile(".json");
    const char *variants[] = {"",
                              "-p solver.preconditioner.smoother.solver=JACOBI_L1 "
                              "-p solver.preconditioner.interpolator=D1"};
    for (int v = 0; v < 2; v++) {
        char args[1024];
        snprintf(args, sizeof args, "--backend cuda -p matrix.n=20 %s", variants[v]);
        EXPECT_RC(0, args, 0);
        const int one = iterations();
        snprintf(args, sizeof args, "--backend cpu -p matrix.n=20 %s", variants[v]);
        EXPECT_RC(2, args, 0);
        const int cpu2 = iterations();
        snprintf(args, sizeof args, "--backend cuda -p matrix.n=20 %s --json '%s'", variants[v],
                 json);
        EXPECT_RC(2, args, 0);
        const int cu2 = iterations();
        ck_assert_msg(strstr(out_buf, "2 MPI ranks") && strstr(out_buf, "CONVERGED") &&
                          strstr(out_buf, "solve communication       halo "),
                      "variant '%s':\n%s", variants[v], out_buf);
        ck_assert_msg(abs(cu2 - one) <= 2 && abs(cu2 - cpu2) <= 2,
                      "variant '%s': iterations: cuda on 2 ranks %d, cuda on one process %d, "
                      "cpu on 2 ranks %d", variants[v], cu2, one, cpu2);
        static char text[1 << 16];
        slurp(json, text, sizeof text);
        const double hs = json_number(text, "halo_seconds"),
                     hx = json_number(text, "halo_exchanges");
        ck_assert_msg(hs > 0.0 && hx >= cu2, "variant '%s': halo_seconds %g, halo_exchanges %g "
                      "for %d iterations in\n%s", variants[v], hs, hx, cu2, text);
        /* each rank's GPU named: rank r on GPU r mod G (one node) */
        const int g = ks_gpu_count();
        for (int r = 0; r < 2; r++) {
            char want[64];
            snprintf(want, sizeof want, "rank %d: host ", r);
            const char *line = strstr(out_buf, want);
            snprintf(want, sizeof want, ", GPU %d (", r % g);
            ck_assert_msg(line && strstr(line, want) && strstr(line, want) < strchr(line, '\n'),
                          "rank %d's GPU (%d of %d) not named in\n%s", r, r % g, g, out_buf);
        }
        ck_assert_msg(strstr(text, "\"gpus\"") && strstr(text, "\"pci_bus_id\""), "%s", text);
        printf("cuda AMG under mpirun, variant '%s': %d iterations on 2 ranks (one process %d, "
               "cpu 2 ranks %d), halo %.3g s in %.0f exchanges\n",
               variants[v], cu2, one, cpu2, hs, hx);
    }
    remove(json);
}
END_TEST

/* The lower triangle of a generated SPD matrix as a symmetric file (the
 * tool then reads it expanded), and b[i] = cos(i) beside it. */
static void write_symmetric(const char *apath, const char *bpath, int n)
{
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.kind = KS_GEN_POISSON3D_7;
    g.nx = g.ny = g.nz = n;
    ks_csr A;
    KS_CHECK(ks_generate(&g, &A));
    FILE *f = fopen(apath, "w");
    ck_assert_msg(f != NULL, "cannot create %s", apath);
    int lower = 0;
    for (ks_int i = 0; i < A.nrows; i++)
        for (ks_int k = A.rowptr[i]; k < A.rowptr[i + 1]; k++)
            lower += A.colind[k] <= i;
    fprintf(f, "%%%%MatrixMarket matrix coordinate real symmetric\n%d %d %d\n", (int)A.nrows,
            (int)A.ncols, lower);
    for (ks_int i = 0; i < A.nrows; i++)
        for (ks_int k = A.rowptr[i]; k < A.rowptr[i + 1]; k++)
            if (A.colind[k] <= i)
                fprintf(f, "%d %d %.17g\n", (int)i + 1, (int)A.colind[k] + 1, A.val[k]);
    ck_assert(fclose(f) == 0);
    double *b = malloc((size_t)A.nrows * sizeof *b);
    ck_assert(b != NULL);
    for (ks_int i = 0; i < A.nrows; i++)
        b[i] = cos((double)i);
    KS_CHECK(ks_mm_write_vector(bpath, b, A.nrows));
    free(b);
    ks_csr_free(&A);
}

/* "ksolve ARGS -x FILE" on one process and on np ranks: both converge in
 * iterations within one, the solutions agree to 1e-8, the report names the
 * file (and the ranks). */
static void compare_runs(int np, const char *args, const char *file, int n)
{
    const char *x1 = ks_test_tmpfile(".mtx"), *xn = ks_test_tmpfile(".mtx.gz");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s -x '%s'", args, x1);
    EXPECT_RC(0, cmd, 0);
    const int it1 = iterations();
    snprintf(cmd, sizeof cmd, "%s -x '%s'", args, xn);
    EXPECT_RC(np, cmd, 0);
    const int itn = iterations();
    char want[1200];
    snprintf(want, sizeof want, "%s, %d MPI ranks", file, np);
    ck_assert_msg(strstr(out_buf, want) && strstr(out_buf, "CONVERGED") &&
                      count_of(out_buf, "ksolve 0.1.0") == 1,
                  "expected one report naming '%s':\n%s", want, out_buf);
    ck_assert_msg(abs(it1 - itn) <= 1, "iterations: 1 process %d, %d ranks %d", it1, np, itn);
    int n1, nn;
    double *a = read_vector(x1, &n1), *b = read_vector(xn, &nn);
    ck_assert_int_eq(n1, n);
    ck_assert_int_eq(nn, n);
    const double err = ks_test_max_relerr(b, a, n);
    ck_assert_msg(err <= 1e-8, "solutions differ by %g", err);
    free(a);
    free(b);
    remove(x1);
    remove(xn);
}

START_TEST(test_file_over_ranks)
{
    char apath[1100], bpath[1100], args[4096];
    snprintf(apath, sizeof apath, "%s", ks_test_tmpfile(".mtx"));
    snprintf(bpath, sizeof bpath, "%s", ks_test_tmpfile(".mtx"));
    write_symmetric(apath, bpath, 9);
    const char *solve = "-p solver.solver=PCG -p solver.preconditioner.solver=JACOBI "
                        "-p solver.tolerance=1e-11";
    snprintf(args, sizeof args, "-A '%s' -b '%s' %s", apath, bpath, solve);
    compare_runs(3, args, apath, 729);
    ck_assert_msg(strstr(out_buf, bpath), "the report names b's file:\n%s", out_buf);
    /* the default PCG + AMG on the file */
    snprintf(args, sizeof args, "-A '%s' -b '%s' -p solver.tolerance=1e-11", apath, bpath);
    compare_runs(3, args, apath, 729);
    ck_assert_msg(strstr(out_buf, "PCG + AMG"), "%s", out_buf);
    /* gzip, general, b = A*1, on 4 ranks */
    ks_csr A;
    KS_CHECK(ks_mm_read_csr(apath, &A, NULL));
    char gz[1100];
    snprintf(gz, sizeof gz, "%s", ks_test_tmpfile(".mtx.gz"));
    KS_CHECK(ks_mm_write_csr(gz, &A));
    ks_csr_free(&A);
    snprintf(args, sizeof args, "-A '%s' %s", gz, solve);
    compare_runs(4, args, gz, 729);
    /* b of the wrong length: the file and both sizes, from rank 0 only */
    double b5[5] = {1, 2, 3, 4, 5};
    KS_CHECK(ks_mm_write_vector(bpath, b5, 5));
    snprintf(args, sizeof args, "-A '%s' -b '%s' %s", apath, bpath, solve);
    EXPECT_RC(3, args, 2);
    ck_assert_msg(strstr(err_buf, "b does not fit A (729 rows)") && strstr(err_buf, bpath) &&
                      count_of(err_buf, "ksolve: error") == 1,
                  "%s", err_buf);
    remove(apath);
    remove(bpath);
    remove(gz);
}
END_TEST

START_TEST(test_bad_file_over_ranks)
{
    const char *bad = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix coordinate real general\n"
                                                "3 3 3\n1 1 1\n2 2 1\n3 3 one\n");
    char args[1200], where[1200];
    snprintf(args, sizeof args, "-A '%s' -p solver.preconditioner.solver=JACOBI", bad);
    EXPECT_RC(3, args, 2);
    snprintf(where, sizeof where, "%s:5: bad value 'one'", bad);
    ck_assert_msg(strstr(err_buf, where) && count_of(err_buf, "ksolve: error") == 1, "%s",
                  err_buf);
    remove(bad);
    EXPECT_RC(2, "-A /nonexistent/A.mtx -p solver.preconditioner.solver=JACOBI", 2);
    ck_assert_msg(strstr(err_buf, "/nonexistent/A.mtx"), "%s", err_buf);
}
END_TEST

/* A header claiming 2e9 rows is refused before anything is allocated, with
 * its size line, the solve's vectors counted as the one-process tool
 * counts them, and the memory (KS_MEM_AVAILABLE: mpirun's ranks inherit it). */
START_TEST(test_huge_header_over_ranks)
{
    const char *huge = ks_test_write_tmp(".mtx", "%%MatrixMarket matrix coordinate real general\n"
                                                 "%\n2000000000 2000000000 1\n1 1 1\n");
    char args[1200], where[1200];
    snprintf(args, sizeof args, "-A '%s' -p solver.preconditioner.solver=JACOBI", huge);
    setenv("KS_MEM_AVAILABLE", "1G", 1);
    EXPECT_RC(3, args, 2);
    unsetenv("KS_MEM_AVAILABLE");
    snprintf(where, sizeof where, "%s:3: reading this 2000000000 x 2000000000 matrix (1 entries "
             "declared) and the solve's vectors on rank 0 (rows 0 to 666666666)", huge);
    ck_assert_msg(strstr(err_buf, where) &&
                      strstr(err_buf, "of memory is available (KS_MEM_AVAILABLE)") &&
                      count_of(err_buf, "ksolve: error") == 1,
                  "%s", err_buf);
    remove(huge);
}
END_TEST

/* ../shared/matrices/fv1 (not in CI): a real SPD file over 3 ranks
 * (Jacobi, then the default AMG). */
START_TEST(test_shared_file_over_ranks)
{
    const char *fv1 = ks_test_shared_matrix("fv1.mtx.gz");
    char args[2048];
    snprintf(args, sizeof args, "-A '%s' -p solver.solver=PCG "
             "-p solver.preconditioner.solver=JACOBI_L1 -p rhs.type=A_sin", fv1);
    compare_runs(3, args, fv1, 9604);
    /* and with the default PCG + AMG */
    snprintf(args, sizeof args, "-A '%s' -p rhs.type=A_sin -p solver.tolerance=1e-11", fv1);
    compare_runs(3, args, fv1, 9604);
}
END_TEST

/* --x0, --quiet, --threads and --json - over ranks, as in one process. */
START_TEST(test_options_over_ranks)
{
    const char *x = ks_test_tmpfile(".mtx");
    const char *common = "-p solver.preconditioner.solver=JACOBI_L1 -p matrix.n=10 "
                         "-p solver.tolerance=1e-10";
    char args[2048];
    snprintf(args, sizeof args, "%s -x '%s'", common, x);
    EXPECT_RC(0, args, 0);
    ck_assert_int_gt(iterations(), 5);
    /* From the solution, nothing left to do; x0 split like the rows. */
    snprintf(args, sizeof args, "%s --x0 '%s' --threads 1", common, x);
    EXPECT_RC(3, args, 0);
    ck_assert_int_eq(iterations(), 0);
    ck_assert_msg(strstr(out_buf, x) && strstr(out_buf, "1 OpenMP threads x 3 ranks"), "%s",
                  out_buf);
    /* x0 of the wrong length: the file, from rank 0 only */
    snprintf(args, sizeof args, "-p solver.preconditioner.solver=JACOBI -p matrix.n=9 --x0 '%s'",
             x);
    EXPECT_RC(2, args, 2);
    ck_assert_msg(strstr(err_buf, "x0 does not fit A (729 rows)") && strstr(err_buf, x) &&
                      count_of(err_buf, "ksolve: error") == 1,
                  "%s", err_buf);
    /* --quiet: nothing, and the status still counts */
    snprintf(args, sizeof args, "%s --quiet -p solver.monitor_residual=1", common);
    EXPECT_RC(2, args, 0);
    ck_assert_msg(!out_buf[0] && !err_buf[0], "stdout:\n%s\nstderr:\n%s", out_buf, err_buf);
    snprintf(args, sizeof args, "%s -q -p solver.max_iters=2", common);
    EXPECT_RC(2, args, 1); /* mpirun itself says that a rank exited with 1 */
    ck_assert_msg(!out_buf[0] && !strstr(err_buf, "ksolve") && !strstr(err_buf, "MAX_ITERS"),
                  "stdout:\n%s\nstderr:\n%s", out_buf, err_buf);
    /* --json -: the JSON alone on stdout, the report on stderr */
    snprintf(args, sizeof args, "%s --json - -p solver.monitor_residual=1", common);
    EXPECT_RC(2, args, 0);
    ck_assert_msg(out_buf[0] == '{' && strstr(out_buf, "2 MPI ranks") &&
                      strstr(err_buf, "CONVERGED") && !strstr(out_buf, "\n  status ") &&
                      strstr(err_buf, "residual monitor") && !strstr(out_buf, "residual monitor"),
                  "stdout:\n%s\nstderr:\n%s", out_buf, err_buf);
    remove(x);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_mpi");
    TCase *t = tcase_create("cli_mpi");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_generated_over_ranks);
    tcase_add_test(t, test_default_amg_over_ranks);
    tcase_add_test(t, test_threads_over_ranks);
    tcase_add_test(t, test_not_done_yet);
    tcase_add_test(t, test_gpu_map_over_ranks);
    tcase_add_test(t, test_file_over_ranks);
    tcase_add_test(t, test_bad_file_over_ranks);
    tcase_add_test(t, test_huge_header_over_ranks);
    tcase_add_test(t, test_options_over_ranks);
    if (ks_test_have_cuda())
        tcase_add_test(t, test_cuda_amg_over_ranks);
    else
        ks_test_skip(1, "no CUDA device: the tool's cuda AMG solve under mpirun");
    if (ks_test_shared_matrix("fv1.mtx.gz"))
        tcase_add_test(t, test_shared_file_over_ranks);
    else
        ks_test_skip(1, "../shared/matrices/fv1.mtx.gz not found: the tool on a real file");
    suite_add_tcase(s, t);
    return ks_test_run(s);
}
