/* The row-wise part of a distributed level's rho(D^-1 A) estimate on the
 * device (the table's spectral_prepare_blocks and spectral_scale_start;
 * the host functions are amg/cpu/spectral_blocks.c's, the caller
 * mpi/amg_dist_smoother.c), so the level's blocks are read where they live
 * instead of being copied to the host. One thread a row with the cpu's
 * loop: the diagonal (the last stored match, as the cpu), its sum of
 * |a_ij| over L's then G's entries in order (additions only, so nothing is
 * fused), one division: the bound's bits are the cpu's; the counts, the
 * first bad row and the max do not depend on the order. */
#include "amg_cuda.h"
#include "../cpu/amg_cpu.h"
#include "../spectral_common.h"

#include <stdint.h>
#include <string.h>

namespace {

/* What the rows' threads fold into (device); bound_bits holds a double
 * >= 0, whose bits order as its values. */
struct prep_state {
    int bad, npos, nneg, pad;
    unsigned long long bound_bits;
};

__global__ void prepare_rows(ks_int n, const ks_int *__restrict__ lrp,
                             const ks_int *__restrict__ lci, const double *__restrict__ lval,
                             const ks_int *__restrict__ grp, const double *__restrict__ gval,
                             double *__restrict__ d, prep_state *st)
{
    int bad = n, pos = 0, neg = 0;
    double mx = 0.0;
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t, k0 = lrp[i], k1 = lrp[i + 1];
        double di = 0.0;
        for (ks_int k = k0; k < k1; k++)
            if (lci[k] == i)
                di = lval[k];
        d[i] = di;
        pos += di > 0.0;
        neg += di < 0.0;
        if (di == 0.0 || !isfinite(di)) {
            bad = min(bad, (int)i);
            continue;
        }
        double r = 0.0;
        for (ks_int k = k0; k < k1; k++)
            r += fabs(lval[k]);
        if (grp)
            for (ks_int k = grp[i]; k < grp[i + 1]; k++)
                r += fabs(gval[k]);
        const double q = r / fabs(di);
        if (q > mx) /* a NaN row sum is left out, as on the cpu */
            mx = q;
    }
    /* every thread gets here (after the loop): the shuffles need full warps */
    ks_cu_warp_add_int(&st->npos, pos);
    ks_cu_warp_add_int(&st->nneg, neg);
    for (int off = 16; off > 0; off >>= 1) {
        bad = min(bad, __shfl_xor_sync(0xffffffffu, bad, off));
        mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    }
    if ((threadIdx.x & 31) == 0) {
        if (bad < n)
            atomicMin(&st->bad, bad);
        if (mx > 0.0)
            atomicMax(&st->bound_bits, (unsigned long long)__double_as_longlong(mx));
    }
}

__global__ void scale_start(ks_int n, ks_gint row_begin, int sym, double *__restrict__ d,
                            double *__restrict__ start)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        const double di = d[i];
        d[i] = sym ? 1.0 / sqrt(fabs(di)) : 1.0 / di;
        start[i] = ks_spectral_start((uint64_t)(row_begin + i));
    }
}

} // namespace

extern "C" ks_error ks_amg_cuda_spectral_prepare_blocks(const ks_sparse *L, const ks_sparse *G,
                                                        double *d, ks_spectral_prep *out)
{
    KS_TRY(ks_amg_spectral_blocks_args(L, G, d, out));
    ks_int bad_l, bad_g = L->nrows;
    KS_TRY(ks_amg_cu_first_bad_row(L, 0, &bad_l)); /* free for valid blocks */
    if (bad_l != L->nrows)
        return ks_amg_spectral_blocks_malformed(bad_l, 0);
    if (G)
        KS_TRY(ks_amg_cu_first_bad_row(G, 0, &bad_g));
    if (bad_g != L->nrows)
        return ks_amg_spectral_blocks_malformed(bad_g, 1);
    ks_backend *be = L->be;
    const ks_int n = L->nrows;
    prep_state h = {n, 0, 0, 0, 0ull}, *st = NULL;
    KS_TRY(ks_be_alloc(be, sizeof h, (void **)&st, "spectral preparation state"));
    ks_error e = be->ops->upload(be, st, &h, sizeof h);
    if (e == KS_OK && n > 0) {
        prepare_rows<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(
            n, L->rowptr, L->colind, L->val, G ? G->rowptr : NULL, G ? G->val : NULL, d, st);
        KS_CU_LAUNCHED(e, "prepare_rows");
    }
    if (e == KS_OK)
        e = be->ops->download(be, &h, st, sizeof h);
    be->ops->free(be, st);
    if (e != KS_OK)
        return e;
    out->bad = h.bad;
    out->npos = h.npos;
    out->nneg = h.nneg;
    memcpy(&out->bound, &h.bound_bits, sizeof out->bound);
    return KS_OK;
}

extern "C" ks_error ks_amg_cuda_spectral_scale_start(ks_backend *be, ks_int n, ks_gint row_begin,
                                                     int sym, double *d, double *start)
{
    if (n < 0 || (n > 0 && (!d || !start)))
        return ks_seterr(KS_ERR_ARG, "ks_amg_spectral_scale_start: %s",
                         n < 0 ? "negative size" : "NULL array");
    if (n == 0)
        return KS_OK;
    ks_error e = KS_OK;
    scale_start<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(n, row_begin, sym, d,
                                                                       start);
    KS_CU_LAUNCHED(e, "scale_start");
    return e;
}

namespace {

/* A thread a row: its upper entries' partners found by a binary search in
 * their rows (sorted), the serial test; four counters summed with
 * atomics (integers: any order). */
__global__ void symmetry_rows(ks_int n, const ks_int *__restrict__ rp,
                              const ks_int *__restrict__ ci, const double *__restrict__ val,
                              const double *__restrict__ d, unsigned long long *cnt)
{
    unsigned long long up = 0, low = 0, bad = 0, differ = 0;
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
            const ks_int j = ci[k];
            if (j < i) {
                low++;
                continue;
            }
            if (j == i)
                continue;
            up++;
            ks_int lo = rp[j], hi = rp[j + 1];
            while (lo < hi) {
                const ks_int mid = lo + (hi - lo) / 2;
                if (ci[mid] < i)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            const bool found = lo < rp[j + 1] && ci[lo] == i;
            const double a = val[k], b = found ? val[lo] : 0.0;
            bad += !found || !(fabs(a - b) <= KS_SPEC_SYM_TOL * sqrt(fabs(d[i] * d[j])));
            differ += !found || a != b;
        }
    }
    if (up)
        atomicAdd(&cnt[0], up);
    if (low)
        atomicAdd(&cnt[1], low);
    if (bad)
        atomicAdd(&cnt[2], bad);
    if (differ)
        atomicAdd(&cnt[3], differ);
}

} // namespace

extern "C" ks_error ks_amg_cuda_symmetry_counts(const ks_sparse *L, const double *d,
                                                int64_t cnt[4])
{
    if (!L || !cnt || (L->nrows > 0 && (!d || !L->val)))
        return ks_seterr(KS_ERR_ARG, "ks_amg_symmetry_counts: NULL %s",
                         !L ? "matrix" : !cnt ? "counts" : !d ? "diagonal" : "values");
    ks_backend *be = L->be;
    const ks_int n = L->nrows;
    unsigned long long h[4] = {0, 0, 0, 0}, *dc = NULL;
    KS_TRY(ks_be_alloc(be, sizeof h, (void **)&dc, "symmetry counts"));
    ks_error e = be->ops->upload(be, dc, h, sizeof h);
    if (e == KS_OK && n > 0) {
        symmetry_rows<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(
            n, L->rowptr, L->colind, L->val, d, dc);
        KS_CU_LAUNCHED(e, "symmetry_rows");
    }
    if (e == KS_OK)
        e = be->ops->download(be, h, dc, sizeof h);
    be->ops->free(be, dc);
    for (int q = 0; q < 4; q++)
        cnt[q] = (int64_t)h[q];
    return e;
}
