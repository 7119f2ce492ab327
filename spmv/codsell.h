/* CoD-SELL: SELL-C-sigma whose column indices are compressed by a per-slice
 * dictionary of the nonzero pattern that the slice's rows share. Host layout
 * in spmv/codsell.c, cuda kernel and ops table "codsell" in
 * spmv/codsell_cuda.cu. Not installed.
 *
 * Rows are described relative to a base column: row r's base is its first
 * stored column (0 for an empty row), its relative pattern {c - base_r}
 * (sorted, starts at 0). Interior rows of a stencil all share one relative
 * pattern, whatever their row.
 *
 * Conversion:
 *  1. Rows are sorted by length, longest first, within windows of sigma
 *     consecutive rows (ties keep the original order; sigma = 1: no
 *     sorting). perm[p] is the original row at sorted position p.
 *  2. Greedy pairing, inside each window of W = max(sigma, C) positions:
 *     groups start as single rows, each with its relative pattern as
 *     dictionary. Each round scores every pair of neighbouring groups that
 *     fits in C rows by the size of their common pattern (the intersection
 *     of the dictionaries) and matches pairs greedily, best score first
 *     (ties: leftmost first), each group in at most one pair; a matched
 *     pair merges into one group whose dictionary is the intersection.
 *     A pair is only a candidate when the merged slice stores at most
 *     KS_CODSELL_MERGE_SLACK times the bytes of the two apart (values 8,
 *     remainder slots 12 with padding, dictionary 4, slice pointers 16):
 *     without it a long row would join short ones and pad them all (SELL's
 *     weakness); with it a lone long row stays in a slice of its own, and
 *     rows of similar length still merge (slices fill to C, threads of a
 *     warp busy). Rounds repeat until no candidate pair is left. Merges
 *     only join neighbours, so the sorted order is kept and the groups are slices of
 *     at most C consecutive positions (a slice may hold fewer than C rows:
 *     the number of rows of slice s is slice_row[s+1] - slice_row[s]).
 *     sigma = 1 therefore gives slices of exactly C rows in the original
 *     order (the dictionary is then just their common pattern).
 *  3. Slice s of rows R = slice_row[s+1] - slice_row[s] stores:
 *     - its dictionary, D = dict_ptr[s+1] - dict_ptr[s] relative offsets
 *       (int32, sorted, once per slice) at dict[dict_ptr[s] ..];
 *     - per row a base column, base[p];
 *     - the dictionary entries' values column-major (R x D): entry j of the
 *       slice's row r at dval[dval_ptr[s] + j * R + r], column
 *       base[p] + dict[dict_ptr[s] + j];
 *     - the remainder (the row's entries whose offset is not in the
 *       dictionary) in SELL style: width Wr = (rem_ptr[s+1] - rem_ptr[s]) /
 *       R, entry k of row r at rem_ptr[s] + k * R + r with its full column
 *       in rem_col and value in rem_val; rows shorter than Wr are padded
 *       with value 0 at a valid column (the row's last remainder column,
 *       else its base, else min(row, ncols - 1)), as in ell_family.h.
 * One thread per row: sum over the dictionary, then over the remainder
 * (padding included), y[perm[p]] = alpha * sum (+ beta * y). The host
 * reference apply runs the same loops in the same order.
 *
 * Refusal: stored slots (dictionary values + remainder slots, padding
 * included) over nnz above max_fill (0 -> KS_SELL_DEFAULT_MAX_FILL = 16)
 * is refused with KS_ERR_UNSUPPORTED before the arrays are allocated. */
#ifndef KS_CODSELL_H
#define KS_CODSELL_H

#include "format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Merge when the merged slice stores <= 1.25x the bytes of its two parts:
 * a little padding is worth full warps (idle threads cost issue slots),
 * while a row a few times longer than its neighbours stays apart. */
#define KS_CODSELL_MERGE_SLACK 1.25

typedef struct ks_codsell_layout {
    ks_int nrows, ncols, nnz;
    int C;              /* slice height bound: power of two, 1 .. 1024 */
    int sigma;          /* sort window: 1 or a multiple of C */
    int permuted;       /* 0 when perm is the identity */
    ks_int nslices;
    ks_int *slice_row;  /* nslices + 1: first sorted position of each slice */
    ks_int *dict_ptr;   /* nslices + 1 */
    ks_int *dval_ptr;   /* nslices + 1 */
    ks_int *rem_ptr;    /* nslices + 1 */
    ks_int *dict;       /* dict_ptr[nslices]: relative offsets */
    ks_int *perm;       /* nrows: original row at sorted position p */
    ks_int *rowlen;     /* nrows, by position (host only: to_csr, bytes) */
    ks_int *base;       /* nrows, by position */
    double *dval;       /* dval_ptr[nslices] */
    ks_int *rem_col;    /* rem_ptr[nslices] */
    double *rem_val;    /* rem_ptr[nslices] */
} ks_codsell_layout;

ks_error ks_codsell_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout);
void ks_codsell_layout_apply(const void *layout, double alpha, const double *x, double beta,
                             double *y);
double ks_codsell_layout_bytes(const void *layout);
void ks_codsell_layout_free(void *layout);
ks_error ks_codsell_layout_to_csr(const void *layout, ks_csr *A);

/* Memory the device copy of the layout holds: index bytes (dictionaries,
 * bases, remainder columns, the four slice pointer arrays, perm when
 * permuted) and all bytes (index bytes + 8 per stored value slot). CSR's
 * counterparts: 4*nnz + 4*(n+1) and 12*nnz + 4*(n+1). */
double ks_codsell_index_bytes(const void *layout);
double ks_codsell_storage_bytes(const void *layout);

#ifdef KS_HAVE_CUDA
extern const ks_spmv_format_ops ks_format_codsell_cuda;
#endif

#ifdef __cplusplus
}
#endif
#endif
