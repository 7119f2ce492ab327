/* hypre BoomerAMG + PCG on the 3D 7-point Laplacian, for comparison with
 * bench_amg (bench/hypre_compare.sh builds and runs it). NOT part of the
 * ksolve build: hypre is never a dependency of the library. Build:
 *
 *   mpicc -O2 -I/usr/include/hypre bench/hypre_driver.c -o hypre_driver -lHYPRE -lm
 *   mpirun -np 2 ./hypre_driver --n 64
 *
 * The problem is the one bench_amg --gen poisson3d_7 --n N solves: the
 * n^3 grid, row i + n (j + n k), diagonal 6, off-diagonals -1 (Dirichlet
 * boundary rows shortened), b = A x with x_i = sin(i), x0 = 0, PCG stopped
 * at ||r||_2 < tol ||b||_2. The BoomerAMG settings default to ksolve's AMG
 * defaults: PMIS (hypre coarsen type 8; --coarsen HMIS is type 10),
 * extended+i interpolation with at most 4 weights per row, theta 0.25,
 * max_row_sum 0.9, one Chebyshev sweep of degree 2 on [0.3 lmax, lmax]
 * down and up (hypre relax type 16; --relax L1JACOBI is type 18,
 * lexicographic order), V-cycle, coarsening stops at 300 rows, Gaussian
 * elimination on the coarsest level, no aggressive coarsening. Rows are
 * split into contiguous blocks over the MPI ranks.
 *
 * Aggressive coarsening (--agg-levels L, ksolve's aggressive_levels): on
 * the first L levels the coarsening (same type as --coarsen) runs a second
 * time on the distance-two strength graph of the first stage's C points
 * (--num-paths 1: one strong path of length two is enough), and the
 * interpolation is --agg-interp, by default EXTI (agg_interp_type 1,
 * 2-stage extended+i: P1 from the fine to the first-stage C points, P2 from
 * the first- to the second-stage C points, both extended+i and truncated to
 * --agg-p12-max weights per row, P = P1 P2 truncated to --agg-pmax), the
 * closest to ksolve's two extended+i stages. hypre's own defaults are
 * MULTIPASS (4) and no truncation (agg_P_max_elmts and agg_P12_max_elmts 0).
 *
 * Prints one summary line per the run, starting with "hypre:", plus a
 * "RESULT key=value ..." line for scripts. Timings: one warm-up setup +
 * solve, then the medians of --repeat fresh setups and solves. */
#include <HYPRE.h>
#include <HYPRE_krylov.h>
#include <HYPRE_parcsr_ls.h>
#include <_hypre_parcsr_ls.h>
#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opts {
    int n, repeat, pmax, sweeps, max_coarse, relax, coarsen, interp, agg_levels, print_level;
    int agg_interp, agg_pmax, agg_p12_max, num_paths;
    double tol, theta, max_row_sum;
    int cheby_order;
    double cheby_fraction;
} opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: hypre_driver [--n 64] [--repeat 3] [--tol 1e-8] [--theta 0.25]\n"
               "       [--coarsen PMIS|HMIS|FALGOUT] [--interp EXTI|DIRECT|CLASSICAL]\n"
               "       [--pmax 4] [--relax CHEBYSHEV|L1JACOBI|JACOBI|HGS|SSOR] [--sweeps 1]\n"
               "       [--cheby-order 2] [--cheby-fraction 0.3]\n"
               "       [--max-row-sum 0.9] [--max-coarse 300] [--print-level 0]\n"
               "       [--agg-levels 0] [--agg-interp EXTI|STD|EXT|MULTIPASS|MM_EXT|MM_EXTI|MM_EXTE]\n"
               "       [--agg-pmax 4] [--agg-p12-max 4] [--num-paths 1]\n"
               "--coarsen: PMIS = hypre coarsen type 8, HMIS = 10, FALGOUT = 6.\n"
               "--agg-interp (levels of aggressive coarsening): EXTI = 1 (2-stage extended+i),\n"
               "STD = 2, EXT = 3 (2-stage standard, extended), MULTIPASS = 4 (hypre's default),\n"
               "MM_EXT = 5, MM_EXTI = 6, MM_EXTE = 7 (2-stage, matrix-matrix form).\n");
}

/* HYPRE_BoomerAMGSetCoarsenType */
static const char *const cnames[] = {"PMIS", "HMIS", "FALGOUT"};
static const int ccodes[] = {8, 10, 6};
/* HYPRE_BoomerAMGSetAggInterpType */
static const char *const anames[] = {"EXTI", "STD", "EXT", "MULTIPASS", "MM_EXT", "MM_EXTI",
                                     "MM_EXTE"};
static const int acodes[] = {1, 2, 3, 4, 5, 6, 7};

static const char *name_of(int code, const char *const *names, const int *codes, int n)
{
    for (int i = 0; i < n; i++)
        if (codes[i] == code)
            return names[i];
    return "?";
}

static int named(const char *v, const char *const *names, const int *codes, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) {
            *out = codes[i];
            return 0;
        }
    return 1;
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){.n = 64, .repeat = 3, .pmax = 4, .sweeps = 1, .max_coarse = 300, .relax = 16,
                .coarsen = 8, .interp = 6, .agg_levels = 0, .print_level = 0, .agg_interp = 1,
                .agg_pmax = 4, .agg_p12_max = 4, .num_paths = 1, .tol = 1e-8, .theta = 0.25,
                .max_row_sum = 0.9, .cheby_order = 2, .cheby_fraction = 0.3};
    static const char *const inames[] = {"EXTI", "DIRECT", "CLASSICAL"};
    static const int icodes[] = {6, 3, 0};
    /* 16 Chebyshev, 18 l1-Jacobi, 0 weighted Jacobi, 3 hybrid Gauss-Seidel,
     * 6 hybrid SSOR */
    static const char *const rnames[] = {"CHEBYSHEV", "L1JACOBI", "JACOBI", "HGS", "SSOR"};
    static const int rcodes[] = {16, 18, 0, 3, 6};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "hypre_driver: %s needs a value\n", a);
            return 1;
        }
        const char *v = argv[++i];
        char *end = NULL;
        int bad = 0;
        if (!strcmp(a, "--n"))
            o->n = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--repeat"))
            o->repeat = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--pmax"))
            o->pmax = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--sweeps"))
            o->sweeps = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--max-coarse"))
            o->max_coarse = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--agg-levels"))
            o->agg_levels = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--agg-interp"))
            bad = named(v, anames, acodes, 7, &o->agg_interp);
        else if (!strcmp(a, "--agg-pmax"))
            o->agg_pmax = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--agg-p12-max"))
            o->agg_p12_max = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--num-paths"))
            o->num_paths = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--print-level"))
            o->print_level = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--tol"))
            o->tol = strtod(v, &end);
        else if (!strcmp(a, "--theta"))
            o->theta = strtod(v, &end);
        else if (!strcmp(a, "--max-row-sum"))
            o->max_row_sum = strtod(v, &end);
        else if (!strcmp(a, "--coarsen"))
            bad = named(v, cnames, ccodes, 3, &o->coarsen);
        else if (!strcmp(a, "--interp"))
            bad = named(v, inames, icodes, 3, &o->interp);
        else if (!strcmp(a, "--relax"))
            bad = named(v, rnames, rcodes, 5, &o->relax);
        else if (!strcmp(a, "--cheby-order"))
            o->cheby_order = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--cheby-fraction"))
            o->cheby_fraction = strtod(v, &end);
        else {
            fprintf(stderr, "hypre_driver: unknown option %s\n", a);
            usage(stderr);
            return 1;
        }
        if (bad || (end && *end)) {
            fprintf(stderr, "hypre_driver: %s: bad value '%s'\n", a, v);
            return 1;
        }
    }
    if (o->n < 2 || o->repeat < 1 || o->sweeps < 1 || o->agg_levels < 0 || o->agg_pmax < 0 ||
        o->agg_p12_max < 0 || o->num_paths < 1) {
        fprintf(stderr, "hypre_driver: need --n >= 2, --repeat >= 1, --sweeps >= 1, "
                        "--agg-levels >= 0, --agg-pmax >= 0, --agg-p12-max >= 0, "
                        "--num-paths >= 1\n");
        return 1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The 7-point Laplacian rows [lo, hi] of the n^3 grid, and b, x0. */
static void build(int n, HYPRE_BigInt lo, HYPRE_BigInt hi, HYPRE_IJMatrix *Aij,
                  HYPRE_IJVector *bij, HYPRE_IJVector *xij)
{
    HYPRE_IJMatrixCreate(MPI_COMM_WORLD, lo, hi, lo, hi, Aij);
    HYPRE_IJMatrixSetObjectType(*Aij, HYPRE_PARCSR);
    HYPRE_IJMatrixInitialize(*Aij);
    HYPRE_IJVectorCreate(MPI_COMM_WORLD, lo, hi, bij);
    HYPRE_IJVectorSetObjectType(*bij, HYPRE_PARCSR);
    HYPRE_IJVectorInitialize(*bij);
    HYPRE_IJVectorCreate(MPI_COMM_WORLD, lo, hi, xij);
    HYPRE_IJVectorSetObjectType(*xij, HYPRE_PARCSR);
    HYPRE_IJVectorInitialize(*xij);
    const long long nn = n;
    for (HYPRE_BigInt row = lo; row <= hi; row++) {
        long long i = row % nn, j = (row / nn) % nn, k = row / (nn * nn);
        HYPRE_BigInt cols[7];
        double vals[7];
        HYPRE_Int nc = 0;
        /* Same column order as ksolve's generator (ascending). */
        if (k > 0) cols[nc] = row - nn * nn, vals[nc++] = -1.0;
        if (j > 0) cols[nc] = row - nn, vals[nc++] = -1.0;
        if (i > 0) cols[nc] = row - 1, vals[nc++] = -1.0;
        cols[nc] = row, vals[nc++] = 6.0;
        if (i < nn - 1) cols[nc] = row + 1, vals[nc++] = -1.0;
        if (j < nn - 1) cols[nc] = row + nn, vals[nc++] = -1.0;
        if (k < nn - 1) cols[nc] = row + nn * nn, vals[nc++] = -1.0;
        /* b_row = sum_c a_rc sin(c) */
        double b = 0.0, zero = 0.0;
        for (int c = 0; c < nc; c++)
            b += vals[c] * sin((double)cols[c]);
        HYPRE_BigInt r = row;
        HYPRE_IJMatrixSetValues(*Aij, 1, &nc, &r, cols, vals);
        HYPRE_IJVectorSetValues(*bij, 1, &r, &b);
        HYPRE_IJVectorSetValues(*xij, 1, &r, &zero);
    }
    HYPRE_IJMatrixAssemble(*Aij);
    HYPRE_IJVectorAssemble(*bij);
    HYPRE_IJVectorAssemble(*xij);
}

/* Levels and complexities of a BoomerAMG hierarchy (hypre's internal data;
 * the same numbers its print level 1 reports). */
static void hierarchy_stats(HYPRE_Solver amg, int *levels, double *opc, double *gridc)
{
    hypre_ParAMGData *d = (hypre_ParAMGData *)amg;
    hypre_ParCSRMatrix **A = hypre_ParAMGDataAArray(d);
    int nl = hypre_ParAMGDataNumLevels(d);
    double nnz0 = 0.0, rows0 = 0.0, nnz = 0.0, rows = 0.0;
    for (int l = 0; l < nl; l++) {
        hypre_ParCSRMatrixSetDNumNonzeros(A[l]);
        double z = hypre_ParCSRMatrixDNumNonzeros(A[l]);
        double r = (double)hypre_ParCSRMatrixGlobalNumRows(A[l]);
        if (l == 0) {
            nnz0 = z;
            rows0 = r;
        }
        nnz += z;
        rows += r;
    }
    *levels = nl;
    *opc = nnz0 > 0 ? nnz / nnz0 : 0.0;
    *gridc = rows0 > 0 ? rows / rows0 : 0.0;
}

typedef struct run {
    double setup, solve, relres;
    int iters, levels;
    double opc, gridc;
} run;

static void solve_once(const opts *o, HYPRE_ParCSRMatrix A, HYPRE_ParVector b, HYPRE_ParVector x,
                       int print, run *r)
{
    HYPRE_Solver amg, pcg;
    HYPRE_BoomerAMGCreate(&amg);
    HYPRE_BoomerAMGSetPrintLevel(amg, print ? o->print_level : 0);
    HYPRE_BoomerAMGSetCoarsenType(amg, o->coarsen);
    HYPRE_BoomerAMGSetInterpType(amg, o->interp);
    HYPRE_BoomerAMGSetPMaxElmts(amg, o->pmax);
    HYPRE_BoomerAMGSetStrongThreshold(amg, o->theta);
    HYPRE_BoomerAMGSetMaxRowSum(amg, o->max_row_sum);
    HYPRE_BoomerAMGSetAggNumLevels(amg, o->agg_levels);
    HYPRE_BoomerAMGSetAggInterpType(amg, o->agg_interp);
    HYPRE_BoomerAMGSetAggPMaxElmts(amg, o->agg_pmax);       /* P = P1 P2 */
    HYPRE_BoomerAMGSetAggP12MaxElmts(amg, o->agg_p12_max);  /* P1 and P2 (2-stage types) */
    HYPRE_BoomerAMGSetNumPaths(amg, o->num_paths);
    HYPRE_BoomerAMGSetRelaxType(amg, o->relax);
    HYPRE_BoomerAMGSetRelaxOrder(amg, 0);
    HYPRE_BoomerAMGSetNumSweeps(amg, o->sweeps);
    HYPRE_BoomerAMGSetChebyOrder(amg, o->cheby_order);
    HYPRE_BoomerAMGSetChebyFraction(amg, o->cheby_fraction);
    HYPRE_BoomerAMGSetCycleRelaxType(amg, 9, 3); /* Gaussian elimination, coarsest */
    HYPRE_BoomerAMGSetCycleNumSweeps(amg, 1, 3);
    HYPRE_BoomerAMGSetMaxCoarseSize(amg, o->max_coarse);
    HYPRE_BoomerAMGSetMaxLevels(amg, 25);
    HYPRE_BoomerAMGSetCycleType(amg, 1); /* V */
    HYPRE_BoomerAMGSetMaxIter(amg, 1);   /* a preconditioner: one cycle */
    HYPRE_BoomerAMGSetTol(amg, 0.0);

    HYPRE_ParCSRPCGCreate(MPI_COMM_WORLD, &pcg);
    HYPRE_PCGSetMaxIter(pcg, 500);
    HYPRE_PCGSetTol(pcg, o->tol);
    HYPRE_PCGSetTwoNorm(pcg, 1); /* ||r||_2 / ||b||_2, as ksolve's RELATIVE_RHS */
    HYPRE_PCGSetPrintLevel(pcg, 0);
    HYPRE_PCGSetPrecond(pcg, (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSolve,
                        (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSetup, amg);

    HYPRE_ParVectorSetConstantValues(x, 0.0); /* x0 = 0 */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    HYPRE_ParCSRPCGSetup(pcg, A, b, x);
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    HYPRE_ParCSRPCGSolve(pcg, A, b, x);
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    HYPRE_Int its = 0;
    double rel = 0.0;
    HYPRE_PCGGetNumIterations(pcg, &its);
    HYPRE_PCGGetFinalRelativeResidualNorm(pcg, &rel);
    r->setup = t1 - t0;
    r->solve = t2 - t1;
    r->iters = its;
    r->relres = rel;
    hierarchy_stats(amg, &r->levels, &r->opc, &r->gridc);
    HYPRE_ParCSRPCGDestroy(pcg);
    HYPRE_BoomerAMGDestroy(amg);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    opts o;
    int prc = parse(argc, argv, &o);
    if (prc) {
        MPI_Finalize();
        return prc == 2 ? 0 : 2;
    }
    HYPRE_Init();

    long long nrows = (long long)o.n * o.n * o.n;
    HYPRE_BigInt lo = (HYPRE_BigInt)(nrows * rank / size);
    HYPRE_BigInt hi = (HYPRE_BigInt)(nrows * (rank + 1) / size) - 1;
    HYPRE_IJMatrix Aij;
    HYPRE_IJVector bij, xij;
    build(o.n, lo, hi, &Aij, &bij, &xij);
    HYPRE_ParCSRMatrix A;
    HYPRE_ParVector b, x;
    HYPRE_IJMatrixGetObject(Aij, (void **)&A);
    HYPRE_IJVectorGetObject(bij, (void **)&b);
    HYPRE_IJVectorGetObject(xij, (void **)&x);

    run warm, r;
    solve_once(&o, A, b, x, 1, &warm);
    double *ts = malloc((size_t)o.repeat * sizeof *ts);
    double *tv = malloc((size_t)o.repeat * sizeof *tv);
    if (!ts || !tv) {
        fprintf(stderr, "hypre_driver: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int k = 0; k < o.repeat; k++) {
        solve_once(&o, A, b, x, 0, &r);
        ts[k] = r.setup;
        tv[k] = r.solve;
    }
    double setup = median(ts, o.repeat), solve = median(tv, o.repeat);
    if (rank == 0) {
        const char *cname = name_of(o.coarsen, cnames, ccodes, 3);
        const char *aname = name_of(o.agg_interp, anames, acodes, 7);
        printf("hypre %s BoomerAMG+PCG, %d MPI ranks, poisson3d_7 n=%d (%lld rows), coarsen %s "
               "(%d), aggressive levels %d (agg_interp_type %d %s, agg_P_max_elmts %d, "
               "agg_P12_max_elmts %d, num_paths %d): levels %d, operator complexity %.3f, "
               "grid complexity %.3f; iterations %d, relative residual %.3e; setup %.4f s, "
               "solve %.4f s, %.3f ms/iteration (medians of %d)\n",
               HYPRE_RELEASE_VERSION, size, o.n, nrows, cname, o.coarsen, o.agg_levels,
               o.agg_interp, aname, o.agg_pmax, o.agg_p12_max, o.num_paths, r.levels, r.opc,
               r.gridc, r.iters, r.relres, setup, solve,
               r.iters > 0 ? 1e3 * solve / r.iters : 0.0, o.repeat);
        printf("RESULT impl=hypre n=%d ranks=%d coarsen=%s agg_levels=%d agg_interp=%d levels=%d "
               "opc=%.4f gridc=%.4f iters=%d relres=%.3e setup=%.5f solve=%.5f "
               "per_iter_ms=%.4f\n",
               o.n, size, cname, o.agg_levels, o.agg_interp, r.levels, r.opc, r.gridc, r.iters,
               r.relres, setup, solve, r.iters > 0 ? 1e3 * solve / r.iters : 0.0);
    }
    free(ts);
    free(tv);
    HYPRE_IJMatrixDestroy(Aij);
    HYPRE_IJVectorDestroy(bij);
    HYPRE_IJVectorDestroy(xij);
    HYPRE_Finalize();
    MPI_Finalize();
    return 0;
}
