/* The cuda setup steps of amg/kernels.h (the entries of the cuda table in
 * amg_cuda.cu, one file per step) and the helpers they share (util.cu, and
 * the device functions below). For .cu files only. Not installed.
 *
 * Every entry gives the cpu table's results: the same strength patterns,
 * C/F splittings, tentative prolongators, diagonal reports and smoother
 * weights bit for bit (each row is computed by one thread with the cpu's
 * expressions in the cpu's order; products and sums that nvcc could fuse
 * into an FMA are written with __dmul_rn / __dadd_rn where it matters), and
 * the spectral radius to rounding (its dot products sum in another order).
 * Inputs are checked as the cpu checks them; when a check fails the host
 * function describes the problem on a host copy, so the messages agree. */
#ifndef KS_AMG_CUDA_H
#define KS_AMG_CUDA_H

#include "../kernels.h"
#include "../../sparse/cuda/cuda_util.cuh"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------ the table entries */
ks_error ks_amg_cuda_strength_classical(const ks_sparse *A, double theta, double max_row_sum,
                                        ks_sparse *S);
ks_error ks_amg_cuda_strength_symmetric(const ks_sparse *A, double theta, ks_sparse *S);
ks_error ks_amg_cuda_pmis(const ks_sparse *S, unsigned long long seed, int *cf, ks_int *nc);
ks_error ks_amg_cuda_aggregate(const ks_sparse *S, unsigned long long seed, ks_int *agg,
                               ks_int *na);
ks_error ks_amg_cuda_tentative(ks_backend *be, ks_int n, const ks_int *agg, ks_int na,
                               ks_sparse *P0);
ks_error ks_amg_cuda_spectral_radius(const ks_sparse *A, int iters, int known_sym, double *rho,
                                     int *exact);
ks_error ks_amg_cuda_check_diagonal(const ks_sparse *A, ks_int *bad, double *value, int *stored);
ks_error ks_amg_cuda_smoother_weights(const ks_sparse *A, ks_amg_smoother_kind kind,
                                      double omega, double *w);
ks_error ks_amg_cuda_strength_classical_blocks(const ks_sparse *L, const ks_sparse *G,
                                               ks_int nbelow, double theta, double max_row_sum,
                                               ks_sparse *SL, ks_sparse *SG);
ks_error ks_amg_cuda_spectral_prepare_blocks(const ks_sparse *L, const ks_sparse *G, double *d,
                                             ks_spectral_prep *out);
ks_error ks_amg_cuda_symmetry_counts(const ks_sparse *L, const double *d, int64_t cnt[4]);
ks_error ks_amg_cuda_spectral_scale_start(ks_backend *be, ks_int n, ks_gint row_begin, int sym,
                                          double *d, double *start);

/* ---------------------------------------------------------------- helpers */
/* What ks_amg_cu_first_bad_row checks besides the structure every step
 * needs (rowptr[0] = 0, rowptr[n] = nnz, rowptr monotone, columns in
 * [0, ncols)). */
enum {
    KS_CU_ROWS_SORTED = 1,  /* columns strictly increasing (sorted, unique) */
    KS_CU_ROWS_NO_SELF = 2, /* no column equals its row (strength patterns) */
    KS_CU_ROWS_FINITE = 4   /* every value finite */
};
/* *bad = the first row breaking those rules, -1 when rowptr[0] != 0 or
 * rowptr[n] != nnz, A->nrows when A passes. A row's columns are read only
 * when its row pointers lie in [0, nnz], so a corrupt matrix is reported,
 * never read out of bounds. Synchronises. */
ks_error ks_amg_cu_first_bad_row(const ks_sparse *A, unsigned flags, ks_int *bad);
/* Row i's first stored diagonal entry: *value (0 when none) and *stored. */
ks_error ks_amg_cu_row_diagonal(const ks_sparse *A, ks_int i, double *value, int *stored);
/* The distributed PMIS's steps and the int gather (pmis_joint.cu). */
ks_error ks_amg_cuda_pmis_joint_step(ks_pmis_joint *J, int step, unsigned long long seed,
                                     ks_gint *count);
ks_error ks_amg_cuda_gather_int(ks_backend *be, const int *src, const ks_int *idx, ks_int n,
                                int *out);
/* n ints at p (device) set to v (asynchronous). */
ks_error ks_amg_cu_fill_int(ks_backend *be, int *p, ks_int n, int v);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
/* Adds each thread's v into *dst: a warp sum, then one atomic a warp.
 * Integer sums, so the result does not depend on the order. Every thread
 * of the block must call it (after a grid-stride loop, not inside one):
 * the shuffles need the whole warp, and blocks are KS_CU_BLOCK threads,
 * full warps. */
static __device__ __forceinline__ void ks_cu_warp_add_int(int *dst, int v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0 && v != 0)
        atomicAdd(dst, v);
}

static __device__ __forceinline__ void ks_cu_warp_add_u64(unsigned long long *dst,
                                                          unsigned long long v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0 && v != 0)
        atomicAdd(dst, v);
}

/* Launch-error check for code that collects an error instead of returning
 * (cleanup follows): e becomes KS_ERR_DEVICE naming the kernel. */
#define KS_CU_LAUNCHED(e, kernel_name)                                                        \
    do {                                                                                      \
        cudaError_t ks_ce_ = cudaGetLastError();                                              \
        if ((e) == KS_OK && ks_ce_ != cudaSuccess)                                            \
            (e) = ks_seterr(KS_ERR_DEVICE, "launch of kernel %s failed: %s (%s:%d)",          \
                            kernel_name, cudaGetErrorString(ks_ce_), __FILE__, __LINE__);     \
    } while (0)
#endif

#endif
