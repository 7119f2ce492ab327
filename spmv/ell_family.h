/* ELL family of SpMV formats: host layouts of ELL / ELLR-T (spmv/ell.c) and
 * of Sliced ELL / SELL-C-sigma (spmv/sell.c), and the ops tables of their
 * cuda kernels (spmv/ell_cuda.cu, spmv/sell_cuda.cu). Not installed.
 *
 * Every layout keeps the row lengths on the host, so layout_to_csr can drop
 * the padding and still keep the explicit zeros of the original matrix
 * (padding and stored zeros both have value 0). Padding slots hold value 0
 * and a valid column index (the row's last stored column, or
 * min(row, ncols - 1) for an empty row), so a kernel that reads them needs
 * no branch and its x read hits a line the row already touched. A
 * consequence, stated honestly: a padding slot computes 0 * x[c], which is
 * NaN when x[c] is Inf or NaN, where CSR would skip the slot. */
#ifndef KS_ELL_FAMILY_H
#define KS_ELL_FAMILY_H

#include "format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default refusal thresholds (ks_spmv_params.max_fill == 0): stored slots
 * of the real rows over nnz. ELL pads every row to the longest one, so a
 * few long rows make it useless: 3x. Sliced formats pad each slice only to
 * its own longest row, and the worst a slice can be is C x (one long row
 * among C empty ones); 16x still holds a lone dense row or column (the
 * cases the sliced formats exist for) and refuses matrices whose slices
 * are mostly padding throughout. */
#define KS_ELL_DEFAULT_MAX_FILL 3.0
#define KS_SELL_DEFAULT_MAX_FILL 16.0
/* Defaults of the sliced formats: a slice per warp; sigma = 8 C (256 for
 * C = 32), the window of Kreutzer et al. that removes most padding while
 * keeping x accesses of a window close together. */
#define KS_SELL_DEFAULT_SLICE_HEIGHT 32
#define KS_SELL_DEFAULT_SIGMA_SLICES 8
#define KS_SELL_MAX_SLICE_HEIGHT 1024

/* ------------------------------------------------------------ ELL, ELLR-T
 * Column-major ELL with T threads per row (ELL-T / ELLR-T of Vazquez et
 * al.): the width is padded to wpad, a multiple of T, and the rows to ld, a
 * multiple of 32. Entry k of row i lives at
 *     ((k / T) * ld + i) * T + k % T,
 * so for T = 1 it is the classic k * ld + i, and for any T the 32 lanes of
 * a warp (32 / T rows, T lanes each) read 32 consecutive slots per step.
 * Lane j of row i handles entries j, j + T, j + 2T, ...; the T partial sums
 * are combined by a shuffle tree (lane l += lane l + off, off = T/2 .. 1).
 * "ell" reads all wpad / T slots of its lanes (padding included); "ellr"
 * stops each lane at the row's length (rowlen on the device too). */
typedef struct ks_ell_layout {
    const char *name;      /* "ell" or "ellr", for messages */
    ks_int nrows, ncols, nnz;
    ks_int width;          /* longest row */
    ks_int wpad;           /* width rounded up to a multiple of T */
    ks_int ld;             /* nrows rounded up to a multiple of 32 */
    int threads_per_row;   /* T: 1, 2, 4, 8, 16 or 32 */
    int stop_at_row_end;   /* 1 for ellr */
    ks_int *rowlen;        /* nrows: stored entries of each row */
    ks_int *colind;        /* ld * wpad */
    double *val;           /* ld * wpad */
} ks_ell_layout;

/* Slot of entry k of row i. */
static inline size_t ks_ell_slot(const ks_ell_layout *L, ks_int i, ks_int k)
{
    const size_t T = (size_t)L->threads_per_row;
    return (((size_t)k / T) * (size_t)L->ld + (size_t)i) * T + (size_t)k % T;
}

ks_error ks_ell_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout);
ks_error ks_ellr_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout);
void ks_ell_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y);
double ks_ell_layout_bytes(const void *layout);
void ks_ell_layout_free(void *layout);
ks_error ks_ell_layout_to_csr(const void *layout, ks_csr *A);
/* T that threads_per_row = 0 picks for a longest row of `width`: 1 up to
 * 32 entries, then doubling so that each lane does at most 32 steps (2 up
 * to 64, 4 up to 128, ..., 32). */
int ks_ell_auto_threads_per_row(ks_int width);

/* ------------------------------------------------- Sliced ELL, SELL-C-sigma
 * Rows are first reordered: within each window of sigma consecutive rows
 * (sigma = 1: no reordering) they are sorted by length, longest first (ties
 * keep the original order). perm[p] is the original row at sorted position
 * p. Sorted rows are cut into slices of C rows; slice s holds rows
 * p = s*C .. s*C + C - 1 (the last slice is completed with empty rows that
 * no kernel computes) and is padded to its longest row, width[s]. Within a
 * slice the storage is column-major: entry k of the row at position
 * p = s*C + r lives at
 *     slice_ptr[s] + k * C + r,
 * so one thread per row reads C consecutive slots per step. width[s] =
 * (slice_ptr[s+1] - slice_ptr[s]) / C. Results go to y[perm[p]], so x and y
 * keep the original ordering. "sliced_ell" is the case sigma = 1. The
 * kernel reads all width[s] slots of its row (padding included). */
typedef struct ks_sell_layout {
    const char *name;      /* "sliced_ell" or "sell", for messages */
    ks_int nrows, ncols, nnz;
    int C;                 /* slice height: a power of two, 1 .. 1024 */
    int sigma;             /* sort window: 1 or a multiple of C */
    int permuted;          /* 0 when perm is the identity (kernels skip it) */
    ks_int nslices;        /* ceil(nrows / C) */
    ks_int *slice_ptr;     /* nslices + 1: first slot of each slice */
    ks_int *slice_width;   /* nslices (+ a trailing 0): padded row length of each slice */
    ks_int *perm;          /* nrows: original row at sorted position p */
    ks_int *rowlen;        /* nrows, by sorted position: stored entries */
    ks_int *colind;        /* slice_ptr[nslices] */
    double *val;           /* slice_ptr[nslices] */
} ks_sell_layout;

/* Build a SELL layout with explicit C and sigma (sigma = 1: sliced ELL) and
 * a refusal threshold (max_fill <= 0: the default). `name` prefixes the
 * messages. For formats built on this layout (CoD-SELL). */
/* SELL-C-sigma's row order: perm[p] = the row at position p after sorting
 * rows longest first inside windows of sigma rows (ties keep the original
 * order; sigma <= 1: no sorting), rowlen[p] = its length. Returns 1 when the
 * order differs from the identity, 0 when not, -1 when out of memory.
 * Shared with codsell. */
int ks_sell_sort_rows(const ks_csr *A, int sigma, ks_int *perm, ks_int *rowlen);
ks_error ks_sell_build(const ks_csr *A, const char *name, int C, int sigma, double max_fill,
                       ks_sell_layout **out);
ks_error ks_sliced_ell_layout_build(const ks_csr *A, const ks_spmv_params *prm,
                                    void **layout);
ks_error ks_sell_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout);
void ks_sell_layout_apply(const void *layout, double alpha, const double *x, double beta,
                          double *y);
double ks_sell_layout_bytes(const void *layout);
void ks_sell_layout_free(void *layout);
ks_error ks_sell_layout_to_csr(const void *layout, ks_csr *A);

/* Shared by ell.c and sell.c: A's structure (sizes, rowptr ends, colind
 * and val present) is usable; the message starts with `name`. Layouts
 * trust the rest (ks_matrix_create validated the CSR). */
ks_error ks_ell_family_check_csr(const ks_csr *A, const char *name);
/* max_fill parameter (0 -> dflt); KS_ERR_ARG naming it if negative/NaN. */
ks_error ks_ell_family_max_fill(const ks_spmv_params *prm, const char *name, double dflt,
                                double *max_fill);

/* Format tables (registry.c lists them). */
#ifdef KS_HAVE_CUDA
extern const ks_spmv_format_ops ks_format_ell_cuda;
extern const ks_spmv_format_ops ks_format_ellr_cuda;
extern const ks_spmv_format_ops ks_format_sliced_ell_cuda;
extern const ks_spmv_format_ops ks_format_sell_cuda;
#endif

#ifdef __cplusplus
}
#endif
#endif
