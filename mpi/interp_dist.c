/* Direct interpolation (D1) across ranks. Row i of D1 reads only row i of
 * A and of S and, for each column, its C/F state and coarse id; a rank
 * holds all of its rows (local and ghost blocks), and the ghost columns'
 * states and ids come from ks_dist_coarse_ids, so no message is needed.
 *
 * The row is walked in ascending global column order -- ghosts below the
 * rank's rows, owned columns, ghosts above -- because that is the serial
 * row's order (amg/cpu/interp_direct.c): the sums n_neg, n_pos, p_neg,
 * p_pos are then added in the same order and the weights come out with
 * the same bits. Coarse ids ascend with the fine ids, so the rows come out
 * sorted without a sort. */
#include "amg_dist.h"

#include <stdint.h>
#include <string.h>

void ks_dist_prows_free(ks_dist_prows *P)
{
    if (!P)
        return;
    free(P->rowptr);
    free(P->col);
    free(P->val);
    memset(P, 0, sizeof *P);
}

/* One row of a distributed block pair in ascending global column: the
 * local block's columns are lo + c, the ghost block's gid[c]; the two
 * ranges do not overlap, so a plain merge orders them. */
typedef struct cursor {
    const ks_int *lc, *gc;
    const double *lv, *gv;
    ks_int nl, ng, kl, kg;
    ks_gint lo;
    const ks_gint *gid;
} cursor;

static cursor cursor_of(const ks_int *lrp, const ks_int *lci, const double *lva,
                        const ks_int *grp, const ks_int *gci, const double *gva, ks_gint lo,
                        const ks_gint *gid, ks_int i)
{
    cursor c = {0};
    c.lc = lci + lrp[i];
    c.lv = lva ? lva + lrp[i] : NULL;
    c.nl = lrp[i + 1] - lrp[i];
    if (grp) {
        c.gc = gci + grp[i];
        c.gv = gva ? gva + grp[i] : NULL;
        c.ng = grp[i + 1] - grp[i];
    }
    c.lo = lo;
    c.gid = gid;
    return c;
}

/* The global column at the cursor, INT64_MAX at the end. */
static ks_gint cursor_col(const cursor *c)
{
    const ks_gint a = c->kl < c->nl ? c->lo + c->lc[c->kl] : INT64_MAX;
    const ks_gint b = c->kg < c->ng ? c->gid[c->gc[c->kg]] : INT64_MAX;
    return a < b ? a : b;
}

/* Step past the entry at the cursor: its local or ghost index and value. */
static void cursor_take(cursor *c, int *ghost, ks_int *idx, double *v)
{
    const ks_gint a = c->kl < c->nl ? c->lo + c->lc[c->kl] : INT64_MAX;
    const ks_gint b = c->kg < c->ng ? c->gid[c->gc[c->kg]] : INT64_MAX;
    if (a < b) {
        *ghost = 0;
        *idx = c->lc[c->kl];
        *v = c->lv ? c->lv[c->kl] : 0.0;
        c->kl++;
    } else {
        *ghost = 1;
        *idx = c->gc[c->kg];
        *v = c->gv ? c->gv[c->kg] : 0.0;
        c->kg++;
    }
}

/* What a row needs besides its own entries. */
typedef struct d1_ctx {
    const ks_csr *AL, *AG;      /* A's blocks (AG may be NULL) */
    const ks_dist_strength *S;
    const int *cf;
    const ks_dist_coarse *C;
} d1_ctx;

/* amg/cpu/interp_direct.c's direct_row over the merged row: appends at
 * col/val + *len; 1 on a zero diagonal of an F row. */
static int d1_row(const d1_ctx *x, ks_int i, ks_gint *col, double *val, ks_int *len)
{
    const ks_dist_strength *S = x->S;
    const ks_gint gi = S->row_begin + i;
    if (x->cf[i] == KS_CPT) {
        col[*len] = x->C->cid[i];
        val[(*len)++] = 1.0;
        return 0;
    }
    cursor a = cursor_of(x->AL->rowptr, x->AL->colind, x->AL->val,
                         x->AG ? x->AG->rowptr : NULL, x->AG ? x->AG->colind : NULL,
                         x->AG ? x->AG->val : NULL, S->row_begin, S->ghost_gid, i);
    cursor s = cursor_of(S->local.rowptr, S->local.colind, NULL, S->grp, S->gci, NULL,
                         S->row_begin, S->ghost_gid, i);
    const ks_int start = *len;
    double diag = 0.0, n_neg = 0.0, n_pos = 0.0, p_neg = 0.0, p_pos = 0.0;
    for (ks_gint j = cursor_col(&a); j != INT64_MAX; j = cursor_col(&a)) {
        int ghost;
        ks_int idx;
        double v;
        cursor_take(&a, &ghost, &idx, &v);
        if (j == gi) {
            diag = v;
            continue;
        }
        if (v < 0)
            n_neg += v;
        else
            n_pos += v;
        while (cursor_col(&s) < j) {
            int sg;
            ks_int si;
            double sv;
            cursor_take(&s, &sg, &si, &sv);
        }
        if (cursor_col(&s) != j)
            continue;
        const int cfj = ghost ? x->C->ghost_cf[idx] : x->cf[idx];
        if (cfj != KS_CPT)
            continue;
        col[*len] = ghost ? x->C->ghost_cid[idx] : x->C->cid[idx];
        val[(*len)++] = v;
        if (v < 0)
            p_neg += v;
        else
            p_pos += v;
    }
    if (diag == 0.0) {
        *len = start;
        return 1;
    }
    if (*len == start)
        return 0; /* no strong C neighbour: empty row */
    double d = diag;
    if (p_neg == 0.0)
        d += n_neg;
    if (p_pos == 0.0)
        d += n_pos;
    if (d == 0.0) { /* lumping cancelled the diagonal: the serial row is empty too */
        *len = start;
        return 0;
    }
    const double alpha = p_neg != 0.0 ? n_neg / p_neg : 0.0;
    const double beta = p_pos != 0.0 ? n_pos / p_pos : 0.0;
    for (ks_int k = start; k < *len; k++) {
        const double v = val[k];
        val[k] = v < 0 ? -alpha * v / d : (v > 0 ? -beta * v / d : 0.0);
    }
    return 0;
}

/* The rows, written into arrays sized for the worst case (a row has at
 * most as many entries as A's row, a C row one), then trimmed. */
static ks_error build(const d1_ctx *x, ks_dist_prows *P, const char *who)
{
    const ks_int n = x->S->nloc;
    const int64_t bound = (int64_t)x->AL->rowptr[n] + (x->AG ? x->AG->rowptr[n] : 0) + n;
    if (bound > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "%s: rank %d's rows may pass 2^31 entries", who,
                         x->S->comm->rank);
    P->rowptr = ks_malloc(((size_t)n + 1) * sizeof *P->rowptr, "interpolation row pointers");
    P->col = ks_malloc((size_t)bound * sizeof *P->col + 1, "interpolation columns");
    P->val = ks_malloc((size_t)bound * sizeof *P->val + 1, "interpolation values");
    if (!P->rowptr || !P->col || !P->val)
        return KS_ERR_MEMORY;
    ks_int len = 0;
    P->rowptr[0] = 0;
    for (ks_int i = 0; i < n; i++) {
        if (d1_row(x, i, P->col, P->val, &len))
            return ks_seterr(KS_ERR_NUMERIC, "%s: zero diagonal at row %lld", who,
                             (long long)(x->S->row_begin + i));
        P->rowptr[i + 1] = len;
    }
    ks_gint *c2 = realloc(P->col, (size_t)len * sizeof *c2 + 1);
    double *v2 = realloc(P->val, (size_t)len * sizeof *v2 + 1);
    if (c2) /* a failed shrink keeps the larger block */
        P->col = c2;
    if (v2)
        P->val = v2;
    return KS_OK;
}

ks_error ks_dist_interp_direct(const ks_matrix *A, const ks_dist_strength *S, const int *cf,
                               const ks_dist_coarse *C, ks_dist_prows *P)
{
    static const char who[] = "distributed direct interpolation";
    if (!P)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(P, 0, sizeof *P);
    if (!S || !S->comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL or empty strength graph", who);
    const ks_comm *c = S->comm;
    ks_error e = KS_OK;
    const ks_csr *AL = NULL, *AG = NULL;
    if (!A || !A->dist || A->dist->comm != c ||
        A->dist->offsets[c->rank] != S->row_begin)
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix is not the strength graph's", who);
    else if (!(AL = ks_matrix_host_csr(A->dist->local)) ||
             (A->dist->ghost && !(AG = ks_matrix_host_csr(A->dist->ghost))))
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix's values are not available on the host", who);
    else if ((!cf && S->nloc > 0) || !C || (!C->cid && S->nloc > 0))
        e = ks_seterr(KS_ERR_ARG, "%s: NULL splitting or coarse ids", who);
    /* The ghost block's numbering must be S's (the coarse ids index it). */
    else if (AG && (AG->nrows != S->nloc || AG->ncols != S->nghost))
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix's ghost block is %ld x %ld, the strength "
                      "graph has %ld rows and %ld ghosts", who, (long)AG->nrows,
                      (long)AG->ncols, (long)S->nloc, (long)S->nghost);
    e = ks_comm_agree(c, e);
    if (e != KS_OK)
        return e;
    P->comm = c;
    P->nloc = S->nloc;
    P->row_begin = S->row_begin;
    P->c_begin = C->c_begin;
    P->nc = C->nc;
    P->nc_global = C->nc_global;
    const d1_ctx x = {AL, AG, S, cf, C};
    /* build's messages name the function already. */
    e = ks_comm_agree(c, build(&x, P, who));
    if (e != KS_OK)
        ks_dist_prows_free(P);
    return e;
}
