/* Strength of connection: the classical (Ruge-Stueben, hypre sign
 * convention) and the symmetric (aggregation) measures, the transpose of a
 * pattern, and its structure check. Each builder counts strong entries per
 * row, takes the prefix sum, then fills: row-parallel and deterministic,
 * and the rows come out sorted because A's rows are. */
#include "coarsen_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

void ks_strength_free(ks_strength *S)
{
    if (!S)
        return;
    free(S->rowptr);
    free(S->colind);
    memset(S, 0, sizeof *S);
}

/* A's shape and row pointer ends (square). */
static ks_error check_shape(const ks_csr *A, const char *who)
{
    if (!A)
        return ks_seterr(KS_ERR_ARG, "%s: NULL matrix", who);
    if (A->nrows < 0 || A->nnz < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return ks_seterr(KS_ERR_ARG, "%s: matrix is not allocated or has a negative size", who);
    if (A->nrows != A->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: matrix is %" PRId32 " x %" PRId32 ", expected square",
                         who, A->nrows, A->ncols);
    if (A->rowptr[0] != 0 || A->rowptr[A->nrows] != A->nnz)
        return ks_seterr(KS_ERR_ARG, "%s: row pointers span [%" PRId32 ", %" PRId32
                         "], expected [0, nnz = %" PRId32 "]", who, A->rowptr[0],
                         A->rowptr[A->nrows], A->nnz);
    return KS_OK;
}

/* The first row of A whose pointers decrease or whose columns leave
 * [0, ncols); A->nrows when none. */
static ks_int first_bad_row(const ks_csr *A, ks_int ncols)
{
    ks_int n = A->nrows, bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (ks_int i = 0; i < n; i++) {
        int ok = A->rowptr[i] <= A->rowptr[i + 1];
        for (ks_int k = A->rowptr[i]; ok && k < A->rowptr[i + 1]; k++)
            ok = A->colind[k] >= 0 && A->colind[k] < ncols;
        if (!ok && i < bad)
            bad = i;
    }
    return bad;
}

static ks_error check_rows(const ks_csr *A, const char *who)
{
    const ks_int bad = first_bad_row(A, A->nrows);
    if (bad < A->nrows)
        return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 " has decreasing row pointers or a "
                         "column index outside [0, %" PRId32 ")", who, bad, A->nrows);
    return KS_OK;
}

static ks_error check_csr(const ks_csr *A, const char *who)
{
    KS_TRY(check_shape(A, who));
    return check_rows(A, who);
}

ks_error ks_strength_check(const ks_strength *S, const char *who)
{
    if (!S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL strength pattern", who);
    ks_int n = S->n;
    if (n < 0 || !S->rowptr || (S->rowptr[n] > 0 && !S->colind))
        return ks_seterr(KS_ERR_ARG, "%s: strength pattern is not allocated or has a negative "
                         "size", who);
    if (S->rowptr[0] != 0)
        return ks_seterr(KS_ERR_ARG, "%s: strength pattern row pointers start at %" PRId32,
                         who, S->rowptr[0]);
    ks_int bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (ks_int i = 0; i < n; i++) {
        int ok = S->rowptr[i] <= S->rowptr[i + 1];
        for (ks_int k = S->rowptr[i]; ok && k < S->rowptr[i + 1]; k++)
            ok = S->colind[k] >= 0 && S->colind[k] < n && S->colind[k] != i;
        if (!ok && i < bad)
            bad = i;
    }
    if (bad < n)
        return ks_seterr(KS_ERR_ARG, "%s: strength row %" PRId32 " has decreasing row pointers, "
                         "a column outside [0, %" PRId32 ") or its own index", who, bad, n);
    return KS_OK;
}

/* Rows hold counts at rowptr[i+1]; turn them into offsets and allocate
 * colind. */
static ks_error finish_counts(ks_strength *S, const char *who)
{
    ks_rowptr_scan(S->rowptr, S->n); /* a row's count is at most n */
    S->colind = ks_malloc((size_t)S->rowptr[S->n] * sizeof *S->colind, who);
    return S->colind ? KS_OK : KS_ERR_MEMORY;
}

static ks_error start_pattern(ks_strength *S, ks_int n, const char *who)
{
    S->n = n;
    S->rowptr = ks_calloc((size_t)n + 1, sizeof *S->rowptr, who);
    return S->rowptr ? KS_OK : KS_ERR_MEMORY;
}

/* ------------------------------------------------------------ classical */

/* The row functions run once a row inside the parallel loops of both
 * builders: inlined there (out of line, the row's view goes through
 * memory, about a tenth of the strength's time). */
#if defined(__GNUC__)
#define ROW_FN static inline __attribute__((always_inline))
#else
#define ROW_FN static inline
#endif

/* One row's entries for the classical rule, in up to two blocks of
 * columns: the owned block (the diagonal is its column `self`) and a
 * ghost block (never the diagonal) of a distributed matrix, whose first
 * `split` entries precede the owned ones in the global column order and
 * the rest follow. A matrix of one process has no ghost block (ng = 0). */
typedef struct classical_row {
    const double *lv, *gv;
    const ks_int *lc, *gc;
    ks_int nl, ng, split, self;
} classical_row;

ROW_FN classical_row row_of_csr(const ks_csr *A, ks_int i)
{
    const ks_int k0 = A->rowptr[i];
    classical_row r = {A->val + k0, NULL, A->colind + k0, NULL, A->rowptr[i + 1] - k0, 0, 0, i};
    return r;
}

/* Row i of the blocks L and G (may be NULL); G's columns below nbelow lie
 * below the rank's rows (a row's columns ascend, so they are a prefix). */
ROW_FN classical_row row_of_blocks(const ks_csr *L, const ks_csr *G, ks_int nbelow, ks_int i)
{
    classical_row r = row_of_csr(L, i);
    if (G) {
        const ks_int k0 = G->rowptr[i];
        r.gv = G->val + k0;
        r.gc = G->colind + k0;
        r.ng = G->rowptr[i + 1] - k0;
        while (r.split < r.ng && r.gc[r.split] < nbelow)
            r.split++;
    }
    return r;
}

/* The row's threshold: strong entries are the j != i with v = -s a_ij > 0
 * and v >= *cut, s = sign(a_ii) with a zero (or missing) diagonal counted
 * as positive, as hypre does (only the sign is used, so nothing divides).
 * The row sum is added in global column order (ghosts below, owned
 * columns, ghosts above): a distributed row's max_row_sum test sees the
 * serial loop's bits. Returns 0 when the row has no strong entries. */
ROW_FN int classical_cut(const classical_row *r, double theta, double max_row_sum,
                         double *s_out, double *cut)
{
    double diag = 0.0, rowsum = 0.0, scale = 0.0;
    for (ks_int k = 0; k < r->split; k++)
        rowsum += r->gv[k];
    for (ks_int k = 0; k < r->nl; k++) {
        rowsum += r->lv[k];
        if (r->lc[k] == r->self)
            diag += r->lv[k];
    }
    for (ks_int k = r->split; k < r->ng; k++)
        rowsum += r->gv[k];
    const double s = diag < 0.0 ? -1.0 : 1.0;
    /* a maximum: the order of the blocks does not matter */
    for (ks_int k = 0; k < r->nl; k++)
        if (r->lc[k] != r->self && -s * r->lv[k] > scale)
            scale = -s * r->lv[k];
    for (ks_int k = 0; k < r->ng; k++)
        if (-s * r->gv[k] > scale)
            scale = -s * r->gv[k];
    /* Nothing of the right sign, or a row far from a zero row sum (hypre's
     * max_row_sum: such rows are nearly diagonal and need no coarse help). */
    if (!(scale > 0.0) || (max_row_sum < 1.0 && fabs(rowsum) > max_row_sum * fabs(diag)))
        return 0;
    *s_out = s;
    *cut = theta * scale;
    return 1;
}

/* The strong entries of one block (skip: the diagonal's column, or -1)
 * for sign s and threshold cut, written to out when non-NULL; returns
 * their count. */
static ks_int classical_pick(const double *v, const ks_int *c, ks_int n, ks_int skip, double s,
                             double cut, ks_int *out)
{
    ks_int cnt = 0;
    for (ks_int k = 0; k < n; k++) {
        const double w = -s * v[k];
        if (c[k] != skip && w > 0.0 && w >= cut) {
            if (out)
                out[cnt] = c[k];
            cnt++;
        }
    }
    return cnt;
}

static ks_error check_rule(double theta, double max_row_sum, const char *who)
{
    if (!(theta >= 0.0 && theta <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: strength_threshold = %g, expected a value in [0, 1]",
                         who, theta);
    if (!(max_row_sum > 0.0 && max_row_sum <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: max_row_sum = %g, expected a value in (0, 1] "
                         "(1 disables the test)", who, max_row_sum);
    return KS_OK;
}

ks_error ks_amg_strength_classical(const ks_csr *A, double theta, double max_row_sum,
                                   ks_strength *S)
{
    static const char who[] = "ks_amg_strength_classical";
    if (!S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(S, 0, sizeof *S);
    KS_TRY(check_rule(theta, max_row_sum, who));
    KS_TRY(check_csr(A, who));
    ks_int n = A->nrows;
    KS_TRY(start_pattern(S, n, "strength row pointers"));
    /* Pass 1 keeps each row's sign and threshold, so pass 2 only filters. */
    double *rs = ks_malloc(2 * ((size_t)n + 1) * sizeof *rs, "strength row thresholds");
    if (!rs) {
        ks_strength_free(S);
        return KS_ERR_MEMORY;
    }
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        const classical_row r = row_of_csr(A, i);
        double sg = 1.0, cut = 0.0;
        ks_int c = 0;
        if (classical_cut(&r, theta, max_row_sum, &sg, &cut))
            c = classical_pick(r.lv, r.lc, r.nl, i, sg, cut, NULL);
        rs[2 * (size_t)i] = sg;
        rs[2 * (size_t)i + 1] = cut;
        S->rowptr[i + 1] = c;
    }
    ks_error e = finish_counts(S, "strength columns");
    if (e != KS_OK) {
        free(rs);
        ks_strength_free(S);
        return e;
    }
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++)
        if (S->rowptr[i + 1] > S->rowptr[i]) {
            const classical_row r = row_of_csr(A, i);
            classical_pick(r.lv, r.lc, r.nl, i, rs[2 * (size_t)i], rs[2 * (size_t)i + 1],
                           S->colind + S->rowptr[i]);
        }
    free(rs);
    return KS_OK;
}

/* The blocks' shapes (check_csr's rules with G's own column count); their
 * rows too unless the caller knows them good. */
static ks_error check_blocks(const ks_csr *L, const ks_csr *G, ks_int nbelow, int rows,
                             const char *who)
{
    KS_TRY(check_shape(L, who));
    if (rows)
        KS_TRY(check_rows(L, who));
    if (!G)
        return nbelow == 0 ? KS_OK
                           : ks_seterr(KS_ERR_ARG, "%s: %" PRId32 " ghost columns below the "
                                       "rows, but no ghost block", who, nbelow);
    if (G->nrows != L->nrows || G->ncols < 0 || G->nnz < 0 || !G->rowptr ||
        (G->nnz > 0 && (!G->colind || !G->val)))
        return ks_seterr(KS_ERR_ARG, "%s: the ghost block is not allocated or does not have "
                         "the owned block's %" PRId32 " rows", who, L->nrows);
    if (nbelow < 0 || nbelow > G->ncols)
        return ks_seterr(KS_ERR_ARG, "%s: %" PRId32 " ghost columns below the rows, expected "
                         "0 to %" PRId32, who, nbelow, G->ncols);
    if (G->rowptr[0] != 0 || G->rowptr[G->nrows] != G->nnz)
        return ks_seterr(KS_ERR_ARG, "%s: ghost row pointers span [%" PRId32 ", %" PRId32
                         "], expected [0, nnz = %" PRId32 "]", who, G->rowptr[0],
                         G->rowptr[G->nrows], G->nnz);
    const ks_int bad = rows ? first_bad_row(G, G->ncols) : G->nrows;
    if (bad < G->nrows)
        return ks_seterr(KS_ERR_ARG, "%s: ghost row %" PRId32 " has decreasing row pointers or "
                         "a column index outside [0, %" PRId32 ")", who, bad, G->ncols);
    return KS_OK;
}

static ks_error classical_blocks(const ks_csr *L, const ks_csr *G, ks_int nbelow, double theta,
                                 double max_row_sum, int check, ks_strength *SL,
                                 ks_strength *SG)
{
    static const char who[] = "ks_amg_strength_classical_blocks";
    if (!SL || !SG || SL == SG)
        return ks_seterr(KS_ERR_ARG, "%s: %s", who, SL && SG ? "one output for both blocks"
                                                             : "NULL output");
    memset(SL, 0, sizeof *SL);
    memset(SG, 0, sizeof *SG);
    KS_TRY(check_rule(theta, max_row_sum, who));
    KS_TRY(check_blocks(L, G, nbelow, check, who));
    const ks_int n = L->nrows;
    ks_error e = start_pattern(SL, n, "strength row pointers");
    if (e == KS_OK)
        e = start_pattern(SG, n, "strength ghost row pointers");
    double *rs = e == KS_OK ? ks_malloc(2 * ((size_t)n + 1) * sizeof *rs,
                                        "strength row thresholds")
                            : NULL;
    if (!rs) {
        ks_strength_free(SL);
        ks_strength_free(SG);
        return e == KS_OK ? KS_ERR_MEMORY : e;
    }
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        const classical_row r = row_of_blocks(L, G, nbelow, i);
        double s = 1.0, cut = 0.0;
        ks_int cl = 0, cg = 0;
        if (classical_cut(&r, theta, max_row_sum, &s, &cut)) {
            cl = classical_pick(r.lv, r.lc, r.nl, i, s, cut, NULL);
            cg = classical_pick(r.gv, r.gc, r.ng, -1, s, cut, NULL);
        }
        rs[2 * (size_t)i] = s;
        rs[2 * (size_t)i + 1] = cut;
        SL->rowptr[i + 1] = cl;
        SG->rowptr[i + 1] = cg;
    }
    /* a row's counts are at most n and G's column count */
    e = finish_counts(SL, "strength columns");
    if (e == KS_OK)
        e = finish_counts(SG, "strength ghost columns");
    if (e != KS_OK) {
        free(rs);
        ks_strength_free(SL);
        ks_strength_free(SG);
        return e;
    }
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        if (SL->rowptr[i + 1] == SL->rowptr[i] && SG->rowptr[i + 1] == SG->rowptr[i])
            continue;
        const classical_row r = row_of_blocks(L, G, nbelow, i);
        const double s = rs[2 * (size_t)i], cut = rs[2 * (size_t)i + 1];
        classical_pick(r.lv, r.lc, r.nl, i, s, cut, SL->colind + SL->rowptr[i]);
        classical_pick(r.gv, r.gc, r.ng, -1, s, cut, SG->colind + SG->rowptr[i]);
    }
    free(rs);
    return KS_OK;
}

ks_error ks_amg_strength_classical_blocks(const ks_csr *L, const ks_csr *G, ks_int nbelow,
                                          double theta, double max_row_sum, ks_strength *SL,
                                          ks_strength *SG)
{
    return classical_blocks(L, G, nbelow, theta, max_row_sum, 1, SL, SG);
}

ks_error ks_amg_strength_classical_blocks_valid(const ks_csr *L, const ks_csr *G, ks_int nbelow,
                                                double theta, double max_row_sum,
                                                ks_strength *SL, ks_strength *SG)
{
    return classical_blocks(L, G, nbelow, theta, max_row_sum, 0, SL, SG);
}

/* ------------------------------------------------------------ symmetric */

static ks_int symmetric_row(const ks_csr *A, ks_int i, double theta, const double *sqd,
                            ks_int *out)
{
    ks_int cnt = 0;
    for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
        ks_int j = A->colind[k];
        double a = fabs(A->val[k]);
        /* sqrt of each diagonal separately: a_ii * a_jj could overflow. */
        if (j != i && a > 0.0 && a >= theta * sqd[i] * sqd[j]) {
            if (out)
                out[cnt] = j;
            cnt++;
        }
    }
    return cnt;
}

ks_error ks_amg_strength_symmetric(const ks_csr *A, double theta, ks_strength *S)
{
    static const char who[] = "ks_amg_strength_symmetric";
    if (!S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(S, 0, sizeof *S);
    if (!(theta >= 0.0 && theta <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: strength_threshold = %g, expected a value in [0, 1]",
                         who, theta);
    KS_TRY(check_csr(A, who));
    ks_int n = A->nrows, zero = n;
    double *sqd = ks_malloc((size_t)n * sizeof *sqd, "sqrt|diag|");
    if (!sqd)
        return KS_ERR_MEMORY;
#pragma omp parallel for schedule(static) reduction(min : zero)
    for (ks_int i = 0; i < n; i++) {
        double d = 0.0;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i)
                d += A->val[k];
        sqd[i] = sqrt(fabs(d));
        if (d == 0.0 && i < zero)
            zero = i;
    }
    if (zero < n) {
        free(sqd);
        return ks_seterr(KS_ERR_NUMERIC, "%s: zero diagonal at row %" PRId32
                         " (the symmetric measure divides by sqrt|a_ii a_jj|)", who, zero);
    }
    ks_error e = start_pattern(S, n, "strength row pointers");
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int i = 0; i < n; i++)
            S->rowptr[i + 1] = symmetric_row(A, i, theta, sqd, NULL);
        e = finish_counts(S, "strength columns");
    }
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int i = 0; i < n; i++)
            symmetric_row(A, i, theta, sqd, S->colind + S->rowptr[i]);
    } else {
        ks_strength_free(S);
    }
    free(sqd);
    return e;
}

/* ------------------------------------------------------------ transpose */

/* Below this many entries one block (serial) beats the extra histogram
 * pass and fork/join. */
#define KS_STRENGTH_TRANSPOSE_PAR_NNZ 32768

/* Counting sort by column, rows cut into nb contiguous blocks with one
 * column histogram each (as in transpose.c): blocks and the rows inside a
 * block go in ascending order, so every transposed row comes out sorted and
 * the same for any nb. nb is one per thread, fewer when the histograms
 * would outweigh the pattern. A block's histogram spans only the columns
 * its rows reach (on a mesh about its own rows: the histograms together
 * about n counters, not nb * n to clear and walk); blocks reaching too
 * far (a matrix in no useful order) count over all columns. */
ks_error ks_strength_transpose_room(const ks_strength *S, const ks_int *room, ks_strength *ST)
{
    memset(ST, 0, sizeof *ST);
    const ks_int n = S->n, nnz = S->rowptr[n];
    KS_TRY(start_pattern(ST, n, "transposed strength row pointers"));
    const size_t extra = room ? (size_t)room[n] : 0;
    ST->colind = ks_malloc(((size_t)nnz + extra + 1) * sizeof *ST->colind,
                           "transposed strength columns");
    if (!ST->colind) {
        ks_strength_free(ST);
        return KS_ERR_MEMORY;
    }
    int nb = 1;
#ifdef _OPENMP
    if (nnz > KS_STRENGTH_TRANSPOSE_PAR_NNZ) {
        const int64_t cap = (int64_t)nnz / ((int64_t)n + 1);
        nb = omp_get_max_threads();
        if (cap < nb)
            nb = cap < 1 ? 1 : (int)cap;
    }
#endif
    /* block b's columns lo[b] .. hi[b] - 1, its counters at off[b] */
    int64_t *win = ks_malloc(3 * (size_t)nb * sizeof *win, "strength transpose blocks");
    if (!win) {
        ks_strength_free(ST);
        return KS_ERR_MEMORY;
    }
    int64_t *lo = win, *hi = win + nb, *off = win + 2 * nb;
#pragma omp parallel for schedule(static) num_threads(nb) if (nb > 1)
    for (int b = 0; b < nb; b++) {
        const ks_int r0 = (ks_int)((int64_t)n * b / nb), r1 = (ks_int)((int64_t)n * (b + 1) / nb);
        ks_int a = n, z = -1;
        for (ks_int k = nb > 1 ? S->rowptr[r0] : 0; nb > 1 && k < S->rowptr[r1]; k++) {
            a = S->colind[k] < a ? S->colind[k] : a;
            z = S->colind[k] > z ? S->colind[k] : z;
        }
        lo[b] = nb > 1 ? (z < 0 ? 0 : a) : 0;
        hi[b] = nb > 1 ? (z < 0 ? 0 : z + 1) : n;
    }
    int64_t total = 0;
    for (int b = 0; b < nb; b++)
        total += hi[b] - lo[b];
    if (total > 2 * (int64_t)n + 65536) { /* far-reaching blocks: whole histograms */
        for (int b = 0; b < nb; b++) {
            lo[b] = 0;
            hi[b] = n;
        }
        total = (int64_t)nb * n;
    }
    for (int b = 0; b < nb; b++)
        off[b] = b ? off[b - 1] + (hi[b - 1] - lo[b - 1]) : 0;
    ks_int *hist = ks_malloc((size_t)total * sizeof *hist + 1, "strength transpose histograms");
    if (!hist) {
        free(win);
        ks_strength_free(ST);
        return KS_ERR_MEMORY;
    }
    ks_int *trp = ST->rowptr;
#pragma omp parallel num_threads(nb) if (nb > 1)
    {
#pragma omp for schedule(static)
        for (int b = 0; b < nb; b++) {
            const ks_int r0 = (ks_int)((int64_t)n * b / nb), r1 = (ks_int)((int64_t)n * (b + 1) / nb);
            ks_int *h = hist + off[b];
            const ks_int c0 = (ks_int)lo[b];
            memset(h, 0, (size_t)(hi[b] - lo[b]) * sizeof *h);
            for (ks_int k = S->rowptr[r0]; k < S->rowptr[r1]; k++)
                h[S->colind[k] - c0]++;
        }
        /* Per column: block counts -> offsets within the column. */
#pragma omp for schedule(static)
        for (ks_int c = 0; c < n; c++) {
            ks_int run = 0;
            for (int b = 0; b < nb; b++) {
                if (c < lo[b] || c >= hi[b])
                    continue;
                ks_int *h = hist + off[b] + (c - lo[b]);
                const ks_int t = *h;
                *h = run;
                run += t;
            }
            trp[c + 1] = run + (room ? room[c + 1] - room[c] : 0);
        }
    }
    trp[0] = 0;
    ks_rowptr_scan(trp, n); /* at most nnz + room[n] */
#pragma omp parallel for schedule(static) num_threads(nb) if (nb > 1)
    for (int b = 0; b < nb; b++) {
        const ks_int r0 = (ks_int)((int64_t)n * b / nb), r1 = (ks_int)((int64_t)n * (b + 1) / nb);
        ks_int *h = hist + off[b];
        const ks_int c0 = (ks_int)lo[b];
        for (ks_int i = r0; i < r1; i++)
            for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++) {
                const ks_int c = S->colind[k];
                ST->colind[trp[c] + h[c - c0]++] = i;
            }
    }
    free(hist);
    free(win);
    return KS_OK;
}

ks_error ks_strength_transpose_unchecked(const ks_strength *S, ks_strength *ST)
{
    return ks_strength_transpose_room(S, NULL, ST);
}

ks_error ks_strength_transpose(const ks_strength *S, ks_strength *ST)
{
    static const char who[] = "ks_strength_transpose";
    if (!ST || ST == S)
        return ks_seterr(KS_ERR_ARG, "%s: %s", who, ST ? "output is the input" : "NULL output");
    memset(ST, 0, sizeof *ST);
    KS_TRY(ks_strength_check(S, who));
    return ks_strength_transpose_unchecked(S, ST);
}
