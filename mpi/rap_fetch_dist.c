/* The rows of P that this rank's rows of A reach through their ghost
 * columns: A P needs P's row k for every column k of A's rows, and only
 * k's owner has it. A's own halo plan already says who owns which ghost
 * and which of its rows each owner sends to whom, so it is reused: the
 * rows travel through it (halo_rows.c) as (global coarse column, value)
 * pairs. */
#include "rap_dist.h"

#include <stdint.h>
#include <string.h>

typedef struct wire {
    ks_gint col;
    double val;
} wire;

void ks_dist_ghost_prows_free(ks_dist_ghost_prows *G)
{
    if (!G)
        return;
    free(G->rowptr);
    free(G->col);
    free(G->val);
    memset(G, 0, sizeof *G);
}

/* Own rows: global columns (col), or compact ones (ccol) of map cols;
 * own row i is held as row slot[i] (slot NULL: as row i). */
typedef struct rows {
    const ks_int *rowptr;
    const ks_gint *col;
    const ks_int *ccol;
    const ks_gmap *cols;
    const double *val;
    const ks_int *slot;
} rows;

/* Row i as (global column, value) entries. */
static ks_int pack_row(const void *ctx, ks_int i, void *out)
{
    const rows *R = ctx;
    const ks_int r = R->slot ? R->slot[i] : i;
    const ks_int b = R->rowptr[r], n = R->rowptr[r + 1] - b;
    wire *w = out;
    for (ks_int q = 0; w && q < n; q++)
        w[q] = (wire){R->col ? R->col[b + q] : ks_gmap_gid(R->cols, R->ccol[b + q]),
                      R->val[b + q]};
    return n;
}

static ks_error fetch(const ks_comm *c, const ks_halo *h, ks_int nown, const rows *R,
                      ks_int nghost, ks_dist_ghost_prows *G)
{
    memset(G, 0, sizeof *G);
    G->n = nghost;
    wire *in = NULL;
    ks_error e = ks_halo_rows_fetch(c, h, nown, nghost, sizeof(wire), pack_row, R, &G->rowptr,
                                    (void **)&in);
    if (e == KS_OK) {
        const ks_int n = G->rowptr[G->n];
        G->col = ks_malloc((size_t)n * sizeof *G->col + 1, "fetched columns");
        G->val = ks_malloc((size_t)n * sizeof *G->val + 1, "fetched values");
        e = G->col && G->val ? KS_OK : KS_ERR_MEMORY;
        if (e == KS_OK) {
#pragma omp parallel for schedule(static)
            for (ks_int k = 0; k < n; k++) {
                G->col[k] = in[k].col;
                G->val[k] = in[k].val;
            }
        }
        e = ks_comm_agree(c, e);
    }
    free(in);
    if (e != KS_OK)
        ks_dist_ghost_prows_free(G);
    return e;
}

ks_error ks_dist_fetch_grows(const ks_comm *c, const ks_halo *h, ks_int nown,
                             const ks_int *rowptr, const ks_gint *col, const double *val,
                             ks_int nghost, ks_dist_ghost_prows *G)
{
    const rows R = {rowptr, col, NULL, NULL, val, NULL};
    return fetch(c, h, nown, &R, nghost, G);
}

ks_error ks_dist_fetch_grows_compact(const ks_comm *c, const ks_halo *h, const ks_csr *T,
                                     const ks_gmap *cols, ks_int nghost, ks_dist_ghost_prows *G)
{
    const rows R = {T->rowptr, NULL, T->colind, cols, T->val, NULL};
    return fetch(c, h, T->nrows, &R, nghost, G);
}

ks_error ks_dist_fetch_grows_device(const ks_comm *c, const ks_halo *h, const ks_sparse *dT,
                                    const ks_gmap *cols, ks_int nghost, ks_dist_ghost_prows *G)
{
    memset(G, 0, sizeof *G);
    ks_backend *be = dT->be;
    const ks_int ns = h->nsend ? h->send_start[h->nsend] : 0;
    ks_int *didx = NULL, *slot = ks_malloc(((size_t)dT->nrows + 1) * sizeof *slot, "row slots");
    ks_sparse dS = {0};
    ks_csr S = {0};
    ks_error e = slot ? ks_be_alloc(be, (size_t)ns * sizeof *didx + 1, (void **)&didx,
                                    "rows to send")
                      : KS_ERR_MEMORY;
    if (e == KS_OK && ns > 0)
        e = be->ops->upload(be, didx, h->send_idx, (size_t)ns * sizeof *didx);
    if (e == KS_OK)
        e = ks_sparse_extract_rows(dT, didx, ns, &dS);
    if (e == KS_OK)
        e = ks_sparse_to_csr(&dS, &S);
    ks_sparse_free(&dS);
    if (didx)
        be->ops->free(be, didx);
    /* only the rows sent are read (pack_row), so only their slots are set */
    for (ks_int q = 0; q < ns && e == KS_OK; q++)
        slot[h->send_idx[q]] = q;
    e = ks_comm_agree(c, e);
    if (e == KS_OK) {
        const rows R = {S.rowptr, NULL, S.colind, cols, S.val, slot};
        e = fetch(c, h, dT->nrows, &R, nghost, G);
    }
    ks_csr_free(&S);
    free(slot);
    return e;
}

ks_error ks_dist_fetch_prows(const ks_matrix *A, const ks_dist_prows *P, ks_dist_ghost_prows *G)
{
    static const char who[] = "fetching P's rows of the ghost columns";
    if (!G)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(G, 0, sizeof *G);
    if (!A || !A->dist)
        return ks_seterr(KS_ERR_ARG, "%s: %s", who, A ? "the matrix is not distributed"
                                                       : "NULL matrix");
    const ks_matrix_dist *md = A->dist;
    const ks_dist_impl *d = (const ks_dist_impl *)md;
    const ks_comm *c = md->comm;
    /* P's rows: the matrix's columns (its own layout when rectangular) */
    const ks_gint *coff = md->col_offsets ? md->col_offsets : md->offsets;
    const ks_gint lo = coff[c->rank];
    ks_error e = KS_OK;
    if (!P || P->comm != c || P->row_begin != lo ||
        P->nloc != (ks_int)(coff[c->rank + 1] - lo) || (!P->rowptr && P->nloc > 0))
        e = ks_seterr(KS_ERR_ARG, "%s: P's rows are not those of the matrix's column layout",
                      who);
    e = ks_comm_agree(c, e);
    if (e != KS_OK)
        return e;
    e = ks_dist_fetch_grows(c, d->halo, P->nloc, P->rowptr, P->col, P->val, d->nghost, G);
    if (e != KS_OK) {
        ks_dist_ghost_prows_free(G);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}
