/* "dia" and "bdia" on the cuda backend, no column indices.
 *  dia:  thread i reads value k*nrows + i of every diagonal k (coalesced
 *        across the warp) and x[i + offset[k]] (also consecutive); a column
 *        outside the matrix is clamped into it for the load and its product
 *        masked out (dia_row_sum).
 *  bdia: one thread block per row block (blockDim = block_rows). The block
 *        stages its segment and shift lists, then its x window in shared
 *        memory (columns outside the matrix as 0, so the inner loop has no
 *        bounds test; a few loads in flight per thread), then thread i sums
 *        val[...k*rows + i] * s_x[shift[k] + i] over the block's own
 *        diagonals only.
 * dia's SpMM and fused block pass are in dia_spmm_walk.cuh (variants; dia_spmm_cuda.cu picks one). */
#include "format_cuda.h"
#include "dia_spmm_cuda.h"
#include "other_formats.h"
#include "spmm_cuda.h"
#include "../vec/block_cuda.h"
#include "../vec/cuda_check.h"

namespace {

const int kBlock = 256;
/* Blocks a multiprocessor must hold at once: 8 x 256 threads is its
 * maximum, so the kernels are held to 32 registers: they wait on memory,
 * and only warps in flight hide that (csr_vector_cuda.cu has numbers). */
const int kMinBlocks = 8;

/* ---------------------------------------------------------------- dia */
struct dia_state {
    ks_int nrows, ncols, ndiag;
    ks_int *offset;
    double *val; /* NULL when the values are float32 (valf) */
    float *valf;
    ks_dia_spmm_choice spmm; /* KS_DIA_SPMM's, read at setup */
};

/* x_c, or the scaled iterate (xs xw_c) b_c of a step from zero (fused.h). */
template <bool S>
__device__ __forceinline__ double gather_x(const double *__restrict__ x,
                                           const double *__restrict__ xw, double xs,
                                           long long c)
{
    return S ? xs * __ldg(xw + c) * __ldg(x + c) : __ldg(x + c);
}

/* Row i of A times x. Loads are unconditional (the column clamped into the
 * matrix, the use masked), so no load waits behind a range test. With W =
 * KS_W_DIAG the row's diagonal too, with KS_W_L1 also its off-diagonal
 * absolute sum (the smoother weight rebuilt from the row, fused.h); W =
 * KS_W_VECTOR keeps neither, so no registers go to them. (Two rows a
 * thread with float32 values, one 8-byte load per diagonal for the pair,
 * were tried: the residual pass gained 4 %, the smoothing passes lost 50 %
 * to register spills; H100.) */
template <typename V, bool S, int W>
__device__ __forceinline__ double dia_row_sum(long long i, ks_int nrows, ks_int ncols,
                                              ks_int ndiag, const ks_int *__restrict__ offset,
                                              const V *__restrict__ val,
                                              const double *__restrict__ x,
                                              const double *__restrict__ xw, double xs,
                                              V *diag, double *offabs)
{
    double sum = 0.0;
    for (ks_int k = 0; k < ndiag; k++) {
        const ks_int off = __ldg(offset + k);
        const long long c = i + off;
        const V v = __ldg(val + (long long)k * nrows + i); /* float32 stays narrow */
        const double xv = gather_x<S>(x, xw, xs, c < 0 ? 0 : c >= ncols ? ncols - 1 : c);
        if (c >= 0 && c < ncols) {
            sum += (double)v * xv;
            if (W != KS_W_VECTOR && off == 0)
                *diag = v;
            if (W == KS_W_L1 && off != 0)
                *offabs += fabs((double)v);
        }
    }
    return sum;
}

template <typename V>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    dia_kernel(ks_int nrows, ks_int ncols, ks_int ndiag, const ks_int *__restrict__ offset,
               const V *__restrict__ val, const double *__restrict__ x, double alpha,
               double beta, double *__restrict__ y)
{
    const long long i = (long long)blockIdx.x * kBlock + threadIdx.x;
    if (i >= nrows)
        return;
    const double sum = dia_row_sum<V, false, KS_W_VECTOR>(i, nrows, ncols, ndiag, offset, val,
                                                          x, NULL, 0.0, NULL, NULL);
    /* beta == 0 must not read y: it may hold garbage or NaN. */
    y[i] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[i];
}

/* The fused residual / smoother pass (fused.h). With W = f.wkind (not
 * KS_W_VECTOR, a step to make) the smoother weight comes from the row's own
 * diagonal (read anyway), not from the w vector: 8 bytes a row less. S: the
 * iterate is made from b (f.xw). */
template <typename V, bool S, int W>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    dia_fused_kernel(ks_int nrows, ks_int ncols, ks_int ndiag,
                     const ks_int *__restrict__ offset, const V *__restrict__ val,
                     const ks_fused_step f)
{
    const long long i = (long long)blockIdx.x * kBlock + threadIdx.x;
    if (i >= nrows)
        return;
    V diag = 0;
    double offabs = 0.0;
    const double sum =
        dia_row_sum<V, S, W>(i, nrows, ncols, ndiag, offset, val, f.x, f.xw, f.xs, &diag, &offabs);
    const ks_fused_in in = ks_fused_load(&f, (ks_int)i, W == KS_W_VECTOR);
    ks_fused_store(&f, (ks_int)i, &in, sum,
                   W != KS_W_VECTOR ? ks_fused_w(&f, (double)diag, offabs) : in.w);
}

template <typename V, bool S>
void launch_fused(const dia_state *s, const V *val, const ks_cufmt_launch &lc,
                  const ks_fused_step *f)
{
    const unsigned blocks = lc.blocks;
    const cudaStream_t st = lc.stream;
    const int w = f->xo ? f->wkind : KS_W_VECTOR;
    if (w == KS_W_DIAG)
        dia_fused_kernel<V, S, KS_W_DIAG><<<blocks, kBlock, 0, st>>>(
            s->nrows, s->ncols, s->ndiag, s->offset, val, *f);
    else if (w == KS_W_L1)
        dia_fused_kernel<V, S, KS_W_L1><<<blocks, kBlock, 0, st>>>(
            s->nrows, s->ncols, s->ndiag, s->offset, val, *f);
    else
        dia_fused_kernel<V, S, KS_W_VECTOR><<<blocks, kBlock, 0, st>>>(
            s->nrows, s->ncols, s->ndiag, s->offset, val, *f);
}

template <typename V>
void launch_fused(const dia_state *s, const V *val, const ks_cufmt_launch &lc,
                  const ks_fused_step *f)
{
    if (f->xw)
        launch_fused<V, true>(s, val, lc, f);
    else
        launch_fused<V, false>(s, val, lc, f);
}

void dia_destroy(ks_backend *be, void *state)
{
    dia_state *s = (dia_state *)state;
    if (!s)
        return;
    void *p[] = {s->offset, s->val, s->valf};
    ks_cufmt_free(be, p, KS_CUFMT_COUNT(p));
    free(s);
}

ks_error dia_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_dia_layout *L = (const ks_dia_layout *)layout;
    *state = NULL;
    ks_dia_spmm_choice how;
    KS_TRY(ks_dia_spmm_choice_get(&how));
    dia_state *s = (dia_state *)ks_calloc(1, sizeof *s, "dia state");
    if (!s)
        return KS_ERR_MEMORY;
    ks_dia_spmm_fit_tile(&how, L->nrows, L->offset, L->ndiag, ks_cufmt_sm_count());
    s->spmm = how;
    s->nrows = L->nrows;
    s->ncols = L->ncols;
    s->ndiag = L->ndiag;
    const size_t slots = (size_t)L->ndiag * (size_t)L->nrows;
    const ks_cufmt_array a[] = {
        {(void **)&s->offset, L->offset, sizeof(ks_int) * (size_t)L->ndiag, "dia offsets"},
        {(void **)&s->val, L->val, sizeof(double) * slots, "dia values"},
    };
    /* float32 values (the layout holds them rounded, as doubles exact in
     * float32): the table's offsets only, then valf instead of val. */
    ks_error e = ks_cufmt_upload(be, a, L->float_values ? 1 : 2, KS_CUFMT_EMPTY_ALLOC);
    if (e == KS_OK && L->float_values)
        e = ks_cufmt_upload_f32(be, L->val, slots, &s->valf, "dia");
    return ks_cufmt_done(be, e, s, dia_destroy, state);
}

/* ---------------------------------------------- dia from a device CSR */
/* Bit (col - row + nrows - 1) of the occupied diagonals (read first: a
 * banded matrix sets the same few words from every thread). */
__global__ void dia_mark_kernel(ks_int n, const ks_int *__restrict__ rp,
                                const ks_int *__restrict__ ci, unsigned int *bits)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
            const long long off = (long long)ci[k] - i + (n - 1);
            const unsigned int bit = 1u << (off & 31);
            if (!(__ldcg(bits + (off >> 5)) & bit))
                atomicOr(bits + (off >> 5), bit);
        }
}

/* *cnt += the set bits (occupied diagonals). */
__global__ void dia_count_kernel(long long words, const unsigned int *__restrict__ bits,
                                 unsigned long long *cnt)
{
    for (long long w = blockIdx.x * (long long)blockDim.x + threadIdx.x; w < words;
         w += (long long)gridDim.x * blockDim.x) {
        const unsigned int x = bits[w];
        if (x)
            atomicAdd(cnt, (unsigned long long)__popc(x));
    }
}

/* Each set bit's offset (bit - (n - 1)) appended at *pos: in no particular
 * order (the host sorts the few of them). */
__global__ void dia_collect_kernel(long long words, const unsigned int *__restrict__ bits,
                                   long long nm1, ks_int *offs, unsigned long long *pos)
{
    for (long long w = blockIdx.x * (long long)blockDim.x + threadIdx.x; w < words;
         w += (long long)gridDim.x * blockDim.x)
        for (unsigned int x = bits[w]; x; x &= x - 1u) {
            const long long b = 32 * w + __ffs((int)x) - 1;
            offs[atomicAdd(pos, 1ull)] = (ks_int)(b - nm1);
        }
}

int dia_cmp_offset(const void *a, const void *b)
{
    const ks_int x = *(const ks_int *)a, y = *(const ks_int *)b;
    return (x > y) - (x < y);
}

/* val[d * n + i] = a_ij with d the index of offset j - i (binary search in
 * the ascending offsets); *bad = first entry whose float32 value overflows
 * (float_values only). */
template <typename V>
__global__ void dia_fill_kernel(ks_int n, const ks_int *__restrict__ rp,
                                const ks_int *__restrict__ ci, const double *__restrict__ va,
                                const ks_int *__restrict__ offset, ks_int ndiag, V *val,
                                ks_int *bad)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
            const ks_int off = ci[k] - (ks_int)i;
            ks_int lo = 0, hi = ndiag - 1;
            while (lo < hi) {
                const ks_int mid = (lo + hi) / 2;
                if (__ldg(offset + mid) < off)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            const V v = (V)va[k];
            val[(size_t)lo * (size_t)n + (size_t)i] = v;
            if (isinf((double)v) && !isinf(va[k]))
                atomicMin(bad, k);
        }
}

/* The state straight from the matrix's device CSR: the occupied diagonals
 * from a bitmap, counted and listed on the device (only the list comes to
 * the host: at 16.8M rows the 4 MB bitmap's download and walk took 6-7 ms
 * of a 9 ms conversion), the values
 * scattered on the device. The same state, fill check and refusal as the
 * host layout's. */
ks_error dia_setup_sparse(ks_backend *be, const ks_sparse *A, const ks_spmv_params *prm,
                          void **state, double *bytes)
{
    *state = NULL;
    double max_fill;
    ks_dia_spmm_choice how;
    KS_TRY(ks_ofmt_max_fill(prm, "dia", &max_fill));
    KS_TRY(ks_dia_spmm_choice_get(&how));
    const ks_int n = A->nrows, m = A->ncols;
    const int f32 = prm && prm->float_values;
    const long long span = n > 0 && m > 0 ? (long long)n + m - 1 : 0;
    const long long words = (span + 31) / 32;
    cudaStream_t st = ks_cufmt_stream(be);
    unsigned int *dbits = NULL;
    unsigned long long *dcnt = NULL, hcnt = 0;
    ks_int *offs = NULL, *doffs = NULL, *dbad = NULL;
    dia_state *s = NULL;
    ks_error e = ks_be_alloc(be, sizeof(unsigned int) * (size_t)(words + 1), (void **)&dbits,
                             "dia diagonal bitmap");
    if (e == KS_OK && cudaMemsetAsync(dbits, 0, sizeof(unsigned int) * (size_t)(words + 1),
                                      st) != cudaSuccess)
        e = ks_seterr(KS_ERR_DEVICE, "dia: cudaMemsetAsync failed");
    if (e == KS_OK && n > 0) {
        unsigned nb = ks_cufmt_blocks(n, kBlock);
        dia_mark_kernel<<<nb < 65535u * 16 ? nb : 65535u * 16, kBlock, 0, st>>>(n, A->rowptr,
                                                                               A->colind, dbits);
        if (cudaGetLastError() != cudaSuccess)
            e = ks_seterr(KS_ERR_DEVICE, "dia: launch of dia_mark_kernel failed");
    }
    const unsigned wb = ks_cufmt_blocks(words, kBlock) < 65535u * 16
                            ? ks_cufmt_blocks(words, kBlock) : 65535u * 16;
    if (e == KS_OK)
        e = ks_be_upload_new(be, &hcnt, sizeof hcnt, (void **)&dcnt, "dia diagonal count");
    if (e == KS_OK && words > 0) {
        dia_count_kernel<<<wb, kBlock, 0, st>>>(words, dbits, dcnt);
        if (cudaGetLastError() != cudaSuccess)
            e = ks_seterr(KS_ERR_DEVICE, "dia: launch of dia_count_kernel failed");
    }
    if (e == KS_OK)
        e = be->ops->download(be, &hcnt, dcnt, sizeof hcnt);
    ks_int ndiag = (ks_int)hcnt;
    double in_range = 0.0;
    if (e == KS_OK) {
        double stored = (double)ndiag * n;
        if (stored > max_fill * A->nnz) {
            char h[32];
            e = ks_seterr(KS_ERR_UNSUPPORTED,
                          "dia: %d occupied diagonals x %d rows = %.0f stored values (%s) for "
                          "%d nonzeros = %.1fx; max_fill %g",
                          (int)ndiag, (int)n, stored, ks_ofmt_human_bytes(8.0 * stored, h),
                          (int)A->nnz, A->nnz ? stored / A->nnz : 0.0, max_fill);
        }
    }
    if (e == KS_OK) {
        offs = (ks_int *)ks_malloc(sizeof(ks_int) * (size_t)ndiag + 1, "dia offsets");
        s = (dia_state *)ks_calloc(1, sizeof *s, "dia state");
        if (!offs || !s)
            e = KS_ERR_MEMORY;
    }
    if (e == KS_OK)
        e = ks_be_alloc(be, sizeof(ks_int) * (size_t)ndiag + 1, (void **)&doffs,
                        "dia offsets (unsorted)");
    hcnt = 0;
    if (e == KS_OK)
        e = be->ops->upload(be, dcnt, &hcnt, sizeof hcnt);
    if (e == KS_OK && ndiag > 0) {
        dia_collect_kernel<<<wb, kBlock, 0, st>>>(words, dbits, (long long)n - 1, doffs, dcnt);
        if (cudaGetLastError() != cudaSuccess)
            e = ks_seterr(KS_ERR_DEVICE, "dia: launch of dia_collect_kernel failed");
    }
    if (e == KS_OK)
        e = be->ops->download(be, offs, doffs, sizeof(ks_int) * (size_t)ndiag);
    if (e == KS_OK) {
        qsort(offs, (size_t)ndiag, sizeof *offs, dia_cmp_offset);
        for (ks_int d = 0; d < ndiag; d++) {
            const long long off = offs[d];
            long long lo = off < 0 ? -off : 0, hi = (long long)m - off;
            if (hi > n)
                hi = n;
            in_range += hi > lo ? (double)(hi - lo) : 0.0;
        }
        s->nrows = n;
        s->ncols = m;
        s->ndiag = ndiag;
        ks_dia_spmm_fit_tile(&how, n, offs, ndiag, ks_cufmt_sm_count());
        s->spmm = how;
        const size_t slots = (size_t)ndiag * (size_t)n;
        const ks_cufmt_array a[] = {
            {(void **)&s->offset, offs, sizeof(ks_int) * (size_t)ndiag, "dia offsets"},
            {f32 ? (void **)&s->valf : (void **)&s->val, NULL,
             (f32 ? sizeof(float) : sizeof(double)) * slots, "dia values"},
        };
        e = ks_cufmt_upload(be, a, 2, KS_CUFMT_EMPTY_ALLOC);
        void *vals = f32 ? (void *)s->valf : (void *)s->val;
        if (e == KS_OK && cudaMemsetAsync(vals, 0, (f32 ? 4 : 8) * slots, st) != cudaSuccess)
            e = ks_seterr(KS_ERR_DEVICE, "dia: cudaMemsetAsync failed");
        ks_int hbad = A->nnz;
        if (e == KS_OK)
            e = ks_be_upload_new(be, &hbad, sizeof hbad, (void **)&dbad, "dia range flag");
        if (e == KS_OK && n > 0 && ndiag > 0) {
            unsigned nb = ks_cufmt_blocks(n, kBlock);
            nb = nb < 65535u * 16 ? nb : 65535u * 16;
            if (f32)
                dia_fill_kernel<float><<<nb, kBlock, 0, st>>>(n, A->rowptr, A->colind, A->val,
                                                              s->offset, ndiag, s->valf, dbad);
            else
                dia_fill_kernel<double><<<nb, kBlock, 0, st>>>(n, A->rowptr, A->colind, A->val,
                                                               s->offset, ndiag, s->val, dbad);
            if (cudaGetLastError() != cudaSuccess)
                e = ks_seterr(KS_ERR_DEVICE, "dia: launch of dia_fill_kernel failed");
        }
        if (e == KS_OK && f32)
            e = be->ops->download(be, &hbad, dbad, sizeof hbad);
        if (e == KS_OK && hbad < A->nnz)
            e = ks_seterr(KS_ERR_UNSUPPORTED,
                          "float32 values: dia value %ld exceeds the float range", (long)hbad);
    }
    if (dbad)
        be->ops->free(be, dbad);
    if (dbits)
        be->ops->free(be, dbits);
    if (dcnt)
        be->ops->free(be, dcnt);
    if (doffs)
        be->ops->free(be, doffs);
    free(offs);
    if (e != KS_OK) {
        dia_destroy(be, s);
        return e;
    }
    *bytes = (f32 ? 4.0 : 8.0) * (double)ndiag * n + 4.0 * ndiag + 8.0 * in_range + 8.0 * n;
    *state = s;
    return KS_OK;
}

ks_error dia_apply(ks_backend *be, void *state, double alpha, const double *x, double beta,
                   double *y)
{
    const dia_state *s = (const dia_state *)state;
    ks_cufmt_launch lc;
    if (!ks_cufmt_launch_for(be, s->nrows, kBlock, &lc))
        return KS_OK;
    if (s->valf)
        dia_kernel<float><<<lc.blocks, kBlock, 0, lc.stream>>>(s->nrows, s->ncols, s->ndiag,
                                                                s->offset, s->valf, x, alpha,
                                                                beta, y);
    else
        dia_kernel<double><<<lc.blocks, kBlock, 0, lc.stream>>>(s->nrows, s->ncols, s->ndiag,
                                                                 s->offset, s->val, x, alpha,
                                                                 beta, y);
    KS_CUDA_LAUNCH_CHECK("dia_kernel");
    return KS_OK;
}

/* SpMM: the variant chosen at setup (dia_spmm_cuda.h). */
ks_error dia_spmm(ks_backend *be, void *state, int k, double alpha, const double *X,
                  double beta, double *Y)
{
    const dia_state *s = (const dia_state *)state;
    const ks_dia_spmm_args a = {ks_cufmt_stream(be), s->spmm, s->nrows, s->ncols, s->ndiag,
                                s->offset, s->val, s->valf, k, X, alpha, beta, Y, NULL, NULL, NULL};
    return ks_dia_spmm_run(&a);
}

/* Y = A X with each column's X'Y summed in the SpMM's epilogue (format.h's
 * spmm_dot): per-block partials in a scratch of the backend's pool, then
 * their fixed-order sum. */
/* The SpMM (f NULL) or the fused pass f with their dots: per-block
 * partials in a scratch of the backend's pool, then their fixed-order sum. */
ks_error dia_run_dots(ks_backend *be, const dia_state *s, int k, const double *X, double *Y,
                      const ks_fused_step *f, double *dots)
{
    const long long nb = ks_dia_spmm_dot_blocks(&s->spmm, s->nrows);
    double *part = NULL;
    unsigned used = 0;
    KS_TRY(ks_be_alloc(be, sizeof(double) * (size_t)nb * (size_t)k, (void **)&part,
                       "dia SpMM dot partials"));
    const ks_dia_spmm_args a = {ks_cufmt_stream(be), s->spmm, s->nrows, s->ncols, s->ndiag,
                                s->offset, s->val, s->valf, k, X, 1.0, 0.0, Y, f, part,
                                &used};
    ks_error e = ks_dia_spmm_run(&a);
    if (e == KS_OK && (used == 0 || used > nb))
        e = ks_seterr(KS_ERR_DEVICE, "dia SpMM dot: %u blocks for %lld partials", used, nb);
    if (e == KS_OK)
        e = ks_cuda_finish_parts(be, part, used, k, dots);
    be->ops->free(be, part);
    return e;
}

ks_error dia_spmm_dot(ks_backend *be, void *state, int k, const double *X, double *Y,
                      double *dots)
{
    return dia_run_dots(be, (const dia_state *)state, k, X, Y, NULL, dots);
}

/* The fused pass on k columns (fused.h): the SpMM's tile walk and column
 * sums (dia_spmm_walk.cuh), then each entry's update, so a 7-point row
 * reads 7 values for its k columns and no product is stored. */
ks_error dia_fused_block(ks_backend *be, void *state, int k, const ks_fused_step *f)
{
    const dia_state *s = (const dia_state *)state;
    const ks_dia_spmm_args a = {ks_cufmt_stream(be), s->spmm, s->nrows, s->ncols, s->ndiag,
                                s->offset, s->val, s->valf, k, NULL, 0.0, 0.0, NULL, f, NULL, NULL};
    return ks_dia_spmm_run(&a);
}

/* The fused pass with B'Xo in its epilogue (format.h's fused_block_dot);
 * a pass that makes X from B (xw) runs, then a block dot. */
ks_error dia_fused_block_dot(ks_backend *be, void *state, int k, const ks_fused_step *f,
                             double *dots)
{
    if (!f->xo)
        return ks_seterr(KS_ERR_ARG, "dia fused block pass with dots: no Xo");
    if (f->xw) {
        KS_TRY(dia_fused_block(be, state, k, f));
        return ks_cuda_bdot(be, ((const dia_state *)state)->nrows, k, f->b, f->xo, dots);
    }
    return dia_run_dots(be, (const dia_state *)state, k, NULL, NULL, f, dots);
}

ks_error dia_fused_step(ks_backend *be, void *state, const ks_fused_step *f)
{
    const dia_state *s = (const dia_state *)state;
    ks_cufmt_launch lc;
    if (!ks_cufmt_launch_for(be, s->nrows, kBlock, &lc))
        return KS_OK;
    if (s->valf)
        launch_fused<float>(s, s->valf, lc, f);
    else
        launch_fused<double>(s, s->val, lc, f);
    KS_CUDA_LAUNCH_CHECK("dia_fused_kernel");
    return KS_OK;
}

/* --------------------------------------------------------------- bdia */
struct bdia_state {
    ks_int nrows, ncols, block_rows, nblocks, max_window, max_nseg;
    size_t shmem;
    ks_int *blk_ptr, *shift, *seg_ptr, *seg_start, *seg_wend;
    ks_int *offset; /* the diagonals' offsets, for the SpMM (which stages no window) */
    double *val;
};

/* x loads a thread keeps in flight while staging the window. */
const int kStage = 4;

__global__ void __launch_bounds__(1024)
    bdia_kernel(ks_int nrows, ks_int ncols, ks_int max_window, ks_int max_nseg,
                const ks_int *__restrict__ blk_ptr, const ks_int *__restrict__ shift,
                const double *__restrict__ val, const ks_int *__restrict__ seg_ptr,
                const ks_int *__restrict__ seg_start, const ks_int *__restrict__ seg_wend,
                const double *__restrict__ x, double alpha, double beta,
                double *__restrict__ y)
{
    extern __shared__ double s_x[]; /* window, then start, wend, shift lists */
    ks_int *s_start = (ks_int *)(s_x + max_window);
    ks_int *s_wend = s_start + max_nseg;
    ks_int *s_shift = s_wend + max_nseg;
    const int br = blockDim.x, tid = threadIdx.x;
    const long long r0 = (long long)blockIdx.x * br;
    const int rows = r0 + br < nrows ? br : (int)(nrows - r0);
    const ks_int sg0 = __ldg(seg_ptr + blockIdx.x), nseg = __ldg(seg_ptr + blockIdx.x + 1) - sg0;
    const ks_int d0 = __ldg(blk_ptr + blockIdx.x), nd = __ldg(blk_ptr + blockIdx.x + 1) - d0;

    /* Every thread takes part in the staging: no return before the last
     * barrier. First the block's lists, in one round of loads. */
    for (int i = tid; i < nseg; i += br) {
        s_start[i] = __ldg(seg_start + sg0 + i);
        s_wend[i] = __ldg(seg_wend + sg0 + i);
    }
    for (int i = tid; i < nd; i += br)
        s_shift[i] = __ldg(shift + d0 + i);
    __syncthreads();

    /* Then the window: position p of segment s holds column
     * start[s] + p - wend[s-1]; kStage independent loads per round. */
    const int window = nseg > 0 ? s_wend[nseg - 1] : 0;
    int cur = 0; /* segment of this thread's position: positions only grow */
    for (int p0 = tid; p0 < window; p0 += kStage * br) {
        double buf[kStage];
#pragma unroll
        for (int u = 0; u < kStage; u++) {
            const int p = p0 + u * br;
            buf[u] = 0.0;
            if (p < window) {
                while (p >= s_wend[cur])
                    cur++;
                const long long c = (long long)s_start[cur] + (p - (cur ? s_wend[cur - 1] : 0));
                if (c >= 0 && c < ncols)
                    buf[u] = __ldg(x + c);
            }
        }
#pragma unroll
        for (int u = 0; u < kStage; u++)
            if (p0 + u * br < window)
                s_x[p0 + u * br] = buf[u];
    }
    __syncthreads();
    if (tid >= rows)
        return;
    const double *v = val + (long long)d0 * br + tid; /* earlier blocks are full */
    double sum = 0.0;
    for (ks_int k = 0; k < nd; k++)
        sum += __ldg(v + (long long)k * rows) * s_x[s_shift[k] + tid];
    const long long r = r0 + tid;
    /* beta == 0 must not read y: it may hold garbage or NaN. */
    y[r] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[r];
}

void bdia_destroy(ks_backend *be, void *state)
{
    bdia_state *s = (bdia_state *)state;
    if (!s)
        return;
    void *p[] = {s->blk_ptr, s->shift, s->seg_ptr, s->seg_start, s->seg_wend, s->offset, s->val};
    ks_cufmt_free(be, p, KS_CUFMT_COUNT(p));
    free(s);
}

ks_error bdia_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_bdia_layout *L = (const ks_bdia_layout *)layout;
    *state = NULL;
    double shmem = KS_BDIA_SHARED_BYTES(L->max_window, L->max_nseg, L->max_nd);
    if (shmem > KS_BDIA_MAX_SHARED_BYTES)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "bdia: a block needs %.0f bytes of shared memory, over %d KB; use dia",
                         shmem, KS_BDIA_MAX_SHARED_BYTES / 1024);
    bdia_state *s = (bdia_state *)ks_calloc(1, sizeof *s, "bdia state");
    if (!s)
        return KS_ERR_MEMORY;
    s->nrows = L->nrows;
    s->ncols = L->ncols;
    s->block_rows = L->block_rows;
    s->nblocks = L->nblocks;
    s->max_window = L->max_window;
    s->max_nseg = L->max_nseg;
    s->shmem = (size_t)shmem;
    /* Slots: the full blocks' block_rows per diagonal, the last block's rows. */
    size_t slots = 0;
    if (L->nblocks > 0) {
        ks_int last = L->nblocks - 1;
        slots = (size_t)L->blk_ptr[last] * (size_t)L->block_rows +
                (size_t)(L->blk_ptr[last + 1] - L->blk_ptr[last]) *
                    (size_t)(L->nrows - last * L->block_rows);
    }
    size_t nb1 = (size_t)L->nblocks + 1, nseg = (size_t)L->nseg;
    const ks_cufmt_array a[] = {
        {(void **)&s->blk_ptr, L->blk_ptr, sizeof(ks_int) * nb1, "bdia block pointers"},
        {(void **)&s->shift, L->shift, sizeof(ks_int) * (size_t)L->ndiag, "bdia shifts"},
        {(void **)&s->seg_ptr, L->seg_ptr, sizeof(ks_int) * nb1, "bdia segment pointers"},
        {(void **)&s->seg_start, L->seg_start, sizeof(ks_int) * nseg, "bdia segment starts"},
        {(void **)&s->seg_wend, L->seg_wend, sizeof(ks_int) * nseg, "bdia segment window ends"},
        {(void **)&s->offset, L->offset, sizeof(ks_int) * (size_t)L->ndiag, "bdia offsets"},
        {(void **)&s->val, L->val, sizeof(double) * slots, "bdia values"},
    };
    ks_error e = ks_cufmt_upload(be, a, KS_CUFMT_COUNT(a), KS_CUFMT_EMPTY_ALLOC);
    return ks_cufmt_done(be, e, s, bdia_destroy, state);
}

/* SpMM (spmm_cuda.h): a k-column block's window would not fit in shared
 * memory, so X comes through L2 as in dia's SpMM. grid.x = row block b,
 * grid.y = chunks of kBlock entries of its rows x k; thread e = i*k + j
 * (i the row within the block) sums the block's own diagonals in order. */
template <int K>
__global__ void __launch_bounds__(kBlock)
    bdia_spmm_kernel(ks_int nrows, ks_int ncols, int block_rows,
                     const ks_int *__restrict__ blk_ptr, const ks_int *__restrict__ offset,
                     const double *__restrict__ val, int k, const double *__restrict__ X,
                     double alpha, double beta, double *__restrict__ Y)
{
    const long long r0 = (long long)blockIdx.x * block_rows;
    const int rows = r0 + block_rows < nrows ? block_rows : (int)(nrows - r0);
    const ks_spmm_pos q = ks_spmm_at<K>((long long)blockIdx.y * kBlock + threadIdx.x, k);
    if (q.i >= rows)
        return;
    const ks_int d0 = __ldg(blk_ptr + blockIdx.x), nd = __ldg(blk_ptr + blockIdx.x + 1) - d0;
    const double *v = val + (long long)d0 * block_rows + q.i; /* earlier blocks are full */
    double sum = 0.0;
    for (ks_int d = 0; d < nd; d++) {
        const long long c = r0 + q.i + __ldg(offset + d0 + d);
        const double a = __ldg(v + (long long)d * rows);
        const double xv = __ldg(X + (c < 0 ? 0 : c >= ncols ? ncols - 1 : c) * q.kk + q.j);
        if (c >= 0 && c < ncols)
            sum += a * xv;
    }
    ks_spmm_store(Y, (r0 + q.i) * q.kk + q.j, alpha, sum, beta);
}

ks_error bdia_spmm(ks_backend *be, void *state, int k, double alpha, const double *X,
                   double beta, double *Y)
{
    const bdia_state *s = (const bdia_state *)state;
    if (s->nrows == 0)
        return KS_OK;
    const dim3 grid((unsigned)s->nblocks, ks_cufmt_blocks((long long)s->block_rows * k, kBlock));
    const cudaStream_t st = ks_cufmt_stream(be);
#define KS_BDIA_SPMM(K)                                                                       \
    bdia_spmm_kernel<K><<<grid, kBlock, 0, st>>>(s->nrows, s->ncols, s->block_rows,           \
                                                 s->blk_ptr, s->offset, s->val, k, X, alpha,  \
                                                 beta, Y)
    KS_SPMM_DISPATCH(k, KS_BDIA_SPMM);
#undef KS_BDIA_SPMM
    KS_CUDA_LAUNCH_CHECK("bdia_spmm_kernel");
    return KS_OK;
}

ks_error bdia_apply(ks_backend *be, void *state, double alpha, const double *x, double beta,
                    double *y)
{
    const bdia_state *s = (const bdia_state *)state;
    if (s->nrows == 0)
        return KS_OK;
    bdia_kernel<<<(unsigned)s->nblocks, s->block_rows, s->shmem, ks_cufmt_stream(be)>>>(
        s->nrows, s->ncols, s->max_window, s->max_nseg, s->blk_ptr, s->shift, s->val,
        s->seg_ptr, s->seg_start, s->seg_wend, x, alpha, beta, y);
    KS_CUDA_LAUNCH_CHECK("bdia_kernel");
    return KS_OK;
}

} // namespace

extern "C" const ks_spmv_format_ops ks_format_dia_cuda = {
    "dia",
    KS_BACKEND_CUDA,
    "diagonal storage: occupied diagonals of all rows, one thread per row, no column indices",
    ks_dia_layout_build,
    ks_dia_layout_apply,
    ks_dia_layout_bytes,
    ks_dia_layout_free,
    dia_setup,
    dia_apply,
    dia_destroy,
    NULL, /* gs_sweep */
    ks_dia_layout_to_csr,
    dia_fused_step,
    1, /* float_values */
    dia_setup_sparse,
    NULL, /* state_bytes: what its setup allocates */
    NULL, /* reads_values */
    dia_spmm,
    dia_fused_block,
    dia_spmm_dot,
    dia_fused_block_dot,
    NULL, /* fused_ghost */
};

extern "C" const ks_spmv_format_ops ks_format_bdia_cuda = {
    "bdia",
    KS_BACKEND_CUDA,
    "blocked DIA: per-block diagonals, x window staged in shared memory, one thread per row",
    ks_bdia_layout_build,
    ks_bdia_layout_apply,
    ks_bdia_layout_bytes,
    ks_bdia_layout_free,
    bdia_setup,
    bdia_apply,
    bdia_destroy,
    NULL, /* gs_sweep */
    ks_bdia_layout_to_csr,
    NULL, /* fused_step */
    0, /* float_values */
    NULL, /* setup_sparse */
    NULL, /* state_bytes */
    NULL, /* reads_values */
    bdia_spmm,
    NULL, /* fused_block */
    NULL, /* spmm_dot */
    NULL, /* fused_block_dot */
    NULL, /* fused_ghost */
};
