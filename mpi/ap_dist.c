/* A P for this rank's rows of A: the local block's columns reach P's own
 * rows, the ghost block's the rows fetched from their owners
 * (rap_fetch_dist.c). No further message.
 *
 * The coarse columns are 64-bit global ids; a dense accumulator over all
 * of them would cost O(global coarse size) per rank. Instead the columns
 * that occur in the P rows at hand (own and fetched) are numbered
 * compactly in ascending global order, so a row's touched compact ids,
 * sorted, are its global columns sorted.
 *
 * Order of the sums: each AP(i,J) starts at 0.0 and adds A(i,k) P(k,J)
 * with A's row walked in global column order (the ghosts below this
 * rank's rows, the owned columns, the ghosts above: merged by global id)
 * and P's row k in its order, which is ks_csr_spgemm's order on the
 * global matrices: the serial rows, bit for bit. One thread. */
#include "rap_dist.h"

#include <stdint.h>
#include <string.h>

static int cmp_gint(const void *a, const void *b)
{
    const ks_gint x = *(const ks_gint *)a, y = *(const ks_gint *)b;
    return (x > y) - (x < y);
}

static int cmp_int(const void *a, const void *b)
{
    const ks_int x = *(const ks_int *)a, y = *(const ks_int *)b;
    return (x > y) - (x < y);
}

/* The product's working set: P's own and fetched rows with compact
 * columns, the compact numbering, the accumulator. */
typedef struct ws {
    ks_gint *cmap;   /* ncm ascending global coarse ids */
    ks_int ncm;
    ks_int *pc, *gc; /* compact columns of P's own rows, of the fetched rows */
    double *acc;
    ks_int *mark;    /* the last row that touched each compact column, or -1 */
    ks_int *touched;
} ws;

static void ws_free(ws *w)
{
    free(w->cmap);
    free(w->pc);
    free(w->gc);
    free(w->acc);
    free(w->mark);
    free(w->touched);
    memset(w, 0, sizeof *w);
}

static ks_int compact_of(const ws *w, ks_gint g)
{
    const ks_gint *p = bsearch(&g, w->cmap, (size_t)w->ncm, sizeof g, cmp_gint);
    return (ks_int)(p - w->cmap); /* every column looked up is in the map */
}

static ks_error ws_make(const ks_dist_prows *P, const ks_dist_ghost_prows *G, ws *w)
{
    const int64_t np = P->nloc ? P->rowptr[P->nloc] : 0, ng = G->n ? G->rowptr[G->n] : 0;
    if (np + ng > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "A P: more than 2^31 entries of P on one rank");
    w->cmap = ks_malloc((size_t)(np + ng) * sizeof *w->cmap + 1, "coarse column map");
    w->pc = ks_malloc((size_t)np * sizeof *w->pc + 1, "P's compact columns");
    w->gc = ks_malloc((size_t)ng * sizeof *w->gc + 1, "fetched rows' compact columns");
    if (!w->cmap || !w->pc || !w->gc)
        return KS_ERR_MEMORY;
    if (np)
        memcpy(w->cmap, P->col, (size_t)np * sizeof *w->cmap);
    if (ng)
        memcpy(w->cmap + np, G->col, (size_t)ng * sizeof *w->cmap);
    qsort(w->cmap, (size_t)(np + ng), sizeof *w->cmap, cmp_gint);
    ks_int m = 0;
    for (int64_t k = 0; k < np + ng; k++)
        if (m == 0 || w->cmap[k] != w->cmap[m - 1])
            w->cmap[m++] = w->cmap[k];
    w->ncm = m;
    for (int64_t k = 0; k < np; k++)
        w->pc[k] = compact_of(w, P->col[k]);
    for (int64_t k = 0; k < ng; k++)
        w->gc[k] = compact_of(w, G->col[k]);
    w->acc = ks_malloc((size_t)m * sizeof *w->acc + 1, "A P accumulator");
    w->mark = ks_malloc((size_t)m * sizeof *w->mark + 1, "A P markers");
    w->touched = ks_malloc((size_t)m * sizeof *w->touched + 1, "A P row columns");
    if (!w->acc || !w->mark || !w->touched)
        return KS_ERR_MEMORY;
    for (ks_int k = 0; k < m; k++)
        w->mark[k] = -1;
    return KS_OK;
}

/* Row i of A P into the accumulator; returns its length (its compact
 * columns in w->touched, ascending). */
static ks_int row_product(const ks_csr *AL, const ks_csr *AG, const ks_gint *ghost_gid,
                          ks_gint lo, const ks_dist_prows *P, const ks_dist_ghost_prows *G,
                          ws *w, ks_int i)
{
    ks_int kl = AL->rowptr[i], kg = AG ? AG->rowptr[i] : 0, n = 0;
    const ks_int l1 = AL->rowptr[i + 1], g1 = AG ? AG->rowptr[i + 1] : 0;
    while (kl < l1 || kg < g1) {
        const ks_gint a = kl < l1 ? lo + AL->colind[kl] : INT64_MAX;
        const ks_gint b = kg < g1 ? ghost_gid[AG->colind[kg]] : INT64_MAX;
        const ks_int *rp, *cc;
        const double *pv;
        double aik;
        ks_int r;
        if (a < b) {
            r = AL->colind[kl];
            aik = AL->val[kl++];
            rp = P->rowptr, cc = w->pc, pv = P->val;
        } else {
            r = AG->colind[kg];
            aik = AG->val[kg++];
            rp = G->rowptr, cc = w->gc, pv = G->val;
        }
        for (ks_int q = rp[r]; q < rp[r + 1]; q++) {
            const ks_int J = cc[q];
            if (w->mark[J] != i) {
                w->mark[J] = i;
                w->acc[J] = 0.0;
                w->touched[n++] = J;
            }
            w->acc[J] += aik * pv[q];
        }
    }
    qsort(w->touched, (size_t)n, sizeof *w->touched, cmp_int);
    return n;
}

static ks_error product(const ks_csr *AL, const ks_csr *AG, const ks_gint *ghost_gid,
                        ks_gint lo, const ks_dist_prows *P, const ks_dist_ghost_prows *G, ws *w,
                        ks_dist_csr *AP)
{
    AP->rowptr = ks_malloc(((size_t)AP->nrows + 1) * sizeof *AP->rowptr, "A P row pointers");
    if (!AP->rowptr)
        return KS_ERR_MEMORY;
    int64_t cap = 16, nnz = 0;
    AP->colind = ks_malloc((size_t)cap * sizeof *AP->colind, "A P columns");
    AP->val = ks_malloc((size_t)cap * sizeof *AP->val, "A P values");
    if (!AP->colind || !AP->val)
        return KS_ERR_MEMORY;
    AP->rowptr[0] = 0;
    for (ks_int i = 0; i < AP->nrows; i++) {
        const ks_int n = row_product(AL, AG, ghost_gid, lo, P, G, w, i);
        if (nnz + n > INT32_MAX)
            return ks_seterr(KS_ERR_SIZE, "A P: more than 2^31 entries on one rank");
        if (nnz + n > cap) {
            while (cap < nnz + n)
                cap *= 2;
            ks_gint *c = realloc(AP->colind, (size_t)cap * sizeof *c);
            if (c)
                AP->colind = c;
            double *v = realloc(AP->val, (size_t)cap * sizeof *v);
            if (v)
                AP->val = v;
            if (!c || !v)
                return ks_seterr(KS_ERR_MEMORY, "A P: out of host memory for %lld entries",
                                 (long long)cap);
        }
        for (ks_int t = 0; t < n; t++) {
            AP->colind[nnz + t] = w->cmap[w->touched[t]];
            AP->val[nnz + t] = w->acc[w->touched[t]];
        }
        nnz += n;
        AP->rowptr[i + 1] = (ks_int)nnz;
    }
    AP->nnz = (ks_int)nnz;
    return KS_OK;
}

ks_error ks_dist_ap(const ks_matrix *A, const ks_dist_prows *P, ks_dist_csr *AP)
{
    static const char who[] = "distributed A P";
    if (!AP)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(AP, 0, sizeof *AP);
    ks_dist_ghost_prows G;
    KS_TRY(ks_dist_fetch_prows(A, P, &G)); /* checks A and P on every rank, agreed */
    const ks_matrix_dist *md = A->dist;
    const ks_dist_impl *d = (const ks_dist_impl *)md;
    const ks_comm *c = md->comm;
    const ks_csr *AL = ks_matrix_host_csr(md->local);
    const ks_csr *AG = md->ghost ? ks_matrix_host_csr(md->ghost) : NULL;
    ks_error e = KS_OK;
    if (!AL || (md->ghost && !AG))
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix's values are not available on the host", who);
    /* A may be rectangular (an interpolation: P1 P2 of aggressive
     * coarsening); P's rows are laid out as A's columns */
    AP->nrows = (ks_int)(md->offsets[c->rank + 1] - md->offsets[c->rank]);
    AP->row_begin = md->offsets[c->rank];
    AP->nrows_global = md->offsets[c->size];
    AP->ncols_global = P->nc_global;
    ws w = {0};
    if (e == KS_OK)
        e = ws_make(P, &G, &w);
    if (e == KS_OK)
        e = product(AL, AG, d->ghost_gid, P->row_begin, P, &G, &w, AP);
    ws_free(&w);
    ks_dist_ghost_prows_free(&G);
    e = ks_comm_agree(c, e);
    if (e != KS_OK) {
        ks_dist_csr_free(AP);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}
