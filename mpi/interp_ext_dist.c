/* Extended+i interpolation across ranks. Row i of the serial builder
 * (amg/cpu/interp_extended.c, extended_i_row) reads row i of A and S and,
 * for each strong F neighbour k, row k of A and S with the C/F state of
 * k's columns. A rank holds its own rows; the rows of strong F neighbours
 * on other ranks come from ks_dist_fetch_ext_rows. So after that one
 * exchange every row is built here without further messages.
 *
 * Equal bits need the serial order of every sum: row i is walked in
 * ascending global column order and each row k likewise (the serial rows
 * are sorted), the terms of D_k are kept and spread in that order, and
 * i's own term of row k (the "+i") is added to atil_ii right after k's
 * spreading, as the serial spare slot does. Where a term lands in the
 * row does not matter (each weight is its own sum); the row's columns are
 * Chat_i's coarse ids sorted, which is the serial row after its sort. */
#include "amg_dist.h"

#include <stdint.h>
#include <string.h>

/* One row in global column order: per entry the column, the value, the
 * coarse id (-1: F point) and whether S holds it. Either a view into the
 * fetched rows or a copy of an own row into scratch. */
typedef struct xrow {
    ks_int n;
    const ks_gint *col, *cid;
    const double *val;
    const unsigned char *strong;
} xrow;

/* Scratch for one own row (capacity: the longest own row). */
typedef struct xbuf {
    ks_gint *col, *cid;
    double *val;
    unsigned char *strong;
} xbuf;

typedef struct ctx {
    const ks_csr *AL, *AG; /* A's blocks (AG may be NULL) */
    const ks_dist_strength *S;
    const ks_dist_coarse *C;
    const ks_dist_ext_rows *R;
    xbuf bi, bk;           /* scratch of row i and of an own row k */
    ks_gint *set;          /* Chat_i's coarse ids, sorted */
    double *w;             /* their sums */
    ks_int nset, setcap;
    ks_int *tp;            /* row k's kept terms: slot (-1: i's own) ... */
    double *tv;            /* ... and value */
    ks_int tcap;
} ctx;

/* Own row i merged from the two blocks in global column order (ghosts
 * below the rank's rows, owned columns, ghosts above: the blocks' column
 * ranges do not overlap), with S's flags merged from its two parts. */
static xrow own_row(const ctx *x, ks_int i, const xbuf *b)
{
    const ks_csr *AL = x->AL, *AG = x->AG;
    const ks_dist_strength *S = x->S;
    const ks_int l1 = AL->rowptr[i + 1], g1 = AG ? AG->rowptr[i + 1] : 0;
    ks_int kl = AL->rowptr[i], kg = AG ? AG->rowptr[i] : 0;
    ks_int sl = S->local.rowptr[i], sg = S->grp[i], m = 0;
    while (kl < l1 || kg < g1) {
        const ks_gint a = kl < l1 ? S->row_begin + AL->colind[kl] : INT64_MAX;
        const ks_gint g = kg < g1 ? S->ghost_gid[AG->colind[kg]] : INT64_MAX;
        if (a < g) {
            const ks_int j = AL->colind[kl];
            while (sl < S->local.rowptr[i + 1] && S->local.colind[sl] < j)
                sl++;
            b->strong[m] = sl < S->local.rowptr[i + 1] && S->local.colind[sl] == j;
            b->cid[m] = x->C->cid[j];
            b->val[m] = AL->val[kl++];
            b->col[m++] = a;
        } else {
            const ks_int j = AG->colind[kg];
            while (sg < S->grp[i + 1] && S->gci[sg] < j)
                sg++;
            b->strong[m] = sg < S->grp[i + 1] && S->gci[sg] == j;
            b->cid[m] = x->C->ghost_cid[j];
            b->val[m] = AG->val[kg++];
            b->col[m++] = g;
        }
    }
    return (xrow){m, b->col, b->cid, b->val, b->strong};
}

/* Row k (global id): an own row copied into b, or a fetched one. */
static xrow row_of(const ctx *x, ks_gint k, const xbuf *b)
{
    const ks_dist_strength *S = x->S;
    if (k >= S->row_begin && k < S->row_begin + S->nloc)
        return own_row(x, (ks_int)(k - S->row_begin), b);
    const ks_dist_ext_rows *R = x->R;
    ks_int lo = 0, hi = R->n; /* R->gid ascends; k is there by construction */
    while (lo < hi) {
        const ks_int mid = lo + (hi - lo) / 2;
        if (R->gid[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    const ks_int b0 = R->rowptr[lo];
    return (xrow){R->rowptr[lo + 1] - b0, R->col + b0, R->cid + b0, R->val + b0,
                  R->strong + b0};
}

/* a_kk of a row: 0 when the row has no diagonal, as serially. */
static double diag_of(const xrow *r, ks_gint k)
{
    for (ks_int m = 0; m < r->n; m++)
        if (r->col[m] == k)
            return r->val[m];
    return 0.0;
}

/* Slot of coarse id c in Chat_i, -1 when not there. */
static ks_int slot(const ctx *x, ks_gint c)
{
    ks_int lo = 0, hi = x->nset;
    while (lo < hi) {
        const ks_int mid = lo + (hi - lo) / 2;
        if (x->set[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->nset && x->set[lo] == c ? lo : -1;
}

static int cmp_gint(const void *a, const void *b)
{
    const ks_gint p = *(const ks_gint *)a, q = *(const ks_gint *)b;
    return (p > q) - (p < q);
}

static ks_error set_push(ctx *x, ks_gint c)
{
    if (x->nset == x->setcap) {
        if (x->setcap > INT32_MAX / 2)
            return ks_seterr(KS_ERR_SIZE, "interpolatory set past 2^31 entries");
        const ks_int cap = x->setcap ? 2 * x->setcap : 64;
        ks_gint *s = realloc(x->set, (size_t)cap * sizeof *s);
        if (!s)
            return ks_seterr(KS_ERR_MEMORY, "out of memory for an interpolatory set");
        x->set = s;
        x->setcap = cap;
    }
    x->set[x->nset++] = c;
    return KS_OK;
}

/* Chat_i: the strong C points of row i and of its strong F neighbours'
 * rows, as sorted unique coarse ids with zero sums. */
static ks_error interp_set(ctx *x, const xrow *ri)
{
    x->nset = 0;
    for (ks_int q = 0; q < ri->n; q++) {
        if (!ri->strong[q])
            continue;
        if (ri->cid[q] >= 0) {
            KS_TRY(set_push(x, ri->cid[q]));
            continue;
        }
        const xrow rk = row_of(x, ri->col[q], &x->bk);
        for (ks_int m = 0; m < rk.n; m++)
            if (rk.strong[m] && rk.cid[m] >= 0)
                KS_TRY(set_push(x, rk.cid[m]));
    }
    qsort(x->set, (size_t)x->nset, sizeof *x->set, cmp_gint);
    ks_int u = 0;
    for (ks_int q = 0; q < x->nset; q++)
        if (u == 0 || x->set[q] != x->set[u - 1])
            x->set[u++] = x->set[q];
    x->nset = u;
    double *w = realloc(x->w, ((size_t)u + 1) * sizeof *w);
    if (!w)
        return ks_seterr(KS_ERR_MEMORY, "out of memory for interpolation weights");
    x->w = w;
    for (ks_int q = 0; q < u; q++)
        x->w[q] = 0.0;
    return KS_OK;
}

/* Spread a = a_ik over Chat_i U {i} in proportion to ahat_kl (row k in
 * column order); returns what goes to atil_ii: a when D_k = 0, else i's
 * own term (-0.0 without one, which leaves atil unchanged, as the serial
 * spare slot does). */
static ks_error spread(ctx *x, ks_gint gi, ks_gint k, double a, double *to_atil)
{
    const xrow rk = row_of(x, k, &x->bk);
    if (rk.n > x->tcap) {
        ks_int *tp = realloc(x->tp, (size_t)rk.n * sizeof *tp);
        if (tp)
            x->tp = tp;
        double *tv = realloc(x->tv, (size_t)rk.n * sizeof *tv);
        if (tv)
            x->tv = tv;
        if (!tp || !tv)
            return ks_seterr(KS_ERR_MEMORY, "out of memory for a distance-two row");
        x->tcap = rk.n;
    }
    const int neg_diag = diag_of(&rk, k) < 0; /* ahat keeps the sign opposite to a_kk */
    ks_int nt = 0;
    double D = 0.0;
    for (ks_int m = 0; m < rk.n; m++) {
        const double v = rk.val[m];
        if (neg_diag ? !(v > 0) : !(v < 0))
            continue;
        ks_int p;
        if (rk.col[m] == gi)
            p = -1;
        else if (rk.cid[m] < 0 || (p = slot(x, rk.cid[m])) < 0)
            continue;
        x->tp[nt] = p;
        x->tv[nt++] = v;
        D += v;
    }
    if (D == 0.0) {
        *to_atil = a;
        return KS_OK;
    }
    const double dist = a / D;
    double own = -0.0;
    for (ks_int t = 0; t < nt; t++) {
        if (x->tp[t] < 0)
            own += dist * x->tv[t];
        else
            x->w[x->tp[t]] += dist * x->tv[t];
    }
    *to_atil = own;
    return KS_OK;
}

/* F row i (local): its weights in x->w over x->set, or nset = 0 for an
 * empty row. *zero_diag: a_ii == 0 (the serial refusal). */
static ks_error ext_row(ctx *x, ks_int i, int *zero_diag)
{
    const ks_gint gi = x->S->row_begin + i;
    const xrow ri = own_row(x, i, &x->bi);
    const double a_ii = diag_of(&ri, gi);
    *zero_diag = a_ii == 0.0;
    x->nset = 0;
    if (*zero_diag)
        return KS_OK;
    KS_TRY(interp_set(x, &ri));
    if (x->nset == 0)
        return KS_OK; /* nothing to interpolate from */
    double atil = a_ii;
    for (ks_int q = 0; q < ri.n; q++) {
        const ks_gint j = ri.col[q];
        const double a = ri.val[q];
        if (j == gi)
            continue;
        const ks_int p = ri.cid[q] >= 0 ? slot(x, ri.cid[q]) : -1;
        if (p >= 0) {
            x->w[p] += a;
        } else if (ri.strong[q] && ri.cid[q] < 0) {
            double t = 0.0; /* set by spread on success */
            KS_TRY(spread(x, gi, j, a, &t));
            atil += t;
        } else {
            atil += a; /* weak and outside Chat_i: lumped */
        }
    }
    if (atil == 0.0) {
        x->nset = 0; /* as serially: the row is left empty */
        return KS_OK;
    }
    for (ks_int q = 0; q < x->nset; q++)
        x->w[q] = -x->w[q] / atil;
    return KS_OK;
}

/* Room for `extra` more entries of P. */
static ks_error grow(ks_dist_prows *P, int64_t len, int64_t extra, int64_t *cap)
{
    if (len + extra <= *cap)
        return KS_OK;
    if (len + extra > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "rank %d's interpolation rows pass 2^31 entries",
                         P->comm->rank);
    int64_t c = *cap * 2 > len + extra ? *cap * 2 : len + extra;
    if (c > INT32_MAX)
        c = INT32_MAX;
    ks_gint *col = realloc(P->col, (size_t)c * sizeof *col);
    if (col)
        P->col = col;
    double *val = realloc(P->val, (size_t)c * sizeof *val);
    if (val)
        P->val = val;
    if (!col || !val)
        return ks_seterr(KS_ERR_MEMORY, "out of memory for interpolation rows");
    *cap = c;
    return KS_OK;
}

static ks_error build(ctx *x, ks_dist_prows *P, const int *cf)
{
    const ks_int n = x->S->nloc;
    ks_int maxlen = 1;
    for (ks_int i = 0; i < n; i++) {
        const ks_int len = x->AL->rowptr[i + 1] - x->AL->rowptr[i] +
                           (x->AG ? x->AG->rowptr[i + 1] - x->AG->rowptr[i] : 0);
        if (len > maxlen)
            maxlen = len;
    }
    xbuf *bs[2] = {&x->bi, &x->bk};
    for (int t = 0; t < 2; t++) {
        bs[t]->col = ks_malloc((size_t)maxlen * sizeof(ks_gint), "row scratch");
        bs[t]->cid = ks_malloc((size_t)maxlen * sizeof(ks_gint), "row scratch");
        bs[t]->val = ks_malloc((size_t)maxlen * sizeof(double), "row scratch");
        bs[t]->strong = ks_malloc((size_t)maxlen, "row scratch");
        if (!bs[t]->col || !bs[t]->cid || !bs[t]->val || !bs[t]->strong)
            return KS_ERR_MEMORY;
    }
    P->rowptr = ks_malloc(((size_t)n + 1) * sizeof *P->rowptr, "interpolation row pointers");
    if (!P->rowptr)
        return KS_ERR_MEMORY;
    int64_t len = 0, cap = 0;
    KS_TRY(grow(P, 0, (int64_t)n + 1, &cap));
    P->rowptr[0] = 0;
    for (ks_int i = 0; i < n; i++) {
        if (cf[i] == KS_CPT) {
            KS_TRY(grow(P, len, 1, &cap));
            P->col[len] = x->C->cid[i];
            P->val[len++] = 1.0;
        } else {
            int zero_diag;
            KS_TRY(ext_row(x, i, &zero_diag));
            if (zero_diag)
                return ks_seterr(KS_ERR_NUMERIC, "zero diagonal at row %lld",
                                 (long long)(x->S->row_begin + i));
            KS_TRY(grow(P, len, x->nset, &cap));
            for (ks_int q = 0; q < x->nset; q++) {
                P->col[len] = x->set[q];
                P->val[len++] = x->w[q];
            }
        }
        P->rowptr[i + 1] = (ks_int)len;
    }
    return KS_OK;
}

static void ctx_free(ctx *x)
{
    xbuf *bs[2] = {&x->bi, &x->bk};
    for (int t = 0; t < 2; t++) {
        free(bs[t]->col);
        free(bs[t]->cid);
        free(bs[t]->val);
        free(bs[t]->strong);
    }
    free(x->set);
    free(x->w);
    free(x->tp);
    free(x->tv);
}

ks_error ks_dist_interp_extended_i(const ks_matrix *A, const ks_dist_strength *S, const int *cf,
                                   const ks_dist_coarse *C, ks_dist_prows *P)
{
    static const char who[] = "distributed extended+i interpolation";
    if (!P)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(P, 0, sizeof *P);
    if (!S || !S->comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL or empty strength graph", who);
    const ks_comm *c = S->comm;
    ks_error e = KS_OK;
    const ks_csr *AL = NULL, *AG = NULL;
    if (!A || !A->dist || A->dist->comm != c || A->dist->offsets[c->rank] != S->row_begin)
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
    /* Collective and agreed: every rank fetches, or none goes on. */
    ks_dist_ext_rows R;
    e = ks_dist_fetch_ext_rows(A, S, cf, C, &R);
    if (e != KS_OK)
        return ks_adderr(e, "%s", who);
    P->comm = c;
    P->nloc = S->nloc;
    P->row_begin = S->row_begin;
    P->c_begin = C->c_begin;
    P->nc = C->nc;
    P->nc_global = C->nc_global;
    ctx x = {.AL = AL, .AG = AG, .S = S, .C = C, .R = &R};
    e = build(&x, P, cf);
    if (e != KS_OK)
        e = ks_adderr(e, "%s", who);
    ctx_free(&x);
    ks_dist_ext_rows_free(&R);
    e = ks_comm_agree(c, e);
    if (e != KS_OK)
        ks_dist_prows_free(P);
    return e;
}
