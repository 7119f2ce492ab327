/* Host layout shared by the CSR-based formats ("csr", "csr_vector",
 * "cusparse") and the registry's table of format ops. Not installed. */
#ifndef KS_CSR_LAYOUT_H
#define KS_CSR_LAYOUT_H

#include "format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CSR is its own layout, so the layout borrows A's arrays instead of copying
 * them: A must outlive the layout. ks_matrix_create builds the layout from
 * M->host, which outlives it; a copy here would only add host memory and
 * setup time to every CSR format. */
typedef struct ks_csr_layout {
    ks_csr A;            /* borrowed arrays (not freed by layout_free) */
    int threads_per_row; /* csr_vector: lanes per row chosen at build; else 0 */
    float *valf;         /* float_values: A.val rounded to float32 (owned), else NULL */
} ks_csr_layout;

ks_error ks_csr_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout);
void ks_csr_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y);
double ks_csr_layout_bytes(const void *layout);
void ks_csr_layout_free(void *layout);
ks_error ks_csr_layout_to_csr(const void *layout, ks_csr *A);

/* Bytes one CSR apply moves with beta = 0 (the formats' own convention):
 * values 8*nnz + column indices 4*nnz + row pointers 4*(nrows+1)
 * + x gathered once per entry 8*nnz (an upper bound: caches serve repeated
 * columns) + y written 8*nrows. */
double ks_csr_bytes_per_apply(ks_int nrows, ks_int nnz);
/* The same with float32 values (4 bytes a value instead of 8). */
double ks_csr_bytes_per_apply_float(ks_int nrows, ks_int nnz);

/* Format tables (registry.c lists them). */
extern const ks_spmv_format_ops ks_format_csr_cpu;
#ifdef KS_HAVE_CUDA
extern const ks_spmv_format_ops ks_format_csr_vector_cuda;
extern const ks_spmv_format_ops ks_format_cusparse_csr;
#endif

/* Backend kind a format name needs when that format was not compiled in
 * (e.g. "cusparse" in a build without CUDA), else 0. Lets ks_matrix_create
 * say "not available" instead of "unknown". */
ks_backend_kind ks_spmv_format_missing_backend(const char *name);

#ifdef __cplusplus
}
#endif
#endif
