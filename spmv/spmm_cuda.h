/* What the cuda formats' SpMM kernels share (Y = alpha A X + beta Y on
 * row-interleaved blocks, spmv/format.h). One thread per entry (i, j) of
 * Y, e = i*k + j: the k threads of a row read its matrix entries together
 * (one load serves them) and consecutive threads read consecutive X and Y
 * entries, so every access is coalesced whatever k is. K > 0 fixes k at
 * compile time (the division by k becomes shifts and multiplies); K == 0
 * reads it at run time. The CSR kernels at even k take two adjacent
 * entries a thread (ks_spmm_store2), as dia's vec variants do with their
 * own store. For the .cu format files only. Not installed. */
#ifndef KS_SPMM_CUDA_H
#define KS_SPMM_CUDA_H

#include "../core/ks_internal.h"

/* Entry e of Y: its row i, column j, and the column count kk (K or k). */
struct ks_spmm_pos {
    long long e, i;
    int j, kk;
};

template <int K>
__device__ __forceinline__ ks_spmm_pos ks_spmm_at(long long e, int k)
{
    ks_spmm_pos q;
    q.kk = K ? K : k;
    q.e = e;
    q.i = e / q.kk;
    q.j = (int)(e - q.i * q.kk);
    return q;
}

/* Entry (i, j) of Y from its sum: alpha sum, rounded (beta == 0: Y is not
 * read, it may hold garbage or NaN); else beta Y(i, j) + that product in
 * one fused multiply-add, rounded once more. Spelled out with intrinsics,
 * so that no kernel's contraction choice changes it (nvcc had contracted
 * alpha sum + beta Y this way): every SpMM kernel that stores through
 * these functions, one column a thread or two, rounds a column alike. */
__device__ __forceinline__ double ks_spmm_value(double alpha, double sum, double beta, double y)
{
    return __fma_rn(beta, y, __dmul_rn(alpha, sum));
}

__device__ __forceinline__ void ks_spmm_store(double *Y, long long e, double alpha, double sum,
                                              double beta)
{
    Y[e] = beta == 0.0 ? __dmul_rn(alpha, sum) : ks_spmm_value(alpha, sum, beta, Y[e]);
}

/* Entries e and e + 1 of Y (e even, Y 16-byte aligned) from their sums s0
 * and s1, each as ks_spmm_store makes it, with one 16-byte load and store. */
__device__ __forceinline__ void ks_spmm_store2(double *Y, long long e, double alpha, double s0,
                                               double s1, double beta)
{
    double2 *p = (double2 *)(Y + e);
    double2 y;
    if (beta == 0.0) {
        y.x = __dmul_rn(alpha, s0);
        y.y = __dmul_rn(alpha, s1);
    } else {
        y = *p;
        y.x = ks_spmm_value(alpha, s0, beta, y.x);
        y.y = ks_spmm_value(alpha, s1, beta, y.y);
    }
    *p = y;
}

/* LAUNCH(K) for the k at hand: the powers of two to 32 compiled, others at
 * run time. */
#define KS_SPMM_DISPATCH(k, LAUNCH)                                                           \
    do {                                                                                      \
        switch (k) {                                                                          \
        case 1: LAUNCH(1); break;                                                             \
        case 2: LAUNCH(2); break;                                                             \
        case 4: LAUNCH(4); break;                                                             \
        case 8: LAUNCH(8); break;                                                             \
        case 16: LAUNCH(16); break;                                                           \
        case 32: LAUNCH(32); break;                                                           \
        default: LAUNCH(0); break;                                                            \
        }                                                                                     \
    } while (0)

#endif
