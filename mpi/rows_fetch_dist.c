/* The rows of other ranks that extended+i interpolation reads: for each
 * F row i of this rank and each strong F neighbour k of i owned by
 * another rank, row k of A and of S and the splitting and coarse id of
 * each of k's columns. Only k's owner has them.
 *
 * A halo plan over those points says who sends which rows to whom (as for
 * x's ghosts); the rows have variable length, so their lengths go first
 * (the plan's integer exchange), then one message per neighbour carries
 * the entries of all its rows. An entry travels as (global column, value,
 * coarse id and strong flag in one integer): the strong columns of a row
 * are among its entries, and a coarse id of -1 says F. */
#include "amg_dist.h"

#include <stdint.h>
#include <string.h>

/* Not the halo's tags: this exchange has its own messages. */
#define ROWS_TAG 0x6b76

typedef struct wire {
    ks_gint col;
    double val;
    ks_gint meta; /* (coarse id + 1) * 2 + strong */
} wire;

void ks_dist_ext_rows_free(ks_dist_ext_rows *R)
{
    if (!R)
        return;
    free(R->gid);
    free(R->rowptr);
    free(R->col);
    free(R->val);
    free(R->strong);
    free(R->cid);
    if (R->halo)
        ks_halo_destroy(R->halo);
    memset(R, 0, sizeof *R);
}

/* The ghost points to fetch: strong F neighbours (S's ghost part) of this
 * rank's F rows; ascending because the ghost numbering is. */
static ks_error wanted(const ks_dist_strength *S, const int *cf, const ks_dist_coarse *C,
                       ks_dist_ext_rows *R)
{
    unsigned char *need = ks_calloc((size_t)S->nghost + 1, 1, "fetched row flags");
    if (!need)
        return KS_ERR_MEMORY;
    ks_int n = 0;
    for (ks_int i = 0; i < S->nloc; i++)
        for (ks_int k = S->grp[i]; cf[i] != KS_CPT && k < S->grp[i + 1]; k++)
            if (C->ghost_cf[S->gci[k]] != KS_CPT && !need[S->gci[k]]) {
                need[S->gci[k]] = 1;
                n++;
            }
    R->gid = ks_malloc((size_t)n * sizeof *R->gid + 1, "fetched row ids");
    if (!R->gid) {
        free(need);
        return KS_ERR_MEMORY;
    }
    R->n = 0;
    for (ks_int g = 0; g < S->nghost; g++)
        if (need[g])
            R->gid[R->n++] = S->ghost_gid[g];
    free(need);
    return KS_OK;
}

/* Own row i's entries in global column order, with their strong flags and
 * coarse ids, appended at w (NULL: only counted). Returns the count. */
static ks_int pack_row(const ks_csr *AL, const ks_csr *AG, const ks_dist_strength *S,
                       const ks_dist_coarse *C, ks_int i, wire *w)
{
    const ks_int l0 = AL->rowptr[i], l1 = AL->rowptr[i + 1];
    const ks_int g0 = AG ? AG->rowptr[i] : 0, g1 = AG ? AG->rowptr[i + 1] : 0;
    if (!w)
        return (l1 - l0) + (g1 - g0);
    ks_int kl = l0, kg = g0, sl = S->local.rowptr[i], sg = S->grp[i], m = 0;
    while (kl < l1 || kg < g1) {
        const ks_gint a = kl < l1 ? S->row_begin + AL->colind[kl] : INT64_MAX;
        const ks_gint b = kg < g1 ? S->ghost_gid[AG->colind[kg]] : INT64_MAX;
        int strong;
        ks_gint cid;
        double v;
        if (a < b) {
            const ks_int j = AL->colind[kl];
            while (sl < S->local.rowptr[i + 1] && S->local.colind[sl] < j)
                sl++;
            strong = sl < S->local.rowptr[i + 1] && S->local.colind[sl] == j;
            cid = C->cid[j];
            v = AL->val[kl++];
        } else {
            const ks_int j = AG->colind[kg];
            while (sg < S->grp[i + 1] && S->gci[sg] < j)
                sg++;
            strong = sg < S->grp[i + 1] && S->gci[sg] == j;
            cid = C->ghost_cid[j];
            v = AG->val[kg++];
        }
        w[m++] = (wire){a < b ? a : b, v, (cid + 1) * 2 + strong};
    }
    return m;
}

/* The exchange's buffers, allocated (and agreed on) before any message is
 * posted: a rank that could not allocate must not leave a neighbour
 * waiting for it. */
typedef struct bufs {
    wire *out, *in;
    int64_t nout;
    MPI_Request *req;
} bufs;

static ks_error alloc_bufs(const ks_halo *h, const ks_csr *AL, const ks_csr *AG,
                           const ks_dist_strength *S, const ks_dist_coarse *C,
                           const ks_dist_ext_rows *R, bufs *b)
{
    const ks_int nsidx = h->nsend ? h->send_start[h->nsend] : 0;
    b->nout = 0;
    for (ks_int k = 0; k < nsidx; k++)
        b->nout += pack_row(AL, AG, S, C, h->send_idx[k], NULL);
    const int64_t nin = R->rowptr[R->n];
    if (b->nout * (int64_t)sizeof(wire) > INT32_MAX || nin * (int64_t)sizeof(wire) > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "more than 2^31 bytes of rows to or from one rank");
    b->out = ks_malloc((size_t)b->nout * sizeof *b->out + 1, "rows to send");
    b->in = ks_malloc((size_t)nin * sizeof *b->in + 1, "rows received");
    b->req = ks_malloc(((size_t)h->nrecv + h->nsend + 1) * sizeof *b->req,
                       "row message requests");
    return b->out && b->in && b->req ? KS_OK : KS_ERR_MEMORY;
}

/* One message each way per neighbour. Every posted request is waited for,
 * also after a failure. */
static ks_error exchange(const ks_halo *h, const ks_csr *AL, const ks_csr *AG,
                         const ks_dist_strength *S, const ks_dist_coarse *C, bufs *b,
                         ks_dist_ext_rows *R)
{
    const int nreq = h->nrecv + h->nsend;
    for (int r = 0; r < nreq; r++)
        b->req[r] = MPI_REQUEST_NULL;
    ks_error e = KS_OK;
    for (int r = 0; r < h->nrecv && e == KS_OK; r++) {
        /* The plan's ghost slice of source r is fetched rows s0 .. s1-1. */
        const ks_int s0 = R->rowptr[h->recv_start[r]], s1 = R->rowptr[h->recv_start[r + 1]];
        e = ks_mpi_check(MPI_Irecv(b->in + s0, (int)((s1 - s0) * (int64_t)sizeof(wire)),
                                   MPI_BYTE, h->recv_rank[r], ROWS_TAG, h->comm, &b->req[r]),
                         "MPI_Irecv (fetched rows)");
    }
    int64_t m = 0;
    for (int r = 0; r < h->nsend && e == KS_OK; r++) {
        const int64_t m0 = m;
        for (ks_int k = h->send_start[r]; k < h->send_start[r + 1]; k++)
            m += pack_row(AL, AG, S, C, h->send_idx[k], b->out + m);
        e = ks_mpi_check(MPI_Isend(b->out + m0, (int)((m - m0) * (int64_t)sizeof(wire)),
                                   MPI_BYTE, h->send_rank[r], ROWS_TAG, h->comm,
                                   &b->req[h->nrecv + r]),
                         "MPI_Isend (fetched rows)");
    }
    if (nreq > 0) {
        const ks_error w = ks_mpi_check(MPI_Waitall(nreq, b->req, MPI_STATUSES_IGNORE),
                                        "MPI_Waitall (fetched rows)");
        if (e == KS_OK)
            e = w;
    }
    for (int64_t k = 0; k < R->rowptr[R->n] && e == KS_OK; k++) {
        R->col[k] = b->in[k].col;
        R->val[k] = b->in[k].val;
        R->strong[k] = (unsigned char)(b->in[k].meta & 1);
        R->cid[k] = b->in[k].meta / 2 - 1;
    }
    return e;
}

/* The received rows' pointers from their lengths, and the entry arrays. */
static ks_error alloc_rows(const ks_int *rlen, ks_dist_ext_rows *R)
{
    R->rowptr = ks_malloc(((size_t)R->n + 1) * sizeof *R->rowptr, "fetched row pointers");
    if (!R->rowptr)
        return KS_ERR_MEMORY;
    int64_t run = 0;
    R->rowptr[0] = 0;
    for (ks_int k = 0; k < R->n; k++) {
        run += rlen[k];
        if (run > INT32_MAX)
            return ks_seterr(KS_ERR_SIZE, "fetching rows: more than 2^31 entries");
        R->rowptr[k + 1] = (ks_int)run;
    }
    R->col = ks_malloc((size_t)run * sizeof *R->col + 1, "fetched columns");
    R->val = ks_malloc((size_t)run * sizeof *R->val + 1, "fetched values");
    R->strong = ks_malloc((size_t)run + 1, "fetched strong flags");
    R->cid = ks_malloc((size_t)run * sizeof *R->cid + 1, "fetched coarse ids");
    return R->col && R->val && R->strong && R->cid ? KS_OK : KS_ERR_MEMORY;
}

ks_error ks_dist_fetch_ext_rows(const ks_matrix *A, const ks_dist_strength *S, const int *cf,
                                const ks_dist_coarse *C, ks_dist_ext_rows *R)
{
    static const char who[] = "fetching the rows of strong F neighbours";
    if (!R)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(R, 0, sizeof *R);
    if (!S || !S->comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL or empty strength graph", who);
    const ks_comm *c = S->comm;
    const ks_csr *AL = NULL, *AG = NULL;
    ks_error e = KS_OK;
    if (!A || !A->dist || A->dist->comm != c || A->dist->offsets[c->rank] != S->row_begin)
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix is not the strength graph's", who);
    else if (!(AL = ks_matrix_host_csr(A->dist->local)) ||
             (A->dist->ghost && !(AG = ks_matrix_host_csr(A->dist->ghost))))
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix's values are not available on the host", who);
    else if ((!cf && S->nloc > 0) || !C || (!C->cid && S->nloc > 0))
        e = ks_seterr(KS_ERR_ARG, "%s: NULL splitting or coarse ids", who);
    if (e == KS_OK)
        e = wanted(S, cf, C, R);
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = ks_halo_create(c, S->offsets, R->gid, R->n, &R->halo);
    e = ks_comm_agree(c, e);
    /* Own row lengths go out through the plan; the fetched rows' come in. */
    ks_int *olen = NULL, *rlen = NULL;
    ks_halo_typed x = {0};
    if (e == KS_OK) {
        olen = ks_malloc(((size_t)S->nloc + 1) * sizeof *olen, "row lengths");
        rlen = ks_malloc(((size_t)R->n + 1) * sizeof *rlen, "fetched row lengths");
        e = olen && rlen ? KS_OK : KS_ERR_MEMORY;
        for (ks_int i = 0; i < S->nloc && e == KS_OK; i++)
            olen[i] = pack_row(AL, AG, S, C, i, NULL);
        e = ks_comm_agree(c, e);
    }
    if (e == KS_OK)
        e = ks_halo_typed_create(c, R->halo, MPI_INT32_T, sizeof(ks_int), &x);
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_halo_typed_forward(&x, olen, rlen));
    if (e == KS_OK)
        e = ks_comm_agree(c, alloc_rows(rlen, R));
    bufs b = {0};
    if (e == KS_OK)
        e = ks_comm_agree(c, alloc_bufs(R->halo, AL, AG, S, C, R, &b));
    if (e == KS_OK)
        e = ks_comm_agree(c, exchange(R->halo, AL, AG, S, C, &b, R));
    free(b.out);
    free(b.in);
    free(b.req);
    ks_halo_typed_free(&x);
    free(olen);
    free(rlen);
    if (e != KS_OK) {
        ks_dist_ext_rows_free(R);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}
