/* KS_CSR_BLOCK_PAIR: whether the cuda CSR block kernels (csr_vector's and
 * csr_adaptive's SpMM and fused block pass, csr_vector_cuda.cu) run two
 * adjacent columns a thread, so a matrix entry's column and value are
 * loaded once for both (docs/blocks.md). Read when a matrix is set up.
 * Plain C, so that the cpu tests check the parsing and the choice. Not
 * installed. */
#ifndef KS_CSR_BLOCK_PAIR_H
#define KS_CSR_BLOCK_PAIR_H

#include "../core/ks_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* *on = 0 for "0", 1 for "1", unset or empty; KS_ERR_ARG (naming the
 * variable) for anything else, *on then 1. */
ks_error ks_csr_block_pair_get(int *on);

/* 1 when every non-NULL p[0, n) is 16-byte aligned (a double2 load or
 * store of an even entry of a block is then aligned). */
int ks_csr_block_pair_aligned(const void *const *p, int n);

/* Whether a block kernel on k columns takes the pair kernel: the switch on
 * (`on`, from ks_csr_block_pair_get), k even and the blocks aligned; odd k
 * keep one column a thread. */
int ks_csr_block_pair_use(int on, int k, int aligned);

/* KS_CSR_BLOCK_LANES: threads an entry of Y the CSR block kernels split a
 * row's entries over (csr_vector_cuda.cu). *lanes = 0 (chosen a call, by
 * ks_csr_block_lanes_shift) when unset or empty, else 1, 2, 4, 8, 16 or 32;
 * KS_ERR_ARG (naming the variable) for anything else, *lanes then 0. */
ks_error ks_csr_block_lanes_get(int *lanes);

/* log2 of the lanes for a block kernel on k columns of an nrows x nnz
 * matrix on nsm multiprocessors: `lanes` when given, else 1 doubled while
 * the kernel's nrows * k * lanes threads stay under four full waves of the
 * device (2048 threads a multiprocessor) and each lane keeps 2 entries of
 * a mean row. One thread walking a long row alone waits on each entry's
 * loads in turn: on the small coarse levels, with too few threads to hide
 * that, a block pass took 3-4x a single vector's (H200, 7-point 256^3, k =
 * 8: 60 us where the vector pass takes 15). Big levels keep one lane. */
int ks_csr_block_lanes_shift(int lanes, ks_int nrows, ks_int nnz, int k, int nsm);

#ifdef __cplusplus
}
#endif
#endif
