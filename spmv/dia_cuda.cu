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
 *        diagonals only. */
#include "format_cuda.h"
#include "other_formats.h"
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
    dia_state *s = (dia_state *)ks_calloc(1, sizeof *s, "dia state");
    if (!s)
        return KS_ERR_MEMORY;
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
    void *p[] = {s->blk_ptr, s->shift, s->seg_ptr, s->seg_start, s->seg_wend, s->val};
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
        {(void **)&s->val, L->val, sizeof(double) * slots, "bdia values"},
    };
    ks_error e = ks_cufmt_upload(be, a, KS_CUFMT_COUNT(a), KS_CUFMT_EMPTY_ALLOC);
    return ks_cufmt_done(be, e, s, bdia_destroy, state);
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
    NULL, /* setup_sparse */
    NULL, /* state_bytes */
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
};
