/* SpMV benchmark: for each matrix, the device's copy bandwidth measured in
 * the same run, then per format its setup time, median apply time, achieved
 * bandwidth (format's own bytes and the minimal CSR bytes), GFLOP/s, speed
 * relative to cuSPARSE, and max relative error against the host reference.
 *
 *   bench_spmv [--gen KIND --n N]... [--mtx PATH]... [--backend cuda|cpu]
 *              [--formats all|f1,f2] [--reps 200] [--warmup 20] [--batch 1]
 *              [--threads-per-row T] [--csv out.csv]
 */
#include "ksolve.h"
#include "../spmv/format.h"
#include "bench_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef KS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define MAX_MATRICES 64
#define MAX_FORMATS 32

typedef struct {
    int is_gen;
    ks_gen_kind kind;
    int n;
    const char *path;
} matrix_spec;

typedef struct {
    const char *format;
    char label[48]; /* the format, or "auto:<chosen>" */
    int ok;
    char why[256];
    double setup_s, apply_s, bytes_fmt, err;
} result;

typedef struct {
    const char *backend;
    const char *formats;
    int reps, warmup, batch, tpr;
    const char *csv;
    matrix_spec m[MAX_MATRICES];
    int nm;
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_spmv [--gen KIND --n N]... [--mtx PATH]... [--backend cuda|cpu]\n"
            "                  [--formats all|f1,f2,... (auto: the automatic choice)] [--reps 200] [--warmup 20]\n"
            "                  [--batch K] [--threads-per-row T] [--csv out.csv]\n"
            "  --batch K: each timed sample is K applies back to back, divided by K (1: one\n"
            "  apply on an idle device, launch latency included; 20: as in a solver loop)\n"
            "  KIND: poisson2d_5 poisson2d_9 poisson3d_7 poisson3d_27 aniso3d convdiff3d\n"
            "  Several --gen/--mtx may be given; each --n applies to the --gen before it.\n");
}

static int parse_int(const char *s, int *v)
{
    char *end;
    long x = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || x < 0 || x > 1000000000)
        return 0;
    *v = (int)x;
    return 1;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->backend = ks_backend_available("cuda") ? "cuda" : "cpu";
    ks_clear_error();
    o->formats = "all";
    o->reps = 200;
    o->batch = 1;
    o->warmup = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (!v) {
            fprintf(stderr, "bench_spmv: %s needs a value\n", a);
            return 0;
        }
        i++;
        if (!strcmp(a, "--gen") || !strcmp(a, "--mtx")) {
            if (o->nm == MAX_MATRICES) {
                fprintf(stderr, "bench_spmv: at most %d matrices\n", MAX_MATRICES);
                return 0;
            }
            matrix_spec *m = &o->m[o->nm++];
            if (a[2] == 'g') {
                m->is_gen = 1;
                m->n = 64;
                if (ks_gen_kind_from_name(v, &m->kind) != KS_OK) {
                    fprintf(stderr, "bench_spmv: %s\n", ks_last_error());
                    return 0;
                }
            } else {
                m->path = v;
            }
        } else if (!strcmp(a, "--n")) {
            if (o->nm == 0 || !o->m[o->nm - 1].is_gen || !parse_int(v, &o->m[o->nm - 1].n) ||
                o->m[o->nm - 1].n < 1) {
                fprintf(stderr, "bench_spmv: --n N (N >= 1) must follow a --gen\n");
                return 0;
            }
        } else if (!strcmp(a, "--backend")) {
            o->backend = v;
        } else if (!strcmp(a, "--formats")) {
            o->formats = v;
        } else if (!strcmp(a, "--batch")) {
            if (!parse_int(v, &o->batch) || o->batch < 1) {
                fprintf(stderr, "bench_spmv: --batch wants an integer >= 1\n");
                return 0;
            }
        } else if (!strcmp(a, "--reps")) {
            if (!parse_int(v, &o->reps) || o->reps < 1) {
                fprintf(stderr, "bench_spmv: --reps wants an integer >= 1\n");
                return 0;
            }
        } else if (!strcmp(a, "--warmup")) {
            if (!parse_int(v, &o->warmup)) {
                fprintf(stderr, "bench_spmv: --warmup wants an integer >= 0\n");
                return 0;
            }
        } else if (!strcmp(a, "--threads-per-row")) {
            if (!parse_int(v, &o->tpr)) {
                fprintf(stderr, "bench_spmv: --threads-per-row wants an integer >= 0\n");
                return 0;
            }
        } else if (!strcmp(a, "--csv")) {
            o->csv = v;
        } else {
            fprintf(stderr, "bench_spmv: unknown option %s\n", a);
            usage(stderr);
            return 0;
        }
    }
    if (o->nm == 0) { /* a default problem so a bare run measures something */
        o->m[0].is_gen = 1;
        o->m[0].kind = KS_GEN_POISSON3D_7;
        o->m[0].n = 64;
        o->nm = 1;
    }
    return 1;
}

/* Formats to run: the list (or every one of the backend); on cuda cuSPARSE
 * is always measured, first, since every ratio refers to it. */
static int select_formats(const options *o, ks_backend_kind kind, const char **out)
{
    int n = 0;
    const char *const *names = ks_spmv_format_names(o->backend);
    int cuda = kind == KS_BACKEND_CUDA;
    if (cuda && ks_spmv_format_find("cusparse", kind))
        out[n++] = "cusparse";
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", o->formats);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "all")) { /* every format of the backend, e.g. "all,auto" */
            for (int i = 0; names[i] && n < MAX_FORMATS; i++)
                if (!cuda || strcmp(names[i], "cusparse"))
                    out[n++] = names[i];
            continue;
        }
        if (!strcmp(t, "auto")) { /* the statistics-based choice, shown as auto:<format> */
            if (n < MAX_FORMATS)
                out[n++] = "auto";
            continue;
        }
        const ks_spmv_format_ops *f = ks_spmv_format_find(t, kind);
        if (!f) {
            fprintf(stderr, "bench_spmv: format '%s' is not available on %s; formats:", t,
                    o->backend);
            for (int i = 0; names[i]; i++)
                fprintf(stderr, " %s", names[i]);
            fprintf(stderr, "\n");
            return -1;
        }
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= !strcmp(out[i], f->name);
        if (!dup && n < MAX_FORMATS)
            out[n++] = f->name; /* static storage, unlike the strtok buffer */
    }
    return n;
}

/* ------------------------------------------------------ one format */
/* Max over rows of |y - ref| / (|A||x|)_i, the dot product's natural scale. */
static double max_rel_err(const ks_csr *A, const double *x, const double *y, const double *ref)
{
    double worst = 0.0;
    for (ks_int i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (ks_int j = A->rowptr[i]; j < A->rowptr[i + 1]; j++)
            s += fabs(A->val[j] * x[A->colind[j]]);
        double d = fabs(y[i] - ref[i]) / fmax(s, DBL_MIN);
        if (!(d <= worst))
            worst = isnan(d) ? INFINITY : d;
    }
    return worst;
}

/* One SpMV y = A x, for bench_time. */
typedef struct {
    ks_matrix *M;
    const ks_vec *x;
    ks_vec *y;
} spmv_call;

static ks_error spmv_once(void *ctx)
{
    spmv_call *c = ctx;
    return ks_matrix_apply(c->M, 1.0, c->x, 0.0, c->y);
}

static ks_error time_applies(ks_backend *be, ks_matrix *M, const ks_vec *x, ks_vec *y,
                             int reps, int warmup, int batch, double *t)
{
    spmv_call c = {M, x, y};
    return bench_time(be, spmv_once, &c, reps, warmup, batch, t);
}

static void run_format(ks_backend *be, const options *o, const ks_csr *A, const char *fmt,
                       const ks_vec *vx, ks_vec *vy, const double *x, const double *ref,
                       double *y, double *t, result *res)
{
    memset(res, 0, sizeof *res);
    res->format = fmt;
    ks_spmv_params prm;
    memset(&prm, 0, sizeof prm);
    prm.threads_per_row = !strcmp(fmt, "csr_vector") ? o->tpr : 0;
    ks_matrix *M = NULL;
    ks_error e = ks_matrix_create(be, A, fmt, &prm, &M);
    if (e == KS_OK)
        e = ks_vec_fill(vy, NAN); /* the check below sees only this run's output */
    if (e == KS_OK)
        e = time_applies(be, M, vx, vy, o->reps, o->warmup, o->batch, t);
    if (e == KS_OK)
        e = ks_vec_get_host(vy, y);
    if (e != KS_OK) {
        snprintf(res->why, sizeof res->why, "%s: %s", ks_error_name(e), ks_last_error());
        ks_matrix_destroy(&M);
        return;
    }
    res->ok = 1;
    snprintf(res->label, sizeof res->label, "%s%s", strcmp(fmt, "auto") ? "" : "auto:",
             ks_matrix_format(M));
    res->setup_s = ks_matrix_setup_seconds(M);
    res->bytes_fmt = ks_matrix_bytes_per_apply(M);
    res->apply_s = bench_median(t, o->reps);
    res->err = max_rel_err(A, x, y, ref);
    ks_matrix_destroy(&M);
}

/* ------------------------------------------------------- one matrix */
static int load_matrix(const matrix_spec *m, ks_csr *A, char *name, size_t len)
{
    ks_error e;
    if (m->is_gen) {
        ks_gen_params p;
        ks_gen_params_default(&p);
        p.kind = m->kind;
        p.nx = p.ny = p.nz = m->n;
        e = ks_generate(&p, A);
        snprintf(name, len, "%s_n%d", ks_gen_kind_name(m->kind), m->n);
    } else {
        e = ks_mm_read_csr(m->path, A, NULL);
        const char *base = strrchr(m->path, '/');
        snprintf(name, len, "%s", base ? base + 1 : m->path);
        char *dot = strstr(name, ".mtx");
        if (dot)
            *dot = '\0';
    }
    if (e != KS_OK) {
        fprintf(stderr, "bench_spmv: %s: %s\n", name[0] ? name : "matrix", ks_last_error());
        return 0;
    }
    return 1;
}

static int bench_matrix(ks_backend *be, const options *o, const matrix_spec *m,
                        const char **formats, int nf, FILE *csv)
{
    char name[256] = "";
    ks_csr A;
    memset(&A, 0, sizeof A);
    double tl = ks_wtime();
    if (!load_matrix(m, &A, name, sizeof name))
        return 0;
    tl = ks_wtime() - tl;

    double min_bytes = 12.0 * A.nnz + 4.0 * ((double)A.nrows + 1.0) + 8.0 * A.ncols +
                       8.0 * A.nrows;
    double mib = 0.0;
    int samples = 0;
    double copy_gbs = bench_copy_bandwidth(be, min_bytes, &mib, &samples);
    printf("\n%s: %d x %d, %d nonzeros (%.1f per row), loaded in %.2f s\n", name,
           (int)A.nrows, (int)A.ncols, (int)A.nnz, A.nrows ? (double)A.nnz / A.nrows : 0.0,
           tl);
    printf("copy bandwidth on %s: %.1f GB/s (read+write, %.0f MiB buffer, median of %d)\n",
           ks_backend_description(be), copy_gbs, mib, samples);
    printf("minimal CSR bytes per apply: %.3e (12 nnz + 4 (rows+1) + 8 cols + 8 rows)\n",
           min_bytes);

    double *x = malloc(sizeof(double) * ((size_t)A.ncols + 1));
    double *ref = malloc(sizeof(double) * ((size_t)A.nrows + 1));
    double *y = malloc(sizeof(double) * ((size_t)A.nrows + 1));
    double *t = malloc(sizeof(double) * (size_t)o->reps);
    result *res = calloc((size_t)nf, sizeof *res);
    ks_vec *vx = NULL, *vy = NULL;
    int ok = x && ref && y && t && res;
    if (!ok)
        fprintf(stderr, "bench_spmv: out of host memory\n");
    if (ok) {
        for (ks_int j = 0; j < A.ncols; j++) /* smooth, no zeros, reproducible */
            x[j] = 1.0 + 0.5 * sin(0.001 * (double)j);
        memset(ref, 0, sizeof(double) * ((size_t)A.nrows + 1));
        ks_csr_spmv_ref(&A, 1.0, x, 0.0, ref);
        ok = ks_vec_create(be, A.ncols, &vx) == KS_OK && ks_vec_create(be, A.nrows, &vy) == KS_OK &&
             ks_vec_set_host(vx, x) == KS_OK;
        if (!ok)
            fprintf(stderr, "bench_spmv: vectors: %s\n", ks_last_error());
    }
    double t_cusparse = 0.0;
    for (int f = 0; ok && f < nf; f++) {
        run_format(be, o, &A, formats[f], vx, vy, x, ref, y, t, &res[f]);
        if (res[f].ok && !strcmp(formats[f], "cusparse"))
            t_cusparse = res[f].apply_s;
    }

    if (ok) {
        printf("%-12s %10s %10s %9s %9s %7s %9s %11s %10s\n", "format", "setup_ms", "apply_us",
               "GB/s_fmt", "GB/s_min", "%copy", "GFLOP/s", "vs_cusparse", "max_relerr");
        for (int f = 0; f < nf; f++) {
            const result *r = &res[f];
            if (!r->ok) {
                printf("%-12s failed: %s\n", r->format, r->why);
                continue;
            }
            double gfmt = r->bytes_fmt / r->apply_s * 1e-9;
            double gmin = min_bytes / r->apply_s * 1e-9;
            double gflops = 2.0 * A.nnz / r->apply_s * 1e-9;
            double rel = t_cusparse > 0.0 ? t_cusparse / r->apply_s : NAN;
            char relbuf[32];
            if (isnan(rel))
                snprintf(relbuf, sizeof relbuf, "-");
            else
                snprintf(relbuf, sizeof relbuf, "%.3f", rel);
            int wrong = !(r->err <= 1e-10);
            ok &= !wrong;
            printf("%-12s %10.3f %10.2f %9.1f %9.1f %7.1f %9.2f %11s %10.2e%s\n", r->label,
                   1e3 * r->setup_s, 1e6 * r->apply_s, gfmt, gmin, 100.0 * gmin / copy_gbs,
                   gflops, relbuf, r->err, wrong ? "  WRONG" : "");
            if (csv)
                fprintf(csv,
                        "%s,%s,%s,%d,%d,%d,%.6e,%.6e,%.6e,%.6e,%.4f,%.4f,%.4f,%.4f,%.4f,%s,"
                        "%.3e\n",
                        name, o->backend, r->format, (int)A.nrows, (int)A.ncols, (int)A.nnz,
                        r->setup_s, r->apply_s, r->bytes_fmt, min_bytes, gfmt, gmin,
                        copy_gbs, gmin / copy_gbs, gflops, isnan(rel) ? "" : relbuf, r->err);
        }
        if (csv)
            fflush(csv);
    }
    ks_vec_destroy(&vx);
    ks_vec_destroy(&vy);
    free(x);
    free(ref);
    free(y);
    free(t);
    free(res);
    ks_csr_free(&A);
    return ok;
}

int main(int argc, char **argv)
{
    options o;
    if (!parse_args(argc, argv, &o))
        return 2;
    ks_backend *be = bench_backend("bench_spmv", o.backend);
    if (!be)
        return 1;
    const char *formats[MAX_FORMATS + 1];
    int nf = select_formats(&o, be->ops->kind, formats);
    if (nf <= 0) {
        if (nf == 0)
            fprintf(stderr, "bench_spmv: no formats selected\n");
        ks_backend_destroy(&be);
        return 2;
    }
    FILE *csv = NULL;
    if (o.csv) {
        csv = fopen(o.csv, "w");
        if (!csv) {
            perror(o.csv);
            ks_backend_destroy(&be);
            return 1;
        }
        fprintf(csv, "matrix,backend,format,nrows,ncols,nnz,setup_s,apply_s,bytes_format,"
                     "bytes_min,gbs_format,gbs_min,copy_gbs,frac_copy,gflops,"
                     "speedup_vs_cusparse,max_rel_err\n");
    }
    printf("bench_spmv: backend %s (%s), %d reps after %d warm-up, median apply time "
           "(%d %s per timed sample)\n",
           o.backend, ks_backend_description(be), o.reps, o.warmup, o.batch,
           o.batch > 1 ? "applies back to back" : "apply");
    printf("bytes: GB/s_fmt uses the format's own count (x gathered once per nonzero), "
           "GB/s_min the minimal CSR count (x read once); vs_cusparse = t_cusparse / t\n");
    int failures = 0;
    for (int i = 0; i < o.nm; i++)
        failures += !bench_matrix(be, &o, &o.m[i], formats, nf, csv);
    if (csv)
        fclose(csv);
    ks_backend_destroy(&be);
    return failures ? 1 : 0;
}
