/* Host layouts and format tables of the "other" GPU SpMV formats (issue 4):
 * jds, coo, hyb, dia, bdia. Each layout is built from a validated CSR, has a
 * float64 reference apply (what CI without a GPU tests), a bytes-per-apply
 * count and a conversion back to CSR; the *_cuda.cu files upload it and run
 * the kernels. Not installed.
 *
 * Shared conventions:
 *  - max_fill (ks_spmv_params): 0 -> KS_OFMT_DEFAULT_MAX_FILL; otherwise a
 *    finite value >= 1. Formats that pad (hyb, dia, bdia) refuse with
 *    KS_ERR_UNSUPPORTED when stored entries exceed max_fill * nnz, saying so
 *    with the sizes, before allocating the padded arrays.
 *  - bytes per apply (layout_bytes), counted with beta = 0: the format's
 *    stored data (values, indices, metadata, padding included) + x gathered
 *    once per stored entry that the kernel multiplies (8 B; bdia stages x
 *    per block instead, see below) + y written (8 B per row) + whatever else
 *    the kernels move (COO carries, HYB's second pass over y). */
#ifndef KS_OTHER_FORMATS_H
#define KS_OTHER_FORMATS_H

#include "format.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KS_OFMT_DEFAULT_MAX_FILL 3.0

/* ------------------------------------------------ helpers (coo.c) */
/* ks_csr_validate with the format name prefixed. */
ks_error ks_ofmt_check_csr(const ks_csr *A, const char *fmt);
/* The effective max_fill of prm (NULL -> default); KS_ERR_ARG naming
 * max_fill when it is negative, not finite, or in (0, 1). */
ks_error ks_ofmt_max_fill(const ks_spmv_params *prm, const char *fmt, double *max_fill);
/* "12.3 MB" etc. into buf (at least 32 chars); returns buf. */
const char *ks_ofmt_human_bytes(double bytes, char *buf);

/* --------------------------------------------------------------- coo */
/* Tile of the COO kernel: KS_COO_BLOCK threads x KS_COO_ITEMS consecutive
 * entries each (odd, so threads reading their items from shared memory
 * hit distinct banks). The host needs it for the byte count. */
#define KS_COO_BLOCK 256
#define KS_COO_ITEMS 7
#define KS_COO_TILE (KS_COO_BLOCK * KS_COO_ITEMS)

/* Row-sorted COO (the CSR order), plus the rows without entries, which the
 * kernels write as beta*y in a separate pass (the tiles only see entries). */
typedef struct ks_coo_layout {
    ks_int nrows, ncols, nnz;
    ks_int *row;          /* nnz, nondecreasing */
    ks_int *col;          /* nnz */
    double *val;          /* nnz */
    int owns_colval;      /* 0: col/val borrowed from the CSR (it outlives us) */
    ks_int nused;         /* rows with at least one entry */
    ks_int nempty;
    ks_int *empty;        /* nempty rows with no entries (ascending); none in hyb */
} ks_coo_layout;

ks_error ks_coo_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout);
void ks_coo_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y);
double ks_coo_layout_bytes(const void *layout);
void ks_coo_layout_free(void *layout);
ks_error ks_coo_layout_to_csr(const void *layout, ks_csr *A);
/* Frees the arrays of L (not L itself). */
void ks_coo_layout_clear(ks_coo_layout *L);
/* Bytes of the COO kernels over L: entries, x, tile carries, and y: written
 * once per row (empty rows: index + write) when standalone, read and
 * written per used row when accumulate (hyb adds to what ELL wrote). */
double ks_coo_bytes(const ks_coo_layout *L, int accumulate);
/* Fill L (zeroed by the caller) with the entries of A beyond the first
 * `skip` of each row, as owned arrays, without an empty-row list (hyb). */
ks_error ks_coo_fill_overflow(const ks_csr *A, ks_int skip, ks_coo_layout *L);

/* --------------------------------------------------------------- jds */
/* Jagged diagonal storage: rows permuted by decreasing length (stable:
 * equal lengths keep their order); jagged diagonal j holds entry j of every
 * permuted row that has one, contiguously, so thread k reads entry j of
 * permuted row k at jd_ptr[j] + k (coalesced across k). */
typedef struct ks_jds_layout {
    ks_int nrows, ncols, nnz;
    ks_int njd;           /* number of jagged diagonals = longest row */
    ks_int *perm;         /* nrows: perm[k] = original row at position k */
    ks_int *jd_ptr;       /* njd + 1 */
    ks_int *col;          /* nnz, jagged-diagonal order */
    double *val;          /* nnz */
} ks_jds_layout;

ks_error ks_jds_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout);
void ks_jds_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y);
double ks_jds_layout_bytes(const void *layout);
void ks_jds_layout_free(void *layout);
ks_error ks_jds_layout_to_csr(const void *layout, ks_csr *A);

/* --------------------------------------------------------------- hyb */
/* ELL part of width K (column-major: slot j of row i at j*nrows + i,
 * padding has column -1 and value 0, always after the row's entries) plus
 * the entries beyond K of each row as row-sorted COO. */
typedef struct ks_hyb_layout {
    ks_int nrows, ncols, nnz;
    ks_int width;         /* K */
    ks_int ell_nnz;       /* entries held by the ELL part */
    ks_int *ell_col;      /* K * nrows */
    double *ell_val;      /* K * nrows */
    ks_coo_layout coo;    /* overflow, no empty-row list (applied with beta 1) */
} ks_hyb_layout;

/* Bell-Garland / cuSPARSE rule: the largest K such that at least
 * max(4096, nrows/3) rows have K or more entries (0 when none). */
ks_int ks_hyb_auto_width(const ks_csr *A);

ks_error ks_hyb_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout);
void ks_hyb_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y);
double ks_hyb_layout_bytes(const void *layout);
void ks_hyb_layout_free(void *layout);
ks_error ks_hyb_layout_to_csr(const void *layout, ks_csr *A);

/* --------------------------------------------------------- dia, bdia */
/* DIA: every occupied diagonal (offset = column - row) stored for all rows,
 * diagonal-major: value of diagonal d at row i at d*nrows + i; slots whose
 * column falls outside the matrix, and band zeros, hold 0. `present` marks
 * (one bit per slot) the slots holding an entry of the original matrix, so
 * to_csr is exact, explicit zeros included; it stays on the host. */
typedef struct ks_dia_layout {
    ks_int nrows, ncols, nnz;
    ks_int ndiag;
    ks_int *offset;       /* ndiag, ascending */
    double *val;          /* ndiag * nrows */
    uint8_t *present;     /* ndiag * nrows bits */
    double in_range;      /* slots whose column is inside the matrix (x reads) */
    int float_values;     /* val holds float32-rounded values; the device keeps float32 */
} ks_dia_layout;

ks_error ks_dia_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout);
void ks_dia_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y);
double ks_dia_layout_bytes(const void *layout);
void ks_dia_layout_free(void *layout);
ks_error ks_dia_layout_to_csr(const void *layout, ks_csr *A);

/* Blocked DIA: rows in blocks of block_rows (= the thread block); block b
 * stores only the diagonals occupied in its rows, each as rows_b values
 * (rows_b = block_rows except in the last block) at
 * val[blk_ptr[b] * block_rows + k * rows_b + i]. The x values the block
 * needs are the union of its diagonals' column ranges; runs closer than
 * KS_BDIA_MERGE_GAP merge into segments, laid end to end in a window that
 * the kernel stages in shared memory once per block (columns outside the
 * matrix read as 0), so there are no column indices: diagonal k of the
 * block reads s_x[shift[k] + i]. The block's segment descriptors and
 * shifts are staged too, so the x loads do not wait on each other. */
#define KS_BDIA_DEFAULT_ROWS 256
#define KS_BDIA_MERGE_GAP 32
/* Shared memory a block may use without an opt-in on every GPU since Volta. */
#define KS_BDIA_MAX_SHARED_BYTES (48 * 1024)

typedef struct ks_bdia_layout {
    ks_int nrows, ncols, nnz;
    ks_int block_rows, nblocks;
    ks_int ndiag;         /* stored diagonals, all blocks */
    ks_int *blk_ptr;      /* nblocks + 1, into offset/shift */
    ks_int *offset;       /* ndiag, ascending within a block (host: apply, to_csr) */
    ks_int *shift;        /* ndiag: window index of the block's row 0 */
    double *val;          /* see above */
    ks_int nseg;
    ks_int *seg_ptr;      /* nblocks + 1, into seg_start/seg_wend */
    ks_int *seg_start;    /* first column of the segment (may lie outside [0, ncols)) */
    ks_int *seg_wend;     /* window index just past the segment (cumulative in the block) */
    ks_int max_window;    /* most x values a block stages */
    ks_int max_nseg;      /* most segments in a block */
    ks_int max_nd;        /* most diagonals in a block */
    uint8_t *present;     /* one bit per value slot: an entry of the original */
    double window_reads;  /* x values loaded from memory, all blocks */
} ks_bdia_layout;

/* Dynamic shared memory of the bdia kernel: the window, then the segment
 * descriptors (start, end) and the shifts. */
#define KS_BDIA_SHARED_BYTES(win, nseg, nd)                                                  \
    (8.0 * (double)(win) + 8.0 * (double)(nseg) + 4.0 * (double)(nd))

ks_error ks_bdia_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout);
void ks_bdia_layout_apply(const void *layout, double alpha, const double *x, double beta,
                          double *y);
double ks_bdia_layout_bytes(const void *layout);
void ks_bdia_layout_free(void *layout);
ks_error ks_bdia_layout_to_csr(const void *layout, ks_csr *A);

/* ------------------------------------------------------ cuda parts */
#ifdef KS_HAVE_CUDA
/* The COO kernels on the device, reused by hyb for its overflow. With
 * beta == 1 the empty-row pass is skipped (y stays), which is how hyb adds
 * its COO part to what the ELL kernel wrote. */
typedef struct ks_coo_dev ks_coo_dev;
ks_error ks_coo_dev_setup(ks_backend *be, const ks_coo_layout *L, ks_coo_dev **dev);
ks_error ks_coo_dev_apply(ks_backend *be, const ks_coo_dev *dev, double alpha,
                          const double *x, double beta, double *y);
void ks_coo_dev_destroy(ks_backend *be, ks_coo_dev *dev);

extern const ks_spmv_format_ops ks_format_jds_cuda;
extern const ks_spmv_format_ops ks_format_coo_cuda;
extern const ks_spmv_format_ops ks_format_hyb_cuda;
extern const ks_spmv_format_ops ks_format_dia_cuda;
extern const ks_spmv_format_ops ks_format_bdia_cuda;
#endif

#ifdef __cplusplus
}
#endif
#endif
