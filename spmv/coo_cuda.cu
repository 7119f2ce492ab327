/* "coo" on the cuda backend: a deterministic segmented reduction, no
 * floating-point atomics, so repeated applies are bitwise equal.
 *
 * The entries are cut into tiles of KS_COO_TILE (KS_COO_BLOCK threads x
 * KS_COO_ITEMS consecutive entries). One block per tile:
 *  1. loads the tile coalesced, forming the products val * x[col] in shared
 *     memory (entries past nnz get the row kNoRow and product 0);
 *  2. each thread sums the runs of equal rows in its items; a run that
 *     starts and ends inside the thread is complete;
 *  3. a block-wide segmented scan (warp shuffles, then across the warps) of
 *     the threads' last runs gives every thread the sum of the earlier
 *     threads' entries of the row its first item belongs to;
 *  4. the thread holding a row's last entry in the tile finishes it: the
 *     tile's first row (head) and last row (tail) may continue in
 *     neighbouring tiles, so their in-tile sums go to head_sum / tail_sum;
 *     every other row is complete and written to y.
 * A second kernel, one thread per tile, writes each head or tail row that
 * starts in its tile, adding the head sums of the following tiles the row
 * covers in tile order (a row of 100k entries spans ~56 tiles). A third
 * kernel writes beta*y on the rows without entries (skipped when beta is 1,
 * which is how hyb adds its overflow). Every float addition happens in an
 * order fixed by the matrix alone. The same tiles make a distributed
 * matrix's ghost share of a fused pass (fused_ghost): a finished row's sum
 * then updates r and xo instead of y. */
#include "format_cuda.h"
#include "other_formats.h"
#include "../vec/cuda_check.h"

#include <climits>
#include <cstring>

namespace {

const int kBlock = KS_COO_BLOCK;
const int kItems = KS_COO_ITEMS;
const int kTile = KS_COO_TILE;
const int kWarps = kBlock / 32;
const ks_int kNoRow = INT_MAX; /* items past nnz: sorts after every row */
const unsigned kFull = 0xffffffffu;

static_assert(kBlock % 32 == 0 && kWarps <= 32, "one warp scans the warp totals");

/* Where a finished row sum s goes: y_r = alpha s + beta y_r (apply), or
 * the ghost block's share of a distributed fused pass (fused_ghost). */
struct coo_out {
    double alpha, beta;
    double *y;
    int fused;
    ks_fused_step f;
};

__device__ __forceinline__ void emit(const coo_out &o, ks_int r, double s)
{
    if (o.fused)
        ks_fused_ghost_store(&o.f, r, s);
    else /* beta == 0 must not read y: it may hold garbage or NaN. */
        o.y[r] = o.beta == 0.0 ? o.alpha * s : o.alpha * s + o.beta * o.y[r];
}

/* Inclusive segmented scan over the warp: lanes with equal keys (keys are
 * nondecreasing along the lanes) accumulate, a new key restarts. The
 * shuffle tree fixes the order of additions. */
__device__ __forceinline__ void warp_seg_scan(ks_int key, double &v, int lane)
{
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        ks_int k2 = __shfl_up_sync(kFull, key, off);
        double v2 = __shfl_up_sync(kFull, v, off);
        if (lane >= off && k2 == key)
            v = v2 + v;
    }
}

__global__ void __launch_bounds__(kBlock)
    coo_tile_kernel(ks_int nnz, const ks_int *__restrict__ row, const ks_int *__restrict__ col,
                    const double *__restrict__ val, const double *__restrict__ x,
                    const coo_out o, double *__restrict__ head_sum,
                    double *__restrict__ tail_sum)
{
    __shared__ double s_prod[kTile];
    __shared__ ks_int s_row[kTile];
    __shared__ ks_int s_wkey[kWarps];
    __shared__ double s_wval[kWarps];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const long long base = (long long)blockIdx.x * kTile;
    const long long end = base + kTile < nnz ? base + kTile : nnz;
    const ks_int head = __ldg(row + base), tail = __ldg(row + end - 1);

    for (int i = 0; i < kItems; i++) {
        const int local = i * kBlock + tid;
        const long long k = base + local;
        if (k < nnz) {
            s_row[local] = __ldg(row + k);
            s_prod[local] = __ldg(val + k) * __ldg(x + __ldg(col + k));
        } else {
            s_row[local] = kNoRow;
            s_prod[local] = 0.0;
        }
    }
    __syncthreads();

    /* finish(r, s): the tile's head and tail rows go to the carries. */
#define KS_COO_FINISH(r, s)                                                                   \
    do {                                                                                      \
        if ((r) == head)                                                                      \
            head_sum[blockIdx.x] = (s);                                                       \
        else if ((r) == tail)                                                                 \
            tail_sum[blockIdx.x] = (s);                                                       \
        else                                                                                  \
            emit(o, (r), (s));                                                                \
    } while (0)

    const int first = tid * kItems;
    const ks_int r_first = s_row[first];
    ks_int cur = r_first;
    double run = 0.0, first_sum = 0.0;
    bool first_done = false;
    for (int i = 0; i < kItems; i++) {
        const ks_int r = s_row[first + i];
        if (r != cur) {
            if (!first_done) {
                first_sum = run; /* needs the earlier threads' share: after the scan */
                first_done = true;
            } else {
                KS_COO_FINISH(cur, run); /* started and ended in this thread */
            }
            cur = r;
            run = 0.0;
        }
        run += s_prod[first + i];
    }

    /* Block-wide segmented scan of the threads' last runs (cur, run). */
    double v = run;
    warp_seg_scan(cur, v, lane);
    if (lane == 31) {
        s_wkey[warp] = cur;
        s_wval[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        ks_int wk = lane < kWarps ? s_wkey[lane] : kNoRow;
        double wv = lane < kWarps ? s_wval[lane] : 0.0;
        warp_seg_scan(wk, wv, lane);
        if (lane < kWarps)
            s_wval[lane] = wv; /* keys are unchanged by the scan */
    }
    __syncthreads();
    /* Exclusive prefix: the lane before in this warp, then the warps before. */
    ks_int ek = __shfl_up_sync(kFull, cur, 1);
    double ev = __shfl_up_sync(kFull, v, 1);
    bool has = true;
    if (lane == 0) {
        has = warp > 0;
        if (has) {
            ek = s_wkey[warp - 1];
            ev = s_wval[warp - 1];
        }
    } else if (warp > 0 && s_wkey[warp - 1] == ek) {
        ev = s_wval[warp - 1] + ev;
    }
    const double prefix = has && ek == r_first ? ev : 0.0;

    if (first_done && r_first != kNoRow)
        KS_COO_FINISH(r_first, prefix + first_sum);
    /* The last run ends here when the next thread starts another row. */
    const bool ends = tid == kBlock - 1 || s_row[first + kItems] != cur;
    if (ends && cur != kNoRow)
        KS_COO_FINISH(cur, first_done ? run : prefix + run);
#undef KS_COO_FINISH
}

/* One thread per tile: the head row when it starts in this tile, the tail
 * row (always starting here when it differs from the head), each summed
 * over the following tiles it covers, in tile order. */
__global__ void coo_carry_kernel(ks_int nnz, long long ntiles, const ks_int *__restrict__ row,
                                 const double *__restrict__ head_sum,
                                 const double *__restrict__ tail_sum, const coo_out o)
{
    const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= ntiles)
        return;
#define KS_TILE_HEAD(t) __ldg(row + (t) * kTile)
#define KS_TILE_TAIL(t) __ldg(row + (((t) + 1) * kTile < nnz ? ((t) + 1) * kTile : nnz) - 1)
    const ks_int h = KS_TILE_HEAD(b), t = KS_TILE_TAIL(b);
    if (b == 0 || KS_TILE_TAIL(b - 1) != h) {
        double s = head_sum[b];
        if (t == h)
            for (long long c = b + 1; c < ntiles && KS_TILE_HEAD(c) == h; c++) {
                s += head_sum[c];
                if (KS_TILE_TAIL(c) != h)
                    break;
            }
        emit(o, h, s);
    }
    if (t != h) {
        double s = tail_sum[b];
        for (long long c = b + 1; c < ntiles && KS_TILE_HEAD(c) == t; c++) {
            s += head_sum[c];
            if (KS_TILE_TAIL(c) != t)
                break;
        }
        emit(o, t, s);
    }
#undef KS_TILE_HEAD
#undef KS_TILE_TAIL
}

__global__ void coo_empty_kernel(ks_int nempty, const ks_int *__restrict__ empty, double beta,
                                 double *__restrict__ y)
{
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= nempty)
        return;
    const ks_int r = __ldg(empty + e);
    y[r] = beta == 0.0 ? 0.0 : beta * y[r];
}

} // namespace

struct ks_coo_dev {
    ks_int nrows, nnz, nempty;
    long long ntiles;
    ks_int *row, *col, *empty;
    double *val;
    double *head_sum, *tail_sum; /* ntiles each: per-apply scratch */
    int borrowed;                /* col, val: the matrix's device CSR (setup_sparse) */
};

extern "C" void ks_coo_dev_destroy(ks_backend *be, ks_coo_dev *d)
{
    if (!d)
        return;
    void *p[] = {d->row, d->empty, d->head_sum, d->tail_sum, d->col, d->val};
    ks_cufmt_free(be, p, KS_CUFMT_COUNT(p) - (d->borrowed ? 2 : 0));
    free(d);
}

extern "C" ks_error ks_coo_dev_setup(ks_backend *be, const ks_coo_layout *L, ks_coo_dev **dev)
{
    *dev = NULL;
    ks_coo_dev *d = (ks_coo_dev *)ks_calloc(1, sizeof *d, "coo device state");
    if (!d)
        return KS_ERR_MEMORY;
    d->nrows = L->nrows;
    d->nnz = L->nnz;
    d->nempty = L->nempty;
    d->ntiles = ((long long)L->nnz + kTile - 1) / kTile;
    size_t nz = (size_t)L->nnz, nt = (size_t)d->ntiles;
    /* The tile sums are per-apply scratch: allocated, not uploaded. */
    const ks_cufmt_array a[] = {
        {(void **)&d->row, L->row, sizeof(ks_int) * nz, "coo row indices"},
        {(void **)&d->col, L->col, sizeof(ks_int) * nz, "coo column indices"},
        {(void **)&d->val, L->val, sizeof(double) * nz, "coo values"},
        {(void **)&d->empty, L->empty, sizeof(ks_int) * (size_t)L->nempty, "coo empty rows"},
        {(void **)&d->head_sum, NULL, sizeof(double) * nt, "coo head sums"},
        {(void **)&d->tail_sum, NULL, sizeof(double) * nt, "coo tail sums"},
    };
    ks_error e = ks_cufmt_upload(be, a, KS_CUFMT_COUNT(a), KS_CUFMT_EMPTY_ALLOC);
    if (e != KS_OK) {
        ks_coo_dev_destroy(be, d);
        return e;
    }
    *dev = d;
    return KS_OK;
}

/* The tiles and their carries, every finished row going to o. */
static ks_error coo_rows(ks_backend *be, const ks_coo_dev *d, const double *x, const coo_out &o)
{
    if (d->ntiles == 0)
        return KS_OK;
    if (d->ntiles > INT_MAX)
        return ks_seterr(KS_ERR_SIZE, "coo: %lld tiles exceed the grid", d->ntiles);
    cudaStream_t stream = ks_cufmt_stream(be);
    coo_tile_kernel<<<(unsigned)d->ntiles, kBlock, 0, stream>>>(d->nnz, d->row, d->col, d->val,
                                                                x, o, d->head_sum, d->tail_sum);
    KS_CUDA_LAUNCH_CHECK("coo_tile_kernel");
    coo_carry_kernel<<<ks_cufmt_blocks(d->ntiles, 128), 128, 0, stream>>>(
        d->nnz, d->ntiles, d->row, d->head_sum, d->tail_sum, o);
    KS_CUDA_LAUNCH_CHECK("coo_carry_kernel");
    return KS_OK;
}

extern "C" ks_error ks_coo_dev_apply(ks_backend *be, const ks_coo_dev *d, double alpha,
                                     const double *x, double beta, double *y)
{
    if (d->nempty > 0 && beta != 1.0) {
        coo_empty_kernel<<<ks_cufmt_blocks(d->nempty, 256), 256, 0, ks_cufmt_stream(be)>>>(
            d->nempty, d->empty, beta, y);
        KS_CUDA_LAUNCH_CHECK("coo_empty_kernel");
    }
    coo_out o;
    memset(&o, 0, sizeof o);
    o.alpha = alpha;
    o.beta = beta;
    o.y = y;
    return coo_rows(be, d, x, o);
}

namespace {

/* One thread a row of the device CSR: its entries' row index (row != NULL),
 * or, for an empty row, a slot in the empty list taken from *count (empty
 * NULL: only counted). The list's order is the slots' (not ascending):
 * coo_empty_kernel's writes are independent, so no sum depends on it. */
__global__ void coo_rows_kernel(ks_int n, const ks_int *__restrict__ rowptr,
                                ks_int *__restrict__ row, ks_int *__restrict__ count,
                                ks_int *__restrict__ empty)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const ks_int a = rowptr[i], b = rowptr[i + 1];
    if (a == b) {
        const ks_int slot = atomicAdd(count, 1);
        if (empty)
            empty[slot] = (ks_int)i;
    } else if (row) {
        for (ks_int k = a; k < b; k++)
            row[k] = (ks_int)i;
    }
}

ks_error rows_pass(ks_backend *be, const ks_sparse *A, ks_int *row, ks_int *count,
                   ks_int *empty, ks_int *host_count)
{
    cudaStream_t st = ks_cufmt_stream(be);
    KS_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof *count, st));
    coo_rows_kernel<<<ks_cufmt_blocks(A->nrows, 256), 256, 0, st>>>(A->nrows, A->rowptr, row,
                                                                     count, empty);
    KS_CUDA_LAUNCH_CHECK("coo_rows_kernel");
    return be->ops->download(be, host_count, count, sizeof *host_count);
}

/* The state from the matrix's device CSR, with no host round trip (a
 * distributed matrix's ghost block: millions of rows, most empty, whose
 * host layout cost 60 ms at 256^3): col and val are read in place, the row
 * indices and the empty rows made on the device. */
ks_error coo_setup_sparse(ks_backend *be, const ks_sparse *A, const ks_spmv_params *prm,
                          void **state, double *bytes)
{
    (void)prm;
    *state = NULL;
    ks_coo_dev *d = (ks_coo_dev *)ks_calloc(1, sizeof *d, "coo device state");
    if (!d)
        return KS_ERR_MEMORY;
    d->nrows = A->nrows;
    d->nnz = A->nnz;
    d->ntiles = ((long long)A->nnz + kTile - 1) / kTile;
    d->borrowed = 1;
    d->col = A->colind;
    d->val = A->val;
    ks_int *count = NULL, empties = 0, again = 0;
    const size_t nt = (size_t)d->ntiles;
    ks_error e = ks_be_alloc(be, sizeof(ks_int) * (size_t)A->nnz + 1, (void **)&d->row,
                             "coo row indices");
    if (e == KS_OK)
        e = ks_be_alloc(be, sizeof(double) * nt + 1, (void **)&d->head_sum, "coo head sums");
    if (e == KS_OK)
        e = ks_be_alloc(be, sizeof(double) * nt + 1, (void **)&d->tail_sum, "coo tail sums");
    if (e == KS_OK)
        e = ks_be_alloc(be, sizeof *count, (void **)&count, "coo empty-row count");
    if (e == KS_OK && A->nrows > 0)
        e = rows_pass(be, A, d->row, count, NULL, &empties);
    if (e == KS_OK && empties > 0)
        e = ks_be_alloc(be, sizeof(ks_int) * (size_t)empties, (void **)&d->empty,
                        "coo empty rows");
    if (e == KS_OK && empties > 0)
        e = rows_pass(be, A, NULL, count, d->empty, &again);
    if (e == KS_OK && again != empties)
        e = ks_seterr(KS_ERR_DEVICE, "coo: %ld empty rows counted, then %ld",
                      (long)empties, (long)again);
    if (count)
        be->ops->free(be, count);
    if (e != KS_OK) {
        ks_coo_dev_destroy(be, d);
        return e;
    }
    d->nempty = empties;
    ks_coo_layout sizes;
    memset(&sizes, 0, sizeof sizes);
    sizes.nnz = A->nnz;
    sizes.nused = A->nrows - empties;
    sizes.nempty = empties;
    *bytes = ks_coo_bytes(&sizes, 0);
    *state = d;
    return KS_OK;
}

ks_error coo_setup(ks_backend *be, const void *layout, void **state)
{
    ks_coo_dev *d = NULL;
    KS_TRY(ks_coo_dev_setup(be, (const ks_coo_layout *)layout, &d));
    *state = d;
    return KS_OK;
}

ks_error coo_apply(ks_backend *be, void *state, double alpha, const double *x, double beta,
                   double *y)
{
    const ks_coo_dev *d = (const ks_coo_dev *)state;
    if (d->nrows == 0)
        return KS_OK;
    return ks_coo_dev_apply(be, d, alpha, x, beta, y);
}

/* Rows without entries keep their values: the fused pass left them done. */
ks_error coo_fused_ghost(ks_backend *be, void *state, const double *xg, const ks_fused_step *f)
{
    const ks_coo_dev *d = (const ks_coo_dev *)state;
    coo_out o;
    memset(&o, 0, sizeof o);
    o.fused = 1;
    o.f = *f;
    return coo_rows(be, d, xg, o);
}

void coo_destroy(ks_backend *be, void *state)
{
    ks_coo_dev_destroy(be, (ks_coo_dev *)state);
}

} // namespace

extern "C" const ks_spmv_format_ops ks_format_coo_cuda = {
    "coo",
    KS_BACKEND_CUDA,
    "row-sorted COO, deterministic segmented reduction (tiles + ordered carries, no atomics)",
    ks_coo_layout_build,
    ks_coo_layout_apply,
    ks_coo_layout_bytes,
    ks_coo_layout_free,
    coo_setup,
    coo_apply,
    coo_destroy,
    NULL, /* gs_sweep */
    ks_coo_layout_to_csr,
    NULL, /* fused_step */
    0, /* float_values */
    coo_setup_sparse,
    NULL, /* state_bytes */
    NULL, /* reads_values */
    NULL, /* spmm: k SpMVs */
    NULL, /* fused_block */
    NULL, /* spmm_dot */
    NULL, /* fused_block_dot */
    coo_fused_ghost, /* fused_ghost */
};
