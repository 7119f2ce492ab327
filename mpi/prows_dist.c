/* Row-local work on distributed interpolation rows: truncation, and the
 * split of the columns by the coarse layout that RAP reads.
 *
 * Truncation runs the serial truncation's own passes (ks_amg_truncate_rows)
 * on the rows in place, ties broken by the entries' positions in their
 * row: the rule only compares columns to break ties (lower first), and
 * positions order like the global coarse ids (the rows are sorted), so one
 * code path keeps the distributed rows equal to the serial ones by
 * construction. */
#include "amg_dist.h"

#include <string.h>

static ks_error truncate_rows(ks_dist_prows *P, int max_elements, double factor)
{
    void *col = P->col;
    const ks_error e = ks_amg_truncate_rows(P->nloc, P->rowptr, &col, sizeof *P->col, 0, &P->val,
                                            max_elements, factor);
    P->col = col;
    return e;
}

ks_error ks_dist_prows_truncate(ks_dist_prows *P, int max_elements, double factor)
{
    if (!P || !P->comm)
        return ks_seterr(KS_ERR_ARG, "distributed truncation: NULL or empty rows");
    ks_dist_prows_drop_dev(P); /* the rows change */
    /* The serial function checks the parameters; a bad one on some ranks
     * only fails on all. */
    ks_error e = ks_comm_agree(P->comm, truncate_rows(P, max_elements, factor));
    return e == KS_OK ? KS_OK : ks_adderr(e, "distributed truncation");
}

/* Row i's local entries: rows ascend by global column, so they are one
 * run [*a, *b) of the row, the ghost entries before and after it. Most
 * rows have no ghost entry (their first column in range and their last
 * below hi): two reads, not a walk. */
static inline void local_run(const ks_int *rp, const ks_gint *col, ks_int i, ks_gint lo,
                             ks_gint hi, ks_int *a, ks_int *b)
{
    ks_int x = rp[i], y = rp[i + 1];
    if (x < y && (col[x] < lo || col[y - 1] >= hi)) {
        while (x < y && col[x] < lo)
            x++;
        while (y > x && col[y - 1] >= hi)
            y--;
    }
    *a = x;
    *b = y;
}

/* Rows a task of the split takes: rows without ghost entries (most) next
 * to each other are one stretch of P's entries and of the local block's,
 * copied as one. */
int ks_dist_block_rows = 4096;

/* P's entries [from, to), all local, into the local block, shift places
 * earlier (the ghost entries before them). */
static inline void local_stretch(const ks_gint *col, const double *val, ks_int from, ks_int to,
                                 ks_int shift, ks_gint lo, ks_int *lci, double *lv)
{
    for (ks_int k = from; k < to; k++)
        lci[k - shift] = (ks_int)(col[k] - lo);
    if (to > from)
        memcpy(lv + (from - shift), val + from, (size_t)(to - from) * sizeof *lv);
}

/* ks_dist_csr_split's logic with the columns in the coarse layout (P is
 * not square, and its rows are already sorted and checked). Row-parallel:
 * each row's local run found and its length kept, the lengths scanned
 * (the local block's row pointers; a row's ghost entries start at its
 * entries less its local ones before it), then blocks of rows split into
 * their places, the ghost entries with their global ids; those ids,
 * sorted and kept once, are the ghost columns, and the ghost entries
 * (few: rows at the rank's boundary) get their numbers. Every entry has
 * one place whatever the blocks, and every row keeps its order, so the
 * blocks are the serial loop's. */
static ks_error split_rows(const ks_dist_prows *P, ks_dist_split *S)
{
    const ks_int n = P->nloc, nnz = P->rowptr[n];
    const ks_gint lo = P->c_begin, hi = P->c_begin + P->nc;
    const ks_int *rp = P->rowptr;
    const ks_gint *col = P->col;
    const double *val = P->val;
    ks_int *lrp = ks_malloc(((size_t)n + 1) * sizeof *lrp, "split row counts");
    if (!lrp)
        return KS_ERR_MEMORY;
    S->local.rowptr = lrp; /* freed with S on failure */
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        ks_int a, b;
        local_run(rp, col, i, lo, hi, &a, &b);
        lrp[i + 1] = b - a;
    }
    const ks_int nl = (ks_int)ks_rowptr_scan(lrp, n), ngx = nnz - nl; /* at most nnz */
    S->local.nrows = n;
    S->local.ncols = P->nc;
    S->local.nnz = nl;
    ks_int *lci = S->local.colind = ks_malloc((size_t)nl * sizeof *lci + 1, "local columns");
    double *lv = S->local.val = ks_malloc((size_t)nl * sizeof *lv + 1, "local values");
    ks_gint *gid = ks_malloc((size_t)ngx * sizeof *gid + 1, "ghost entries' columns");
    ks_error e = lci && lv && gid ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK)
        e = ks_csr_alloc(&S->ghost, n, 0, ngx);
    if (e != KS_OK) {
        free(gid);
        return e;
    }
    ks_int *grp = S->ghost.rowptr;
    double *gv = S->ghost.val;
    const ks_int br = ks_dist_block_rows > 0 ? ks_dist_block_rows : 1;
    const ks_int nblk = n / br + (n % br > 0);
#pragma omp parallel for schedule(static)
    for (ks_int blk = 0; blk < nblk; blk++) {
        const ks_int i0 = blk * br, i1 = n - i0 < br ? n : i0 + br;
        ks_int from = rp[i0]; /* the stretch of rows without ghost entries so far */
        for (ks_int i = i0; i < i1; i++) {
            grp[i + 1] = rp[i + 1] - lrp[i + 1];
            if (grp[i + 1] == rp[i] - lrp[i])
                continue; /* no ghost entry: the row joins the stretch */
            local_stretch(col, val, from, rp[i], rp[i] - lrp[i], lo, lci, lv);
            ks_int a, b, q = rp[i] - lrp[i];
            local_run(rp, col, i, lo, hi, &a, &b);
            for (ks_int k = rp[i]; k < a; k++, q++) {
                gid[q] = col[k];
                gv[q] = val[k];
            }
            local_stretch(col, val, a, b, a - lrp[i], lo, lci, lv);
            for (ks_int k = b; k < rp[i + 1]; k++, q++) {
                gid[q] = col[k];
                gv[q] = val[k];
            }
            from = rp[i + 1];
        }
        local_stretch(col, val, from, rp[i1], rp[i1] - lrp[i1], lo, lci, lv);
    }
    /* the ghost columns: the ghost entries' ids, sorted, each once */
    S->ghost_gid = ks_malloc((size_t)ngx * sizeof *S->ghost_gid + 1, "ghost columns");
    int64_t ng = 0;
    e = S->ghost_gid ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK) {
        ks_memcpy_par(S->ghost_gid, gid, (size_t)ngx * sizeof *gid);
        e = ks_gint_sort_unique(S->ghost_gid, ngx, &ng);
    }
    ks_gmap gm = {0};
    if (e == KS_OK)
        e = ks_gmap_borrow(lo, hi, S->ghost_gid, (ks_int)ng, &gm);
    if (e == KS_OK) {
        S->ghost.ncols = (ks_int)ng;
#pragma omp parallel for schedule(static)
        for (ks_int q = 0; q < ngx; q++)
            S->ghost.colind[q] = ks_gmap_ext_find(&gm, gid[q]);
    }
    ks_gmap_free(&gm); /* its table; the ids are S's */
    free(gid);
    return e;
}

ks_error ks_dist_prows_split_local(const ks_dist_prows *P, ks_dist_split *out)
{
    if (!out)
        return ks_seterr(KS_ERR_ARG, "distributed interpolation split: NULL output");
    memset(out, 0, sizeof *out);
    if (!P || !P->comm)
        return ks_seterr(KS_ERR_ARG, "distributed interpolation split: NULL or empty rows");
    ks_error e = split_rows(P, out);
    if (e != KS_OK) {
        ks_dist_split_free(out);
        return ks_adderr(e, "distributed interpolation split");
    }
    return KS_OK;
}

ks_error ks_dist_prows_split(const ks_dist_prows *P, ks_dist_split *out)
{
    ks_error e = ks_dist_prows_split_local(P, out);
    if (P && P->comm)
        e = ks_comm_agree(P->comm, e);
    if (e != KS_OK)
        ks_dist_split_free(out);
    return e;
}
