/* The CSR family's private declarations: the cuda formats "csr_scalar",
 * "csr_vector" (tables for registry.c), the device copy of a CSR shared by
 * their setups, and "csr_adaptive"'s host layout (CSR + row blocks, after
 * Greathouse & Daga, SC'14). Not installed. */
#ifndef KS_CSR_FAMILY_H
#define KS_CSR_FAMILY_H

#include "csr_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __CUDACC__
#define KS_CSR_HD __host__ __device__
#else
#define KS_CSR_HD
#endif

/* ----------------------------------------------------------- adaptive */
/* Threads per thread block of every csr_adaptive kernel. */
#define KS_CSR_ADAPTIVE_THREADS 256
/* Doubles of shared memory a block stages products in (16 KiB: 8 blocks of
 * 256 threads fit an SM). A row longer than this is a "long" row. */
#define KS_CSR_ADAPTIVE_SHARED 2048
/* Smallest staging budget the layout shrinks to on small matrices. */
#define KS_CSR_ADAPTIVE_MIN_BUDGET 256
/* Entries of a long row one thread block sums into one partial (staged
 * like any block, so at most the shared capacity). */
#define KS_CSR_ADAPTIVE_CHUNK KS_CSR_ADAPTIVE_SHARED
/* Rows per block are capped at the thread count so each row has a thread. */
#define KS_CSR_ADAPTIVE_MAX_ROWS KS_CSR_ADAPTIVE_THREADS

/* Rows [block_row[b], block_row[b+1]) form block b; blocks cover every row
 * once, in order. A block is one of
 *   stream: its entries (at most `budget`) are staged as val*x products in
 *           shared memory, then T = ks_csr_adaptive_stream_lanes(rows)
 *           threads per row sum each row from there;
 *   vector: one row of at most KS_CSR_ADAPTIVE_SHARED entries, staged the
 *           same way, that all threads of the block sum (any block of one
 *           row that is not long, whatever its length);
 *   long:   one row of more than KS_CSR_ADAPTIVE_SHARED entries, split in
 *           chunks of KS_CSR_ADAPTIVE_CHUNK entries; a block per chunk writes
 *           a partial sum, and the block that finishes the row's last chunk
 *           (a per-row counter tells, in the same launch) adds the row's
 *           partials in chunk order. No atomics on values: every row's
 *           summation order is fixed by the layout, so applies are bitwise
 *           reproducible.
 * Long row l is row long_row[l]; its chunks are long_chunk[l] ..
 * long_chunk[l+1]-1 and chunk g covers entries chunk_begin[g] ..
 * min(chunk_begin[g] + KS_CSR_ADAPTIVE_CHUNK, rowptr[row + 1]) - 1. */
typedef struct ks_csr_adaptive_layout {
    ks_csr A;          /* borrowed arrays, as in ks_csr_layout */
    int budget;        /* staged entries per stream block */
    int max_rows;      /* rows per block cap */
    ks_int nblocks;
    ks_int *block_row; /* nblocks + 1 */
    ks_int nlong;
    ks_int *long_row;    /* nlong */
    ks_int *long_chunk;  /* nlong + 1 */
    ks_int nchunks;
    ks_int *chunk_row;   /* nchunks */
    ks_int *chunk_begin; /* nchunks */
} ks_csr_adaptive_layout;

/* Threads per row in a stream block of `rows` rows: the largest power of
 * two with T * rows <= KS_CSR_ADAPTIVE_THREADS, at most a warp (32). */
static inline KS_CSR_HD int ks_csr_adaptive_stream_lanes(int rows)
{
    int t = 1;
    while (t < 32 && 2 * t * rows <= KS_CSR_ADAPTIVE_THREADS)
        t *= 2;
    return t;
}

ks_error ks_csr_adaptive_layout_build(const ks_csr *A, const ks_spmv_params *prm,
                                      void **layout);
/* Float64 reference that sums in the kernels' order (products, lanes,
 * shuffle trees, chunk partials); only fused multiply-adds differ. */
void ks_csr_adaptive_layout_apply(const void *layout, double alpha, const double *x,
                                  double beta, double *y);
double ks_csr_adaptive_layout_bytes(const void *layout);
void ks_csr_adaptive_layout_free(void *layout);
ks_error ks_csr_adaptive_layout_to_csr(const void *layout, ks_csr *A);

#ifdef KS_HAVE_CUDA
/* ----------------------------------------------------- device CSR copy */
typedef struct ks_csr_device {
    ks_int nrows, ncols, nnz;
    ks_int *rowptr; /* device, nrows + 1 */
    ks_int *colind; /* device, nnz; NULL when nnz == 0 or A->colind was NULL */
    double *val;    /* device, nnz; NULL when nnz == 0 or A->val was NULL */
    /* KS_CSR_BLOCK_PAIR at the format's setup (csr_block_pair.h): the SpMM
     * and fused block pass two columns a thread for even k. 0 after
     * ks_csr_device_upload; the formats with those ops set it. */
    int block_pair;
} ks_csr_device;

/* Upload A's arrays to be (d zeroed first; column indices / values skipped
 * when A->colind / A->val is NULL, for a format that uploads its own; on
 * failure what was made is freed). Defined in csr_vector_cuda.cu. */
ks_error ks_csr_device_upload(ks_backend *be, const ks_csr *A, const char *what,
                              ks_csr_device *d);
void ks_csr_device_free(ks_backend *be, ks_csr_device *d);
/* Y = alpha A X + beta Y on row-interleaved blocks of k columns (the SpMM
 * of the cuda CSR formats, spmv/format.h); two columns a thread where
 * A->block_pair and k allow it, with the same bits. Defined in
 * csr_vector_cuda.cu. */
ks_error ks_csr_device_spmm(ks_backend *be, const ks_csr_device *A, int k, double alpha,
                            const double *X, double beta, double *Y);
/* The fused block pass (format.h's fused_block) on a device CSR with
 * float64 values: one thread an entry (i, j), or a pair of adjacent
 * entries as the SpMM, the SpMM's sum, then the entry's update. */
ks_error ks_csr_device_fused_block(ks_backend *be, const ks_csr_device *A, int k,
                                   const ks_fused_step *f);

extern const ks_spmv_format_ops ks_format_csr_scalar_cuda;
extern const ks_spmv_format_ops ks_format_csr_adaptive_cuda;
#endif

#ifdef __cplusplus
}
#endif
#endif
