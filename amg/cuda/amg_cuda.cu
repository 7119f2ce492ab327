/* The cuda table of amg/kernels.h (the entries live in this folder, one
 * file per step, declared in amg_cuda.h and amg_cuda_interp.h). HMIS stays
 * NULL for good: its Ruge-Stueben pass is serial, so the driver runs it on
 * the host (amg/kernels.c). */
#include "amg_cuda.h"
#include "amg_cuda_interp.h"

extern "C" const ks_amg_kernels ks_amg_cuda_kernels = {
    /* backend */ KS_BACKEND_CUDA,
    /* strength_classical */ ks_amg_cuda_strength_classical,
    /* strength_symmetric */ ks_amg_cuda_strength_symmetric,
    /* pmis */ ks_amg_cuda_pmis,
    /* hmis */ NULL,
    /* interp_direct */ ks_cu_interp_direct,
    /* interp_extended_i */ ks_cu_interp_extended_i,
    /* interp_direct_rows */ ks_cu_interp_direct_rows,
    /* interp_extended_i_rows */ ks_cu_interp_extended_i_rows,
    /* interp_truncate */ ks_cu_interp_truncate,
    /* interp_project */ ks_cu_interp_project,
    /* aggregate */ ks_amg_cuda_aggregate,
    /* tentative_prolongator */ ks_amg_cuda_tentative,
    /* smooth_prolongator */ ks_cu_smooth_prolongator,
    /* spectral_radius */ ks_amg_cuda_spectral_radius,
    /* check_diagonal */ ks_amg_cuda_check_diagonal,
    /* smoother_weights */ ks_amg_cuda_smoother_weights,
    /* strength_classical_blocks */ ks_amg_cuda_strength_classical_blocks,
    /* spectral_prepare_blocks */ ks_amg_cuda_spectral_prepare_blocks,
    /* spectral_scale_start */ ks_amg_cuda_spectral_scale_start,
    /* symmetry_counts */ ks_amg_cuda_symmetry_counts,
    /* pmis_joint_step */ ks_amg_cuda_pmis_joint_step,
    /* gather_int */ ks_amg_cuda_gather_int,
};
