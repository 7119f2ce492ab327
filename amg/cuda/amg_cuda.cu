/* The cuda table of amg/kernels.h (the entries live in this folder, one
 * file per step, declared in amg_cuda.h). Entries not written yet are
 * NULL: the driver's calls then run those steps on the host
 * (amg/kernels.c). HMIS stays NULL for good (its Ruge-Stueben pass is
 * serial), and so, until a parallel algorithm serves both backends, does
 * the greedy aggregation. */
#include "amg_cuda.h"

extern "C" const ks_amg_kernels ks_amg_cuda_kernels = {
    /* backend */ KS_BACKEND_CUDA,
    /* strength_classical */ ks_amg_cuda_strength_classical,
    /* strength_symmetric */ ks_amg_cuda_strength_symmetric,
    /* pmis */ ks_amg_cuda_pmis,
    /* hmis */ NULL,
    /* interp_direct */ NULL,
    /* interp_extended_i */ NULL,
    /* interp_truncate */ NULL,
    /* interp_project */ NULL,
    /* aggregate */ NULL,
    /* tentative_prolongator */ ks_amg_cuda_tentative,
    /* smooth_prolongator */ NULL,
    /* spectral_radius */ ks_amg_cuda_spectral_radius,
    /* check_diagonal */ ks_amg_cuda_check_diagonal,
    /* smoother_weights */ ks_amg_cuda_smoother_weights,
};
