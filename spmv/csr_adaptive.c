/* "csr_adaptive" host layout: the CSR arrays (borrowed) plus row blocks,
 * after Greathouse & Daga (SC'14). Consecutive rows are grouped greedily
 * while their entries fit the staging budget; a row longer than the shared
 * capacity is split in fixed chunks whose partial sums are then added in
 * chunk order (on the device by the block that finishes the row's last
 * chunk, in the same launch).
 * The reference apply sums in exactly the kernels' order, so these tests
 * check the blocking itself, not just CSR. */
#include "csr_family.h"

#include <limits.h>
#include <string.h>

/* Blocks wanted for the whole matrix before the staging budget shrinks:
 * about 8 resident blocks on each of an H100's 132 SMs. Below that a small
 * matrix leaves SMs idle, and smaller blocks (fewer rows each) spread it. */
#define TARGET_BLOCKS 1024

/* Budget: the shared capacity, halved (not below the minimum) while the
 * matrix would make fewer than TARGET_BLOCKS blocks of that size. */
static int choose_budget(const ks_csr *A)
{
    int b = KS_CSR_ADAPTIVE_SHARED;
    while (b > KS_CSR_ADAPTIVE_MIN_BUDGET && (double)A->nnz < (double)b * TARGET_BLOCKS)
        b /= 2;
    return b;
}

static ks_int row_len(const ks_csr *A, ks_int r)
{
    return A->rowptr[r + 1] - A->rowptr[r];
}

void ks_csr_adaptive_layout_free(void *layout)
{
    ks_csr_adaptive_layout *L = layout;
    if (!L)
        return;
    free(L->block_row);
    free(L->long_row);
    free(L->long_chunk);
    free(L->chunk_row);
    free(L->chunk_begin);
    free(L);
}

/* Two passes over the rows: count blocks, long rows and chunks, then fill. */
static void make_blocks(ks_csr_adaptive_layout *L, int fill)
{
    const ks_csr *A = &L->A;
    ks_int nb = 0, nl = 0, nc = 0;
    ks_int r = 0;
    while (r < A->nrows) {
        ks_int len = row_len(A, r);
        if (fill)
            L->block_row[nb] = r;
        nb++;
        if (len > KS_CSR_ADAPTIVE_SHARED) {
            ks_int n = (ks_int)((len + (KS_CSR_ADAPTIVE_CHUNK - 1)) / KS_CSR_ADAPTIVE_CHUNK);
            if (fill) {
                L->long_row[nl] = r;
                L->long_chunk[nl] = nc;
                for (ks_int k = 0; k < n; k++) {
                    L->chunk_row[nc + k] = r;
                    L->chunk_begin[nc + k] = A->rowptr[r] + k * KS_CSR_ADAPTIVE_CHUNK;
                }
            }
            nl++;
            nc += n;
            r++;
            continue;
        }
        /* A row of up to the shared capacity starts a block; rows join it
         * while the block's entries fit the budget. A first row above the
         * budget stays alone (a vector block). */
        ks_int r1 = r + 1, sum = len;
        while (r1 < A->nrows && r1 - r < L->max_rows && sum + row_len(A, r1) <= L->budget &&
               sum <= L->budget) {
            sum += row_len(A, r1);
            r1++;
        }
        r = r1;
    }
    if (fill) {
        L->block_row[nb] = A->nrows;
        L->long_chunk[nl] = nc;
    } else {
        L->nblocks = nb;
        L->nlong = nl;
        L->nchunks = nc;
    }
}

ks_error ks_csr_adaptive_layout_build(const ks_csr *A, const ks_spmv_params *prm,
                                      void **layout)
{
    if (!layout)
        return ks_seterr(KS_ERR_ARG, "csr_adaptive layout: NULL argument");
    *layout = NULL;
    int max_rows = prm ? prm->block_rows : 0;
    if (max_rows < 0 || max_rows > KS_CSR_ADAPTIVE_MAX_ROWS)
        return ks_seterr(KS_ERR_ARG,
                         "csr_adaptive: block_rows = %d; use 0 (automatic: %d) or 1..%d rows "
                         "per block (one thread at least for each row of a block)",
                         max_rows, KS_CSR_ADAPTIVE_MAX_ROWS, KS_CSR_ADAPTIVE_MAX_ROWS);
    /* Kernels index entries in 32-bit ints and step up to a chunk past a
     * block's last entry. */
    if (A && A->nnz > INT_MAX - 2 * KS_CSR_ADAPTIVE_CHUNK)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "csr_adaptive: %d nonzeros exceed the 32-bit index range", (int)A->nnz);
    void *base = NULL;
    KS_TRY(ks_csr_layout_build(A, prm, &base)); /* validates the CSR header */
    ks_csr_adaptive_layout *L = ks_calloc(1, sizeof *L, "csr_adaptive layout");
    if (!L) {
        ks_csr_layout_free(base);
        return KS_ERR_MEMORY;
    }
    L->A = ((ks_csr_layout *)base)->A;
    ks_csr_layout_free(base);
    L->budget = choose_budget(A);
    L->max_rows = max_rows > 0 ? max_rows : KS_CSR_ADAPTIVE_MAX_ROWS;

    make_blocks(L, 0);
    /* +1 keeps every allocation non-empty (ks_malloc of 0 bytes may be NULL). */
    L->block_row = ks_malloc(sizeof(ks_int) * ((size_t)L->nblocks + 1), "csr_adaptive blocks");
    L->long_row = ks_malloc(sizeof(ks_int) * ((size_t)L->nlong + 1), "csr_adaptive long rows");
    L->long_chunk =
        ks_malloc(sizeof(ks_int) * ((size_t)L->nlong + 1), "csr_adaptive long-row chunks");
    L->chunk_row = ks_malloc(sizeof(ks_int) * ((size_t)L->nchunks + 1), "csr_adaptive chunks");
    L->chunk_begin =
        ks_malloc(sizeof(ks_int) * ((size_t)L->nchunks + 1), "csr_adaptive chunk starts");
    if (!L->block_row || !L->long_row || !L->long_chunk || !L->chunk_row || !L->chunk_begin) {
        ks_csr_adaptive_layout_free(L);
        return KS_ERR_MEMORY;
    }
    make_blocks(L, 1);
    *layout = L;
    return KS_OK;
}

/* The shuffle-down tree of width n (a power of two) on lane values v:
 * after the step of offset o, lane i < o holds v[i] + v[i + o]. */
static double tree(double *v, int n)
{
    for (int off = n / 2; off > 0; off /= 2)
        for (int i = 0; i < off; i++)
            v[i] += v[i + off];
    return v[0];
}

/* A vector block or a long-row chunk: thread t of the block sums the
 * staged products of entries e0 + t, e0 + t + 256, ... in order; each
 * warp's 32 sums go through a width-32 tree, then the 8 warp sums through a
 * width-8 tree. */
static double block_sum(const ks_csr *A, const double *x, ks_int e0, ks_int e1)
{
    enum { NT = KS_CSR_ADAPTIVE_THREADS, NW = KS_CSR_ADAPTIVE_THREADS / 32 };
    double lane[NT], warp[NW];
    for (int t = 0; t < NT; t++) {
        double s = 0.0;
        for (ks_int j = e0 + t; j < e1; j += NT) {
            double p = A->val[j] * x[A->colind[j]]; /* the staged product */
            s += p;
        }
        lane[t] = s;
    }
    for (int w = 0; w < NW; w++)
        warp[w] = tree(lane + 32 * w, 32);
    return tree(warp, NW);
}

static void put(double *y, ks_int r, double alpha, double s, double beta)
{
    /* beta == 0 must not read y: it may hold garbage or NaN. */
    y[r] = beta == 0.0 ? alpha * s : alpha * s + beta * y[r];
}

void ks_csr_adaptive_layout_apply(const void *layout, double alpha, const double *x,
                                  double beta, double *y)
{
    const ks_csr_adaptive_layout *L = layout;
    const ks_csr *A = &L->A;
    double v[32];
    for (ks_int b = 0; b < L->nblocks; b++) {
        ks_int r0 = L->block_row[b], r1 = L->block_row[b + 1];
        ks_int e0 = A->rowptr[r0], e1 = A->rowptr[r1];
        if (r1 - r0 == 1) {
            if (e1 - e0 <= KS_CSR_ADAPTIVE_SHARED) /* vector; long rows below */
                put(y, r0, alpha, block_sum(A, x, e0, e1), beta);
            continue;
        }
        /* stream: T lanes per row, lane l sums the staged products at
         * l, l + T, ... of its row, then a width-T tree. */
        int T = ks_csr_adaptive_stream_lanes((int)(r1 - r0));
        for (ks_int r = r0; r < r1; r++) {
            for (int l = 0; l < T; l++) {
                double s = 0.0;
                for (ks_int j = A->rowptr[r] + l; j < A->rowptr[r + 1]; j += T) {
                    double p = A->val[j] * x[A->colind[j]]; /* the staged product */
                    s += p;
                }
                v[l] = s;
            }
            put(y, r, alpha, tree(v, T), beta);
        }
    }
    /* long rows: chunk partials, then lane i of one warp (of the block
     * that finishes the row on the device) adds partials i, i + 32, ... of
     * its row in order, then a width-32 tree. */
    for (ks_int l = 0; l < L->nlong; l++) {
        ks_int r = L->long_row[l], end = A->rowptr[r + 1];
        for (int i = 0; i < 32; i++)
            v[i] = 0.0;
        for (ks_int g = L->long_chunk[l]; g < L->long_chunk[l + 1]; g++) {
            ks_int c0 = L->chunk_begin[g];
            ks_int c1 = end - c0 > KS_CSR_ADAPTIVE_CHUNK ? c0 + KS_CSR_ADAPTIVE_CHUNK : end;
            v[(g - L->long_chunk[l]) % 32] += block_sum(A, x, c0, c1);
        }
        put(y, r, alpha, tree(v, 32), beta);
    }
}

/* Bytes per apply (beta = 0): values 8 nnz + column indices 4 nnz + row
 * pointers 4 (nrows + 1) + block descriptors 8 (nblocks + 1) (first row and
 * first entry of each block, as the device stores them) + x gathered once
 * per entry 8 nnz (staging in shared memory is of products, not of x)
 * + y written 8 nrows; long rows add chunk descriptors 16 nchunks (first
 * and end entry, long-row index, padding), partials written and read back
 * 16 nchunks, long-row descriptors 8 (nlong + 1) (row and first chunk) and
 * completion counters 4 nlong (the atomic and the reset touch one word,
 * counted once). */
double ks_csr_adaptive_layout_bytes(const void *layout)
{
    const ks_csr_adaptive_layout *L = layout;
    double nnz = L->A.nnz, nrows = L->A.nrows;
    double b = 20.0 * nnz + 4.0 * (nrows + 1.0) + 8.0 * ((double)L->nblocks + 1.0) + 8.0 * nrows;
    if (L->nlong > 0)
        b += 32.0 * (double)L->nchunks + 12.0 * (double)L->nlong + 8.0;
    return b;
}

ks_error ks_csr_adaptive_layout_to_csr(const void *layout, ks_csr *A)
{
    return ks_csr_copy(&((const ks_csr_adaptive_layout *)layout)->A, A);
}
