/* Strength of connection on the device: the classical (hypre sign
 * convention, theta, max_row_sum) and the symmetric (aggregation) measures
 * of amg/cpu/strength.c, with its two passes: count the strong entries of
 * each row, scan the counts into row pointers, fill. Every comparison sees
 * the cpu's doubles (the row sum and the diagonal accumulate in column
 * order; the thresholds are plain products, which nvcc cannot fuse with
 * anything), so the patterns are the cpu's exactly. The classical measure
 * runs a group of lanes a row (strength_rule.cuh, shared with the
 * distributed blocks' strength_blocks.cu); the symmetric one a thread a
 * row. Rows come out sorted because A's are. */
#include "strength_rule.cuh"
#include "../cpu/amg_cpu.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

namespace {

/* ------------------------------------------------------------ classical */

/* G lanes a row (classical_lanes), strength_rule.cuh's rule on each row
 * as one segment. */

/* Pass 1: each row's sign and threshold (strength.c's classical_cut) and
 * its count of strong entries, into cnt[i] (the scan input). */
template <int G>
__global__ void classical_count(ks_int n, const ks_int *__restrict__ rp,
                                const ks_int *__restrict__ ci, const double *__restrict__ val,
                                double theta, double max_row_sum, double *__restrict__ rs,
                                ks_int *__restrict__ cnt)
{
    const long long total = (long long)n * G, stride = (long long)gridDim.x * blockDim.x;
    const int wl = (int)(threadIdx.x & 31), lane = wl & (G - 1);
    const bool need_sum = max_row_sum < 1.0; /* the row sum feeds only that test */
    for (long long wb = blockIdx.x * (long long)blockDim.x + (threadIdx.x & ~31u); wb < total;
         wb += stride) {
        const long long t = wb + wl;
        const bool live = t < total;
        const ks_int i = live ? (ks_int)(t / G) : 0;
        const ks_int k0 = live ? rp[i] : 0, k1 = live ? rp[i + 1] : 0;
        ks_cu_classical_acc a = {0.0, 0.0, 0.0, 0.0};
        ks_cu_classical_gather<G>(ci, val, k0, k1, i, need_sum, &a);
        double sg, cut;
        ks_int c = 0;
        if (ks_cu_classical_cut<G>(a, live, theta, max_row_sum, &sg, &cut))
            c = ks_cu_classical_count<G>(ci, val, k0, k1, i, sg, cut);
        c = ks_cu_group_sum_int<G>(c);
        if (live && lane == 0) {
            rs[2 * (size_t)i] = sg;
            rs[2 * (size_t)i + 1] = cut;
            cnt[i] = c;
        }
    }
}

/* Pass 2: the strong entries of each row, in column order, at srp[i]. */
template <int G>
__global__ void classical_fill(ks_int n, const ks_int *__restrict__ rp,
                               const ks_int *__restrict__ ci, const double *__restrict__ val,
                               const double *__restrict__ rs, const ks_int *__restrict__ srp,
                               ks_int *__restrict__ sci)
{
    const long long total = (long long)n * G, stride = (long long)gridDim.x * blockDim.x;
    const int wl = (int)(threadIdx.x & 31);
    for (long long wb = blockIdx.x * (long long)blockDim.x + (threadIdx.x & ~31u); wb < total;
         wb += stride) {
        const long long t = wb + wl;
        const ks_int i = t < total ? (ks_int)(t / G) : 0;
        /* rows without strong entries take no rounds */
        const bool any = t < total && srp[i + 1] > srp[i];
        const ks_int k0 = any ? rp[i] : 0, k1 = any ? rp[i + 1] : 0;
        const double sg = any ? rs[2 * (size_t)i] : 1.0, cut = any ? rs[2 * (size_t)i + 1] : 0.0;
        ks_int *out = any ? sci + srp[i] : sci;
        ks_cu_classical_fill<G>(ci, val, k0, k1, i, sg, cut, &out);
    }
}

/* Lanes a row for A's mean row length. */
int classical_lanes(const ks_sparse *A)
{
    return ks_cu_classical_lanes(A->nrows ? (double)A->nnz / A->nrows : 0.0);
}

/* ------------------------------------------------------------ symmetric */

/* sqd[i] = sqrt|a_ii| (the row's diagonal entries summed, as on the cpu);
 * a zero diagonal lowers *zero to the row. */
__global__ void symmetric_diag(ks_int n, const ks_int *__restrict__ rp,
                               const ks_int *__restrict__ ci, const double *__restrict__ val,
                               double *__restrict__ sqd, int *zero)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        double d = 0.0;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            if (ci[k] == i)
                d += val[k];
        sqd[i] = sqrt(fabs(d));
        if (d == 0.0)
            atomicMin(zero, i);
    }
}

/* strength.c's symmetric_row: |a_ij| >= theta sqrt|a_ii| sqrt|a_jj|, the
 * product taken left to right as there. */
__device__ ks_int symmetric_row(const ks_int *__restrict__ rp, const ks_int *__restrict__ ci,
                                const double *__restrict__ val, ks_int i, double theta,
                                const double *__restrict__ sqd, ks_int *out)
{
    ks_int cnt = 0;
    for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
        const ks_int j = ci[k];
        const double a = fabs(val[k]);
        if (j != i && a > 0.0 && a >= theta * sqd[i] * sqd[j]) {
            if (out)
                out[cnt] = j;
            cnt++;
        }
    }
    return cnt;
}

__global__ void symmetric_count(ks_int n, const ks_int *__restrict__ rp,
                                const ks_int *__restrict__ ci, const double *__restrict__ val,
                                double theta, const double *__restrict__ sqd,
                                ks_int *__restrict__ cnt)
{
    KS_CU_FOR(t, n)
    cnt[t] = symmetric_row(rp, ci, val, (ks_int)t, theta, sqd, NULL);
}

__global__ void symmetric_fill(ks_int n, const ks_int *__restrict__ rp,
                               const ks_int *__restrict__ ci, const double *__restrict__ val,
                               double theta, const double *__restrict__ sqd,
                               const ks_int *__restrict__ srp, ks_int *__restrict__ sci)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        if (srp[i + 1] > srp[i])
            symmetric_row(rp, ci, val, i, theta, sqd, sci + srp[i]);
    }
}

/* ---------------------------------------------------------------- checks */

/* strength.c's check_csr: the host-side part here, the rows on the
 * device; a row the device finds bad is described by the host function
 * (run on a host copy, it fails with the cpu's message). */
typedef ks_error (*host_strength_fn)(const ks_csr *A, double theta, double max_row_sum,
                                     ks_strength *S);

ks_error host_classical(const ks_csr *A, double theta, double max_row_sum, ks_strength *S)
{
    return ks_amg_strength_classical(A, theta, max_row_sum, S);
}

ks_error host_symmetric(const ks_csr *A, double theta, double max_row_sum, ks_strength *S)
{
    (void)max_row_sum;
    return ks_amg_strength_symmetric(A, theta, S);
}

ks_error check_matrix(const ks_sparse *A, const char *who, host_strength_fn host, double theta,
                      double max_row_sum)
{
    if (!A)
        return ks_seterr(KS_ERR_ARG, "%s: NULL matrix", who);
    if (A->nrows < 0 || A->nnz < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return ks_seterr(KS_ERR_ARG, "%s: matrix is not allocated or has a negative size", who);
    if (A->nrows != A->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: matrix is %" PRId32 " x %" PRId32 ", expected square",
                         who, A->nrows, A->ncols);
    ks_int bad;
    KS_TRY(ks_amg_cu_first_bad_row(A, 0, &bad));
    if (bad == A->nrows)
        return KS_OK;
    ks_csr H;
    KS_TRY(ks_sparse_to_csr(A, &H));
    ks_strength s;
    ks_error e = host(&H, theta, max_row_sum, &s);
    ks_csr_free(&H);
    if (e != KS_OK)
        return e;
    ks_strength_free(&s); /* the host accepts what the device refused: should not happen */
    return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 " of the device matrix is malformed", who,
                     bad);
}

/* S takes rowptr (counts scanned in place) and a colind of the total. */
ks_error finish_pattern(ks_backend *be, ks_int n, ks_int *rowptr, ks_sparse *S,
                        ks_int **colind_out)
{
    ks_int total = 0;
    KS_TRY(ks_cu_scan(be, rowptr, n, rowptr, &total, "strength pattern"));
    ks_int *colind = NULL;
    KS_TRY(ks_be_alloc(be, (size_t)total * sizeof(ks_int) + 1, (void **)&colind,
                       "strength columns"));
    ks_sparse t = {be, n, n, total, rowptr, colind, NULL, 0, 0};
    *S = t;
    *colind_out = colind;
    return KS_OK;
}

} // namespace

extern "C" ks_error ks_amg_cuda_strength_classical(const ks_sparse *A, double theta,
                                                   double max_row_sum, ks_sparse *S)
{
    static const char who[] = "ks_amg_strength_classical";
    if (!S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(S, 0, sizeof *S);
    if (!(theta >= 0.0 && theta <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: strength_threshold = %g, expected a value in [0, 1]",
                         who, theta);
    if (!(max_row_sum > 0.0 && max_row_sum <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: max_row_sum = %g, expected a value in (0, 1] "
                         "(1 disables the test)", who, max_row_sum);
    KS_TRY(check_matrix(A, who, host_classical, theta, max_row_sum));
    ks_backend *be = A->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = A->nrows;
    const int lanes = classical_lanes(A);
    ks_int *rowptr = NULL, *colind = NULL;
    double *rs = NULL; /* sign and threshold of each row, so pass 2 only filters */
    ks_error e = ks_be_alloc(be, ((size_t)n + 1) * sizeof(ks_int), (void **)&rowptr,
                             "strength row pointers");
    if (e == KS_OK)
        e = ks_be_alloc(be, 2 * (size_t)n * sizeof(double) + 1, (void **)&rs,
                        "strength row thresholds");
    if (e == KS_OK) {
        const unsigned nb = ks_cu_blocks((long long)n * lanes);
        switch (lanes) {
#define KS_COUNT_G(G)                                                                         \
    case G:                                                                                   \
        classical_count<G><<<nb, KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, A->val, theta, \
                                                       max_row_sum, rs, rowptr);              \
        break;
            KS_COUNT_G(32)
            KS_COUNT_G(16)
            KS_COUNT_G(8)
            KS_COUNT_G(4)
            KS_COUNT_G(1)
#undef KS_COUNT_G
        }
        KS_CU_LAUNCHED(e, "classical_count");
    }
    if (e == KS_OK)
        e = finish_pattern(be, n, rowptr, S, &colind);
    if (e == KS_OK) {
        const unsigned nb = ks_cu_blocks((long long)n * lanes);
        switch (lanes) {
#define KS_FILL_G(G)                                                                          \
    case G:                                                                                   \
        classical_fill<G><<<nb, KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, A->val, rs,     \
                                                      rowptr, colind);                        \
        break;
            KS_FILL_G(32)
            KS_FILL_G(16)
            KS_FILL_G(8)
            KS_FILL_G(4)
            KS_FILL_G(1)
#undef KS_FILL_G
        }
        KS_CU_LAUNCHED(e, "classical_fill");
    }
    if (rs)
        be->ops->free(be, rs);
    if (e != KS_OK) {
        if (colind)
            ks_sparse_free(S); /* S owns rowptr and colind */
        else if (rowptr)
            be->ops->free(be, rowptr);
        memset(S, 0, sizeof *S);
    }
    return e;
}

extern "C" ks_error ks_amg_cuda_strength_symmetric(const ks_sparse *A, double theta,
                                                   ks_sparse *S)
{
    static const char who[] = "ks_amg_strength_symmetric";
    if (!S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(S, 0, sizeof *S);
    if (!(theta >= 0.0 && theta <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: strength_threshold = %g, expected a value in [0, 1]",
                         who, theta);
    KS_TRY(check_matrix(A, who, host_symmetric, theta, 1.0));
    ks_backend *be = A->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = A->nrows;
    ks_int *rowptr = NULL, *colind = NULL;
    double *sqd = NULL;
    int *zero = NULL, hz = n;
    ks_error e = ks_be_alloc(be, (size_t)n * sizeof(double) + 1, (void **)&sqd, "sqrt|diag|");
    if (e == KS_OK)
        e = ks_be_alloc(be, sizeof(int), (void **)&zero, "zero diagonal row");
    if (e == KS_OK)
        e = ks_amg_cu_fill_int(be, zero, 1, n);
    if (e == KS_OK) {
        symmetric_diag<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, A->val,
                                                               sqd, zero);
        KS_CU_LAUNCHED(e, "symmetric_diag");
    }
    if (e == KS_OK)
        e = be->ops->download(be, &hz, zero, sizeof hz);
    if (e == KS_OK && hz < n)
        e = ks_seterr(KS_ERR_NUMERIC, "%s: zero diagonal at row %" PRId32
                      " (the symmetric measure divides by sqrt|a_ii a_jj|)", who, hz);
    if (e == KS_OK)
        e = ks_be_alloc(be, ((size_t)n + 1) * sizeof(ks_int), (void **)&rowptr,
                        "strength row pointers");
    if (e == KS_OK) {
        symmetric_count<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, A->val,
                                                                theta, sqd, rowptr);
        KS_CU_LAUNCHED(e, "symmetric_count");
    }
    if (e == KS_OK)
        e = finish_pattern(be, n, rowptr, S, &colind);
    if (e == KS_OK) {
        symmetric_fill<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, A->val,
                                                               theta, sqd, rowptr, colind);
        KS_CU_LAUNCHED(e, "symmetric_fill");
    }
    if (zero)
        be->ops->free(be, zero);
    if (sqd)
        be->ops->free(be, sqd);
    if (e != KS_OK) {
        if (colind)
            ks_sparse_free(S);
        else if (rowptr)
            be->ops->free(be, rowptr);
        memset(S, 0, sizeof *S);
    }
    return e;
}
