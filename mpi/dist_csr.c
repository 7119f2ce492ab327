/* A rank's rows, given with global column numbers, split by who owns each
 * column: the local block (columns of this rank's own rows, renumbered
 * from 0) and the ghost block (other ranks' columns, compressed to
 * 0..nghost-1 in ascending global order, the global ids kept), hypre
 * ParCSR's diag and offd. Input rows may be unsorted; a column given twice
 * in a row is refused (not summed: the caller's assembly has a bug there,
 * and summing would hide it), as are columns out of range and values that
 * are not finite. Each input entry's place in the blocks is kept, so new
 * values in the caller's order can be scattered later (dist_values.c).
 * Local work only: the caller agrees the outcome over the ranks. */
#include "mpi_internal.h"

#include <math.h>
#include <string.h>

#ifdef _OPENMP
#define KS_OMP_FOR _Pragma("omp parallel for schedule(static)")
#else
#define KS_OMP_FOR
#endif

typedef struct col_pos {
    ks_gint col;
    ks_int pos;
} col_pos;

static int cmp_col_pos(const void *a, const void *b)
{
    const ks_gint x = ((const col_pos *)a)->col, y = ((const col_pos *)b)->col;
    return (x > y) - (x < y);
}

/* Row i's entry positions in ascending column order, into perm[rp[i]..]
 * (identity when the row is sorted: the usual case costs one pass).
 * Returns 0 when it cannot allocate for a long unsorted row. */
static int sort_row(const ks_int *rp, const ks_gint *ci, ks_int i, ks_int *perm)
{
    const ks_int b = rp[i], len = rp[i + 1] - rp[i];
    int sorted = 1;
    for (ks_int k = 0; k < len; k++) {
        perm[b + k] = b + k;
        if (k > 0 && ci[b + k] < ci[b + k - 1])
            sorted = 0;
    }
    if (sorted)
        return 1;
    if (len <= 32) { /* insertion sort: short rows */
        for (ks_int a = 1; a < len; a++) {
            ks_int t = perm[b + a], c = a;
            while (c > 0 && ci[perm[b + c - 1]] > ci[t]) {
                perm[b + c] = perm[b + c - 1];
                c--;
            }
            perm[b + c] = t;
        }
        return 1;
    }
    col_pos *cp = malloc((size_t)len * sizeof *cp);
    if (!cp)
        return 0;
    for (ks_int k = 0; k < len; k++)
        cp[k] = (col_pos){ci[b + k], b + k};
    qsort(cp, (size_t)len, sizeof *cp, cmp_col_pos);
    for (ks_int k = 0; k < len; k++)
        perm[b + k] = cp[k].pos;
    free(cp);
    return 1;
}

/* Row i's first problem (ranges and values, then, in sorted order,
 * duplicates): KS_OK when none. Messages only when describe (the error
 * message is per thread: the parallel pass just finds the first bad row). */
static ks_error row_problem(int rank, ks_gint row_begin, ks_gint ncols, const ks_int *rp,
                            const ks_gint *ci, const double *val, const ks_int *perm, ks_int i,
                            int describe)
{
    const long li = (long)i;
    const long long gi = (long long)(row_begin + i);
    for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
        if (ci[k] < 0 || ci[k] >= ncols)
            return describe ? ks_seterr(KS_ERR_ARG,
                                        "rank %d, local row %ld (global row %lld): column %lld "
                                        "is outside 0..%lld",
                                        rank, li, gi, (long long)ci[k], (long long)ncols - 1)
                            : KS_ERR_ARG;
        if (!isfinite(val[k]))
            return describe ? ks_seterr(KS_ERR_ARG,
                                        "rank %d, local row %ld (global row %lld): the value at "
                                        "column %lld is %g",
                                        rank, li, gi, (long long)ci[k], val[k])
                            : KS_ERR_ARG;
    }
    for (ks_int k = rp[i] + 1; k < rp[i + 1]; k++)
        if (ci[perm[k]] == ci[perm[k - 1]])
            return describe ? ks_seterr(KS_ERR_ARG,
                                        "rank %d, local row %ld (global row %lld): column %lld "
                                        "is given twice (duplicates are refused, not summed)",
                                        rank, li, gi, (long long)ci[perm[k]])
                            : KS_ERR_ARG;
    return KS_OK;
}

static ks_error check_rowptr(int rank, ks_int nloc, const ks_int *rp)
{
    if (rp[0] != 0)
        return ks_seterr(KS_ERR_ARG, "rank %d: rowptr[0] is %ld, must be 0", rank, (long)rp[0]);
    for (ks_int i = 0; i < nloc; i++)
        if (rp[i + 1] < rp[i])
            return ks_seterr(KS_ERR_ARG,
                             "rank %d: rowptr decreases at local row %ld (%ld, then %ld)", rank,
                             (long)i, (long)rp[i], (long)rp[i + 1]);
    return KS_OK;
}

ks_error ks_dist_csr_split(int rank, ks_gint row_begin, ks_gint ncols, ks_int nloc,
                           const ks_int *rp, const ks_gint *ci, const double *val,
                           ks_dist_split *S)
{
    memset(S, 0, sizeof *S);
    KS_TRY(check_rowptr(rank, nloc, rp));
    const ks_int nnz = rp[nloc];
    const ks_gint row_end = row_begin + nloc;
    ks_int *perm = ks_malloc((size_t)nnz * sizeof *perm, "row order");
    ks_int *nl = ks_calloc((size_t)nloc + 1, sizeof *nl, "local block row pointers");
    if (!perm || !nl) {
        free(perm);
        free(nl);
        return KS_ERR_MEMORY;
    }
    /* One parallel pass: order, checks, local entries per row. The first
     * bad row (the same for any thread count) is described afterwards. */
    ks_int bad = nloc, nomem = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(min : bad) reduction(max : nomem)
#endif
    for (ks_int i = 0; i < nloc; i++) {
        if (!sort_row(rp, ci, i, perm)) {
            nomem = 1;
            continue;
        }
        if (row_problem(rank, row_begin, ncols, rp, ci, val, perm, i, 0) != KS_OK) {
            bad = i < bad ? i : bad;
            continue;
        }
        ks_int c = 0;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            c += ci[k] >= row_begin && ci[k] < row_end;
        nl[i + 1] = c;
    }
    ks_error e = KS_OK;
    if (nomem)
        e = ks_seterr(KS_ERR_MEMORY, "rank %d: out of host memory sorting a row", rank);
    else if (bad < nloc)
        e = row_problem(rank, row_begin, ncols, rp, ci, val, perm, bad, 1);
    ks_int nghost = 0;
    ks_gmap gm = {0}; /* the ghost columns: ids outside this rank's rows */
    if (e == KS_OK)
        e = ks_gmap_make(row_begin, row_end, ci, nnz, NULL, 0, &gm);
    if (e == KS_OK) {
        S->ghost_gid = gm.ext; /* taken */
        gm.own_ext = 0;
        nghost = gm.next;
    }
    if (e == KS_OK)
        ks_rowptr_scan(nl, nloc); /* at most rp[nloc] */
    if (e == KS_OK)
        e = ks_csr_alloc(&S->local, nloc, nloc, nl[nloc]);
    if (e == KS_OK)
        e = ks_csr_alloc(&S->ghost, nloc, nghost, nnz - nl[nloc]);
    if (e == KS_OK) {
        S->entry_pos = ks_malloc(((size_t)nnz + 1) * sizeof *S->entry_pos, "entry places");
        e = S->entry_pos ? KS_OK : KS_ERR_MEMORY;
    }
    if (e != KS_OK) {
        free(perm);
        free(nl);
        ks_gmap_free(&gm);
        ks_dist_split_free(S);
        return e;
    }
    /* Both blocks' rows in ascending column order: the ghost numbers
     * ascend with the global ids. */
    ks_int *lrp = S->local.rowptr, *grp = S->ghost.rowptr, *pos = S->entry_pos;
    const ks_int nnz_local = nl[nloc];
    ks_memcpy_par(lrp, nl, ((size_t)nloc + 1) * sizeof *lrp);
    KS_OMP_FOR
    for (ks_int i = 0; i <= nloc; i++)
        grp[i] = rp[i] - lrp[i];
    KS_OMP_FOR
    for (ks_int i = 0; i < nloc; i++) {
        ks_int ql = lrp[i], qg = grp[i];
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
            const ks_int src = perm[k];
            const ks_gint c = ci[src];
            if (c >= row_begin && c < row_end) {
                pos[src] = ql;
                S->local.colind[ql] = (ks_int)(c - row_begin);
                S->local.val[ql++] = val[src];
            } else {
                pos[src] = nnz_local + qg;
                S->ghost.colind[qg] = ks_gmap_ext_find(&gm, c);
                S->ghost.val[qg++] = val[src];
            }
        }
    }
    free(perm);
    free(nl);
    ks_gmap_free(&gm); /* its table; the ids are S's */
    return KS_OK;
}

void ks_dist_split_free(ks_dist_split *S)
{
    ks_csr_free(&S->local);
    ks_csr_free(&S->ghost);
    ks_sparse_free(&S->dlocal);
    ks_sparse_free(&S->dghost);
    free(S->ghost_gid);
    S->ghost_gid = NULL;
    free(S->entry_pos);
    S->entry_pos = NULL;
}
