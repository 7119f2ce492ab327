/* The classical strength of a distributed matrix's rows on one rank, on
 * the device (the table's strength_classical_blocks; the host function is
 * amg/cpu/strength.c's ks_amg_strength_classical_blocks, the caller
 * mpi/strength_dist.c): each row's entries lie in the owned block L and
 * the ghost block G, whose columns ascend in global order, those below
 * nbelow before L's. strength_rule.cuh's rule reads the row as three
 * segments in the cpu's order (ghosts below, owned, ghosts above), so the
 * row sum, the diagonal and the thresholds are the cpu's bits and the two
 * patterns its patterns. Two passes as strength.cu: count (both blocks'
 * counts), scan, fill. */
#include "strength_rule.cuh"
#include "../cpu/amg_cpu.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

namespace {

/* The ghost block's arrays (all NULL without one: every row empty). */
typedef struct ghost_block {
    const ks_int *rp, *ci;
    const double *val;
} ghost_block;

/* Pass 1: each row's sign and threshold and its strong entries' counts in
 * L (cl[i]) and G (cg[i]). */
template <int G>
__global__ void blocks_count(ks_int n, const ks_int *__restrict__ lrp,
                             const ks_int *__restrict__ lci, const double *__restrict__ lval,
                             ghost_block g, ks_int nbelow, double theta, double max_row_sum,
                             double *__restrict__ rs, ks_int *__restrict__ cl,
                             ks_int *__restrict__ cg)
{
    const long long total = (long long)n * G, stride = (long long)gridDim.x * blockDim.x;
    const int wl = (int)(threadIdx.x & 31), lane = wl & (G - 1);
    const bool need_sum = max_row_sum < 1.0; /* the row sum feeds only that test */
    for (long long wb = blockIdx.x * (long long)blockDim.x + (threadIdx.x & ~31u); wb < total;
         wb += stride) {
        const long long t = wb + wl;
        const bool live = t < total;
        const ks_int i = live ? (ks_int)(t / G) : 0;
        const ks_int kl0 = live ? lrp[i] : 0, kl1 = live ? lrp[i + 1] : 0;
        const ks_int kg0 = live && g.rp ? g.rp[i] : 0, kg1 = live && g.rp ? g.rp[i + 1] : 0;
        /* The ghosts below: a prefix of the row (its columns ascend). Only
         * the row sum's order needs it; without the sum the ghosts are read
         * once, after L (the diagonal and the scale do not depend on the
         * order). */
        ks_int split = 0;
        if (need_sum) {
            for (long long k = kg0 + lane; k < kg1; k += G)
                split += g.ci[k] < nbelow;
            split = ks_cu_group_sum_int<G>(split);
        }
        ks_cu_classical_acc a = {0.0, 0.0, 0.0, 0.0};
        ks_cu_classical_gather<G>(g.ci, g.val, kg0, kg0 + split, -1, need_sum, &a);
        ks_cu_classical_gather<G>(lci, lval, kl0, kl1, i, need_sum, &a);
        ks_cu_classical_gather<G>(g.ci, g.val, kg0 + split, kg1, -1, need_sum, &a);
        double sg, cut;
        ks_int c_l = 0, c_g = 0;
        if (ks_cu_classical_cut<G>(a, live, theta, max_row_sum, &sg, &cut)) {
            c_l = ks_cu_classical_count<G>(lci, lval, kl0, kl1, i, sg, cut);
            c_g = ks_cu_classical_count<G>(g.ci, g.val, kg0, kg1, -1, sg, cut);
        }
        c_l = ks_cu_group_sum_int<G>(c_l);
        c_g = ks_cu_group_sum_int<G>(c_g);
        if (live && lane == 0) {
            rs[2 * (size_t)i] = sg;
            rs[2 * (size_t)i + 1] = cut;
            cl[i] = c_l;
            cg[i] = c_g;
        }
    }
}

/* Pass 2: each row's strong entries of L at sl[i], of G at sg_[i]. */
template <int G>
__global__ void blocks_fill(ks_int n, const ks_int *__restrict__ lrp,
                            const ks_int *__restrict__ lci, const double *__restrict__ lval,
                            ghost_block g, const double *__restrict__ rs,
                            const ks_int *__restrict__ slp, ks_int *__restrict__ sli,
                            const ks_int *__restrict__ sgp, ks_int *__restrict__ sgi)
{
    const long long total = (long long)n * G, stride = (long long)gridDim.x * blockDim.x;
    const int wl = (int)(threadIdx.x & 31);
    for (long long wb = blockIdx.x * (long long)blockDim.x + (threadIdx.x & ~31u); wb < total;
         wb += stride) {
        const long long t = wb + wl;
        const bool live = t < total;
        const ks_int i = live ? (ks_int)(t / G) : 0;
        /* a block without strong entries in the row takes no rounds */
        const bool any_l = live && slp[i + 1] > slp[i], any_g = live && sgp[i + 1] > sgp[i];
        const bool any = any_l || any_g;
        const double sg = any ? rs[2 * (size_t)i] : 1.0, cut = any ? rs[2 * (size_t)i + 1] : 0.0;
        const ks_int kl0 = any_l ? lrp[i] : 0, kl1 = any_l ? lrp[i + 1] : 0;
        const ks_int kg0 = any_g ? g.rp[i] : 0, kg1 = any_g ? g.rp[i + 1] : 0;
        ks_int *ol = any_l ? sli + slp[i] : sli, *og = any_g ? sgi + sgp[i] : sgi;
        ks_cu_classical_fill<G>(lci, lval, kl0, kl1, i, sg, cut, &ol);
        ks_cu_classical_fill<G>(g.ci, g.val, kg0, kg1, -1, sg, cut, &og);
    }
}

/* S (n x ncols, a pattern on be) from the counts in rowptr (scanned in
 * place, then S's) and a colind of their total. */
ks_error scan_pattern(ks_backend *be, ks_int n, ks_int ncols, ks_int *rowptr, const char *what,
                      ks_sparse *S)
{
    ks_int total = 0;
    KS_TRY(ks_cu_scan(be, rowptr, n, rowptr, &total, what));
    ks_int *colind = NULL;
    KS_TRY(ks_be_alloc(be, (size_t)total * sizeof(ks_int) + 1, (void **)&colind, what));
    ks_sparse t = {be, n, ncols, total, rowptr, colind, NULL, 0, 0};
    *S = t;
    return KS_OK;
}

/* The blocks' checks, in the order and with the messages of the host
 * function's (amg/cpu/strength.c); the rows on the device, and a block
 * the device finds bad is described by the host function on host copies
 * (it fails with the cpu's message). */
ks_error check_blocks(const ks_sparse *L, const ks_sparse *G, ks_int nbelow, double theta,
                      double max_row_sum, const char *who)
{
    if (!L)
        return ks_seterr(KS_ERR_ARG, "%s: NULL matrix", who);
    if (L->nrows < 0 || L->nnz < 0 || !L->rowptr || (L->nnz > 0 && (!L->colind || !L->val)))
        return ks_seterr(KS_ERR_ARG, "%s: matrix is not allocated or has a negative size", who);
    if (L->nrows != L->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: matrix is %" PRId32 " x %" PRId32 ", expected square",
                         who, L->nrows, L->ncols);
    if (!G && nbelow != 0)
        return ks_seterr(KS_ERR_ARG, "%s: %" PRId32 " ghost columns below the rows, but no "
                         "ghost block", who, nbelow);
    if (G && (G->nrows != L->nrows || G->ncols < 0 || G->nnz < 0 || !G->rowptr ||
              (G->nnz > 0 && (!G->colind || !G->val))))
        return ks_seterr(KS_ERR_ARG, "%s: the ghost block is not allocated or does not have "
                         "the owned block's %" PRId32 " rows", who, L->nrows);
    if (G && (nbelow < 0 || nbelow > G->ncols))
        return ks_seterr(KS_ERR_ARG, "%s: %" PRId32 " ghost columns below the rows, expected "
                         "0 to %" PRId32, who, nbelow, G->ncols);
    if (G && G->be != L->be)
        return ks_seterr(KS_ERR_ARG, "%s: the blocks live on different backends", who);
    ks_int bad_l, bad_g = G ? G->nrows : 0;
    KS_TRY(ks_amg_cu_first_bad_row(L, 0, &bad_l));
    if (G)
        KS_TRY(ks_amg_cu_first_bad_row(G, 0, &bad_g));
    if (bad_l == L->nrows && bad_g == (G ? G->nrows : 0))
        return KS_OK;
    ks_csr HL, HG;
    memset(&HG, 0, sizeof HG);
    KS_TRY(ks_sparse_to_csr(L, &HL));
    ks_error e = G ? ks_sparse_to_csr(G, &HG) : KS_OK;
    ks_strength sl, sg;
    if (e == KS_OK)
        e = ks_amg_strength_classical_blocks(&HL, G ? &HG : NULL, nbelow, theta, max_row_sum,
                                             &sl, &sg);
    ks_csr_free(&HL);
    ks_csr_free(&HG);
    if (e != KS_OK)
        return e;
    ks_strength_free(&sl); /* the host accepts what the device refused: should not happen */
    ks_strength_free(&sg);
    return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 " of the device %s block is malformed", who,
                     bad_l < L->nrows ? bad_l : bad_g, bad_l < L->nrows ? "owned" : "ghost");
}

} // namespace

extern "C" ks_error ks_amg_cuda_strength_classical_blocks(const ks_sparse *L, const ks_sparse *G,
                                                          ks_int nbelow, double theta,
                                                          double max_row_sum, ks_sparse *SL,
                                                          ks_sparse *SG)
{
    static const char who[] = "ks_amg_strength_classical_blocks";
    if (!SL || !SG || SL == SG)
        return ks_seterr(KS_ERR_ARG, "%s: %s", who, SL && SG ? "one output for both blocks"
                                                             : "NULL output");
    memset(SL, 0, sizeof *SL);
    memset(SG, 0, sizeof *SG);
    if (!(theta >= 0.0 && theta <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: strength_threshold = %g, expected a value in [0, 1]",
                         who, theta);
    if (!(max_row_sum > 0.0 && max_row_sum <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: max_row_sum = %g, expected a value in (0, 1] "
                         "(1 disables the test)", who, max_row_sum);
    KS_TRY(check_blocks(L, G, nbelow, theta, max_row_sum, who));
    ks_backend *be = L->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = L->nrows, ng = G ? G->ncols : 0;
    const ghost_block g = {G ? G->rowptr : NULL, G ? G->colind : NULL, G ? G->val : NULL};
    const double nnz = (double)L->nnz + (G ? (double)G->nnz : 0.0);
    const int lanes = ks_cu_classical_lanes(n ? nnz / n : 0.0);
    const unsigned nb = ks_cu_blocks((long long)n * lanes);
    ks_int *cl = NULL, *cg = NULL;
    double *rs = NULL; /* sign and threshold of each row, so pass 2 only filters */
    ks_error e = ks_be_alloc(be, ((size_t)n + 1) * sizeof(ks_int), (void **)&cl,
                             "strength row pointers");
    if (e == KS_OK)
        e = ks_be_alloc(be, ((size_t)n + 1) * sizeof(ks_int), (void **)&cg,
                        "strength ghost row pointers");
    if (e == KS_OK)
        e = ks_be_alloc(be, 2 * (size_t)n * sizeof(double) + 1, (void **)&rs,
                        "strength row thresholds");
    if (e == KS_OK) {
        switch (lanes) {
#define KS_COUNT_G(G)                                                                         \
    case G:                                                                                   \
        blocks_count<G><<<nb, KS_CU_BLOCK, 0, st>>>(n, L->rowptr, L->colind, L->val, g, nbelow, \
                                                    theta, max_row_sum, rs, cl, cg);          \
        break;
            KS_COUNT_G(32)
            KS_COUNT_G(16)
            KS_COUNT_G(8)
            KS_COUNT_G(4)
            KS_COUNT_G(1)
#undef KS_COUNT_G
        }
        KS_CU_LAUNCHED(e, "blocks_count");
    }
    /* SL and SG own cl and cg once made */
    if (e == KS_OK && (e = scan_pattern(be, n, n, cl, "strength columns", SL)) == KS_OK)
        cl = NULL;
    if (e == KS_OK && (e = scan_pattern(be, n, ng, cg, "strength ghost columns", SG)) == KS_OK)
        cg = NULL;
    if (e == KS_OK) {
        switch (lanes) {
#define KS_FILL_G(G)                                                                          \
    case G:                                                                                   \
        blocks_fill<G><<<nb, KS_CU_BLOCK, 0, st>>>(n, L->rowptr, L->colind, L->val, g, rs,     \
                                                   SL->rowptr, SL->colind, SG->rowptr,        \
                                                   SG->colind);                               \
        break;
            KS_FILL_G(32)
            KS_FILL_G(16)
            KS_FILL_G(8)
            KS_FILL_G(4)
            KS_FILL_G(1)
#undef KS_FILL_G
        }
        KS_CU_LAUNCHED(e, "blocks_fill");
    }
    if (rs)
        be->ops->free(be, rs);
    if (cl)
        be->ops->free(be, cl);
    if (cg)
        be->ops->free(be, cg);
    if (e != KS_OK) {
        ks_sparse_free(SL);
        ks_sparse_free(SG);
    }
    return e;
}
