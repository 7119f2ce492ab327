/* Row layouts: contiguous row blocks in rank order, described by offsets
 * (size + 1 global row numbers, the same on every rank), from each rank's
 * own count (a user's partition is just those counts) or even blocks. */
#include "mpi_internal.h"

#include <string.h>

ks_gint *ks_layout_copy(const ks_comm *c, const ks_gint *off)
{
    const size_t bytes = ((size_t)c->size + 1) * sizeof *off;
    ks_gint *o = ks_malloc(bytes, "layout");
    if (o)
        memcpy(o, off, bytes);
    return o;
}

ks_error ks_layout_gather(const ks_comm *c, ks_int nlocal, ks_gint **out)
{
    *out = NULL;
    const int p = c->size;
    ks_gint *off = ks_malloc(((size_t)p + 1) * sizeof *off, "row layout");
    /* A rank without memory must not leave the others in the gather. */
    ks_error e = ks_comm_agree(c, off ? KS_OK : KS_ERR_MEMORY);
    if (e != KS_OK) {
        free(off);
        return e;
    }
    const ks_gint mine = nlocal;
    e = ks_mpi_check(MPI_Allgather(&mine, 1, MPI_INT64_T, off + 1, 1, MPI_INT64_T,
                                            ks_comm_mpi_of(c)),
                              "MPI_Allgather (row counts)");
    if (e != KS_OK) {
        free(off);
        return ks_adderr(e, "row layout");
    }
    off[0] = 0;
    for (int q = 0; q < p; q++)
        off[q + 1] += off[q];
    *out = off;
    return KS_OK;
}

void ks_layout_even(ks_gint n, int p, int r, ks_gint *begin, ks_gint *count)
{
    const ks_gint base = n / p, extra = n % p;
    *count = base + (r < extra);
    *begin = (ks_gint)r * base + (r < extra ? r : extra);
}

ks_error ks_layout_make(const ks_comm *c, ks_int nlocal, ks_gint n, ks_gint **out)
{
    *out = NULL;
    const int p = c->size;
    if (nlocal >= 0) {
        KS_TRY(ks_layout_gather(c, nlocal, out));
        const ks_gint total = (*out)[p];
        if (total != n) { /* the offsets are the same everywhere: every rank refuses */
            free(*out);
            *out = NULL;
            return ks_seterr(KS_ERR_SIZE, "the ranks' counts add up to %lld, not %lld",
                             (long long)total, (long long)n);
        }
        return KS_OK;
    }
    ks_gint *off = ks_malloc(((size_t)p + 1) * sizeof *off, "row layout");
    ks_error e = ks_comm_agree(c, off ? KS_OK : KS_ERR_MEMORY);
    if (e != KS_OK) {
        free(off);
        return e;
    }
    for (int q = 0; q < p; q++) {
        ks_gint count;
        ks_layout_even(n, p, q, &off[q], &count);
    }
    off[p] = n;
    *out = off;
    return KS_OK;
}

int ks_layout_owner(const ks_gint *off, int p, ks_gint g)
{
    int lo = 0, hi = p - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (off[mid] <= g)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int64_t ks_layout_rank_scan(int64_t *pos, int used, int p, int64_t *count)
{
    int64_t next = 0;
    for (int r = 0; r < p; r++) {
        const int64_t first = next;
        for (int q = 0; q < used; q++) {
            const int64_t c = pos[(size_t)q * (size_t)p + r];
            pos[(size_t)q * (size_t)p + r] = next;
            next += c;
        }
        count[r] = next - first;
    }
    return next;
}
