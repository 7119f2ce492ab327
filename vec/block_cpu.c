/* Block-vector kernels of the cpu backend: OpenMP over rows, the k columns
 * of a row contiguous (the inner loop runs over them). The dot sums each
 * column over fixed row blocks, then the block sums pairwise in block
 * order, so results do not depend on the thread count. */
#include "block_cpu.h"

#include <stdlib.h>

/* Below this many entries (n*k) a kernel runs on one thread. */
#define KS_CPU_BLOCK_PAR_MIN 16384

/* BODY for every row i, with o = i*k its first entry; the rows split over
 * the team when n*k is large. */
#define EACH_ROW(n, k, BODY)                                                                  \
    do {                                                                                      \
        const int64_t work_ = (int64_t)(n) * (k);                                             \
        (void)work_;                                                                          \
        _Pragma("omp parallel for schedule(static) if (work_ > KS_CPU_BLOCK_PAR_MIN)")        \
        for (ks_int i = 0; i < (n); i++) {                                                    \
            const size_t o = (size_t)i * (size_t)(k);                                         \
            BODY                                                                              \
        }                                                                                     \
    } while (0)

ks_error ks_cpu_baxpby(ks_backend *be, ks_int n, int k, const double *a, const double *x,
                       const double *b, double *y)
{
    (void)be;
    EACH_ROW(n, k, {
        for (int j = 0; j < k; j++) {
            /* b[j] == 0 must not read y (garbage or NaN there, as BLAS) */
            double v = b[j] == 0.0 ? 0.0 : b[j] * y[o + j];
            y[o + j] = x ? a[j] * x[o + j] + v : v;
        }
    });
    return KS_OK;
}

/* baxpby's expressions, y's (b = 1) then p's (a = 1): the same bits. */
ks_error ks_cpu_baxpy_aypx(ks_backend *be, ks_int n, int k, const double *a, double *p,
                           double *y, const double *b, const double *z)
{
    (void)be;
    EACH_ROW(n, k, {
        for (int j = 0; j < k; j++) {
            const double pv = p[o + j];
            y[o + j] = a[j] * pv + 1.0 * y[o + j];
            const double v = b[j] == 0.0 ? 0.0 : b[j] * pv;
            p[o + j] = 1.0 * z[o + j] + v;
        }
    });
    return KS_OK;
}

ks_error ks_cpu_baxpbypcz(ks_backend *be, ks_int n, int k, const double *a, const double *x,
                          const double *b, const double *y, const double *c, double *z)
{
    (void)be;
    EACH_ROW(n, k, {
        for (int j = 0; j < k; j++) {
            double v = a[j] * x[o + j] + b[j] * y[o + j];
            z[o + j] = c[j] == 0.0 ? v : v + c[j] * z[o + j];
        }
    });
    return KS_OK;
}

ks_error ks_cpu_bpmul(ks_backend *be, ks_int n, int k, const double *w, const double *x,
                      double *y)
{
    (void)be;
    EACH_ROW(n, k, {
        for (int j = 0; j < k; j++)
            y[o + j] = w[i] * x[o + j];
    });
    return KS_OK;
}

ks_error ks_cpu_bgather(ks_backend *be, ks_int n, int kx, const double *x, int m,
                        const int *cols, double *y)
{
    (void)be;
    EACH_ROW(n, m, {
        for (int q = 0; q < m; q++)
            y[o + q] = x[(size_t)i * kx + cols[q]];
    });
    return KS_OK;
}

ks_error ks_cpu_bscatter(ks_backend *be, ks_int n, int m, const double *y, const int *cols,
                         int kx, double *x)
{
    (void)be;
    EACH_ROW(n, m, {
        for (int q = 0; q < m; q++)
            x[(size_t)i * kx + cols[q]] = y[o + q];
    });
    return KS_OK;
}
