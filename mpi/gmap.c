/* Compact 32-bit numbers for 64-bit global ids, ordered like them: the
 * ids below a dense range, the whole range, the ids above it. A rank's
 * ghost columns (dist_csr.c, prows_dist.c) are the ids outside its own
 * range; the local views of the setup's products (local_rows.c) number
 * every column at hand this way. */
#include "mpi_internal.h"

#include <stdint.h>
#include <string.h>

void ks_gmap_free(ks_gmap *m)
{
    if (m && m->own_ext)
        free(m->ext);
    if (m) {
        free(m->slot);
        memset(m, 0, sizeof *m);
    }
}

static uint64_t slot_of(const ks_gmap *m, ks_gint g)
{
    return ((uint64_t)g * UINT64_C(0x9E3779B97F4A7C15)) >> m->hshift;
}

/* The table of ext's ids: at most half full, linear probing. */
static ks_error make_table(ks_gmap *m)
{
    if (m->next == 0)
        return KS_OK;
    int bits = 1;
    while (((uint64_t)1 << bits) < 2 * (uint64_t)m->next)
        bits++;
    const uint64_t size = (uint64_t)1 << bits;
    m->slot = ks_malloc((size_t)size * sizeof *m->slot, "ghost id table");
    if (!m->slot)
        return KS_ERR_MEMORY;
    m->hmask = size - 1;
    m->hshift = 64 - bits;
    for (uint64_t s = 0; s < size; s++)
        m->slot[s].k = -1;
    for (ks_int k = 0; k < m->next; k++) {
        uint64_t s = slot_of(m, m->ext[k]);
        while (m->slot[s].k >= 0)
            s = (s + 1) & m->hmask;
        m->slot[s].g = m->ext[k];
        m->slot[s].k = k;
    }
    return KS_OK;
}

ks_error ks_gmap_borrow(ks_gint lo, ks_gint hi, const ks_gint *ext, ks_int next, ks_gmap *m)
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
    return make_table(m);
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
    int64_t u = 0;
    ks_error e = ks_gint_sort_unique(ext, n, &u);
    if (e == KS_OK && u + (hi - lo) > INT32_MAX)
        e = ks_seterr(KS_ERR_SIZE, "more than 2^31 columns on one rank");
    if (e == KS_OK)
        e = ks_gmap_borrow(lo, hi, ext, (ks_int)u, m);
    m->ext = ext;
    m->own_ext = 1;
    if (e != KS_OK)
        ks_gmap_free(m);
    return e;
}

ks_int ks_gmap_ext_find(const ks_gmap *m, ks_gint g)
{
    uint64_t s = slot_of(m, g); /* g is there by construction (else -1) */
    while (m->slot[s].k >= 0 && m->slot[s].g != g)
        s = (s + 1) & m->hmask;
    return m->slot[s].k;
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
