/* dia's SpMM on the cuda backend (Y = alpha A X + beta Y on row-interleaved
 * blocks, spmm_cuda.h), in variants that KS_DIA_SPMM picks when a matrix
 * is set up, so that one benchmark run can measure them against each other
 * (docs/blocks.md), and its fused block pass (format.h's fused_block) on
 * the same tile walk. For dia_cuda.cu. Not installed. */
#ifndef KS_DIA_SPMM_CUDA_H
#define KS_DIA_SPMM_CUDA_H

#include "dia_spmm.h"
#include "fused.h"

#include <cuda_runtime.h>

/* One SpMM, or one fused block pass: the dia state's arrays (val, or valf
 * when the values are float32) and the operands: f NULL for the SpMM (X,
 * alpha, beta, Y), else the fused pass f on k columns (X, Y not used). */
struct ks_dia_spmm_args {
    cudaStream_t stream;
    ks_dia_spmm_choice how;
    ks_int nrows, ncols, ndiag;
    const ks_int *offset;
    const double *val;
    const float *valf;
    int k;
    const double *X;
    double alpha, beta;
    double *Y;
    const ks_fused_step *f;
    /* With f NULL: Y = A X (alpha 1, beta 0) and each block's X(:,j)'Y(:,j)
     * at dot_part[j * blocks + b] (blocks: at most ks_dia_spmm_dot_blocks);
     * with f (no xw, xo set): the pass and each block's B(:,j)'Xo(:,j). */
    double *dot_part;
    unsigned *blocks_used; /* where not NULL: the launch's block count */
};

/* An upper bound of the blocks a tile launch of this matrix uses. */
static inline long long ks_dia_spmm_dot_blocks(const ks_dia_spmm_choice *how, ks_int nrows)
{
    return ((long long)nrows + how->tile_rows - 1) / how->tile_rows;
}

/* Launches it (nothing for 0 rows); KS_ERR_DEVICE when a launch fails.
 * The fused pass runs the tile kernel of the variant (`old`, which has
 * none, as `tile`), each column summed as the SpMM sums it. */
ks_error ks_dia_spmm_run(const ks_dia_spmm_args *a);

/* The walks it picks from (one file each, dia_spmm_b*.cu): tile walks in
 * B-thread blocks, two columns a thread where pairs and the blocks allow
 * it; `old`. */
ks_error ks_dia_spmm_walk_256(const ks_dia_spmm_args *a, int pairs);
ks_error ks_dia_spmm_walk_512(const ks_dia_spmm_args *a, int pairs);
ks_error ks_dia_spmm_walk_1024(const ks_dia_spmm_args *a, int pairs);
ks_error ks_dia_spmm_walk_old(const ks_dia_spmm_args *a);

#endif
