/* SpMM benchmark: Y = A X on blocks of k columns (ks_matrix_apply_block)
 * for each format against cuSPARSE's SpMM in the same run, with the
 * device's copy bandwidth measured first (the byte floor's yardstick).
 * Per format: median SpMM time, the bytes it must move (the format's
 * matrix arrays once, X's k columns read once, Y's written once), the
 * bandwidth those bytes give as % of the copy bandwidth, the speed against
 * cuSPARSE's SpMM, the time per right-hand side against one SpMV of the
 * same format, and the largest error of any column against the float64
 * host reference.
 *
 *   bench_spmm [--gen KIND] [--n 256] [--k 8] [--formats f1,f2,...]
 *              [--reps 100] [--warmup 10] [--backend cuda|cpu]
 */
#include "ksolve.h"
#include "../spmv/format.h"
#include "bench_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FORMATS 16

typedef struct {
    const char *backend, *formats;
    ks_gen_kind kind;
    int n, k, reps, warmup;
} options;

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_spmm [--gen KIND] [--n 256] [--k 8] [--formats f1,f2,...]\n"
               "                  [--reps 100] [--warmup 10] [--backend cuda|cpu]\n"
               "  default formats: dia,bdia,csr_vector,csr_adaptive,sell on cuda (cusparse\n"
               "  always first), csr on cpu; KIND as bench_spmv's (default poisson3d_7)\n");
}

static int parse_args(int argc, char **argv, options *o)
{
    o->backend = ks_backend_available("cuda") ? "cuda" : "cpu";
    o->formats = NULL;
    o->kind = KS_GEN_POISSON3D_7;
    o->n = 256;
    o->k = 8;
    o->reps = 100;
    o->warmup = 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (!v) {
            fprintf(stderr, "bench_spmm: %s needs a value\n", a);
            return 0;
        }
        i++;
        int *iv = !strcmp(a, "--n") ? &o->n : !strcmp(a, "--k") ? &o->k
                : !strcmp(a, "--reps") ? &o->reps : !strcmp(a, "--warmup") ? &o->warmup : NULL;
        if (iv) {
            char *end;
            long x = strtol(v, &end, 10);
            if (*end || x < (iv == &o->warmup ? 0 : 1) || x > 100000) {
                fprintf(stderr, "bench_spmm: %s wants a positive integer\n", a);
                return 0;
            }
            *iv = (int)x;
        } else if (!strcmp(a, "--formats")) {
            o->formats = v;
        } else if (!strcmp(a, "--backend")) {
            o->backend = v;
        } else if (!strcmp(a, "--gen")) {
            if (ks_gen_kind_from_name(v, &o->kind) != KS_OK) {
                fprintf(stderr, "bench_spmm: %s\n", ks_last_error());
                return 0;
            }
        } else {
            fprintf(stderr, "bench_spmm: unknown option %s\n", a);
            usage(stderr);
            return 0;
        }
    }
    if (o->k > KS_BLOCK_MAX_COLS) {
        fprintf(stderr, "bench_spmm: --k at most %d\n", KS_BLOCK_MAX_COLS);
        return 0;
    }
    return 1;
}

typedef struct {
    ks_matrix *M;
    const ks_block *X;
    ks_block *Y;
    const ks_vec *x;
    ks_vec *y;
} call;

static ks_error spmm_once(void *ctx)
{
    call *c = ctx;
    return ks_matrix_apply_block(c->M, 1.0, c->X, 0.0, c->Y);
}

static ks_error spmv_once(void *ctx)
{
    call *c = ctx;
    return ks_matrix_apply(c->M, 1.0, c->x, 0.0, c->y);
}

/* The bytes of the format's own arrays, read once an apply: what its state
 * holds on the backend, or the CSR's arrays when the state keeps the
 * matrix's own (csr_vector from a device CSR). */
static double matrix_bytes(const ks_matrix *M, const ks_csr *A)
{
    const double csr = 12.0 * A->nnz + 4.0 * ((double)A->nrows + 1);
    return M->state_bytes > 0.0 ? M->state_bytes : csr;
}

/* Largest error of Y's columns against the host reference, each row
 * scaled by sum |a_ij x_j| (the dot product's natural scale). */
static double max_col_err(const ks_csr *A, int k, const double *X, const double *Y)
{
    double worst = 0.0;
#pragma omp parallel for reduction(max : worst) schedule(static)
    for (ks_int i = 0; i < A->nrows; i++)
        for (int j = 0; j < k; j++) {
            double s = 0.0, a = 0.0;
            for (ks_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                const double t = A->val[p] * X[(size_t)A->colind[p] * k + j];
                s += t;
                a += fabs(t);
            }
            double d = fabs(Y[(size_t)i * k + j] - s) / fmax(a, DBL_MIN);
            if (!(d <= worst))
                worst = isnan(d) ? INFINITY : d;
        }
    return worst;
}

int main(int argc, char **argv)
{
    options o;
    if (!parse_args(argc, argv, &o))
        return 2;
    ks_backend *be = bench_backend("bench_spmm", o.backend);
    if (!be)
        return 1;
    const int cuda = be->ops->kind == KS_BACKEND_CUDA;
    char flist[512];
    snprintf(flist, sizeof flist, "%s%s", cuda ? "cusparse," : "",
             o.formats ? o.formats : cuda ? "dia,bdia,csr_vector,csr_adaptive,sell" : "csr");
    ks_gen_params gp;
    ks_gen_params_default(&gp);
    gp.kind = o.kind;
    gp.nx = gp.ny = gp.nz = o.n;
    ks_csr A;
    if (ks_generate(&gp, &A) != KS_OK) {
        fprintf(stderr, "bench_spmm: %s\n", ks_last_error());
        ks_backend_destroy(&be);
        return 1;
    }
    const int k = o.k;
    const size_t mx = (size_t)A.ncols * k, my = (size_t)A.nrows * k;
    double *hx = malloc(mx * sizeof(double)), *hy = malloc(my * sizeof(double));
    double *t = malloc((size_t)o.reps * sizeof(double));
    ks_block *X = NULL, *Y = NULL;
    ks_vec *x = NULL, *y = NULL;
    int ok = hx && hy && t;
    for (size_t e = 0; ok && e < mx; e++)
        hx[e] = 1.0 + 0.5 * sin(0.001 * (double)(e / k) + (double)(e % k));
    ok = ok && ks_block_create(be, A.ncols, k, &X) == KS_OK &&
         ks_block_create(be, A.nrows, k, &Y) == KS_OK && ks_block_set_host(X, hx) == KS_OK &&
         ks_vec_create(be, A.ncols, &x) == KS_OK && ks_vec_create(be, A.nrows, &y) == KS_OK &&
         ks_block_get_col(X, 0, x) == KS_OK;
    if (!ok)
        fprintf(stderr, "bench_spmm: setup: %s\n", ks_last_error());
    double mib = 0.0;
    int samples = 0;
    const double copy_gbs = ok ? bench_copy_bandwidth(be, 8.0 * (double)(mx + my), &mib, &samples)
                               : NAN;
    if (ok) {
        printf("bench_spmm: %s n=%d (%d rows, %d nonzeros), k = %d, backend %s (%s)\n",
               ks_gen_kind_name(o.kind), o.n, (int)A.nrows, (int)A.nnz, k, o.backend,
               ks_backend_description(be));
        printf("copy bandwidth: %.1f GB/s (read+write, %.0f MiB, median of %d); SpMM and SpMV "
               "times: median of %d after %d warm-up\n",
               copy_gbs, mib, samples, o.reps, o.warmup);
        if (cuda && getenv("KS_DIA_SPMM")) /* which dia SpMM kernel (docs/blocks.md) */
            printf("KS_DIA_SPMM=%s\n", getenv("KS_DIA_SPMM"));
        printf("%-13s %10s %10s %11s %8s %7s %11s %11s %10s %10s\n", "format", "spmm_us",
               "spmv_us", "bytes/row", "GB/s", "%floor", "vs_cusparse", "per_rhs/mv", "spmm",
               "max_err");
    }
    double t_cusparse = NAN;
    char *save = NULL;
    for (char *f = strtok_r(flist, ",", &save); ok && f; f = strtok_r(NULL, ",", &save)) {
        ks_matrix *M = NULL;
        call c = {NULL, X, Y, x, y};
        double tmm = NAN, tmv = NAN;
        ks_error e = ks_matrix_create(be, &A, f, NULL, &M);
        c.M = M;
        if (e == KS_OK)
            e = ks_block_fill(Y, NAN); /* the check sees only this format's output */
        if (e == KS_OK)
            e = bench_time(be, spmm_once, &c, o.reps, o.warmup, 1, t);
        if (e == KS_OK) {
            tmm = bench_median(t, o.reps);
            e = ks_block_get_host(Y, hy);
        }
        if (e == KS_OK)
            e = bench_time(be, spmv_once, &c, o.reps, o.warmup, 1, t);
        if (e != KS_OK) {
            printf("%-13s failed: %s: %s\n", f, ks_error_name(e), ks_last_error());
            ks_matrix_destroy(&M);
            continue;
        }
        tmv = bench_median(t, o.reps);
        if (!strcmp(f, "cusparse"))
            t_cusparse = tmm;
        const double bytes = matrix_bytes(M, &A) + 8.0 * (double)(mx + my);
        const double gbs = bytes / tmm * 1e-9, err = max_col_err(&A, k, hx, hy);
        const int wrong = !(err <= 1e-10);
        ok &= !wrong;
        printf("%-13s %10.1f %10.1f %11.1f %8.1f %7.1f %11.3f %11.3f %10s %10.2e%s\n", f,
               1e6 * tmm, 1e6 * tmv, bytes / A.nrows, gbs, 100.0 * gbs / copy_gbs,
               t_cusparse / tmm, tmm / k / tmv, ks_matrix_has_spmm(M) ? "own" : "k SpMVs", err,
               wrong ? "  WRONG" : "");
        ks_matrix_destroy(&M);
    }
    ks_block_destroy(&X);
    ks_block_destroy(&Y);
    ks_vec_destroy(&x);
    ks_vec_destroy(&y);
    free(hx);
    free(hy);
    free(t);
    ks_csr_free(&A);
    ks_backend_destroy(&be);
    return ok ? 0 : 1;
}
