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

#ifdef __cplusplus
}
#endif
#endif
