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
    /* The serial function checks the parameters; a bad one on some ranks
     * only fails on all. */
    ks_error e = ks_comm_agree(P->comm, truncate_rows(P, max_elements, factor));
    return e == KS_OK ? KS_OK : ks_adderr(e, "distributed truncation");
}

/* ks_dist_csr_split's logic with the columns in the coarse layout (P is
 * not square, and its rows are already sorted and checked). Row-parallel:
 * each row's local entries counted, the counts scanned, then each row
 * split into its places; every row keeps its order, so the blocks are the
 * serial loop's. */
static ks_error split_rows(const ks_dist_prows *P, ks_dist_split *S)
{
    const ks_int n = P->nloc, nnz = P->rowptr[n];
    const ks_gint lo = P->c_begin, hi = P->c_begin + P->nc;
    ks_gmap gm; /* the ghost columns: coarse ids outside this rank's */
    KS_TRY(ks_gmap_make(lo, hi, P->col, nnz, NULL, 0, &gm));
    const ks_int ng = gm.next;
    S->ghost_gid = gm.ext; /* taken */
    gm.own_ext = 0;
    ks_int *lc = ks_malloc(((size_t)n + 1) * sizeof *lc, "split row counts");
    if (!lc) {
        ks_gmap_free(&gm);
        return KS_ERR_MEMORY;
    }
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        ks_int c = 0;
        for (ks_int k = P->rowptr[i]; k < P->rowptr[i + 1]; k++)
            c += P->col[k] >= lo && P->col[k] < hi;
        lc[i + 1] = c;
    }
    const ks_int nl = (ks_int)ks_rowptr_scan(lc, n); /* at most nnz */
    ks_error e = ks_csr_alloc(&S->local, n, P->nc, nl);
    if (e == KS_OK)
        e = ks_csr_alloc(&S->ghost, n, ng, nnz - nl);
    if (e != KS_OK) {
        free(lc);
        ks_gmap_free(&gm);
        return e;
    }
    ks_int *lrp = S->local.rowptr, *grp = S->ghost.rowptr;
    ks_memcpy_par(lrp, lc, ((size_t)n + 1) * sizeof *lrp);
    free(lc);
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i <= n; i++)
        grp[i] = P->rowptr[i] - lrp[i];
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        ks_int ql = lrp[i], qg = grp[i];
        for (ks_int k = P->rowptr[i]; k < P->rowptr[i + 1]; k++) {
            const ks_gint c = P->col[k];
            if (c >= lo && c < hi) {
                S->local.colind[ql] = (ks_int)(c - lo);
                S->local.val[ql++] = P->val[k];
            } else {
                S->ghost.colind[qg] = ks_gmap_ext_find(&gm, c);
                S->ghost.val[qg++] = P->val[k];
            }
        }
    }
    ks_gmap_free(&gm); /* its table; the ids are S's */
    return KS_OK;
}

ks_error ks_dist_prows_split(const ks_dist_prows *P, ks_dist_split *out)
{
    if (!out)
        return ks_seterr(KS_ERR_ARG, "distributed interpolation split: NULL output");
    memset(out, 0, sizeof *out);
    if (!P || !P->comm)
        return ks_seterr(KS_ERR_ARG, "distributed interpolation split: NULL or empty rows");
    ks_error e = ks_comm_agree(P->comm, split_rows(P, out));
    if (e != KS_OK) {
        ks_dist_split_free(out);
        return ks_adderr(e, "distributed interpolation split");
    }
    return KS_OK;
}
