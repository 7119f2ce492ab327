/* The cuda interpolation steps of the AMG setup (entries of the cuda table
 * in amg_cuda.cu, see amg/kernels.h), each giving the cpu table's result:
 * the same pattern (columns per row, sorted) and the same values, bit for
 * bit where the cpu's order of operations can be followed (it is followed
 * everywhere: per row the same sums in the same order, no fused
 * multiply-adds). All arrays live on the operands' cuda backend. As on
 * the cpu, an output is set only on success (left untouched otherwise).
 *
 *   interp_common.cu                  coarse numbering, input checks, row
 *                                     compaction (shared pieces; the device
 *                                     helpers are in interp_device.cuh)
 *   interp_direct.cu                  direct (D1)
 *   interp_extended.cu                extended+i (D2)
 *   truncate.cu                       truncation in place
 *   project.cu                        re-setup projection onto a pattern
 *   smooth_prolongator.cu             P = (I - 4/(3 rho) D^-1 A) P0
 *
 * Plain C declarations, so the tests can call them. Not installed. */
#ifndef KS_AMG_CUDA_INTERP_H
#define KS_AMG_CUDA_INTERP_H

#include "../kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Coarse numbering on the device (amg/cpu/coarse_map.c): cmap[i] = the
 * rank of C point i among the C points, -1 for F points; *nc (host) = the
 * number of C points. cf and cmap in be's memory; cmap has n + 1 slots
 * (the scan's). A point neither KS_CPT nor KS_FPT is KS_ERR_ARG naming the
 * first one, as on the cpu. */
ks_error ks_cu_coarse_map(ks_backend *be, ks_int n, const int *cf, ks_int *cmap, ks_int *nc);

/* The table entries (signatures of ks_amg_kernels). */
ks_error ks_cu_interp_direct(const ks_sparse *A, const ks_sparse *S, const int *cf,
                             ks_sparse *P);
ks_error ks_cu_interp_extended_i(const ks_sparse *A, const ks_sparse *S, const int *cf,
                                 ks_sparse *P);
ks_error ks_cu_interp_direct_rows(const ks_sparse *A, const ks_sparse *S, const int *cf,
                                  ks_int r0, ks_int r1, ks_sparse *P);
ks_error ks_cu_interp_extended_i_rows(const ks_sparse *A, const ks_sparse *S, const int *cf,
                                      ks_int r0, ks_int r1, ks_sparse *P);
ks_error ks_cu_interp_truncate(ks_sparse *P, int max_elements, double factor);
ks_error ks_cu_interp_project(const ks_sparse *Pn, ks_sparse *P, int truncated, int *changed);
ks_error ks_cu_smooth_prolongator(const ks_sparse *A, const ks_sparse *P0, double rho,
                                  ks_sparse *P);

#ifdef __cplusplus
}
#endif
#endif
