/* R = P^T over the ranks. P's rows are fine points (this rank's), its
 * columns global coarse ids; R's row J belongs to J's owner in the coarse
 * layout. Each entry P(i,J) travels once, as (J, i, value), to that owner
 * (its own rank included, through the same exchange): an Alltoall of the
 * counts, an Alltoallv of the entries.
 *
 * Determinism: a rank packs its entries in fine row order, Alltoallv lays
 * them out by sending rank, and the owner keeps the arrival order within
 * each row (a stable counting sort by row). Ranks hold consecutive fine
 * rows, so every row of R has its columns ascending, and the result is the
 * same whatever the timing. Nothing is summed: each (J, i) arrives once. */
#include "rap_dist.h"

#include <stdint.h>
#include <string.h>

typedef struct tentry {
    ks_gint row, col; /* R's row (coarse J), column (fine i) */
    double val;
} tentry;

/* Counts (bytes, for MPI) and the packed entries by destination. */
static ks_error pack(const ks_dist_prows *P, const ks_gint *coff, int p, int *scount,
                     int *sdispl, tentry **out)
{
    const ks_int nnz = P->rowptr[P->nloc];
    int64_t *pos = ks_calloc((size_t)p, sizeof *pos, "transpose counts");
    *out = ks_malloc((size_t)nnz * sizeof **out + 1, "transpose entries to send");
    ks_error e = pos && *out ? KS_OK : KS_ERR_MEMORY;
    for (ks_int k = 0; k < nnz && e == KS_OK; k++) {
        if (P->col[k] < 0 || P->col[k] >= coff[p])
            e = ks_seterr(KS_ERR_ARG, "transpose: P has coarse column %lld, outside 0 .. %lld",
                          (long long)P->col[k], (long long)coff[p] - 1);
        else
            pos[ks_layout_owner(coff, p, P->col[k])]++;
    }
    if (e == KS_OK && (int64_t)nnz * (int64_t)sizeof(tentry) > INT32_MAX)
        e = ks_seterr(KS_ERR_SIZE, "transpose: more than 2^31 bytes of entries to send");
    int64_t at = 0;
    for (int r = 0; r < p && e == KS_OK; r++) {
        scount[r] = (int)(pos[r] * (int64_t)sizeof(tentry));
        sdispl[r] = (int)(at * (int64_t)sizeof(tentry));
        const int64_t c = pos[r];
        pos[r] = at;
        at += c;
    }
    for (ks_int i = 0; i < P->nloc && e == KS_OK; i++)
        for (ks_int k = P->rowptr[i]; k < P->rowptr[i + 1]; k++)
            (*out)[pos[ks_layout_owner(coff, p, P->col[k])]++] =
                (tentry){P->col[k], P->row_begin + i, P->val[k]};
    free(pos);
    return e;
}

/* R's rows from the n entries received, arrival order kept per row. */
static ks_error build_rows(const tentry *in, int64_t n, ks_dist_prows *R)
{
    const ks_int nr = R->nloc;
    if (n > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "transpose: more than 2^31 entries on one rank");
    R->rowptr = ks_calloc((size_t)nr + 2, sizeof *R->rowptr, "R row pointers");
    R->col = ks_malloc((size_t)n * sizeof *R->col + 1, "R columns");
    R->val = ks_malloc((size_t)n * sizeof *R->val + 1, "R values");
    if (!R->rowptr || !R->col || !R->val)
        return KS_ERR_MEMORY;
    ks_int *cnt = R->rowptr; /* counts at [r + 2], then starts at [r + 1] */
    for (int64_t t = 0; t < n; t++) {
        const ks_gint r = in[t].row - R->row_begin;
        if (r < 0 || r >= nr)
            return ks_seterr(KS_ERR_ARG, "transpose: row %lld arrived at a rank that does not "
                             "own it", (long long)in[t].row);
        cnt[r + 2]++;
    }
    ks_rowptr_scan(cnt + 1, nr); /* n checked above */
    for (int64_t t = 0; t < n; t++) {
        const ks_int q = cnt[in[t].row - R->row_begin + 1]++;
        R->col[q] = in[t].col;
        R->val[q] = in[t].val;
    }
    return KS_OK; /* rowptr[0 .. nr] now the row starts */
}

ks_error ks_dist_prows_transpose(const ks_dist_prows *P, const ks_gint *foff, const ks_gint *coff,
                                 ks_dist_prows *R)
{
    static const char who[] = "distributed transpose R = P^T";
    memset(R, 0, sizeof *R);
    const ks_comm *c = P->comm;
    const int p = c->size, me = c->rank;
    R->comm = c;
    R->nloc = (ks_int)(coff[me + 1] - coff[me]);
    R->row_begin = coff[me];
    R->c_begin = foff[me];
    R->nc = (ks_int)(foff[me + 1] - foff[me]);
    R->nc_global = foff[p];
    int *cnt = ks_calloc(4 * (size_t)p, sizeof *cnt, "transpose counts");
    int *scount = cnt, *rcount = cnt + p, *sdispl = cnt + 2 * p, *rdispl = cnt + 3 * p;
    tentry *out = NULL, *in = NULL;
    int64_t nin = 0;
    ks_error e = cnt ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK && (P->nloc != R->nc || P->row_begin != R->c_begin || P->nc != R->nloc ||
                       P->c_begin != R->row_begin))
        e = ks_seterr(KS_ERR_ARG, "%s: P's layouts are not the given ones", who);
    if (e == KS_OK)
        e = pack(P, coff, p, scount, sdispl, &out);
    e = ks_comm_agree(c, e);
    if (e == KS_OK) {
        int64_t bytes = 0;
        e = ks_exchange_bytes(c, out, scount, sdispl, rcount, rdispl, (void **)&in, &bytes,
                              "transpose entries");
        nin = bytes / (int64_t)sizeof(tentry);
    }
    free(out);
    free(cnt);
    if (e == KS_OK)
        e = ks_comm_agree(c, build_rows(in, nin, R));
    free(in);
    if (e != KS_OK) {
        ks_dist_prows_free(R);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}
