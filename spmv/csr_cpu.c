/* "csr" on the cpu backend: OpenMP over contiguous row ranges of about equal
 * work (nonzeros + rows), fixed at setup, so one long row or a band of empty
 * rows does not leave threads idle the way an equal-row split would. */
#include "csr_layout.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this much work a parallel region costs more than it saves. */
#define KS_CSR_SERIAL_WORK 32768

/* The state reads the matrix's own host CSR (the layout borrows its arrays
 * and they live as long as the matrix, spmv/format.h), so a matrix holds
 * its entries once on the cpu, not twice: for an AMG hierarchy that is a
 * third of its host memory and most of the setup's "upload" phase. Pages
 * copied in (ks_matrix_create) were first touched by ks_memcpy_par's
 * threads in 4 MiB chunks in array order, so on NUMA machines they lie
 * roughly (not exactly) near the threads whose row parts read them. */
typedef struct csr_cpu_state {
    ks_csr A;       /* borrowed arrays (not freed here) */
    float *valf;    /* float_values: the values as float32, owned (A.val then NULL) */
    int nparts;
    ks_int *part;   /* nparts + 1 row boundaries */
    double *xold;   /* gs_sweep: x before the sweep (allocated on first use) */
} csr_cpu_state;

/* First row r in [0, n] with rowptr[r] + r >= target; rowptr[r] + r strictly
 * increases, so part boundaries split nnz + nrows evenly. */
static ks_int lower_row(const ks_int *rowptr, ks_int n, int64_t target)
{
    ks_int lo = 0, hi = n;
    while (lo < hi) {
        ks_int mid = lo + (hi - lo) / 2;
        if ((int64_t)rowptr[mid] + mid < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void free_state(csr_cpu_state *s)
{
    if (!s)
        return;
    free(s->valf);
    free(s->part);
    free(s->xold);
    free(s);
}

/* Entry j's value: one of the two arrays is set, fixed for the matrix, so
 * the test is loop-invariant and predicted. */
static inline double val_at(const double *restrict val, const float *restrict valf, ks_int j)
{
    return valf ? (double)valf[j] : val[j];
}

static ks_error csr_cpu_setup(ks_backend *be, const void *layout, void **state)
{
    const float *Lvalf = ((const ks_csr_layout *)layout)->valf;
    const ks_csr *L = &((const ks_csr_layout *)layout)->A;
    *state = NULL;
    csr_cpu_state *s = ks_calloc(1, sizeof *s, "csr state");
    if (!s)
        return KS_ERR_MEMORY;
    int nt = 1;
#ifdef _OPENMP
    nt = omp_get_max_threads();
#endif
    if (nt > L->nrows)
        nt = L->nrows > 0 ? (int)L->nrows : 1;
    s->nparts = nt;
    s->A.nrows = L->nrows;
    s->A.ncols = L->ncols;
    s->A.nnz = L->nnz;
    s->A.rowptr = L->rowptr;
    s->A.colind = L->colind;
    s->A.val = Lvalf ? NULL : L->val;
    s->part = ks_malloc(sizeof(ks_int) * ((size_t)nt + 1), "csr partition");
    if (Lvalf)
        s->valf = ks_malloc(sizeof(float) * (size_t)L->nnz + 1, "csr float32 values");
    if (!s->part || (Lvalf && !s->valf)) {
        free_state(s);
        return KS_ERR_MEMORY;
    }
    int64_t work = (int64_t)L->nnz + L->nrows;
    for (int p = 0; p <= nt; p++)
        s->part[p] = lower_row(L->rowptr, L->nrows, work * p / nt);
    s->part[nt] = L->nrows;

    /* The float32 values are the state's own: each part is first touched
     * by the thread that reads it in apply (NUMA placement). */
    const int nparts = nt;
    const ks_int *part = s->part;
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) if (Lvalf && work > KS_CSR_SERIAL_WORK)
#endif
    for (int p = 0; p < nparts; p++) {
        if (!Lvalf)
            continue;
        size_t j0 = (size_t)L->rowptr[part[p]];
        size_t nj = (size_t)(L->rowptr[part[p + 1]] - L->rowptr[part[p]]);
        memcpy(s->valf + j0, Lvalf + j0, sizeof(float) * nj);
    }
    /* counted in the backend's memory in use like the CSR it replaces */
    if (s->valf)
        ks_be_track(be, s->valf, sizeof(float) * (size_t)L->nnz);
    *state = s;
    return KS_OK;
}

static ks_error csr_cpu_apply(ks_backend *be, void *state, double alpha, const double *x,
                              double beta, double *y)
{
    (void)be;
    const csr_cpu_state *s = state;
    const ks_int *restrict rowptr = s->A.rowptr;
    const ks_int *restrict colind = s->A.colind;
    const double *restrict val = s->A.val;
    const float *restrict valf = s->valf;
    const ks_int *part = s->part;
    const int nparts = s->nparts;
    const int64_t work = (int64_t)s->A.nnz + s->A.nrows;
    (void)work; /* only read by the OpenMP if clause */
    /* One part per thread when the team has nparts threads; any other team
     * size still covers every part. */
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) if (work > KS_CSR_SERIAL_WORK)
#endif
    for (int p = 0; p < nparts; p++) {
        for (ks_int i = part[p]; i < part[p + 1]; i++) {
            double sum = 0.0;
            for (ks_int j = rowptr[i]; j < rowptr[i + 1]; j++)
                sum += val_at(val, valf, j) * x[colind[j]];
            /* beta == 0 must not read y (it may be uninitialised or NaN). */
            y[i] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[i];
        }
    }
    return KS_OK;
}

/* Row i's k column sums of A X into sum; with xw the iterate is made from
 * X as the fused pass makes it (xs xw_c X(c, j), ks_fused_bx). Inlined
 * with k a constant for the common k (the column loop then unrolls and
 * vectorises; a NULL xw folds away). Each column's sum in the order apply
 * sums it. */
static inline __attribute__((always_inline)) void
row_sums(const csr_cpu_state *s, ks_int i, int k, const double *restrict X,
         const double *restrict xw, double xs, double *restrict sum)
{
    const ks_int *restrict rowptr = s->A.rowptr;
    const ks_int *restrict colind = s->A.colind;
    const double *restrict val = s->A.val;
    const float *restrict valf = s->valf;
    for (int c = 0; c < k; c++)
        sum[c] = 0.0;
    for (ks_int j = rowptr[i]; j < rowptr[i + 1]; j++) {
        const double a = val_at(val, valf, j);
        const double *restrict xr = X + (size_t)colind[j] * k;
        if (xw) {
            const double sc = xs * xw[colind[j]];
            for (int c = 0; c < k; c++)
                sum[c] += a * (sc * xr[c]);
        } else {
            for (int c = 0; c < k; c++)
                sum[c] += a * xr[c];
        }
    }
}

/* Rows [r0, r1) of the SpMM (f NULL) or of the fused block pass f
 * (fused.h, ks_fused_bload), k a constant where inlined, as row_sums. */
static inline __attribute__((always_inline)) void
block_rows(const csr_cpu_state *s, ks_int r0, ks_int r1, int k, double alpha,
           const double *restrict X, double beta, double *restrict Y, const ks_fused_step *f)
{
    for (ks_int i = r0; i < r1; i++) {
        double sum[KS_BLOCK_MAX_COLS];
        if (f) {
            row_sums(s, i, k, f->x, f->xw, f->xs, sum);
            for (int c = 0; c < k; c++) {
                const ks_fused_in in = ks_fused_bload(f, i, k, c);
                ks_fused_store(f, (ks_int)((size_t)i * (size_t)k + (size_t)c), &in, sum[c],
                               in.w);
            }
            continue;
        }
        row_sums(s, i, k, X, NULL, 0.0, sum);
        double *restrict yr = Y + (size_t)i * k;
        /* beta == 0 must not read Y */
        if (beta == 0.0)
            for (int c = 0; c < k; c++)
                yr[c] = alpha * sum[c];
        else
            for (int c = 0; c < k; c++)
                yr[c] = alpha * sum[c] + beta * yr[c];
    }
}

/* The SpMM or the fused block pass over the row parts: each row's entries
 * read once for the k columns of X (row-interleaved, so the k values of X
 * at a column index are contiguous). */
static void block_pass(const csr_cpu_state *s, int k, double alpha, const double *X,
                       double beta, double *Y, const ks_fused_step *f)
{
    const ks_int *part = s->part;
    const int nparts = s->nparts;
    const int64_t work = ((int64_t)s->A.nnz + s->A.nrows) * k;
    (void)work;
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) if (work > KS_CSR_SERIAL_WORK)
#endif
    for (int p = 0; p < nparts; p++) {
        const ks_int r0 = part[p], r1 = part[p + 1];
        switch (k) {
        case 1: block_rows(s, r0, r1, 1, alpha, X, beta, Y, f); break;
        case 2: block_rows(s, r0, r1, 2, alpha, X, beta, Y, f); break;
        case 4: block_rows(s, r0, r1, 4, alpha, X, beta, Y, f); break;
        case 8: block_rows(s, r0, r1, 8, alpha, X, beta, Y, f); break;
        case 16: block_rows(s, r0, r1, 16, alpha, X, beta, Y, f); break;
        default: block_rows(s, r0, r1, k, alpha, X, beta, Y, f); break;
        }
    }
}

static ks_error csr_cpu_spmm(ks_backend *be, void *state, int k, double alpha, const double *X,
                             double beta, double *Y)
{
    (void)be;
    block_pass(state, k, alpha, X, beta, Y, NULL);
    return KS_OK;
}

/* The fused pass on k columns: the SpMM's row sums, then each entry's
 * epilogue, so a column rounds as csr_cpu_fused_step rounds its vector. */
static ks_error csr_cpu_fused_block(ks_backend *be, void *state, int k, const ks_fused_step *f)
{
    (void)be;
    block_pass(state, k, 0.0, NULL, 0.0, NULL, f);
    return KS_OK;
}

/* The fused pass (fused.h): the row sum as in apply, then the row's
 * epilogue, so the residual is never stored when only the step needs it.
 * With xg (a distributed matrix's ghost block, format op fused_ghost) the
 * rows' share of that pass over the ghost values instead: rows without
 * entries are skipped, so a slab's ghost block costs its few rows. Inlined
 * with xg a constant, so each op gets its own loop. */
static inline __attribute__((always_inline)) void fused_rows(const csr_cpu_state *s,
                                                             const ks_fused_step *f,
                                                             const double *restrict xg)
{
    const ks_int *restrict rowptr = s->A.rowptr;
    const ks_int *restrict colind = s->A.colind;
    const double *restrict val = s->A.val;
    const float *restrict valf = s->valf;
    const double *restrict x = f->x;
    const ks_int *part = s->part;
    const int nparts = s->nparts;
    const int64_t work = (int64_t)s->A.nnz + s->A.nrows;
    (void)work;
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) if (work > KS_CSR_SERIAL_WORK)
#endif
    for (int p = 0; p < nparts; p++) {
        for (ks_int i = part[p]; i < part[p + 1]; i++) {
            double sum = 0.0;
            if (xg) {
                if (rowptr[i] == rowptr[i + 1])
                    continue;
                for (ks_int j = rowptr[i]; j < rowptr[i + 1]; j++)
                    sum += val_at(val, valf, j) * xg[colind[j]];
                ks_fused_ghost_store(f, i, sum);
                continue;
            }
            const ks_fused_in in = ks_fused_load(f, i, 1);
            if (f->xw) /* the iterate made from b (fused.h) */
                for (ks_int j = rowptr[i]; j < rowptr[i + 1]; j++)
                    sum += val_at(val, valf, j) * ks_fused_x(f, colind[j]);
            else
                for (ks_int j = rowptr[i]; j < rowptr[i + 1]; j++)
                    sum += val_at(val, valf, j) * x[colind[j]];
            ks_fused_store(f, i, &in, sum, in.w);
        }
    }
}

static ks_error csr_cpu_fused_step(ks_backend *be, void *state, const ks_fused_step *f)
{
    (void)be;
    fused_rows(state, f, NULL);
    return KS_OK;
}

static ks_error csr_cpu_fused_ghost(ks_backend *be, void *state, const double *xg,
                                   const ks_fused_step *f)
{
    (void)be;
    fused_rows(state, f, xg);
    return KS_OK;
}

/* Rows per Gauss-Seidel block. The blocks are fixed by the matrix alone (not
 * by the thread count), so a sweep gives the same x on any number of threads;
 * matrices up to this size get true (sequential) Gauss-Seidel. */
#define KS_GS_BLOCK_ROWS 4096

/* Hybrid Gauss-Seidel (hypre's "hybrid" relaxation): rows are split into
 * fixed blocks; inside a block rows are relaxed in order with the newest x,
 * columns outside the block use x from before the sweep (Jacobi across
 * blocks), so the blocks run in parallel without races. */
static ks_error csr_cpu_gs_sweep(ks_backend *be, void *state, const double *b, double *x,
                                 int reverse)
{
    (void)be;
    csr_cpu_state *s = state;
    const ks_int n = s->A.nrows;
    if (n == 0)
        return KS_OK;
    if (s->A.ncols != n)
        return ks_seterr(KS_ERR_SIZE, "Gauss-Seidel sweep: matrix is %ld x %ld, not square",
                         (long)n, (long)s->A.ncols);
    const ks_int nblocks = (n + KS_GS_BLOCK_ROWS - 1) / KS_GS_BLOCK_ROWS;
    if (nblocks > 1) {
        if (!s->xold) {
            s->xold = ks_malloc((size_t)n * sizeof(double), "Gauss-Seidel old x");
            if (!s->xold)
                return KS_ERR_MEMORY;
        }
        memcpy(s->xold, x, (size_t)n * sizeof(double));
    }
    const double *xold = nblocks > 1 ? s->xold : x;
    const ks_int *restrict rowptr = s->A.rowptr;
    const ks_int *restrict colind = s->A.colind;
    const double *restrict val = s->A.val;
    const float *restrict valf = s->valf;
    const int64_t work = (int64_t)s->A.nnz + n;
    (void)work;
    ks_int bad = -1; /* last row with a zero diagonal, if any (max: deterministic) */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (work > KS_CSR_SERIAL_WORK) reduction(max : bad)
#endif
    for (ks_int blk = 0; blk < nblocks; blk++) {
        const ks_int r0 = blk * KS_GS_BLOCK_ROWS;
        const ks_int r1 = r0 + KS_GS_BLOCK_ROWS < n ? r0 + KS_GS_BLOCK_ROWS : n;
        for (ks_int t = 0; t < r1 - r0; t++) {
            const ks_int i = reverse ? r1 - 1 - t : r0 + t;
            double sum = b[i], diag = 0.0;
            for (ks_int j = rowptr[i]; j < rowptr[i + 1]; j++) {
                const ks_int c = colind[j];
                if (c == i)
                    diag = val_at(val, valf, j);
                else
                    sum -= val_at(val, valf, j) * (c >= r0 && c < r1 ? x[c] : xold[c]);
            }
            if (diag == 0.0) {
                if (i > bad)
                    bad = i;
                continue;
            }
            x[i] = sum / diag;
        }
    }
    if (bad >= 0)
        return ks_seterr(KS_ERR_NUMERIC, "Gauss-Seidel sweep: zero diagonal in row %ld",
                         (long)bad);
    return KS_OK;
}

static void csr_cpu_destroy(ks_backend *be, void *state)
{
    csr_cpu_state *s = state;
    if (s && s->valf)
        ks_be_untrack(be, s->valf);
    free_state(s);
}

/* The matrix's CSR is borrowed: only the float32 copy is the state's own
 * (the row parts and the sweep's scratch are O(threads) and O(rows)). */
static double csr_cpu_state_bytes(const void *state)
{
    const csr_cpu_state *s = state;
    return s->valf ? 4.0 * (double)s->A.nnz : 0.0;
}

/* With float32 values the state reads valf alone. */
static int csr_cpu_reads_values(const void *state)
{
    return ((const csr_cpu_state *)state)->valf == NULL;
}

const ks_spmv_format_ops ks_format_csr_cpu = {
    .name = "csr",
    .backend = KS_BACKEND_CPU,
    .description = "CSR, OpenMP threads over row ranges of equal nonzero count",
    .layout_build = ks_csr_layout_build,
    .layout_apply = ks_csr_layout_apply,
    .layout_bytes = ks_csr_layout_bytes,
    .layout_free = ks_csr_layout_free,
    .layout_to_csr = ks_csr_layout_to_csr,
    .setup = csr_cpu_setup,
    .apply = csr_cpu_apply,
    .destroy = csr_cpu_destroy,
    .gs_sweep = csr_cpu_gs_sweep,
    .fused_step = csr_cpu_fused_step,
    .float_values = 1,
    .state_bytes = csr_cpu_state_bytes,
    .reads_values = csr_cpu_reads_values,
    .spmm = csr_cpu_spmm,
    .fused_block = csr_cpu_fused_block,
    .fused_ghost = csr_cpu_fused_ghost,
};
