/* What the cuda formats' SpMM kernels share (Y = alpha A X + beta Y on
 * row-interleaved blocks, spmv/format.h). One thread per entry (i, j) of
 * Y, e = i*k + j: the k threads of a row read its matrix entries together
 * (one load serves them) and consecutive threads read consecutive X and Y
 * entries, so every access is coalesced whatever k is. K > 0 fixes k at
 * compile time (the division by k becomes shifts and multiplies); K == 0
 * reads it at run time. For the .cu format files only. Not installed. */
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

/* beta == 0 must not read Y: it may hold garbage or NaN. */
__device__ __forceinline__ void ks_spmm_store(double *Y, long long e, double alpha, double sum,
                                              double beta)
{
    Y[e] = beta == 0.0 ? alpha * sum : alpha * sum + beta * Y[e];
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
