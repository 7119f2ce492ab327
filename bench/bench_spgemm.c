/* Sparse product benchmark: our device SpGEMM against cuSPARSE's
 * (KS_SPGEMM=cusparse) on A*A and the Galerkin product R A P, for the
 * 7-point Poisson matrix on an n^3 grid with P aggregating 2x2x2 blocks
 * (R = P^T), and R4 A P4 with an interpolation-like P4 of 4 entries a row
 * onto the same coarse grid (R4 = P4^T: about 32 entries a row, the shape
 * of an aggressive-coarsening stage of the AMG setup); also the numeric
 * passes (re-setup, ours only), the transpose of P and the input check
 * every product makes. Each time is the median of
 * --reps synchronised calls after --warmup calls; the two results are
 * compared (same pattern, values to rounding).
 *
 *   bench_spgemm [--n 64,128] [--reps 5] [--warmup 1] [--backend cuda|cpu]
 *
 * On the cpu backend only our (host) kernels are timed. */
#include "ksolve.h"
#include "../sparse/sparse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 16
#define MAX_REPS 101

typedef enum {
    OP_AA,
    OP_RAP,
    OP_RAP4,
    OP_AA_NUMERIC,
    OP_RAP_NUMERIC,
    OP_RAP4_NUMERIC,
    OP_TRANSPOSE,
    OP_VALIDATE
} op_kind;

static const char *const op_names[] = {"A*A",           "R*A*P",         "R4*A*P4",
                                       "A*A numeric",   "R*A*P numeric", "R4*A*P4 numeric",
                                       "P^T",           "validate A"};

typedef struct {
    ks_backend *be;
    ks_sparse A, P, R, P4, R4;
    ks_sparse C, G, G4; /* A*A, R A P and R4 A P4: the patterns the numeric passes fill */
} problem;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(ks_error e, const char *what)
{
    fprintf(stderr, "bench_spgemm: %s: %s: %s\n", what, ks_error_name(e), ks_last_error());
    exit(1);
}

/* One call of op; *out (freed by the caller) for the products. */
static ks_error run_op(problem *p, op_kind op, ks_sparse *out)
{
    int outside = 0;
    memset(out, 0, sizeof *out);
    switch (op) {
    case OP_AA:
        return ks_sparse_spgemm(&p->A, &p->A, out);
    case OP_RAP:
        return ks_sparse_rap(&p->R, &p->A, &p->P, out);
    case OP_RAP4:
        return ks_sparse_rap(&p->R4, &p->A, &p->P4, out);
    case OP_AA_NUMERIC:
        return ks_sparse_spgemm_numeric(&p->A, &p->A, &p->C);
    case OP_RAP_NUMERIC:
    case OP_RAP4_NUMERIC: {
        ks_error e = op == OP_RAP_NUMERIC
                         ? ks_sparse_rap_numeric(&p->R, &p->A, &p->P, &p->G, &outside)
                         : ks_sparse_rap_numeric(&p->R4, &p->A, &p->P4, &p->G4, &outside);
        return e == KS_OK && outside ? ks_seterr(KS_ERR_ARG, "R A P outside its pattern") : e;
    }
    case OP_TRANSPOSE:
        return ks_sparse_transpose(&p->P, out);
    default:
        return ks_sparse_validate(&p->A);
    }
}

/* Median seconds of reps synchronised calls after warmup calls. */
static double time_op(problem *p, op_kind op, int reps, int warmup)
{
    double t[MAX_REPS];
    for (int r = -warmup; r < reps; r++) {
        ks_sparse out;
        ks_error e = ks_backend_sync(p->be);
        double t0 = ks_wtime();
        if (e == KS_OK)
            e = run_op(p, op, &out);
        if (e == KS_OK)
            e = ks_backend_sync(p->be);
        double t1 = ks_wtime();
        if (e != KS_OK)
            die(e, op_names[op]);
        ks_sparse_free(&out);
        if (r >= 0)
            t[r] = t1 - t0;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

/* P(i, agg(i)) = 1 for the 2x2x2 block of grid point i of an n^3 grid. */
static void aggregation(ks_int n, ks_csr *P)
{
    const ks_int nc = (n + 1) / 2, rows = n * n * n;
    ks_error e = ks_csr_alloc(P, rows, nc * nc * nc, rows);
    if (e != KS_OK)
        die(e, "aggregation P");
    for (ks_int z = 0; z < n; z++)
        for (ks_int y = 0; y < n; y++)
            for (ks_int x = 0; x < n; x++) {
                ks_int i = x + n * (y + n * z);
                P->rowptr[i] = i;
                P->colind[i] = x / 2 + nc * (y / 2 + nc * (z / 2));
                P->val[i] = 1.0;
            }
    P->rowptr[rows] = rows;
}

/* P4(i, c) = 1/4 for the coarse points c = (x/2 + a, y/2 + b, z/2), a, b
 * in {0, 1} (clamped to the coarse grid, so boundary rows have fewer):
 * grid point i = (x, y, z) of an n^3 grid. */
static void interpolation4(ks_int n, ks_csr *P)
{
    const ks_int nc = (n + 1) / 2, rows = n * n * n;
    ks_int *r = malloc(sizeof *r * 4 * (size_t)rows), *c = malloc(sizeof *c * 4 * (size_t)rows);
    double *v = malloc(sizeof *v * 4 * (size_t)rows);
    if (!r || !c || !v)
        die(KS_ERR_MEMORY, "interpolation P4");
    int64_t ne = 0;
    for (ks_int z = 0; z < n; z++)
        for (ks_int y = 0; y < n; y++)
            for (ks_int x = 0; x < n; x++)
                for (int ab = 0; ab < 4; ab++) {
                    ks_int cx = x / 2 + (ab & 1), cy = y / 2 + (ab >> 1);
                    cx = cx < nc ? cx : nc - 1;
                    cy = cy < nc ? cy : nc - 1;
                    r[ne] = x + n * (y + n * z);
                    c[ne] = cx + nc * (cy + nc * (z / 2));
                    v[ne++] = 0.25;
                }
    ks_error e = ks_csr_from_coo(rows, nc * nc * nc, ne, r, c, v, P, NULL);
    free(r);
    free(c);
    free(v);
    if (e != KS_OK)
        die(e, "interpolation P4");
}

/* Max relative difference of two products with the same pattern, or -1
 * when the patterns differ. */
static double compare(const ks_sparse *X, const ks_sparse *Y)
{
    ks_csr a, b;
    if (ks_sparse_to_csr(X, &a) != KS_OK || ks_sparse_to_csr(Y, &b) != KS_OK)
        die(KS_ERR_DEVICE, "downloading products");
    double err = -1.0;
    if (a.nnz == b.nnz && a.nrows == b.nrows &&
        !memcmp(a.rowptr, b.rowptr, sizeof(ks_int) * ((size_t)a.nrows + 1)) &&
        (a.nnz == 0 || !memcmp(a.colind, b.colind, sizeof(ks_int) * (size_t)a.nnz))) {
        err = 0.0;
        for (ks_int k = 0; k < a.nnz; k++) {
            double d = fabs(a.val[k] - b.val[k]) / fmax(1.0, fabs(b.val[k]));
            err = d > err ? d : err;
        }
    }
    ks_csr_free(&a);
    ks_csr_free(&b);
    return err;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_spgemm [--n 64,128] [--reps 5] [--warmup 1] [--backend cuda|cpu]\n");
}

int main(int argc, char **argv)
{
    int sizes[MAX_SIZES] = {64, 128}, nsizes = 2, reps = 5, warmup = 1;
    const char *backend = "cuda";
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--n") && a + 1 < argc) {
            nsizes = 0;
            for (char *s = strtok(argv[++a], ","); s && nsizes < MAX_SIZES; s = strtok(NULL, ","))
                sizes[nsizes++] = atoi(s);
        } else if (!strcmp(argv[a], "--reps") && a + 1 < argc) {
            reps = atoi(argv[++a]);
        } else if (!strcmp(argv[a], "--warmup") && a + 1 < argc) {
            warmup = atoi(argv[++a]);
        } else if (!strcmp(argv[a], "--backend") && a + 1 < argc) {
            backend = argv[++a];
        } else {
            usage(strcmp(argv[a], "--help") ? stderr : stdout);
            return strcmp(argv[a], "--help") ? 2 : 0;
        }
    }
    if (reps < 1 || reps > MAX_REPS || warmup < 0 || nsizes < 1) {
        usage(stderr);
        return 2;
    }
    ks_backend *be;
    ks_error e = ks_backend_create(backend, &be);
    if (e != KS_OK)
        die(e, backend);
    const int gpu = !ks_backend_host_memory(be);
    printf("# bench_spgemm on %s: %s; median of %d after %d warm-up\n", backend,
           ks_backend_description(be), reps, warmup);
    printf("%-6s %-16s %12s %12s %14s %10s %12s\n", "n", "op", "nnz", "ours ms",
           "cusparse ms", "cus/ours", "max rel diff");
    for (int s = 0; s < nsizes; s++) {
        const ks_int n = sizes[s];
        ks_gen_params gp;
        ks_gen_params_default(&gp);
        gp.kind = KS_GEN_POISSON3D_7;
        gp.nx = gp.ny = gp.nz = n;
        ks_csr Ah, Ph, P4h;
        if ((e = ks_generate(&gp, &Ah)) != KS_OK)
            die(e, "generating A");
        aggregation(n, &Ph);
        interpolation4(n, &P4h);
        problem p;
        memset(&p, 0, sizeof p);
        p.be = be;
        if ((e = ks_sparse_from_csr(be, &Ah, 0, &p.A)) != KS_OK ||
            (e = ks_sparse_from_csr(be, &Ph, 0, &p.P)) != KS_OK ||
            (e = ks_sparse_transpose(&p.P, &p.R)) != KS_OK ||
            (e = ks_sparse_from_csr(be, &P4h, 0, &p.P4)) != KS_OK ||
            (e = ks_sparse_transpose(&p.P4, &p.R4)) != KS_OK)
            die(e, "uploading");
        ks_csr_free(&Ah);
        ks_csr_free(&Ph);
        ks_csr_free(&P4h);
        for (int op = OP_AA; op <= OP_VALIDATE; op++) {
            const int fresh = op == OP_AA || op == OP_RAP || op == OP_RAP4;
            const int both = gpu && fresh;
            unsetenv("KS_SPGEMM");
            double t_ours = time_op(&p, (op_kind)op, reps, warmup), t_cus = 0.0, err = 0.0;
            ks_sparse ours, cus;
            ks_int nnz = 0;
            if (fresh) {
                if ((e = run_op(&p, (op_kind)op, &ours)) != KS_OK)
                    die(e, op_names[op]);
                nnz = ours.nnz;
            }
            if (both) {
                setenv("KS_SPGEMM", "cusparse", 1);
                t_cus = time_op(&p, (op_kind)op, reps, warmup);
                if ((e = run_op(&p, (op_kind)op, &cus)) != KS_OK)
                    die(e, op_names[op]);
                unsetenv("KS_SPGEMM");
                err = compare(&cus, &ours);
                ks_sparse_free(&cus);
            }
            if (op == OP_AA)
                p.C = ours; /* the patterns the numeric passes fill */
            else if (op == OP_RAP)
                p.G = ours;
            else if (op == OP_RAP4)
                p.G4 = ours;
            if (both)
                printf("%-6d %-16s %12d %12.3f %14.3f %10.2f %12.2g%s\n", (int)n, op_names[op],
                       (int)nnz, 1e3 * t_ours, 1e3 * t_cus, t_cus / t_ours, err,
                       err < 0 ? " (PATTERNS DIFFER)" : "");
            else if (nnz > 0)
                printf("%-6d %-16s %12d %12.3f %14s %10s %12s\n", (int)n, op_names[op], (int)nnz,
                       1e3 * t_ours, "-", "-", "-");
            else
                printf("%-6d %-16s %12s %12.3f %14s %10s %12s\n", (int)n, op_names[op], "-",
                       1e3 * t_ours, "-", "-", "-");
        }
        ks_sparse_free(&p.A);
        ks_sparse_free(&p.P);
        ks_sparse_free(&p.R);
        ks_sparse_free(&p.P4);
        ks_sparse_free(&p.R4);
        ks_sparse_free(&p.C);
        ks_sparse_free(&p.G);
        ks_sparse_free(&p.G4);
    }
    ks_backend_destroy(&be);
    return 0;
}
