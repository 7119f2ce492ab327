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
 * row's entries over (csr_vector_cuda.cu). *lanes = 0 (chosen a call:
 * ks_csr_block_lanes_shift) when unset or empty, -1 for "spmv" (the
 * format's SpMV lanes on every level), else 1, 2, 4, 8, 16 or 32; KS_ERR_ARG
 * (naming the variable) for anything else, *lanes then 0. */
ks_error ks_csr_block_lanes_get(int *lanes);

/* log2 of the lanes for a block kernel on k columns of an nrows x nnz
 * matrix on nsm multiprocessors, spmv_lanes the format's SpMV lanes (0:
 * none). `lanes` > 0: that many. 0: one while the kernel's nrows * k threads
 * fill one wave of the device (2048 threads a multiprocessor), where other
 * warps hide a thread's walk along its row; below that (the small coarse
 * levels: a block pass took 3-4x a single vector's there, H200, 7-point
 * 256^3, k = 8) the SpMV's lanes, so each column has its SpMV's bits, or
 * without them 1 doubled while each lane keeps 2 entries of a mean row and
 * the threads stay under one wave. One wave, not four: at 2.5 waves
 * (7-point 128^3's level 2, 86,242 rows) 32 lanes made the block pass 1.7x
 * slower than one lane (H200, 2026-11-29). -1: the SpMV's lanes always
 * (the doubling where there are none). */
int ks_csr_block_lanes_shift(int lanes, ks_int nrows, ks_int nnz, int k, int nsm, int spmv_lanes);

#ifdef __cplusplus
}
#endif
#endif
