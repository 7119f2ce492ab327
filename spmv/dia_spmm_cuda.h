/* dia's SpMM on the cuda backend (Y = alpha A X + beta Y on row-interleaved
 * blocks, spmm_cuda.h), in variants that KS_DIA_SPMM picks when a matrix
 * is set up, so that one benchmark run can measure them against each other
 * (docs/blocks.md). For dia_cuda.cu. Not installed. */
#ifndef KS_DIA_SPMM_CUDA_H
#define KS_DIA_SPMM_CUDA_H

#include "../core/ks_internal.h"

#include <cuda_runtime.h>

/* KS_DIA_SPMM's variant names, in this order: old, tile, vec (also "new",
 * the default), vec256. */
enum ks_dia_spmm_variant {
    KS_DIA_SPMM_OLD,    /* one thread per entry of Y, kBlock threads cover kBlock / k rows */
    KS_DIA_SPMM_TILE,   /* one thread per entry, each block walks a tile of rows */
    KS_DIA_SPMM_VEC,    /* as tile, two columns a thread (16-byte loads) where k is even */
    KS_DIA_SPMM_VEC256, /* vec with 256-thread blocks instead of 1024 */
};

/* What KS_DIA_SPMM asks for: "NAME" or "NAME:ROWS" (the rows a block of the
 * tile variants walks, 1 to 2^24; default KS_DIA_SPMM_TILE_ROWS). */
#define KS_DIA_SPMM_TILE_ROWS 4096
typedef struct ks_dia_spmm_choice {
    int variant;
    int tile_rows;
} ks_dia_spmm_choice;

/* Read at each dia setup (unset or empty: vec, 4096 rows); KS_ERR_ARG for
 * an unknown name or a bad row count. */
ks_error ks_dia_spmm_choice_get(ks_dia_spmm_choice *c);

/* One SpMM: the dia state's arrays (val, or valf when the values are
 * float32) and the operands. */
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
};

/* Launches it (nothing for 0 rows); KS_ERR_DEVICE when a launch fails. */
ks_error ks_dia_spmm_run(const ks_dia_spmm_args *a);

#endif
