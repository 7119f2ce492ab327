/* The distributed PMIS's steps on the device (amg/kernels.h,
 * pmis_joint_step; the driver and the exchanges: mpi/pmis_dist.c): the
 * host table's passes (amg/cpu/pmis_joint.c), one kernel a step, counts
 * by warp sums and one download. Select reads cf and writes sel, update
 * reads sel and writes only its own cf, so a pass never writes what it
 * reads and the decisions are the host's. The fix-up round reads its
 * neighbours' states while others write them: a state only goes from
 * unseen to promoted or kept, so an old value makes a candidate wait a
 * round, never decide otherwise (amg/cuda/pmis.cu's argument). */
#include "amg_cuda.h"
#include "../cpu/coarsen_internal.h"

namespace {

__device__ __forceinline__ ks_gint gid_of(ks_pmis_joint J, ks_int j)
{
    return j < J.nloc ? J.row_begin + j : J.ext_gid[j - J.nloc];
}

/* Does j's measure beat i's? (cnt, then h, then the global index) */
__device__ __forceinline__ bool beats(const ks_pmis_joint &J, ks_int j, ks_int i)
{
    if (J.cnt[j] != J.cnt[i])
        return J.cnt[j] > J.cnt[i];
    if (J.h[j] != J.h[i])
        return J.h[j] > J.h[i];
    return gid_of(J, j) > gid_of(J, i);
}

__global__ void joint_init_all(ks_pmis_joint J, unsigned long long seed)
{
    const ks_int m = J.nloc + J.next;
    KS_CU_FOR(t, m)
    {
        const ks_int j = (ks_int)t;
        J.h[j] = ks_coarsen_hash(seed, gid_of(J, j));
        J.sel[j] = J.cand[j] = J.fix[j] = 0;
        if (j >= J.nloc)
            J.cf[j] = KS_UNDECIDED;
    }
}

__global__ void joint_init_own(ks_pmis_joint J, int *count)
{
    int u = 0;
    KS_CU_FOR(t, J.nloc)
    {
        const ks_int i = (ks_int)t;
        J.cnt[i] = J.trp[i + 1] - J.trp[i];
        if (J.cf[i] != KS_UNDECIDED)
            continue;
        if (J.srp[i] == J.srp[i + 1] && J.trp[i] == J.trp[i + 1])
            J.cf[i] = KS_FPT;
        else
            u++;
    }
    ks_cu_warp_add_int(count, u);
}

__global__ void joint_select(ks_pmis_joint J, int *count)
{
    int c = 0;
    KS_CU_FOR(t, J.nloc)
    {
        const ks_int i = (ks_int)t;
        bool s = J.cf[i] == KS_UNDECIDED;
        for (ks_int k = J.srp[i]; s && k < J.srp[i + 1]; k++) {
            const ks_int j = J.sci[k];
            if (J.cf[j] == KS_UNDECIDED && beats(J, j, i))
                s = false;
        }
        for (ks_int k = J.trp[i]; s && k < J.trp[i + 1]; k++) {
            const ks_int j = J.tci[k];
            if (J.cf[j] == KS_UNDECIDED && beats(J, j, i))
                s = false;
        }
        J.sel[i] = s;
        c += s;
    }
    ks_cu_warp_add_int(count, c);
}

__global__ void joint_update(ks_pmis_joint J, int *count)
{
    int c = 0;
    KS_CU_FOR(t, J.nloc)
    {
        const ks_int i = (ks_int)t;
        if (J.cf[i] != KS_UNDECIDED)
            continue;
        if (J.sel[i]) {
            J.cf[i] = KS_CPT;
            continue;
        }
        bool near = false;
        for (ks_int k = J.srp[i]; !near && k < J.srp[i + 1]; k++)
            near = J.sel[J.sci[k]] != 0;
        for (ks_int k = J.trp[i]; !near && k < J.trp[i + 1]; k++)
            near = J.sel[J.tci[k]] != 0;
        if (near)
            J.cf[i] = KS_FPT;
        else
            c++;
    }
    ks_cu_warp_add_int(count, c);
}

__global__ void joint_candidates(ks_pmis_joint J, int *count)
{
    int c = 0;
    KS_CU_FOR(t, J.nloc)
    {
        const ks_int i = (ks_int)t;
        bool need = J.cf[i] == KS_FPT && J.srp[i] < J.srp[i + 1];
        for (ks_int k = J.srp[i]; need && k < J.srp[i + 1]; k++)
            need = J.cf[J.sci[k]] != KS_CPT;
        J.cand[i] = need;
        c += need;
    }
    ks_cu_warp_add_int(count, c);
}

__global__ void joint_fixup(ks_pmis_joint J, int *count)
{
    int l = 0;
    volatile int *fix = J.fix;
    KS_CU_FOR(t, J.nloc)
    {
        const ks_int i = (ks_int)t;
        if (!J.cand[i] || fix[i] != KS_PMIS_UNSEEN)
            continue;
        const ks_gint gi = J.row_begin + i;
        int pending = 0, hit = 0;
        for (ks_int k = J.srp[i]; k < J.srp[i + 1] && !hit; k++) {
            const ks_int j = J.sci[k];
            if (J.cand[j] && gid_of(J, j) < gi) {
                const int sj = fix[j];
                hit = sj == KS_PMIS_PROMOTED;
                pending |= sj == KS_PMIS_UNSEEN;
            }
        }
        if (hit) {
            fix[i] = KS_PMIS_KEPT;
        } else if (!pending) {
            fix[i] = KS_PMIS_PROMOTED;
            J.cf[i] = KS_CPT;
        } else {
            l++;
        }
    }
    ks_cu_warp_add_int(count, l);
}

__global__ void gather_int_kernel(ks_int n, const int *__restrict__ src,
                                  const ks_int *__restrict__ idx, int *__restrict__ out)
{
    KS_CU_FOR(k, n)
    out[k] = src[idx[k]];
}

} // namespace

extern "C" ks_error ks_amg_cuda_pmis_joint_step(ks_pmis_joint *J, int step,
                                                unsigned long long seed, ks_gint *count)
{
    ks_backend *be = J->be;
    cudaStream_t st = ks_cu_stream(be);
    int *dc = J->scratch, hc = 0;
    if (!dc)
        return ks_seterr(KS_ERR_ARG, "distributed PMIS: no scratch count on the device");
    ks_error e = ks_amg_cu_fill_int(be, dc, 1, 0);
    const ks_int m = J->nloc + J->next;
    const unsigned grid = ks_cu_blocks(J->nloc > 0 ? J->nloc : 1);
    if (e == KS_OK) {
        switch (step) {
        case KS_PMIS_INIT:
            if (m > 0) {
                joint_init_all<<<ks_cu_blocks(m), KS_CU_BLOCK, 0, st>>>(*J, seed);
                KS_CU_LAUNCHED(e, "joint_init_all");
            }
            if (e == KS_OK) {
                joint_init_own<<<grid, KS_CU_BLOCK, 0, st>>>(*J, dc);
                KS_CU_LAUNCHED(e, "joint_init_own");
            }
            break;
        case KS_PMIS_SELECT:
            joint_select<<<grid, KS_CU_BLOCK, 0, st>>>(*J, dc);
            KS_CU_LAUNCHED(e, "joint_select");
            break;
        case KS_PMIS_UPDATE:
            joint_update<<<grid, KS_CU_BLOCK, 0, st>>>(*J, dc);
            KS_CU_LAUNCHED(e, "joint_update");
            break;
        case KS_PMIS_CANDIDATES:
            joint_candidates<<<grid, KS_CU_BLOCK, 0, st>>>(*J, dc);
            KS_CU_LAUNCHED(e, "joint_candidates");
            break;
        case KS_PMIS_FIXUP:
            joint_fixup<<<grid, KS_CU_BLOCK, 0, st>>>(*J, dc);
            KS_CU_LAUNCHED(e, "joint_fixup");
            break;
        default: e = ks_seterr(KS_ERR_ARG, "distributed PMIS: no step %d", step);
        }
    }
    if (e == KS_OK)
        e = be->ops->download(be, &hc, dc, sizeof hc);
    *count = hc;
    return e;
}

extern "C" ks_error ks_amg_cuda_gather_int(ks_backend *be, const int *src, const ks_int *idx,
                                           ks_int n, int *out)
{
    if (n <= 0)
        return KS_OK;
    gather_int_kernel<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(n, src, idx, out);
    KS_CUDA_LAUNCH_CHECK("gather_int_kernel");
    return KS_OK;
}
