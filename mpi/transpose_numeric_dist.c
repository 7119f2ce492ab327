/* R = P^T's values for new values of P on the same pattern (re-setup).
 * transpose_dist.c sends each entry P(i,J) as (J, i, value) to J's owner
 * and the owner sorts the arrivals into R's rows; both orders follow from
 * the patterns alone, so a plan made from P's and R's patterns sends the
 * values only, in the same order, and puts each arrival at its place.
 *
 * The orders: a rank packs its entries by destination, each destination's
 * in fine row order and P's column order within a row; arrivals come by
 * sending rank, and ranks hold consecutive fine rows, so an owner receives
 * its entries of R sorted by (fine column i, row J), which a counting sort
 * of R's entries by column gives. Values are only moved, never summed:
 * the bits of a fresh transpose. */
#include "rap_dist.h"

#include <stdint.h>
#include <string.h>

void ks_dist_transpose_plan_free(ks_dist_transpose_plan *t)
{
    if (!t)
        return;
    free(t->scount);
    free(t->send_at);
    free(t->recv_at);
    memset(t, 0, sizeof *t);
}

/* Where each of P's entries goes in the send buffer, and the byte counts:
 * the places ks_dist_prows_transpose packs at (ks_dist_transpose_places). */
static ks_error sender(const ks_dist_prows *P, const ks_gint *coff, int p,
                       ks_dist_transpose_plan *t)
{
    const ks_int n = P->nloc, nnz = n ? P->rowptr[n] : 0;
    t->send_at = ks_malloc((size_t)nnz * sizeof *t->send_at + 1, "transpose plan places");
    int64_t *count = ks_malloc((size_t)p * sizeof *count, "transpose plan counts");
    ks_error e = t->send_at && count && ks_dist_transpose_places(P, coff, p, t->send_at, count) >= 0
                     ? KS_OK
                     : KS_ERR_MEMORY;
    int64_t at = 0;
    for (int r = 0; r < p && e == KS_OK; r++) {
        t->sdispl[r] = (int)(at * (int64_t)sizeof(double));
        t->scount[r] = (int)(count[r] * (int64_t)sizeof(double));
        at += count[r];
    }
    free(count);
    return e;
}

/* The place in R of each arrival: R's entries sorted by (column, row). */
static ks_error receiver(const ks_dist_prows *R, ks_dist_transpose_plan *t)
{
    const ks_int nnz = R->nloc ? R->rowptr[R->nloc] : 0;
    ks_gmap m;
    KS_TRY(ks_gmap_make(R->c_begin, R->c_begin + R->nc, R->col, nnz, NULL, 0, &m));
    const ks_int nc = ks_gmap_size(&m);
    ks_int *start = ks_calloc((size_t)nc + 2, sizeof *start, "transpose plan columns");
    t->recv_at = ks_malloc((size_t)nnz * sizeof *t->recv_at + 1, "transpose plan arrivals");
    ks_int *cc = ks_malloc((size_t)nnz * sizeof *cc + 1, "transpose plan compact columns");
    ks_error e = start && t->recv_at && cc ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int q = 0; q < nnz; q++)
            cc[q] = ks_gmap_find(&m, R->col[q]);
        for (ks_int q = 0; q < nnz; q++)
            start[cc[q] + 2]++;
    }
    if (e == KS_OK)
        ks_rowptr_scan(start + 1, nc);
    for (ks_int q = 0; q < nnz && e == KS_OK; q++) /* rows ascending: stable */
        t->recv_at[start[cc[q] + 1]++] = q;
    t->nrecv = nnz;
    free(cc);
    free(start);
    ks_gmap_free(&m);
    return e;
}

ks_error ks_dist_transpose_plan_make(const ks_dist_prows *P, const ks_dist_prows *R,
                                     const ks_gint *coff, ks_dist_transpose_plan *t)
{
    const ks_comm *c = P->comm;
    const int p = c->size;
    ks_dist_transpose_plan_free(t);
    t->scount = ks_calloc(2 * (size_t)p, sizeof *t->scount, "transpose plan");
    t->sdispl = t->scount ? t->scount + p : NULL;
    ks_error e = t->scount ? sender(P, coff, p, t) : KS_ERR_MEMORY;
    if (e == KS_OK)
        e = receiver(R, t);
    e = ks_comm_agree(c, e);
    if (e != KS_OK) {
        ks_dist_transpose_plan_free(t);
        return ks_adderr(e, "distributed transpose plan");
    }
    t->made = 1;
    return KS_OK;
}

ks_error ks_dist_transpose_numeric(const ks_dist_prows *P, const ks_dist_transpose_plan *t,
                                   ks_dist_prows *R)
{
    static const char what[] = "transpose values";
    const ks_comm *c = P->comm;
    const int p = c->size;
    const ks_int nnz = P->nloc ? P->rowptr[P->nloc] : 0;
    double *out = ks_malloc((size_t)nnz * sizeof *out + 1, "transpose values to send");
    int *rc = ks_malloc(2 * (size_t)p * sizeof *rc + 1, "transpose value counts");
    ks_error e = out && rc ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int k = 0; k < nnz; k++)
            out[t->send_at[k]] = P->val[k];
    }
    e = ks_comm_agree(c, e);
    double *in = NULL;
    int64_t bytes = 0;
    if (e == KS_OK)
        e = ks_exchange_bytes(c, out, t->scount, t->sdispl, rc, rc + p, (void **)&in, &bytes,
                              what);
    if (e == KS_OK && bytes != t->nrecv * (int64_t)sizeof(double))
        e = ks_seterr(KS_ERR_ARG, "%s: %lld arrived, the plan expects %lld", what,
                      (long long)(bytes / (int64_t)sizeof(double)), (long long)t->nrecv);
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (int64_t q = 0; q < t->nrecv; q++)
            R->val[t->recv_at[q]] = in[q];
    }
    free(in);
    free(out);
    free(rc);
    e = ks_comm_agree(c, e);
    return e == KS_OK ? KS_OK : ks_adderr(e, "distributed transpose R = P^T (values)");
}
