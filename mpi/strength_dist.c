/* Classical strength of a distributed matrix. Row i of this rank has its
 * entries in two blocks (owned columns, ghost columns); the serial rule
 * (amg/cpu/strength.c) needs the whole row: the diagonal's sign, the
 * largest entry of the opposite sign, and the row sum for max_row_sum. No
 * communication is needed, since a rank holds all entries of its rows.
 * The row sum is added in global column order -- the ghosts below this
 * rank's first row, the owned columns, then the ghosts above -- which is
 * the serial loop's order, so the max_row_sum test sees the same bits. */
#include "amg_dist.h"

#include <math.h>
#include <string.h>

void ks_dist_strength_free(ks_dist_strength *S)
{
    if (!S)
        return;
    ks_strength_free(&S->local);
    free(S->grp);
    free(S->gci);
    memset(S, 0, sizeof *S);
}

/* One row's two blocks. G's columns ascend by global id; those before
 * `split` lie below the rank's own rows. */
typedef struct row_view {
    const double *lv, *gv;
    const ks_int *lc, *gc;
    ks_int nl, ng, split;
} row_view;

static row_view row_of(const ks_csr *L, const ks_csr *G, const ks_gint *gid, ks_gint lo,
                       ks_int i)
{
    row_view r = {0};
    r.lv = L->val + L->rowptr[i];
    r.lc = L->colind + L->rowptr[i];
    r.nl = L->rowptr[i + 1] - L->rowptr[i];
    if (G) {
        r.gv = G->val + G->rowptr[i];
        r.gc = G->colind + G->rowptr[i];
        r.ng = G->rowptr[i + 1] - G->rowptr[i];
    }
    while (r.split < r.ng && gid[r.gc[r.split]] < lo)
        r.split++;
    return r;
}

/* amg/cpu/strength.c's classical_cut over both blocks: 0 when the row has
 * no strong entries, else the sign s and threshold cut. */
static int row_cut(const row_view *r, ks_int i, double theta, double max_row_sum, double *s_out,
                   double *cut)
{
    double diag = 0.0, rowsum = 0.0, scale = 0.0;
    for (ks_int k = 0; k < r->split; k++)
        rowsum += r->gv[k];
    for (ks_int k = 0; k < r->nl; k++) {
        rowsum += r->lv[k];
        if (r->lc[k] == i)
            diag += r->lv[k];
    }
    for (ks_int k = r->split; k < r->ng; k++)
        rowsum += r->gv[k];
    const double s = diag < 0.0 ? -1.0 : 1.0;
    /* A maximum: the order of the blocks does not matter. */
    for (ks_int k = 0; k < r->nl; k++)
        if (r->lc[k] != i && -s * r->lv[k] > scale)
            scale = -s * r->lv[k];
    for (ks_int k = 0; k < r->ng; k++)
        if (-s * r->gv[k] > scale)
            scale = -s * r->gv[k];
    if (!(scale > 0.0) || (max_row_sum < 1.0 && fabs(rowsum) > max_row_sum * fabs(diag)))
        return 0;
    *s_out = s;
    *cut = theta * scale;
    return 1;
}

/* The strong entries of one block (skip = the diagonal's column, or -1). */
static ks_int pick(const double *v, const ks_int *c, ks_int n, ks_int skip, double s, double cut,
                   ks_int *out)
{
    ks_int cnt = 0;
    for (ks_int k = 0; k < n; k++) {
        const double w = -s * v[k];
        if (c[k] != skip && w > 0.0 && w >= cut) {
            if (out)
                out[cnt] = c[k];
            cnt++;
        }
    }
    return cnt;
}

static ks_error check_args(const ks_matrix *A, double theta, double max_row_sum, const char *who)
{
    if (!(theta >= 0.0 && theta <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: strength_threshold = %g, expected a value in [0, 1]",
                         who, theta);
    if (!(max_row_sum > 0.0 && max_row_sum <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: max_row_sum = %g, expected a value in (0, 1] "
                         "(1 disables the test)", who, max_row_sum);
    if (!ks_matrix_host_csr(A->dist->local) ||
        (A->dist->ghost && !ks_matrix_host_csr(A->dist->ghost)))
        return ks_seterr(KS_ERR_ARG, "%s: the matrix's values are not available on the host",
                         who);
    return KS_OK;
}

/* Both parts' rows: counts, prefix sums, then the columns (rows come out
 * sorted because the blocks' rows are). */
static ks_error fill(const ks_csr *L, const ks_csr *G, const ks_gint *gid, ks_gint lo,
                     double theta, double max_row_sum, ks_dist_strength *S)
{
    const ks_int n = L->nrows;
    double *rs = ks_malloc(2 * ((size_t)n + 1) * sizeof *rs, "strength row thresholds");
    S->local.n = n;
    S->local.rowptr = ks_calloc((size_t)n + 1, sizeof(ks_int), "strength row pointers");
    S->grp = ks_calloc((size_t)n + 1, sizeof(ks_int), "strength ghost row pointers");
    if (!rs || !S->local.rowptr || !S->grp) {
        free(rs);
        return KS_ERR_MEMORY;
    }
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        const row_view r = row_of(L, G, gid, lo, i);
        double s = 1.0, cut = 0.0;
        ks_int cl = 0, cg = 0;
        if (row_cut(&r, i, theta, max_row_sum, &s, &cut)) {
            cl = pick(r.lv, r.lc, r.nl, i, s, cut, NULL);
            cg = pick(r.gv, r.gc, r.ng, -1, s, cut, NULL);
        }
        rs[2 * (size_t)i] = s;
        rs[2 * (size_t)i + 1] = cut;
        S->local.rowptr[i + 1] = cl;
        S->grp[i + 1] = cg;
    }
    ks_rowptr_scan(S->local.rowptr, n); /* a row's entries are at most n + nghost */
    ks_rowptr_scan(S->grp, n);
    S->local.colind = ks_malloc((size_t)S->local.rowptr[n] * sizeof(ks_int) + 1,
                                "strength columns");
    S->gci = ks_malloc((size_t)S->grp[n] * sizeof(ks_int) + 1, "strength ghost columns");
    if (!S->local.colind || !S->gci) {
        free(rs);
        return KS_ERR_MEMORY;
    }
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        if (S->local.rowptr[i + 1] == S->local.rowptr[i] && S->grp[i + 1] == S->grp[i])
            continue;
        const row_view r = row_of(L, G, gid, lo, i);
        const double s = rs[2 * (size_t)i], cut = rs[2 * (size_t)i + 1];
        pick(r.lv, r.lc, r.nl, i, s, cut, S->local.colind + S->local.rowptr[i]);
        pick(r.gv, r.gc, r.ng, -1, s, cut, S->gci + S->grp[i]);
    }
    free(rs);
    return KS_OK;
}

ks_error ks_dist_strength_classical(const ks_matrix *A, double theta, double max_row_sum,
                                    ks_dist_strength *S)
{
    static const char who[] = "distributed classical strength";
    if (!S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(S, 0, sizeof *S);
    if (!A || !A->dist)
        return ks_seterr(KS_ERR_ARG, "%s: %s", who, A ? "the matrix is not distributed"
                                                       : "NULL matrix");
    const ks_matrix_dist *md = A->dist;
    const ks_dist_impl *d = (const ks_dist_impl *)md;
    const ks_comm *c = md->comm;
    /* A parameter may be bad on some ranks only: all refuse together. */
    ks_error e = ks_comm_agree(c, check_args(A, theta, max_row_sum, who));
    if (e != KS_OK)
        return e;
    S->comm = c;
    S->offsets = md->offsets;
    S->row_begin = md->offsets[c->rank];
    S->nloc = (ks_int)(md->offsets[c->rank + 1] - S->row_begin);
    S->nghost = d->nghost;
    S->ghost_gid = d->ghost_gid;
    S->halo = d->halo;
    const ks_csr *G = md->ghost ? ks_matrix_host_csr(md->ghost) : NULL;
    e = ks_comm_agree(c, fill(ks_matrix_host_csr(md->local), G, d->ghost_gid, S->row_begin,
                              theta, max_row_sum, S));
    if (e != KS_OK) {
        ks_dist_strength_free(S);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}
