/* Whole rows through a halo plan: the setup steps that read other ranks'
 * rows (P's rows for A P, A P's rows for P^T (A P), A's and S's rows for
 * extended+i) all fetch them the same way. The plan says which own rows
 * each neighbour ghosts; rows have variable length, so their lengths go
 * first (the plan's integer exchange), then one message each way per
 * neighbour carries the entries of all its rows. Every buffer is
 * allocated and agreed on before any message is posted: a rank that could
 * not allocate must not leave a neighbour waiting for it. */
#include "amg_dist.h"

#include <stdint.h>
#include <string.h>

/* Not the halo's tags: this exchange has its own messages. */
#define HALO_ROWS_TAG 0x6b76

typedef struct bufs {
    unsigned char *out;
    MPI_Request *req;
    ks_int *olen;
} bufs;

/* Lengths of the rows that go out (at their own index) and the buffers. */
static ks_error prepare(const ks_halo *h, ks_int nown, size_t size, ks_halo_row_pack pack,
                        const void *ctx, bufs *b, int64_t *nout)
{
    const ks_int nsidx = h->nsend ? h->send_start[h->nsend] : 0;
    b->olen = ks_calloc((size_t)nown + 1, sizeof *b->olen, "row lengths");
    b->req = ks_malloc(((size_t)h->nrecv + h->nsend + 1) * sizeof *b->req,
                       "row message requests");
    if (!b->olen || !b->req)
        return KS_ERR_MEMORY;
    *nout = 0;
    for (ks_int k = 0; k < nsidx; k++) {
        const ks_int i = h->send_idx[k];
        b->olen[i] = pack(ctx, i, NULL);
        *nout += b->olen[i];
    }
    if (*nout * (int64_t)size > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "more than 2^31 bytes of rows to send from one rank");
    b->out = ks_malloc((size_t)*nout * size + 1, "rows to send");
    return b->out ? KS_OK : KS_ERR_MEMORY;
}

static ks_error alloc_in(const ks_int *rlen, ks_int nghost, size_t size, ks_int **rowptr,
                         void **in)
{
    *rowptr = ks_malloc(((size_t)nghost + 1) * sizeof **rowptr, "fetched row pointers");
    if (!*rowptr)
        return KS_ERR_MEMORY;
    int64_t run = 0;
    (*rowptr)[0] = 0;
    for (ks_int k = 0; k < nghost; k++) {
        run += rlen[k];
        if (run > INT32_MAX || run * (int64_t)size > INT32_MAX)
            return ks_seterr(KS_ERR_SIZE, "more than 2^31 bytes of rows to receive");
        (*rowptr)[k + 1] = (ks_int)run;
    }
    *in = ks_malloc((size_t)run * size + 1, "rows received");
    return *in ? KS_OK : KS_ERR_MEMORY;
}

/* One message each way per neighbour. Every posted request is waited for,
 * also after a failure. */
static ks_error exchange(const ks_halo *h, size_t size, ks_halo_row_pack pack, const void *ctx,
                         const ks_int *rowptr, void *in, bufs *b)
{
    const int nreq = h->nrecv + h->nsend;
    for (int r = 0; r < nreq; r++)
        b->req[r] = MPI_REQUEST_NULL;
    ks_error e = KS_OK;
    unsigned char *dst = in;
    for (int r = 0; r < h->nrecv && e == KS_OK; r++) {
        /* The plan's ghost slice of source r is fetched rows s0 .. s1-1. */
        const int64_t s0 = rowptr[h->recv_start[r]], s1 = rowptr[h->recv_start[r + 1]];
        e = ks_mpi_check(MPI_Irecv(dst + s0 * (int64_t)size, (int)((s1 - s0) * (int64_t)size),
                                   MPI_BYTE, h->recv_rank[r], HALO_ROWS_TAG, h->comm,
                                   &b->req[r]),
                         "MPI_Irecv (fetched rows)");
    }
    int64_t m = 0;
    for (int r = 0; r < h->nsend && e == KS_OK; r++) {
        const int64_t m0 = m;
        for (ks_int k = h->send_start[r]; k < h->send_start[r + 1]; k++)
            m += pack(ctx, h->send_idx[k], b->out + m * (int64_t)size);
        e = ks_mpi_check(MPI_Isend(b->out + m0 * (int64_t)size, (int)((m - m0) * (int64_t)size),
                                   MPI_BYTE, h->send_rank[r], HALO_ROWS_TAG, h->comm,
                                   &b->req[h->nrecv + r]),
                         "MPI_Isend (fetched rows)");
    }
    if (nreq > 0) {
        const ks_error w = ks_mpi_check(MPI_Waitall(nreq, b->req, MPI_STATUSES_IGNORE),
                                        "MPI_Waitall (fetched rows)");
        if (e == KS_OK)
            e = w;
    }
    return e;
}

ks_error ks_halo_rows_fetch(const ks_comm *c, const ks_halo *h, ks_int nown, ks_int nghost,
                            size_t size, ks_halo_row_pack pack, const void *ctx, ks_int **rowptr,
                            void **in)
{
    *rowptr = NULL;
    *in = NULL;
    bufs b = {0};
    ks_int *rlen = ks_malloc(((size_t)nghost + 1) * sizeof *rlen, "fetched row lengths");
    int64_t nout = 0;
    ks_error e = rlen ? prepare(h, nown, size, pack, ctx, &b, &nout) : KS_ERR_MEMORY;
    ks_halo_typed x = {0};
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = ks_halo_typed_create(c, h, MPI_INT32_T, sizeof(ks_int), &x);
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_halo_typed_forward(&x, b.olen, rlen));
    if (e == KS_OK)
        e = ks_comm_agree(c, alloc_in(rlen, nghost, size, rowptr, in));
    if (e == KS_OK)
        e = ks_comm_agree(c, exchange(h, size, pack, ctx, *rowptr, *in, &b));
    ks_halo_typed_free(&x);
    free(rlen);
    free(b.out);
    free(b.req);
    free(b.olen);
    if (e != KS_OK) {
        free(*rowptr);
        free(*in);
        *rowptr = NULL;
        *in = NULL;
    }
    return e;
}
