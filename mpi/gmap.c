/* Compact 32-bit numbers for 64-bit global ids, ordered like them: the
 * ids below a dense range, the whole range, the ids above it. A rank's
 * ghost columns (dist_csr.c, prows_dist.c) are the ids outside its own
 * range; the local views of the setup's products (local_rows.c) number
 * every column at hand this way. */
#include "mpi_internal.h"

#include <stdint.h>
#include <string.h>

static int cmp_gint(const void *a, const void *b)
{
    const ks_gint x = *(const ks_gint *)a, y = *(const ks_gint *)b;
    return (x > y) - (x < y);
}

void ks_gmap_free(ks_gmap *m)
{
    if (m && m->own_ext)
        free(m->ext);
    if (m)
        memset(m, 0, sizeof *m);
}

void ks_gmap_borrow(ks_gint lo, ks_gint hi, const ks_gint *ext, ks_int next, ks_gmap *m)
{
    memset(m, 0, sizeof *m);
    m->lo = lo;
    m->hi = hi;
    m->ext = (ks_gint *)ext;
    m->next = next;
    ks_int a = 0, b = next; /* first ext id above lo */
    while (a < b) {
        const ks_int mid = a + (b - a) / 2;
        if (ext[mid] < lo)
            a = mid + 1;
        else
            b = mid;
    }
    m->nbelow = a;
}

ks_error ks_gmap_make(ks_gint lo, ks_gint hi, const ks_gint *ids1, int64_t n1,
                      const ks_gint *ids2, int64_t n2, ks_gmap *m)
{
    memset(m, 0, sizeof *m);
    int64_t n = 0;
    for (int64_t k = 0; k < n1; k++)
        n += ids1[k] < lo || ids1[k] >= hi;
    for (int64_t k = 0; k < n2; k++)
        n += ids2[k] < lo || ids2[k] >= hi;
    if (n + (hi - lo) > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "more than 2^31 columns on one rank");
    ks_gint *ext = ks_malloc((size_t)n * sizeof *ext + 1, "compact column ids");
    if (!ext)
        return KS_ERR_MEMORY;
    n = 0;
    for (int64_t k = 0; k < n1; k++)
        if (ids1[k] < lo || ids1[k] >= hi)
            ext[n++] = ids1[k];
    for (int64_t k = 0; k < n2; k++)
        if (ids2[k] < lo || ids2[k] >= hi)
            ext[n++] = ids2[k];
    qsort(ext, (size_t)n, sizeof *ext, cmp_gint);
    ks_int u = 0;
    for (int64_t k = 0; k < n; k++)
        if (u == 0 || ext[k] != ext[u - 1])
            ext[u++] = ext[k];
    ks_gmap_borrow(lo, hi, ext, u, m);
    m->own_ext = 1;
    return KS_OK;
}

ks_int ks_gmap_ext_find(const ks_gmap *m, ks_gint g)
{
    ks_int a = 0, b = m->next - 1; /* g is there by construction */
    while (a < b) {
        const ks_int mid = a + (b - a) / 2;
        if (m->ext[mid] < g)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

ks_int ks_gmap_find(const ks_gmap *m, ks_gint g)
{
    if (g >= m->lo && g < m->hi)
        return m->nbelow + (ks_int)(g - m->lo);
    const ks_int a = ks_gmap_ext_find(m, g);
    return a < m->nbelow ? a : a + (ks_int)(m->hi - m->lo);
}

ks_gint ks_gmap_gid(const ks_gmap *m, ks_int k)
{
    if (k < m->nbelow)
        return m->ext[k];
    const ks_int r = (ks_int)(m->hi - m->lo);
    return k < m->nbelow + r ? m->lo + (k - m->nbelow) : m->ext[k - r];
}

