/* The smoother update of one entry, shared by the backends' smooth_update
 * and the SpMV formats' fused passes (spmv/fused.h) so that both paths
 * compute it with the same expression (same rounding). Host and device.
 * Not installed. */
#ifndef KS_SMOOTH_VALUE_H
#define KS_SMOOTH_VALUE_H

#include "../core/ks_internal.h"

#if defined(__CUDACC__)
#define KS_SMOOTH_FN static __host__ __device__ __forceinline__
#else
#define KS_SMOOTH_FN static inline
#endif

/* xi + c wi t + a (xi - xprevi): the update of the fused passes
 * (spmv/fused.h) and of the backends' smooth_update. */
KS_SMOOTH_FN double ks_smooth_value_v(double a, double c, double wi, double xi, double xprevi,
                                     double t)
{
    double v = xi + c * wi * t;
    if (a != 0.0)
        v += a * (xi - xprevi);
    return v;
}

/* The same with x and xprev as arrays (NULL = 0). */
KS_SMOOTH_FN double ks_smooth_value(double a, double c, double wi, const double *x,
                                   const double *xprev, ks_int i, double t)
{
    return ks_smooth_value_v(a, c, wi, x ? x[i] : 0.0, xprev && a != 0.0 ? xprev[i] : 0.0, t);
}

#endif
