/* Sorting global ids, each kept once: the lists of ghost and external ids
 * the distributed setup numbers (gmap.c, pmis_graph_dist.c) hold every
 * entry's column, so mostly repeats, and a qsort with a comparison
 * callback dominated the setup on several ranks. A least-significant-digit
 * radix sort on the ids less the least one: a rank's neighbourhood spans
 * few bits, so two or three passes. */
#include "mpi_internal.h"

#include <stdint.h>
#include <string.h>

#define DIGIT_BITS 11
#define SHORT_LIST 64

static void insertion_sort(ks_gint *v, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        const ks_gint x = v[i];
        int64_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static int bits_of(uint64_t x)
{
    int b = 0;
    for (; x; x >>= 1)
        b++;
    return b;
}

/* v ascending, by the digits of v - lo (tmp: n ids of scratch). */
static void radix_sort(ks_gint *v, ks_gint *tmp, int64_t n, ks_gint lo, int bits)
{
    enum { R = 1 << DIGIT_BITS };
    int64_t cnt[R];
    ks_gint *src = v, *dst = tmp;
    for (int shift = 0; shift < bits; shift += DIGIT_BITS) {
        memset(cnt, 0, sizeof cnt);
        for (int64_t k = 0; k < n; k++)
            cnt[((uint64_t)(src[k] - lo) >> shift) & (R - 1)]++;
        int64_t at = 0;
        for (int d = 0; d < R; d++) {
            const int64_t c = cnt[d];
            cnt[d] = at;
            at += c;
        }
        for (int64_t k = 0; k < n; k++)
            dst[cnt[((uint64_t)(src[k] - lo) >> shift) & (R - 1)]++] = src[k];
        ks_gint *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, (size_t)n * sizeof *v);
}

ks_error ks_gint_sort(ks_gint *v, int64_t n)
{
    if (n <= SHORT_LIST) {
        insertion_sort(v, n);
    } else {
        ks_gint lo = v[0], hi = v[0];
        for (int64_t k = 1; k < n; k++) {
            lo = v[k] < lo ? v[k] : lo;
            hi = v[k] > hi ? v[k] : hi;
        }
        ks_gint *tmp = ks_malloc((size_t)n * sizeof *tmp, "id sort scratch");
        if (!tmp)
            return KS_ERR_MEMORY;
        radix_sort(v, tmp, n, lo, bits_of((uint64_t)(hi - lo)));
        free(tmp);
    }
    return KS_OK;
}

ks_error ks_gint_sort_unique(ks_gint *v, int64_t n, int64_t *m)
{
    *m = 0;
    KS_TRY(ks_gint_sort(v, n));
    int64_t u = 0;
    for (int64_t k = 0; k < n; k++)
        if (u == 0 || v[k] != v[u - 1])
            v[u++] = v[k];
    *m = u;
    return KS_OK;
}
