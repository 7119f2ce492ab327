/* Pieces of the rho(D^-1 A) estimate (amg/cpu/spectral.c explains the
 * method) shared by the cpu and cuda implementations, so that both run the
 * same algorithm: the start vector (host and device code), the constants,
 * and the eigenvalue computation of the Lanczos tridiagonal (host code;
 * the cuda version calls it on the alphas and betas it downloaded).
 * Not installed. */
#ifndef KS_SPECTRAL_COMMON_H
#define KS_SPECTRAL_COMMON_H

#include "../core/ks_internal.h"

#include <stdint.h>

#if defined(__CUDACC__)
#define KS_SPEC_FN static __host__ __device__ __forceinline__
#else
#define KS_SPEC_FN static inline
#endif

#define KS_SPEC_SYM_TOL 1e-10  /* |a_ij - a_ji| <= tol * sqrt(|a_ii a_jj|) */
#define KS_SPEC_POWER_SAFETY 1.05
#define KS_SPEC_BREAKDOWN 1e-12 /* Lanczos stops when beta <= this * (|alpha| + beta_prev) */

#ifdef __cplusplus
extern "C" {
#endif

/* Deterministic start vector: splitmix64 of the index mapped to [-1, 1).
 * (z >> 11) < 2^53 times 2^-52 is exact, so a fused multiply-add on the
 * device rounds the final subtraction exactly as the host does. */
KS_SPEC_FN double ks_spectral_start(uint64_t i)
{
    uint64_t z = i + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* Largest |eigenvalue| of the symmetric tridiagonal matrix with diagonal
 * a[0..m) and off-diagonal b[0..m-1) (bisection with Sturm counts). */
double ks_spectral_tridiag_max_abs(const double *a, const double *b, int m);

#ifdef __cplusplus
}
#endif
#endif
