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
    m->nbelow = ks_lower_bound_gint(ext, next, lo); /* the first ext id above lo */
    return make_table(m);
}

/* Below this many ids one thread collects them. */
#define KS_GMAP_SERIAL_IDS 65536
#define KS_GMAP_MAX_THREADS 256

/* The ids of ids1 then ids2 outside [lo, hi), in any order (they are
 * sorted next), into *ext (malloc'ed here; NULL when that fails); returns
 * their count. Threads take static chunks: each counts its chunk, the
 * counts are scanned, then each writes its chunk's ids at its offset. */
static int64_t collect(ks_gint lo, ks_gint hi, const ks_gint *ids1, int64_t n1,
                       const ks_gint *ids2, int64_t n2, ks_gint **ext)
{
    const int64_t n = n1 + n2;
    int nt = ks_threads_for(n, KS_GMAP_SERIAL_IDS, KS_GMAP_MAX_THREADS);
    int64_t at[KS_GMAP_MAX_THREADS + 1], total = 0;
    ks_gint *out = NULL;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t, used;
        ks_thread_me(&t, &used);
        const int64_t b = n * t / used, e = n * (t + 1) / used;
        int64_t c = 0;
        for (int64_t k = b; k < e; k++) {
            const ks_gint g = k < n1 ? ids1[k] : ids2[k - n1];
            c += g < lo || g >= hi;
        }
        at[t + 1] = c;
#pragma omp barrier
#pragma omp single
        {
            at[0] = 0;
            for (int q = 1; q <= used; q++)
                at[q] += at[q - 1];
            total = at[used];
            out = ks_malloc((size_t)total * sizeof *out + 1, "compact column ids");
        } /* its barrier publishes at, total and out */
        if (out) {
            int64_t w = at[t];
            for (int64_t k = b; k < e; k++) {
                const ks_gint g = k < n1 ? ids1[k] : ids2[k - n1];
                if (g < lo || g >= hi)
                    out[w++] = g;
            }
        }
    }
    *ext = out;
    return total;
}

ks_error ks_gmap_make(ks_gint lo, ks_gint hi, const ks_gint *ids1, int64_t n1,
                      const ks_gint *ids2, int64_t n2, ks_gmap *m)
{
    memset(m, 0, sizeof *m);
    ks_gint *ext;
    const int64_t n = collect(lo, hi, ids1, n1, ids2, n2, &ext);
    if (!ext)
        return KS_ERR_MEMORY;
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
