/* "dia" and "bdia" host layouts (see other_formats.h). Both count the
 * diagonals first and refuse, with the sizes, before allocating the padded
 * values; both keep a host-only bitmask of which slots hold an entry of the
 * original matrix, so to_csr returns exactly the original (explicit zeros
 * included) while band zeros and slots outside the matrix are dropped.
 *
 * Note for callers: a stored band zero still multiplies its x entry, so a
 * NaN or Inf in x reaches rows whose band covers that column even where the
 * original matrix has no entry (CSR would not read it). */
#include "float_values.h"
#include "other_formats.h"

#include <limits.h>
#include <string.h>

static int cmp_ks_int(const void *a, const void *b)
{
    ks_int x = *(const ks_int *)a, y = *(const ks_int *)b;
    return (x > y) - (x < y);
}

static void bit_set(uint8_t *bits, size_t k) { bits[k >> 3] |= (uint8_t)(1u << (k & 7)); }

/* Entries above which the layout passes run on all threads. */
#define KS_DIA_PARALLEL_NNZ 200000
static int bit_get(const uint8_t *bits, size_t k) { return (bits[k >> 3] >> (k & 7)) & 1; }

/* Rows i with column i + d inside [0, ncols). */
static ks_int rows_in_range(ks_int nrows, ks_int ncols, int64_t d)
{
    int64_t lo = d < 0 ? -d : 0, hi = (int64_t)ncols - d;
    if (hi > nrows)
        hi = nrows;
    return hi > lo ? (ks_int)(hi - lo) : 0;
}

/* ================================================================ dia */
void ks_dia_layout_free(void *layout)
{
    ks_dia_layout *L = layout;
    if (!L)
        return;
    free(L->offset);
    free(L->val);
    free(L->present);
    free(L);
}

ks_error ks_dia_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    if (!layout)
        return ks_seterr(KS_ERR_ARG, "dia layout: NULL output pointer");
    *layout = NULL;
    double max_fill;
    KS_TRY(ks_ofmt_max_fill(prm, "dia", &max_fill));
    KS_TRY(ks_ofmt_check_csr(A, "dia"));
    ks_int n = A->nrows, m = A->ncols;
    /* Offset d = col - row lies in [-(n-1), m-1]: index d + n - 1. */
    size_t span = n > 0 && m > 0 ? (size_t)n + (size_t)m - 1 : 0;
    ks_int *map = ks_calloc(span, sizeof(ks_int), "dia diagonal map");
    if (!map)
        return KS_ERR_MEMORY;
    /* The passes over the entries run on all threads: a fine matrix of 10^8
     * entries took seconds on one. A diagonal's flag is written once (read
     * first): every thread storing into the same few lines would make them
     * bounce between the cores. */
#pragma omp parallel for schedule(static) if (A->nnz > KS_DIA_PARALLEL_NNZ)
    for (ks_int i = 0; i < n; i++)
        for (ks_int j = A->rowptr[i]; j < A->rowptr[i + 1]; j++) {
            const size_t d = (size_t)A->colind[j] - i + n - 1;
            ks_int seen;
#pragma omp atomic read
            seen = map[d];
            if (!seen) {
#pragma omp atomic write
                map[d] = 1;
            }
        }
    ks_int ndiag = 0;
    for (size_t s = 0; s < span; s++)
        if (map[s])
            map[s] = ++ndiag; /* diagonal index + 1, ascending offsets */
    double stored = (double)ndiag * n;
    if (stored > max_fill * A->nnz) {
        char h[32];
        free(map);
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "dia: %d occupied diagonals x %d rows = %.0f stored values (%s) for %d "
                         "nonzeros = %.1fx; max_fill %g",
                         (int)ndiag, (int)n, stored, ks_ofmt_human_bytes(8.0 * stored, h),
                         (int)A->nnz, stored / A->nnz, max_fill);
    }

    ks_dia_layout *L = ks_calloc(1, sizeof *L, "dia layout");
    if (!L) {
        free(map);
        return KS_ERR_MEMORY;
    }
    size_t slots = (size_t)ndiag * (size_t)n;
    L->nrows = n;
    L->ncols = m;
    L->nnz = A->nnz;
    L->ndiag = ndiag;
    L->offset = ks_malloc(sizeof(ks_int) * (size_t)ndiag, "dia offsets");
    L->val = ks_calloc(slots, sizeof(double), "dia values");
    L->present = ks_calloc(slots / 8 + 1, 1, "dia entry bitmask");
    if (!L->offset || !L->val || !L->present) {
        free(map);
        ks_dia_layout_free(L);
        return KS_ERR_MEMORY;
    }
    for (size_t s = 0; s < span; s++)
        if (map[s]) {
            ks_int d = (ks_int)((int64_t)s - (n - 1));
            L->offset[map[s] - 1] = d;
            L->in_range += rows_in_range(n, m, d);
        }
    /* Slots are distinct, but neighbouring rows share bytes of the bitmask. */
#pragma omp parallel for schedule(static) if (A->nnz > KS_DIA_PARALLEL_NNZ)
    for (ks_int i = 0; i < n; i++)
        for (ks_int j = A->rowptr[i]; j < A->rowptr[i + 1]; j++) {
            size_t k = (size_t)map[(size_t)A->colind[j] - i + n - 1] - 1;
            size_t slot = k * (size_t)n + (size_t)i;
            L->val[slot] = A->val[j];
#pragma omp atomic update
            L->present[slot >> 3] |= (uint8_t)(1u << (slot & 7));
        }
    free(map);
    if (prm && prm->float_values) {
        /* Round once here, so the host reference and to_csr see exactly
         * what the device's float32 copy holds. */
        L->float_values = 1;
        ks_error e = ks_float_values_round(L->val, slots, "dia");
        if (e != KS_OK) {
            ks_dia_layout_free(L);
            return e;
        }
    }
    *layout = L;
    return KS_OK;
}

void ks_dia_layout_apply(const void *layout, double alpha, const double *x, double beta,
                         double *y)
{
    const ks_dia_layout *L = layout;
    ks_int n = L->nrows;
    for (ks_int i = 0; i < n; i++) {
        double s = 0.0;
        for (ks_int k = 0; k < L->ndiag; k++) {
            int64_t c = (int64_t)i + L->offset[k];
            if (c >= 0 && c < L->ncols)
                s += L->val[(size_t)k * (size_t)n + (size_t)i] * x[c];
        }
        y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
    }
}

/* All ndiag * nrows values (8, or 4 as float32) and the offsets (4 each);
 * no column indices; x read once per stored slot whose column is inside the
 * matrix (8; band zeros included); y written (8 per row). */
double ks_dia_layout_bytes(const void *layout)
{
    const ks_dia_layout *L = layout;
    return (L->float_values ? 4.0 : 8.0) * (double)L->ndiag * L->nrows + 4.0 * L->ndiag +
           8.0 * L->in_range + 8.0 * L->nrows;
}

ks_error ks_dia_layout_to_csr(const void *layout, ks_csr *A)
{
    const ks_dia_layout *L = layout;
    ks_int n = L->nrows;
    KS_TRY(ks_csr_alloc(A, n, L->ncols, L->nnz));
    ks_int p = 0;
    A->rowptr[0] = 0;
    for (ks_int i = 0; i < n; i++) {
        /* Ascending offsets give ascending columns. */
        for (ks_int k = 0; k < L->ndiag; k++) {
            size_t slot = (size_t)k * (size_t)n + (size_t)i;
            if (!bit_get(L->present, slot))
                continue;
            if (p >= L->nnz) {
                ks_csr_free(A);
                return ks_seterr(KS_ERR_ARG, "dia to_csr: bitmask holds more than %d entries",
                                 (int)L->nnz);
            }
            A->colind[p] = i + L->offset[k];
            A->val[p++] = L->val[slot];
        }
        A->rowptr[i + 1] = p;
    }
    return KS_OK;
}

/* =============================================================== bdia */
void ks_bdia_layout_free(void *layout)
{
    ks_bdia_layout *L = layout;
    if (!L)
        return;
    free(L->blk_ptr);
    free(L->offset);
    free(L->shift);
    free(L->val);
    free(L->seg_ptr);
    free(L->seg_start);
    free(L->seg_wend);
    free(L->present);
    free(L);
}

/* Scratch for the per-block scans: stamp marks offsets seen in the current
 * block (value = the scan's tag), offs lists them. */
typedef struct bdia_scan {
    ks_int *stamp; /* span */
    ks_int *offs;  /* cap */
    size_t cap;
} bdia_scan;

/* Distinct offsets of rows [r0, r1), ascending, into sc->offs; their count. */
static ks_error block_offsets(const ks_csr *A, ks_int r0, ks_int r1, ks_int tag, bdia_scan *sc,
                              ks_int *nd)
{
    ks_int n = A->nrows, k = 0;
    for (ks_int i = r0; i < r1; i++)
        for (ks_int j = A->rowptr[i]; j < A->rowptr[i + 1]; j++) {
            size_t s = (size_t)A->colind[j] - i + n - 1;
            if (sc->stamp[s] == tag)
                continue;
            sc->stamp[s] = tag;
            if ((size_t)k == sc->cap) {
                size_t cap = sc->cap ? 2 * sc->cap : 64;
                ks_int *o = realloc(sc->offs, cap * sizeof *o);
                if (!o)
                    return ks_seterr(KS_ERR_MEMORY, "bdia: out of host memory for %zu offsets",
                                     cap);
                sc->offs = o;
                sc->cap = cap;
            }
            sc->offs[k++] = A->colind[j] - i;
        }
    if (k > 1) /* an empty block leaves offs NULL: qsort(NULL, 0) is undefined */
        qsort(sc->offs, (size_t)k, sizeof(ks_int), cmp_ks_int);
    *nd = k;
    return KS_OK;
}

/* Segments of a block: diagonal d reads columns r0 + d + [0, rows); runs
 * closer than KS_BDIA_MERGE_GAP merge (loading a few unused x values costs
 * less than another segment). With seg_start given, writes each segment's
 * start column and window end, and each diagonal's shift; returns the
 * count, the window (doubles) and the in-range loads. */
typedef struct seg_sum {
    ks_int nseg;
    int64_t window;
    double reads;
} seg_sum;

static seg_sum block_segments(const ks_int *offs, ks_int nd, ks_int r0, ks_int rows,
                              ks_int ncols, ks_int *seg_start, ks_int *seg_wend, ks_int *shift)
{
    seg_sum t = {0, 0, 0.0};
    ks_int k = 0;
    while (k < nd) {
        int64_t lo = offs[k], hi = (int64_t)offs[k] + rows - 1;
        ks_int first = k;
        for (k++; k < nd && offs[k] <= hi + 1 + KS_BDIA_MERGE_GAP; k++)
            hi = (int64_t)offs[k] + rows - 1;
        int64_t len = hi - lo + 1, g0 = r0 + lo, g1 = r0 + hi + 1;
        if (seg_start) {
            seg_start[t.nseg] = (ks_int)g0;
            seg_wend[t.nseg] = (ks_int)(t.window + len);
            for (ks_int q = first; q < k; q++)
                shift[q] = (ks_int)(t.window + (offs[q] - lo));
        }
        if (g0 < 0)
            g0 = 0;
        if (g1 > ncols)
            g1 = ncols;
        if (g1 > g0)
            t.reads += (double)(g1 - g0);
        t.window += len;
        t.nseg++;
    }
    return t;
}

ks_error ks_bdia_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    if (!layout)
        return ks_seterr(KS_ERR_ARG, "bdia layout: NULL output pointer");
    *layout = NULL;
    int br = prm && prm->block_rows ? prm->block_rows : KS_BDIA_DEFAULT_ROWS;
    if (br < 32 || br > 1024 || br % 32 != 0)
        return ks_seterr(KS_ERR_ARG,
                         "bdia: block_rows = %d; use 0 (default %d) or a multiple of 32 from 32 "
                         "to 1024 (one thread block)",
                         br, KS_BDIA_DEFAULT_ROWS);
    double max_fill;
    KS_TRY(ks_ofmt_max_fill(prm, "bdia", &max_fill));
    KS_TRY(ks_ofmt_check_csr(A, "bdia"));
    ks_int n = A->nrows, m = A->ncols;
    /* Segment columns reach r0 + offset + block_rows in 32-bit ints. */
    if ((int64_t)n + m + 2 * 1024 > INT_MAX)
        return ks_seterr(KS_ERR_UNSUPPORTED, "bdia: %d x %d exceeds the 32-bit column range",
                         (int)n, (int)m);
    ks_int nblocks = (ks_int)(((int64_t)n + br - 1) / br);
    size_t span = n > 0 && m > 0 ? (size_t)n + (size_t)m - 1 : 0;
    bdia_scan sc = {ks_calloc(span, sizeof(ks_int), "bdia offset stamps"), NULL, 0};
    if (!sc.stamp)
        return KS_ERR_MEMORY;

    /* Pass 1: sizes only, so a refusal allocates nothing large. */
    int64_t ndiag = 0, nseg = 0;
    double stored = 0.0, reads = 0.0;
    int64_t max_window = 0, max_nseg = 0, max_nd = 0;
    ks_int worst_win = 0, worst_fill = 0, worst_nd = 0;
    double worst_ratio = 0.0;
    ks_error e = KS_OK;
    for (ks_int b = 0; b < nblocks && e == KS_OK; b++) {
        ks_int r0 = b * br, r1 = r0 + br < n ? r0 + br : n, nd = 0;
        e = block_offsets(A, r0, r1, b + 1, &sc, &nd);
        if (e != KS_OK)
            break;
        seg_sum t = block_segments(sc.offs, nd, r0, r1 - r0, m, NULL, NULL, NULL);
        ks_int bnnz = A->rowptr[r1] - A->rowptr[r0];
        double ratio = bnnz ? (double)nd * (r1 - r0) / bnnz : 0.0;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst_fill = b;
            worst_nd = nd;
        }
        if (t.window > max_window) {
            max_window = t.window;
            worst_win = b;
        }
        if (t.nseg > max_nseg)
            max_nseg = t.nseg;
        if (nd > max_nd)
            max_nd = nd;
        ndiag += nd;
        nseg += t.nseg;
        stored += (double)nd * (r1 - r0);
        reads += t.reads;
    }
    if (e == KS_OK && stored > max_fill * A->nnz) {
        char h[32];
        ks_int r0 = worst_fill * br;
        e = ks_seterr(KS_ERR_UNSUPPORTED,
                      "bdia: %lld diagonals over %d blocks of %d rows = %.0f stored values (%s) "
                      "for %d nonzeros = %.1fx (worst: block %d, %d diagonals for %d nonzeros); "
                      "max_fill %g",
                      (long long)ndiag, (int)nblocks, br, stored,
                      ks_ofmt_human_bytes(8.0 * stored, h), (int)A->nnz, stored / A->nnz,
                      (int)worst_fill, (int)worst_nd,
                      (int)(A->rowptr[r0 + br < n ? r0 + br : n] - A->rowptr[r0]), max_fill);
    }
    double shared = KS_BDIA_SHARED_BYTES(max_window, max_nseg, max_nd);
    if (e == KS_OK && shared > KS_BDIA_MAX_SHARED_BYTES) {
        char h[32];
        ks_int r0 = worst_win * br;
        e = ks_seterr(KS_ERR_UNSUPPORTED,
                      "bdia: block %d (rows %d-%d) stages %lld x values, with the segment and "
                      "diagonal lists %s of shared memory, over the %d KB a block may use; use "
                      "dia instead, or fewer block_rows",
                      (int)worst_win, (int)r0, (int)((r0 + br < n ? r0 + br : n) - 1),
                      (long long)max_window, ks_ofmt_human_bytes(shared, h),
                      KS_BDIA_MAX_SHARED_BYTES / 1024);
    }
    if (e != KS_OK) {
        free(sc.stamp);
        free(sc.offs);
        return e;
    }

    /* Pass 2: fill. */
    ks_bdia_layout *L = ks_calloc(1, sizeof *L, "bdia layout");
    ks_int *loc = ks_malloc(sizeof(ks_int) * span, "bdia diagonal map");
    if (!L || !loc) {
        free(L);
        free(loc);
        free(sc.stamp);
        free(sc.offs);
        return KS_ERR_MEMORY;
    }
    size_t slots = (size_t)stored;
    L->nrows = n;
    L->ncols = m;
    L->nnz = A->nnz;
    L->block_rows = br;
    L->nblocks = nblocks;
    L->ndiag = (ks_int)ndiag;
    L->nseg = (ks_int)nseg;
    L->max_window = (ks_int)max_window;
    L->max_nseg = (ks_int)max_nseg;
    L->max_nd = (ks_int)max_nd;
    L->window_reads = reads;
    L->blk_ptr = ks_malloc(sizeof(ks_int) * ((size_t)nblocks + 1), "bdia block pointers");
    L->seg_ptr = ks_malloc(sizeof(ks_int) * ((size_t)nblocks + 1), "bdia segment pointers");
    L->offset = ks_malloc(sizeof(ks_int) * (size_t)ndiag, "bdia offsets");
    L->shift = ks_malloc(sizeof(ks_int) * (size_t)ndiag, "bdia shifts");
    L->seg_start = ks_malloc(sizeof(ks_int) * (size_t)nseg, "bdia segment starts");
    L->seg_wend = ks_malloc(sizeof(ks_int) * (size_t)nseg, "bdia segment window ends");
    L->val = ks_calloc(slots, sizeof(double), "bdia values");
    L->present = ks_calloc(slots / 8 + 1, 1, "bdia entry bitmask");
    if (!L->blk_ptr || !L->seg_ptr || !L->offset || !L->shift || !L->seg_start ||
        !L->seg_wend || !L->val || !L->present) {
        free(loc);
        free(sc.stamp);
        free(sc.offs);
        ks_bdia_layout_free(L);
        return KS_ERR_MEMORY;
    }
    L->blk_ptr[0] = 0;
    L->seg_ptr[0] = 0;
    for (ks_int b = 0; b < nblocks && e == KS_OK; b++) {
        ks_int r0 = b * br, r1 = r0 + br < n ? r0 + br : n, rows = r1 - r0, nd = 0;
        /* Tags nblocks + 1 + b differ from every pass-1 tag. */
        e = block_offsets(A, r0, r1, nblocks + 1 + b, &sc, &nd);
        if (e != KS_OK)
            break;
        ks_int d0 = L->blk_ptr[b], s0 = L->seg_ptr[b];
        if (nd > 0) /* sc.offs may still be NULL: memcpy(p, NULL, 0) is undefined */
            memcpy(L->offset + d0, sc.offs, sizeof(ks_int) * (size_t)nd);
        seg_sum t = block_segments(sc.offs, nd, r0, rows, m, L->seg_start + s0,
                                   L->seg_wend + s0, L->shift + d0);
        L->blk_ptr[b + 1] = d0 + nd;
        L->seg_ptr[b + 1] = s0 + t.nseg;
        for (ks_int k = 0; k < nd; k++)
            loc[(size_t)sc.offs[k] + n - 1] = k;
        size_t base = (size_t)d0 * (size_t)br; /* earlier blocks are full */
        for (ks_int i = r0; i < r1; i++)
            for (ks_int j = A->rowptr[i]; j < A->rowptr[i + 1]; j++) {
                size_t k = (size_t)loc[(size_t)A->colind[j] - i + n - 1];
                size_t slot = base + k * (size_t)rows + (size_t)(i - r0);
                L->val[slot] = A->val[j];
                bit_set(L->present, slot);
            }
    }
    free(loc);
    free(sc.stamp);
    free(sc.offs);
    if (e != KS_OK) {
        ks_bdia_layout_free(L);
        return e;
    }
    *layout = L;
    return KS_OK;
}

void ks_bdia_layout_apply(const void *layout, double alpha, const double *x, double beta,
                          double *y)
{
    const ks_bdia_layout *L = layout;
    ks_int br = L->block_rows;
    for (ks_int b = 0; b < L->nblocks; b++) {
        ks_int r0 = b * br, rows = r0 + br < L->nrows ? br : L->nrows - r0;
        ks_int d0 = L->blk_ptr[b], nd = L->blk_ptr[b + 1] - d0;
        const double *v = L->val + (size_t)d0 * (size_t)br;
        for (ks_int i = 0; i < rows; i++) {
            double s = 0.0;
            for (ks_int k = 0; k < nd; k++) {
                int64_t c = (int64_t)r0 + i + L->offset[d0 + k];
                if (c >= 0 && c < L->ncols)
                    s += v[(size_t)k * (size_t)rows + (size_t)i] * x[c];
            }
            ks_int r = r0 + i;
            y[r] = beta == 0.0 ? alpha * s : alpha * s + beta * y[r];
        }
    }
}

/* Stored values (8; the padding inside each block's diagonals included),
 * one shift per stored diagonal (4; offsets stay on the host), block and
 * segment pointers (4 + 4 per block), segment start and window end (8 each);
 * x read once per block over its staged window (8 per in-range column,
 * not once per entry); y written (8 per row). */
double ks_bdia_layout_bytes(const void *layout)
{
    const ks_bdia_layout *L = layout;
    double stored = 0.0;
    for (ks_int b = 0; b < L->nblocks; b++) {
        ks_int r0 = b * L->block_rows;
        ks_int rows = r0 + L->block_rows < L->nrows ? L->block_rows : L->nrows - r0;
        stored += (double)(L->blk_ptr[b + 1] - L->blk_ptr[b]) * rows;
    }
    return 8.0 * stored + 4.0 * L->ndiag + 8.0 * ((double)L->nblocks + 1.0) + 8.0 * L->nseg +
           8.0 * L->window_reads + 8.0 * L->nrows;
}

ks_error ks_bdia_layout_to_csr(const void *layout, ks_csr *A)
{
    const ks_bdia_layout *L = layout;
    KS_TRY(ks_csr_alloc(A, L->nrows, L->ncols, L->nnz));
    ks_int br = L->block_rows, p = 0;
    A->rowptr[0] = 0;
    for (ks_int b = 0; b < L->nblocks; b++) {
        ks_int r0 = b * br, rows = r0 + br < L->nrows ? br : L->nrows - r0;
        ks_int d0 = L->blk_ptr[b], nd = L->blk_ptr[b + 1] - d0;
        size_t base = (size_t)d0 * (size_t)br;
        for (ks_int i = 0; i < rows; i++) {
            for (ks_int k = 0; k < nd; k++) {
                size_t slot = base + (size_t)k * (size_t)rows + (size_t)i;
                if (!bit_get(L->present, slot))
                    continue;
                if (p >= L->nnz) {
                    ks_csr_free(A);
                    return ks_seterr(KS_ERR_ARG,
                                     "bdia to_csr: bitmask holds more than %d entries",
                                     (int)L->nnz);
                }
                A->colind[p] = r0 + i + L->offset[d0 + k];
                A->val[p++] = L->val[slot];
            }
            A->rowptr[r0 + i + 1] = p;
        }
    }
    return KS_OK;
}
