/* The cpu implementations of the sparse operations (sparse/sparse.h), on
 * host CSR: OpenMP row-parallel, results independent of the thread count.
 * sparse_cpu.c fills the cpu table with them; tests call them directly.
 * Not installed. */
#ifndef KS_CSR_KERNELS_H
#define KS_CSR_KERNELS_H

#include "../../core/ks_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* AT = A^T (a pattern when A->val is NULL). */
ks_error ks_csr_transpose(const ks_csr *A, ks_csr *AT);
/* C = A * B, two passes (symbolic row counts, then numeric), row-parallel,
 * sorted columns. */
ks_error ks_csr_spgemm(const ks_csr *A, const ks_csr *B, ks_csr *C);
/* Numeric pass only into C's existing pattern (re-setup); entries of A*B
 * outside C's pattern are an error (KS_ERR_ARG). */
ks_error ks_csr_spgemm_numeric(const ks_csr *A, const ks_csr *B, ks_csr *C);
/* Ac = R * A * P (Galerkin), the cheaper association first. */
ks_error ks_csr_rap(const ks_csr *R, const ks_csr *A, const ks_csr *P, ks_csr *Ac);
/* Ac = R A P numerically into Ac's pattern, one coarse row at a time;
 * *outside = 1 when the product has an entry outside the pattern. */
ks_error ks_csr_rap_numeric(const ks_csr *R, const ks_csr *A, const ks_csr *P, ks_csr *Ac,
                            int *outside);
/* used[c] = 1 for each of T's ncols columns that an entry uses, else 0;
 * *unsorted = 1 when a row's columns do not strictly ascend (split.c). */
ks_error ks_csr_mark_cols(const ks_csr *T, unsigned char *used, int *unsorted);
/* T's columns split (split.c): nb <= c < nb + nown into L (n x nown,
 * column c - nb), the others into G (n x nghost, column gnum[c] for c < nb,
 * gnum[c - nown] above the range); both made here, values where T has
 * them; *nonfinite counts T's values that are not finite. */
ks_error ks_csr_split_cols(const ks_csr *T, ks_int nb, ks_int nown, const ks_int *gnum,
                           ks_int nghost, ks_csr *L, ks_csr *G, ks_int *nonfinite);
/* Fill M (L->nrows rows, L->nnz + G's entries; val NULL for a pattern)
 * with the blocks merged as ks_sparse_merge_blocks merges them (G may be
 * NULL: no ghost entries); values copied only where M has them. */
void ks_csr_merge_blocks(const ks_csr *L, const ks_csr *G, ks_int nb, ks_csr *M);

#ifdef __cplusplus
}
#endif
#endif
