/* A matrix's columns split into two blocks: a range of owned columns and
 * the others renumbered through a table (a distributed matrix's local and
 * ghost blocks made from rows with compact columns: the Galerkin product's
 * rows, mpi/local_rows.c). Two passes over the rows, each row-parallel;
 * every row keeps its entries' order, so sorted rows stay sorted when the
 * table is monotone. */
#include "csr_kernels.h"

#include <math.h>
#include <string.h>

ks_error ks_csr_mark_cols(const ks_csr *T, unsigned char *used, int *unsorted)
{
    const ks_int n = T->nrows;
    memset(used, 0, (size_t)T->ncols);
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (n > 4096)
    for (ks_int i = 0; i < n; i++) {
        ks_int prev = -1;
        for (ks_int k = T->rowptr[i]; k < T->rowptr[i + 1]; k++) {
            const ks_int j = T->colind[k];
            bad |= j <= prev;
            prev = j;
            /* every writer stores 1: the value is the same in any order */
#pragma omp atomic write
            used[j] = 1;
        }
    }
    *unsorted = bad;
    return KS_OK;
}

/* B's column (and value) arrays for its nnz entries. */
static ks_error entries(ks_csr *B, int values)
{
    B->colind = ks_malloc((size_t)B->nnz * sizeof *B->colind + 1, "block columns");
    if (values)
        B->val = ks_malloc((size_t)B->nnz * sizeof *B->val + 1, "block values");
    return B->colind && (B->val || !values) ? KS_OK : KS_ERR_MEMORY;
}

ks_error ks_csr_split_cols(const ks_csr *T, ks_int nb, ks_int nown, const ks_int *gnum,
                           ks_int nghost, ks_csr *L, ks_csr *G, ks_int *nonfinite)
{
    memset(L, 0, sizeof *L);
    memset(G, 0, sizeof *G);
    const ks_int n = T->nrows, nnz = n ? T->rowptr[n] : 0;
    ks_int *lrp = ks_malloc(((size_t)n + 1) * sizeof *lrp, "local block row pointers");
    if (!lrp)
        return KS_ERR_MEMORY;
    lrp[0] = 0;
#pragma omp parallel for schedule(static) if (n > 4096)
    for (ks_int i = 0; i < n; i++) {
        ks_int c = 0;
        for (ks_int k = T->rowptr[i]; k < T->rowptr[i + 1]; k++)
            c += T->colind[k] >= nb && T->colind[k] < nb + nown;
        lrp[i + 1] = c;
    }
    const ks_int nl = (ks_int)ks_rowptr_scan(lrp, n); /* at most nnz */
    *L = (ks_csr){n, nown, nl, lrp, NULL, NULL};
    *G = (ks_csr){n, nghost, nnz - nl, NULL, NULL, NULL};
    const int values = T->val != NULL;
    G->rowptr = ks_malloc(((size_t)n + 1) * sizeof *G->rowptr, "ghost block row pointers");
    ks_error e = G->rowptr ? entries(L, values) : KS_ERR_MEMORY;
    if (e == KS_OK)
        e = entries(G, values);
    if (e != KS_OK) {
        ks_csr_free(L);
        ks_csr_free(G);
        return e;
    }
    ks_int bad = 0;
    const ks_int *lr = L->rowptr;
    ks_int *grp = G->rowptr;
    grp[0] = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad) if (n > 4096)
    for (ks_int i = 0; i < n; i++) {
        ks_int ql = lr[i], qg = T->rowptr[i] - lr[i];
        grp[i + 1] = T->rowptr[i + 1] - lr[i + 1];
        for (ks_int k = T->rowptr[i]; k < T->rowptr[i + 1]; k++) {
            const ks_int j = T->colind[k];
            const double v = values ? T->val[k] : 0.0;
            bad += !isfinite(v);
            if (j >= nb && j < nb + nown) {
                L->colind[ql] = j - nb;
                if (values)
                    L->val[ql] = v;
                ql++;
            } else {
                G->colind[qg] = gnum[j < nb ? j : j - nown];
                if (values)
                    G->val[qg] = v;
                qg++;
            }
        }
    }
    *nonfinite = bad;
    return KS_OK;
}
