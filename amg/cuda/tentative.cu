/* The tentative prolongator of smoothed aggregation on the device:
 * P0(i, agg[i]) = 1 / sqrt(|aggregate agg[i]|), an empty row where
 * agg[i] = -1 (a point left out), as amg/cpu/sa_prolong.c builds it, with
 * its checks (values in [-1, na), no empty aggregate) and messages.
 * Aggregate sizes are integer atomic counts (exact in any order); the value
 * is 1.0 / sqrt((double)size) with IEEE division and square root (nvcc's
 * defaults, which this library keeps), so P0 is the cpu's bit for bit. */
#include "amg_cuda.h"

#include <inttypes.h>
#include <string.h>

namespace {

/* size[a] = points of aggregate a; flags[0] lowered to the first i with
 * agg[i] outside [-1, na); flags[2] += rows with an entry. */
__global__ void aggregate_sizes(ks_int n, const ks_int *__restrict__ agg, ks_int na,
                                ks_int *size, int *flags)
{
    int rows = 0;
    KS_CU_FOR(t, n)
    {
        const ks_int a = agg[t];
        if (a < -1 || a >= na)
            atomicMin(&flags[0], (int)t);
        else if (a >= 0) {
            atomicAdd(&size[a], 1);
            rows++;
        }
    }
    ks_cu_warp_add_int(&flags[2], rows);
}

/* flags[1] lowered to the first empty aggregate. */
__global__ void empty_aggregates(ks_int na, const ks_int *__restrict__ size, int *flags)
{
    KS_CU_FOR(a, na)
    if (size[a] == 0)
        atomicMin(&flags[1], (int)a);
}

/* Row counts (0 or 1) for the scan into P0's row pointers. */
__global__ void tentative_counts(ks_int n, const ks_int *__restrict__ agg, ks_int *cnt)
{
    KS_CU_FOR(t, n)
    cnt[t] = agg[t] >= 0;
}

__global__ void tentative_fill(ks_int n, const ks_int *__restrict__ agg,
                               const ks_int *__restrict__ size, const ks_int *__restrict__ rp,
                               ks_int *__restrict__ ci, double *__restrict__ val)
{
    KS_CU_FOR(t, n)
    {
        const ks_int a = agg[t];
        if (a >= 0) {
            ci[rp[t]] = a;
            val[rp[t]] = 1.0 / sqrt((double)size[a]);
        }
    }
}

/* Sizes checked, then P0 (allocated here; the caller frees it on error). */
ks_error tentative_run(ks_backend *be, ks_int n, const ks_int *agg, ks_int na, ks_int *size,
                       int *flags, ks_sparse *P0)
{
    static const char who[] = "ks_amg_tentative_prolongator";
    cudaStream_t st = ks_cu_stream(be);
    int h[3] = {n, na, 0};
    KS_CUDA_CHECK(cudaMemsetAsync(size, 0, (size_t)na * sizeof(ks_int), st));
    /* {n, na, 0} set in the queue (an upload would wait) */
    KS_TRY(ks_amg_cu_fill_int(be, flags, 1, n));
    KS_TRY(ks_amg_cu_fill_int(be, flags + 1, 1, na));
    KS_CUDA_CHECK(cudaMemsetAsync(flags + 2, 0, sizeof(int), st));
    aggregate_sizes<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, agg, na, size, flags);
    KS_CUDA_LAUNCH_CHECK("aggregate_sizes");
    empty_aggregates<<<ks_cu_blocks(na), KS_CU_BLOCK, 0, st>>>(na, size, flags);
    KS_CUDA_LAUNCH_CHECK("empty_aggregates");
    KS_TRY(be->ops->download(be, h, flags, sizeof h));
    if (h[0] < n) { /* the cpu stops at the first bad value, before the sizes */
        ks_int a = 0;
        KS_TRY(be->ops->download(be, &a, agg + h[0], sizeof a));
        return ks_seterr(KS_ERR_ARG, "%s: agg[%" PRId32 "] = %" PRId32 " outside [-1, %" PRId32
                         ")", who, (ks_int)h[0], a, na);
    }
    if (h[1] < na)
        return ks_seterr(KS_ERR_ARG, "%s: aggregate %" PRId32 " has no points (P0 would have "
                         "a zero column)", who, (ks_int)h[1]);
    KS_TRY(ks_sparse_alloc(be, n, na, (ks_int)h[2], 0, P0));
    tentative_counts<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, agg, P0->rowptr);
    KS_CUDA_LAUNCH_CHECK("tentative_counts");
    KS_TRY(ks_cu_scan(be, P0->rowptr, n, P0->rowptr, NULL, "tentative prolongator"));
    tentative_fill<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, agg, size, P0->rowptr,
                                                           P0->colind, P0->val);
    KS_CUDA_LAUNCH_CHECK("tentative_fill");
    return KS_OK;
}

} // namespace

extern "C" ks_error ks_amg_cuda_tentative(ks_backend *be, ks_int n, const ks_int *agg, ks_int na,
                                          ks_sparse *P0)
{
    static const char who[] = "ks_amg_tentative_prolongator";
    if (!P0)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(P0, 0, sizeof *P0);
    if (n < 0 || na < 0)
        return ks_seterr(KS_ERR_ARG, "%s: negative size (n %" PRId32 ", aggregates %" PRId32 ")",
                         who, n, na);
    if (n > 0 && !agg)
        return ks_seterr(KS_ERR_ARG, "%s: NULL aggregate array", who);
    ks_int *size = NULL;
    int *flags = NULL;
    ks_error e = ks_be_alloc(be, (size_t)na * sizeof(ks_int) + 1, (void **)&size,
                             "aggregate sizes");
    if (e == KS_OK)
        e = ks_be_alloc(be, 3 * sizeof(int), (void **)&flags, "aggregate checks");
    if (e == KS_OK)
        e = tentative_run(be, n, agg, na, size, flags, P0);
    if (size)
        be->ops->free(be, size);
    if (flags)
        be->ops->free(be, flags);
    if (e != KS_OK)
        ks_sparse_free(P0); /* also when nothing was allocated: P0 is zeroed then */
    return e;
}
