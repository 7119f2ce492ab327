/* The rows of P that this rank's rows of A reach through their ghost
 * columns: A P needs P's row k for every column k of A's rows, and only
 * k's owner has it. A's own halo plan already says who owns which ghost
 * and which of its rows each owner sends to whom, so it is reused: the
 * row lengths go through the plan's integer exchange, then one message
 * per neighbour carries the entries of all its rows as (global coarse
 * column, value) pairs. */
#include "rap_dist.h"

#include <stdint.h>
#include <string.h>

/* Not the halo's nor the other row fetches' tags. */
#define PROWS_TAG 0x6b77

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

/* The received rows' pointers from their lengths, and the entry arrays. */
static ks_error alloc_rows(const ks_int *rlen, ks_dist_ghost_prows *G)
{
    G->rowptr = ks_malloc(((size_t)G->n + 1) * sizeof *G->rowptr, "fetched P row pointers");
    if (!G->rowptr)
        return KS_ERR_MEMORY;
    int64_t run = 0;
    G->rowptr[0] = 0;
    for (ks_int k = 0; k < G->n; k++) {
        run += rlen[k];
        if (run > INT32_MAX)
            return ks_seterr(KS_ERR_SIZE, "fetching P's rows: more than 2^31 entries");
        G->rowptr[k + 1] = (ks_int)run;
    }
    G->col = ks_malloc((size_t)run * sizeof *G->col + 1, "fetched P columns");
    G->val = ks_malloc((size_t)run * sizeof *G->val + 1, "fetched P values");
    return G->col && G->val ? KS_OK : KS_ERR_MEMORY;
}

/* Buffers allocated (and agreed on) before any message is posted: a rank
 * that could not allocate must not leave a neighbour waiting for it. */
typedef struct bufs {
    wire *out, *in;
    MPI_Request *req;
} bufs;

static ks_error alloc_bufs(const ks_halo *h, const ks_dist_prows *P,
                           const ks_dist_ghost_prows *G, bufs *b)
{
    const ks_int nsidx = h->nsend ? h->send_start[h->nsend] : 0;
    int64_t nout = 0;
    for (ks_int k = 0; k < nsidx; k++)
        nout += P->rowptr[h->send_idx[k] + 1] - P->rowptr[h->send_idx[k]];
    const int64_t nin = G->rowptr[G->n];
    if (nout * (int64_t)sizeof(wire) > INT32_MAX || nin * (int64_t)sizeof(wire) > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "more than 2^31 bytes of P's rows to or from one rank");
    b->out = ks_malloc((size_t)nout * sizeof *b->out + 1, "P rows to send");
    b->in = ks_malloc((size_t)nin * sizeof *b->in + 1, "P rows received");
    b->req = ks_malloc(((size_t)h->nrecv + h->nsend + 1) * sizeof *b->req,
                       "P row message requests");
    return b->out && b->in && b->req ? KS_OK : KS_ERR_MEMORY;
}

/* One message each way per neighbour. Every posted request is waited for,
 * also after a failure. */
static ks_error exchange(const ks_halo *h, const ks_dist_prows *P, bufs *b,
                         ks_dist_ghost_prows *G)
{
    const int nreq = h->nrecv + h->nsend;
    for (int r = 0; r < nreq; r++)
        b->req[r] = MPI_REQUEST_NULL;
    ks_error e = KS_OK;
    for (int r = 0; r < h->nrecv && e == KS_OK; r++) {
        /* Source r's slice of the ghosts is fetched rows s0 .. s1-1. */
        const ks_int s0 = G->rowptr[h->recv_start[r]], s1 = G->rowptr[h->recv_start[r + 1]];
        e = ks_mpi_check(MPI_Irecv(b->in + s0, (int)((s1 - s0) * (int64_t)sizeof(wire)),
                                   MPI_BYTE, h->recv_rank[r], PROWS_TAG, h->comm, &b->req[r]),
                         "MPI_Irecv (P's rows)");
    }
    int64_t m = 0;
    for (int r = 0; r < h->nsend && e == KS_OK; r++) {
        const int64_t m0 = m;
        for (ks_int k = h->send_start[r]; k < h->send_start[r + 1]; k++) {
            const ks_int i = h->send_idx[k];
            for (ks_int q = P->rowptr[i]; q < P->rowptr[i + 1]; q++)
                b->out[m++] = (wire){P->col[q], P->val[q]};
        }
        e = ks_mpi_check(MPI_Isend(b->out + m0, (int)((m - m0) * (int64_t)sizeof(wire)),
                                   MPI_BYTE, h->send_rank[r], PROWS_TAG, h->comm,
                                   &b->req[h->nrecv + r]),
                         "MPI_Isend (P's rows)");
    }
    if (nreq > 0) {
        const ks_error w = ks_mpi_check(MPI_Waitall(nreq, b->req, MPI_STATUSES_IGNORE),
                                        "MPI_Waitall (P's rows)");
        if (e == KS_OK)
            e = w;
    }
    for (int64_t k = 0; k < G->rowptr[G->n] && e == KS_OK; k++) {
        G->col[k] = b->in[k].col;
        G->val[k] = b->in[k].val;
    }
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
    G->n = d->nghost;
    ks_int *olen = ks_malloc(((size_t)P->nloc + 1) * sizeof *olen, "P row lengths");
    ks_int *rlen = ks_malloc(((size_t)G->n + 1) * sizeof *rlen, "fetched P row lengths");
    e = ks_comm_agree(c, olen && rlen ? KS_OK : KS_ERR_MEMORY);
    ks_halo_typed x = {0};
    if (e == KS_OK) {
        for (ks_int i = 0; i < P->nloc; i++)
            olen[i] = P->rowptr[i + 1] - P->rowptr[i];
        e = ks_halo_typed_create(c, d->halo, MPI_INT32_T, sizeof(ks_int), &x);
    }
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_halo_typed_forward(&x, olen, rlen));
    if (e == KS_OK)
        e = ks_comm_agree(c, alloc_rows(rlen, G));
    bufs b = {0};
    if (e == KS_OK)
        e = ks_comm_agree(c, alloc_bufs(d->halo, P, G, &b));
    if (e == KS_OK)
        e = ks_comm_agree(c, exchange(d->halo, P, &b, G));
    free(b.out);
    free(b.in);
    free(b.req);
    ks_halo_typed_free(&x);
    free(olen);
    free(rlen);
    if (e != KS_OK) {
        ks_dist_ghost_prows_free(G);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}
