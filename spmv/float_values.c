/* float64 -> float32 for the float_values option (float_values.h). */
#include "float_values.h"

#include <math.h>
#include <stdio.h>

/* Values above which the conversion runs on all threads. */
#define KS_FLOAT_VALUES_PARALLEL 200000

/* f[k] and d[k] (each where not NULL) = src[k] rounded to float32; d may be
 * src. Returns the first k whose finite src[k] rounds to inf (n when none):
 * the same whatever the thread count, so it can name the error. */
static size_t round_to_float(const double *src, size_t n, float *f, double *d)
{
    size_t bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad) if (n > KS_FLOAT_VALUES_PARALLEL)
    for (size_t k = 0; k < n; k++) {
        const float v = (float)src[k];
        if (!isfinite(v) && isfinite(src[k])) {
            bad = k < bad ? k : bad;
            continue;
        }
        if (f)
            f[k] = v;
        if (d)
            d[k] = v;
    }
    return bad;
}

static ks_error refuse(const char *what, size_t k, double v)
{
    return ks_seterr(KS_ERR_UNSUPPORTED,
                     "float32 values: %s value %zu (%g) exceeds the float range", what, k, v);
}

ks_error ks_float_values_new(const double *src, size_t n, const char *what, float **dst)
{
    char label[96];
    snprintf(label, sizeof label, "%s float32 values", what);
    *dst = ks_malloc(sizeof(float) * n + 1, label); /* + 1: never malloc(0) */
    if (!*dst)
        return KS_ERR_MEMORY;
    size_t bad = round_to_float(src, n, *dst, NULL);
    if (bad < n) {
        ks_error e = refuse(what, bad, src[bad]);
        free(*dst);
        *dst = NULL;
        return e;
    }
    return KS_OK;
}

ks_error ks_float_values_round(double *v, size_t n, const char *what)
{
    size_t bad = round_to_float(v, n, NULL, v);
    return bad < n ? refuse(what, bad, v[bad]) : KS_OK;
}
