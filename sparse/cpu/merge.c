/* A distributed matrix's local and ghost blocks merged into one CSR over
 * compact column numbers (the left factor of the distributed A P): row i
 * is G's entries below nb, L's shifted by nb, G's others shifted by L's
 * columns. A copy: every entry keeps its value and its place in its
 * block's row order, so sorted blocks give sorted rows. */
#include "csr_kernels.h"
#include "../sparse.h"

void ks_csr_merge_blocks(const ks_csr *L, const ks_csr *G, ks_int nb, ks_csr *M)
{
    const ks_int n = L->nrows, nl = L->ncols;
    M->rowptr[0] = 0;
#pragma omp parallel for schedule(static) if (n > 4096)
    for (ks_int i = 0; i < n; i++) {
        /* row i starts after both blocks' rows before it */
        const ks_int g0 = G ? G->rowptr[i] : 0, g1 = G ? G->rowptr[i + 1] : 0;
        ks_int m = L->rowptr[i] + g0, g = g0;
        M->rowptr[i + 1] = L->rowptr[i + 1] + g1;
        for (; g < g1 && G->colind[g] < nb; g++, m++) {
            M->colind[m] = G->colind[g];
            if (M->val)
                M->val[m] = G->val[g];
        }
        for (ks_int k = L->rowptr[i]; k < L->rowptr[i + 1]; k++, m++) {
            M->colind[m] = nb + L->colind[k];
            if (M->val)
                M->val[m] = L->val[k];
        }
        for (; g < g1; g++, m++) {
            M->colind[m] = G->colind[g] + nl;
            if (M->val)
                M->val[m] = G->val[g];
        }
    }
}

/* The cpu table's entry: M allocated by ks_sparse_merge_blocks. */
ks_error ks_cpu_merge_blocks(const ks_sparse *L, const ks_sparse *G, ks_int nb, ks_sparse *M)
{
    const ks_csr l = ks_sparse_as_csr(L), g = G ? ks_sparse_as_csr(G) : (ks_csr){0};
    ks_csr m = ks_sparse_as_csr(M);
    ks_csr_merge_blocks(&l, G ? &g : NULL, nb, &m);
    return KS_OK;
}
