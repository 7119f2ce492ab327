/* Matrix Market read throughput.
 *
 *   bench_mmio [n [kind]]      (defaults: 100, poisson3d_7)
 *
 * Generates an n^3 (or n^2 for 2D kinds) stencil matrix, writes it as
 * .mtx and .mtx.gz under $TMPDIR (default /tmp), reads each back three
 * times with ks_mm_read_csr and prints the median time as MB/s of file
 * text and million entries per second. Done twice: with the stencil's
 * short integer values ("6", "-1") and with the values perturbed to full
 * 17-digit precision, as in most application matrices. The files are
 * removed afterwards. */
#include "ksolve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static double file_mb(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (double)st.st_size / 1e6 : 0.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of 3 read times; 0 on failure (message printed). */
static double time_read(const char *path, ks_int want_nnz)
{
    double t[3];
    for (int r = 0; r < 3; r++) {
        ks_csr A;
        double t0 = ks_wtime();
        ks_error e = ks_mm_read_csr(path, &A, NULL);
        t[r] = ks_wtime() - t0;
        if (e != KS_OK) {
            fprintf(stderr, "bench_mmio: reading %s failed: %s\n", path, ks_last_error());
            return 0.0;
        }
        if (A.nnz != want_nnz) {
            fprintf(stderr, "bench_mmio: %s read back %d entries, expected %d\n", path, A.nnz,
                    want_nnz);
            ks_csr_free(&A);
            return 0.0;
        }
        ks_csr_free(&A);
    }
    qsort(t, 3, sizeof t[0], cmp_double);
    return t[1];
}

int main(int argc, char **argv)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    int n = argc > 1 ? atoi(argv[1]) : 100;
    if (n < 1 || (argc > 2 && ks_gen_kind_from_name(argv[2], &p.kind) != KS_OK)) {
        fprintf(stderr, "usage: %s [n [kind]]   (n >= 1; %s)\n", argv[0],
                n < 1 ? "bad n" : ks_last_error());
        return 2;
    }
    p.nx = p.ny = p.nz = n;
    ks_csr A;
    double t0 = ks_wtime();
    if (ks_generate(&p, &A) != KS_OK) {
        fprintf(stderr, "bench_mmio: %s\n", ks_last_error());
        return 1;
    }
    double tgen = ks_wtime() - t0;
    printf("matrix       : %s n=%d, %d rows, %d nonzeros (generated in %.3f s)\n",
           ks_gen_kind_name(p.kind), n, A.nrows, A.nnz, tgen);

    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    char path[2][1024];
    snprintf(path[0], sizeof path[0], "%s/ks_bench_mmio_%ld.mtx", dir, (long)getpid());
    snprintf(path[1], sizeof path[1], "%s/ks_bench_mmio_%ld.mtx.gz", dir, (long)getpid());
    int status = 0;
    for (int full = 0; full < 2 && status == 0; full++) {
        if (full) /* 17 significant digits per value */
            for (ks_int k = 0; k < A.nnz; k++)
                A.val[k] *= 1.0 + 1e-3 * sin((double)k);
        printf("-- values: %s\n", full ? "full precision (%.17g, ~22 chars)" : "short integers");
        double text_mb = 0.0;
        for (int g = 0; g < 2 && status == 0; g++) {
            t0 = ks_wtime();
            if (ks_mm_write_csr(path[g], &A) != KS_OK) {
                fprintf(stderr, "bench_mmio: %s\n", ks_last_error());
                status = 1;
                break;
            }
            double tw = ks_wtime() - t0, mb = file_mb(path[g]);
            if (g == 0)
                text_mb = mb;
            printf("write %-7s: %8.1f MB in %6.3f s = %7.1f MB/s\n", g ? ".mtx.gz" : ".mtx", mb,
                   tw, mb / tw);
            double tr = time_read(path[g], A.nnz);
            if (tr <= 0.0) {
                status = 1;
                break;
            }
            if (g == 0)
                printf("read  .mtx   : %8.1f MB in %6.3f s = %7.1f MB/s, %6.2f M entries/s "
                       "(median of 3)\n", mb, tr, mb / tr, A.nnz / tr / 1e6);
            else
                printf("read  .mtx.gz: %8.1f MB in %6.3f s = %7.1f MB/s compressed, %7.1f MB/s "
                       "of text, %6.2f M entries/s (median of 3)\n", mb, tr, mb / tr,
                       text_mb / tr, A.nnz / tr / 1e6);
        }
    }
    unlink(path[0]);
    unlink(path[1]);
    ks_csr_free(&A);
    return status;
}
