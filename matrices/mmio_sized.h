/* Matrix Market reads for a caller that knows what else it will allocate
 * per row (the ksolve tool: its vectors and the solver's) or the length a
 * vector must have (b, x0 beside A): refused at the file's size line
 * before anything of that size is allocated. ks_mm_read_csr and
 * ks_mm_read_vector are these with nothing extra and any length. Not
 * installed. */
#ifndef KS_MMIO_SIZED_H
#define KS_MMIO_SIZED_H

#include "../core/ks_internal.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ks_mm_read_csr, whose memory check (the reader's own peak: 4 bytes a row
 * plus the entries the file can hold, in COO and in CSR) also counts
 * extra_row_bytes for each of the matrix's rows, described as `extra` in
 * the message ("the solve's vectors"). */
ks_error ks_mm_read_csr_sized(const char *path, ks_csr *A, ks_mm_info *info,
                              uint64_t extra_row_bytes, const char *extra);

/* ks_mm_read_vector refusing a vector whose length is not want (want < 0:
 * any) at its size line, before allocating it: "path:LINE: <name> has N
 * rows but <of> has M". */
ks_error ks_mm_read_vector_sized(const char *path, int64_t want, const char *name,
                                 const char *of, double **v, ks_int *n);

/* ks_mm_read_vector_sized that also takes an n x k block (array or
 * coordinate, k >= 1 columns): *v holds k columns of *n values one after
 * the other (the file's column-major order). A 1 x n file is a vector. */
ks_error ks_mm_read_block_sized(const char *path, int64_t want, const char *name,
                                const char *of, double **v, ks_int *n, int *k);
/* Write an n x k array real general (columns one after the other). */
ks_error ks_mm_write_block(const char *path, const double *v, ks_int n, int k);

#ifdef __cplusplus
}
#endif
#endif
