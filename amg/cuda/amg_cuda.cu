/* The cuda table of amg/kernels.h. Entries not written yet are NULL: the
 * driver's calls then run those steps on the host (amg/kernels.c). */
#include "../kernels.h"
#include "amg_cuda_interp.h"

extern "C" const ks_amg_kernels ks_amg_cuda_kernels = {
    /* backend */ KS_BACKEND_CUDA,
    /* strength_classical */ NULL,
    /* strength_symmetric */ NULL,
    /* pmis */ NULL,
    /* hmis */ NULL,
    /* interp_direct */ ks_cu_interp_direct,
    /* interp_extended_i */ ks_cu_interp_extended_i,
    /* interp_truncate */ ks_cu_interp_truncate,
    /* interp_project */ ks_cu_interp_project,
    /* aggregate */ NULL,
    /* tentative_prolongator */ NULL,
    /* smooth_prolongator */ ks_cu_smooth_prolongator,
    /* spectral_radius */ NULL,
    /* check_diagonal */ NULL,
    /* smoother_weights */ NULL,
};
