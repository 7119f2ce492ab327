/* The halo exchange of a plan (halo.c) for integers and flags: the AMG
 * setup exchanges measures, C/F states and coarse ids of ghost points, not
 * doubles. The plan says who sends which rows to whom; this file brings
 * its own buffers, allocated once so that an exchange inside PMIS's rounds
 * cannot fail to allocate on one rank and leave its neighbours waiting. */
#include "amg_dist.h"

#include <string.h>

/* Not the plan's HALO_TAG: an exchange of this kind never overlaps an
 * apply, but a distinct tag keeps them apart should that change. */
#define HALO_TYPED_TAG 0x6b74

static ks_int nout(const ks_halo *h) { return h->nsend ? h->send_start[h->nsend] : 0; }

ks_error ks_halo_typed_create(const ks_comm *c, const ks_halo *h, MPI_Datatype type, size_t size,
                              ks_halo_typed *x)
{
    memset(x, 0, sizeof *x);
    x->h = h;
    x->type = type;
    x->size = size;
    x->buf = ks_malloc((size_t)nout(h) * size + 1, "halo exchange buffer");
    x->req = ks_malloc(((size_t)h->nrecv + (size_t)h->nsend + 1) * sizeof *x->req,
                       "halo exchange requests");
    ks_error e = ks_comm_agree(c, x->buf && x->req ? KS_OK : KS_ERR_MEMORY);
    if (e != KS_OK)
        ks_halo_typed_free(x);
    return e;
}

ks_int ks_halo_typed_count(const ks_halo_typed *x) { return nout(x->h); }

ks_error ks_halo_typed_forward(ks_halo_typed *x, const void *own, void *ghost)
{
    const ks_halo *h = x->h;
    const unsigned char *src = own;
    const ks_int m = nout(h);
    for (ks_int k = 0; k < m; k++)
        memcpy(x->buf + (size_t)k * x->size, src + (size_t)h->send_idx[k] * x->size, x->size);
    return ks_halo_typed_forward_packed(x, NULL, ghost);
}

ks_error ks_halo_typed_forward_packed(ks_halo_typed *x, const void *packed, void *ghost)
{
    const ks_halo *h = x->h;
    const unsigned char *out = packed ? packed : x->buf;
    const int nreq = h->nrecv + h->nsend;
    for (int r = 0; r < nreq; r++)
        x->req[r] = MPI_REQUEST_NULL;
    ks_error e = KS_OK;
    unsigned char *g = ghost;
    for (int r = 0; r < h->nrecv && e == KS_OK; r++) {
        const ks_int s = h->recv_start[r], n = h->recv_start[r + 1] - s;
        e = ks_mpi_check(MPI_Irecv(g + (size_t)s * x->size, n, x->type, h->recv_rank[r],
                                   HALO_TYPED_TAG, h->comm, &x->req[r]),
                         "MPI_Irecv (halo)");
    }
    for (int r = 0; r < h->nsend && e == KS_OK; r++) {
        const ks_int s = h->send_start[r], n = h->send_start[r + 1] - s;
        e = ks_mpi_check(MPI_Isend(out + (size_t)s * x->size, n, x->type, h->send_rank[r],
                                   HALO_TYPED_TAG, h->comm, &x->req[h->nrecv + r]),
                         "MPI_Isend (halo)");
    }
    /* Every posted request completes before the buffers can go. */
    if (nreq > 0) {
        ks_error w = ks_mpi_check(MPI_Waitall(nreq, x->req, MPI_STATUSES_IGNORE),
                                  "MPI_Waitall (halo)");
        if (e == KS_OK)
            e = w;
    }
    return e;
}

void ks_halo_typed_free(ks_halo_typed *x)
{
    if (!x)
        return;
    free(x->buf);
    free(x->req);
    memset(x, 0, sizeof *x);
}
