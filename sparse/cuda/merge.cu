/* ks_sparse_ops.merge_blocks on cuda: a distributed matrix's local block L
 * and ghost block G merged into one CSR where they live (sparse/cpu/merge.c
 * is the rule and the reference). Row pointers: the sum of both blocks'.
 * Rows: a warp each, lanes over the entries (A's rows hold a few to tens
 * of entries, contiguous in each block). */
#include "sparse_cuda.cuh"

namespace {

/* mrp[i] = lrp[i] + grp[i] (grp NULL: no ghost entries), i <= n. */
__global__ void merge_rowptr(ks_int n, const ks_int *__restrict__ lrp,
                             const ks_int *__restrict__ grp, ks_int *mrp)
{
    KS_CU_FOR(i, (long long)n + 1)
    mrp[i] = lrp[i] + (grp ? grp[i] : 0);
}

/* Row q of M: G's entries before the first column >= nb (the split point,
 * found by ballots over the row as the cpu loop finds it), L's shifted by
 * nb, G's others shifted by nl. The loop bounds are the warp's row's, so
 * every lane reaches the ballots. Values copied where mval is set. */
__global__ void merge_rows(ks_int n, ks_int nb, ks_int nl, const ks_int *__restrict__ lrp,
                           const ks_int *__restrict__ lci, const double *__restrict__ lval,
                           const ks_int *__restrict__ grp, const ks_int *__restrict__ gci,
                           const double *__restrict__ gval, const ks_int *__restrict__ mrp,
                           ks_int *mci, double *mval)
{
    const int lane = threadIdx.x & 31;
    const long long warps = (long long)gridDim.x * blockDim.x / 32;
    for (long long q = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32; q < n;
         q += warps) {
        const ks_int l0 = lrp[q], ln = lrp[q + 1] - l0, m0 = mrp[q];
        const ks_int g0 = grp ? grp[q] : 0, g1 = grp ? grp[q + 1] : 0;
        ks_int split = g1; /* G's first entry of column >= nb */
        for (ks_int base = g0; base < g1; base += 32) {
            const ks_int k = base + lane;
            const unsigned above = __ballot_sync(KS_CU_FULL_MASK, k < g1 && gci[k] >= nb);
            if (above) {
                split = base + __ffs(above) - 1;
                break; /* the same ballot on every lane: the warp leaves together */
            }
        }
        const ks_int below = split - g0;
        for (ks_int k = lane; k < below; k += 32) {
            mci[m0 + k] = gci[g0 + k];
            if (mval)
                mval[m0 + k] = gval[g0 + k];
        }
        for (ks_int k = lane; k < ln; k += 32) {
            mci[m0 + below + k] = lci[l0 + k] + nb;
            if (mval)
                mval[m0 + below + k] = lval[l0 + k];
        }
        for (ks_int k = split + lane; k < g1; k += 32) {
            mci[m0 + ln + (k - g0)] = gci[k] + nl;
            if (mval)
                mval[m0 + ln + (k - g0)] = gval[k];
        }
    }
}

} // namespace

/* M allocated by ks_sparse_merge_blocks (shape, values as the operands');
 * both kernels queued on the backend's stream, no wait. */
extern "C" ks_error ks_cu_merge_blocks(const ks_sparse *L, const ks_sparse *G, ks_int nb,
                                       ks_sparse *M)
{
    cudaStream_t st = ks_cu_stream(L->be);
    const ks_int n = L->nrows;
    const ks_int *grp = G ? G->rowptr : NULL, *gci = G ? G->colind : NULL;
    const double *gval = G ? G->val : NULL;
    merge_rowptr<<<ks_cu_blocks((long long)n + 1), KS_CU_BLOCK, 0, st>>>(n, L->rowptr, grp,
                                                                         M->rowptr);
    KS_CUDA_LAUNCH_CHECK("merge_rowptr");
    if (n == 0 || M->nnz == 0)
        return KS_OK;
    merge_rows<<<ks_cu_grid(n, KS_CU_BLOCK / 32), KS_CU_BLOCK, 0, st>>>(
        n, nb, L->ncols, L->rowptr, L->colind, L->val, grp, gci, gval, M->rowptr, M->colind,
        M->val);
    KS_CUDA_LAUNCH_CHECK("merge_rows");
    return KS_OK;
}
