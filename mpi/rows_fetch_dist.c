/* The rows of other ranks that extended+i interpolation reads: for each
 * F row i of this rank and each strong F neighbour k of i owned by
 * another rank, row k of A and of S and the splitting and coarse id of
 * each of k's columns. Only k's owner has them.
 *
 * A halo plan over those points says who sends which rows to whom (as for
 * x's ghosts), and the rows travel through it (halo_rows.c). An entry
 * travels as (global column, value, coarse id and strong flag in one
 * integer): the strong columns of a row are among its entries, and a
 * coarse id of -1 says F. */
#include "amg_dist.h"

#include <stdint.h>
#include <string.h>

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
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < S->nloc; i++)
        for (ks_int k = S->grp[i]; cf[i] != KS_CPT && k < S->grp[i + 1]; k++)
            if (C->ghost_cf[S->gci[k]] != KS_CPT) {
#pragma omp atomic write
                need[S->gci[k]] = 1;
            }
    ks_int n = 0;
    for (ks_int g = 0; g < S->nghost; g++)
        n += need[g];
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
 * coarse ids, appended at w (NULL: only counted). Returns the count. A's
 * row i is AL's and AG's row a (i, or its place among rows taken out). */
static ks_int pack_row(const ks_csr *AL, const ks_csr *AG, const ks_dist_strength *S,
                       const ks_dist_coarse *C, ks_int a_row, ks_int i, wire *w)
{
    const ks_int l0 = AL->rowptr[a_row], l1 = AL->rowptr[a_row + 1];
    const ks_int g0 = AG ? AG->rowptr[a_row] : 0, g1 = AG ? AG->rowptr[a_row + 1] : 0;
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

typedef struct pack_ctx {
    const ks_csr *AL, *AG;
    const ks_dist_strength *S;
    const ks_dist_coarse *C;
    const ks_int *rows; /* NULL: AL and AG are the blocks; else the rows they hold */
    ks_int nrows;
} pack_ctx;

static ks_int pack(const void *ctx, ks_int i, void *out)
{
    const pack_ctx *x = ctx;
    /* with rows: i's place among the rows taken out (ascending) */
    const ks_int a = x->rows ? ks_lower_bound(x->rows, x->nrows, i) : i;
    return pack_row(x->AL, x->AG, x->S, x->C, a, i, out);
}

/* The rows this rank sends (the plan's, each once, ascending) taken out of
 * A's blocks where they live and brought to the host: the few rows the
 * neighbours fetch, not the whole blocks. */
static ks_error sent_rows(const ks_matrix *A, const ks_halo *h, ks_int **rows,
                          ks_int *n, ks_csr *XL, ks_csr *XG)
{
    const ks_int ns = h->send_start[h->nsend];
    /* the send list sorted, each row once: a few boundary rows, not a
     * walk over all nloc */
    ks_gint *ids = ks_malloc(((size_t)ns + 1) * sizeof *ids, "rows to send");
    *rows = ks_malloc(((size_t)ns + 1) * sizeof **rows, "rows to send");
    ks_error es = ids && *rows ? KS_OK : KS_ERR_MEMORY;
    int64_t m = 0;
    if (es == KS_OK) {
        for (ks_int k = 0; k < ns; k++)
            ids[k] = h->send_idx[k];
        es = ks_gint_sort_unique(ids, ns, &m);
    }
    for (int64_t k = 0; es == KS_OK && k < m; k++)
        (*rows)[k] = (ks_int)ids[k];
    free(ids);
    if (es != KS_OK)
        return es;
    *n = (ks_int)m;
    ks_backend *be = ks_matrix_backend(A);
    const ks_sparse *L = ks_matrix_sparse(A->dist->local);
    const ks_sparse *G = A->dist->ghost ? ks_matrix_sparse(A->dist->ghost) : NULL;
    ks_int *didx = NULL;
    ks_sparse xl = {0}, xg = {0};
    ks_error e = ks_be_upload_new(be, *rows, (size_t)m * sizeof **rows + 1, (void **)&didx,
                                  "rows to send");
    if (e == KS_OK)
        e = ks_sparse_extract_rows(L, didx, m, &xl);
    if (e == KS_OK && G)
        e = ks_sparse_extract_rows(G, didx, m, &xg);
    if (e == KS_OK)
        e = ks_sparse_to_csr(&xl, XL);
    if (e == KS_OK && G)
        e = ks_sparse_to_csr(&xg, XG);
    if (didx)
        be->ops->free(be, didx);
    ks_sparse_free(&xl);
    ks_sparse_free(&xg);
    return e;
}

/* The fetched rows' arrays from the entries received. */
static ks_error unpack(const wire *in, ks_dist_ext_rows *R)
{
    const ks_int run = R->rowptr[R->n];
    R->col = ks_malloc((size_t)run * sizeof *R->col + 1, "fetched columns");
    R->val = ks_malloc((size_t)run * sizeof *R->val + 1, "fetched values");
    R->strong = ks_malloc((size_t)run + 1, "fetched strong flags");
    R->cid = ks_malloc((size_t)run * sizeof *R->cid + 1, "fetched coarse ids");
    if (!R->col || !R->val || !R->strong || !R->cid)
        return KS_ERR_MEMORY;
    for (ks_int k = 0; k < run; k++) {
        R->col[k] = in[k].col;
        R->val[k] = in[k].val;
        R->strong[k] = (unsigned char)(in[k].meta & 1);
        R->cid[k] = in[k].meta / 2 - 1;
    }
    return KS_OK;
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
    /* on a device the rows sent are taken out there (sent_rows) */
    const int dev = A && A->dist && ks_amg_dist_local_on_backend(ks_matrix_backend(A)) &&
                    ks_matrix_sparse(A->dist->local)->val &&
                    (!A->dist->ghost || ks_matrix_sparse(A->dist->ghost)->val);
    if (!A || !A->dist || A->dist->comm != c || A->dist->offsets[c->rank] != S->row_begin)
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix is not the strength graph's", who);
    else if (!dev && (!(AL = ks_matrix_host_csr(A->dist->local)) ||
                      (A->dist->ghost && !(AG = ks_matrix_host_csr(A->dist->ghost)))))
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix's values are not available on the host", who);
    else if ((!cf && S->nloc > 0) || !C || (!C->cid && S->nloc > 0))
        e = ks_seterr(KS_ERR_ARG, "%s: NULL splitting or coarse ids", who);
    double t = ks_wtime();
    if (e == KS_OK)
        e = wanted(S, cf, C, R);
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = ks_halo_create(c, S->offsets, R->gid, R->n, &R->halo);
    e = ks_comm_agree(c, e);
    ks_amg_dist_substep(c, "  fetch: the rows wanted and their plan", &t);
    wire *in = NULL;
    ks_csr XL = {0}, XG = {0};
    ks_int *rows = NULL, nrows = 0;
    if (e == KS_OK && dev)
        e = ks_comm_agree(c, sent_rows(A, R->halo, &rows, &nrows, &XL, &XG));
    ks_amg_dist_substep(c, "  fetch: the rows sent, from the device", &t);
    const pack_ctx x = {dev ? &XL : AL, dev ? (A->dist->ghost ? &XG : NULL) : AG, S, C,
                        rows, nrows};
    if (e == KS_OK)
        e = ks_halo_rows_fetch(c, R->halo, S->nloc, R->n, sizeof(wire), pack, &x, &R->rowptr,
                               (void **)&in);
    ks_amg_dist_substep(c, "  fetch: the rows exchanged", &t);
    ks_csr_free(&XL);
    ks_csr_free(&XG);
    free(rows);
    if (e == KS_OK)
        e = ks_comm_agree(c, unpack(in, R));
    ks_amg_dist_substep(c, "  fetch: unpacked", &t);
    free(in);
    if (e != KS_OK) {
        ks_dist_ext_rows_free(R);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}
