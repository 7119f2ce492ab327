/* Direct interpolation ("D1", hypre interp_type 3) and the row-parallel
 * assembler shared with extended+i (interp_common.h).
 *
 * Direct interpolation (Stueben, "Algebraic multigrid: an introduction with
 * applications", in Trottenberg et al., Multigrid, 2001, A.7.2.1): for an F
 * point i with strong C neighbours P_i = C_i^s, positive and negative
 * couplings are interpolated separately,
 *     w_ij = -alpha_i a_ij / d_i   (a_ij < 0),
 *     w_ij = -beta_i  a_ij / d_i   (a_ij > 0),
 *     alpha_i = sum_{k != i} a_ik^- / sum_{k in P_i} a_ik^-,
 *     beta_i  = sum_{k != i} a_ik^+ / sum_{k in P_i} a_ik^+,
 * where d_i = a_ii, except that a sign with no coupling in P_i cannot be
 * interpolated and its off-diagonal sum is added to the diagonal instead
 * (Stueben's rule for the positive part; applied to either sign, which only
 * matters for rows with a_ii < 0). With zero row sums this gives
 * sum_j w_ij = 1, i.e. constants are interpolated exactly. */
#include "interp_common.h"
#include "../../core/row_sort.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* ------------------------------------------------------------ assembler */

int ks_interp_grow(ks_interp_ws *ws, size_t extra)
{
    if (ws->len + extra <= ws->cap)
        return KS_INTERP_ROW_OK;
    /* Markers hold buffer positions as ks_int, and P's nnz is 32-bit anyway. */
    if (ws->len + extra > (size_t)INT32_MAX)
        return KS_INTERP_ROW_TOO_BIG;
    size_t cap = ws->cap ? ws->cap : 64;
    while (cap < ws->len + extra)
        cap *= 2;
    ks_interp_entry *b = realloc(ws->buf, cap * sizeof *b);
    if (!b)
        return KS_INTERP_ROW_NOMEM;
    ws->buf = b;
    ws->cap = cap;
    return KS_INTERP_ROW_OK;
}

int ks_interp_scratch_grow(ks_interp_ws *ws, size_t m)
{
    if (m <= ws->tcap)
        return KS_INTERP_ROW_OK;
    size_t cap = ws->tcap ? ws->tcap : 64;
    while (cap < m)
        cap *= 2;
    free(ws->tpos);
    free(ws->tval);
    ws->tpos = malloc(cap * sizeof *ws->tpos);
    ws->tval = malloc(cap * sizeof *ws->tval);
    ws->tcap = ws->tpos && ws->tval ? cap : 0;
    return ws->tcap ? KS_INTERP_ROW_OK : KS_INTERP_ROW_NOMEM;
}

/* Rows of distinct columns, sorted by core/row_sort.h's one sort (long
 * distance-two rows make qsort's callback per comparison dominate). */
#define ENTRY_COL(x) ((x).col)
KS_ROW_SORT_DEFINE(sort_row, ks_interp_entry, ENTRY_COL)

/* Compact rows of extended+i (see ks_interp_ctx). */
typedef struct parts {
    double *diag;
    ks_int *sc_rp, *sc_ci, *ac_rp, *ac_ci;
    double *ac_va;
    ks_csr ft;
} parts;

static void parts_free(parts *q)
{
    free(q->diag);
    free(q->sc_rp);
    free(q->sc_ci);
    free(q->ac_rp);
    free(q->ac_ci);
    free(q->ac_va);
    ks_csr_free(&q->ft);
}

/* Counts at rp[i + 1] -> offsets, in 64 bits (the total must fit ks_int). */
static ks_error counts_to_offsets(ks_int *rp, ks_int n, const char *who, const char *what)
{
    if (ks_rowptr_scan(rp, n) > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "%s: %s pass 2^31 entries", who, what);
    return KS_OK;
}

/* a_kl has the sign ahat keeps in row k (opposite to a_kk; a_kk >= 0 counts
 * as positive; zeros never). */
static inline int ahat_sign(double a_kk, double v)
{
    return a_kk < 0 ? v > 0 : v < 0;
}

/* Shapes and pointers of the inputs. */
static ks_error check_shapes(const char *who, const ks_csr *A, const ks_strength *S,
                             const int *cf, const ks_csr *P)
{
    if (!A || !S || !cf || !P)
        return ks_seterr(KS_ERR_ARG, "%s: NULL %s", who,
                         !A ? "matrix" : !S ? "strength" : !cf ? "C/F splitting" : "output");
    if (A->nrows < 0 || A->nrows != A->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: matrix is %" PRId32 " x %" PRId32 ", must be square",
                         who, A->nrows, A->ncols);
    if (S->n != A->nrows)
        return ks_seterr(KS_ERR_SIZE, "%s: strength has %" PRId32 " rows, matrix %" PRId32, who,
                         S->n, A->nrows);
    const ks_int n = A->nrows;
    if (!A->rowptr || !S->rowptr || (A->rowptr[n] > 0 && (!A->colind || !A->val)) ||
        (S->rowptr[n] > 0 && !S->colind))
        return ks_seterr(KS_ERR_ARG, "%s: matrix or strength arrays not allocated", who);
    return KS_OK;
}

/* One pass over the rows: structure (a bad index would read out of bounds
 * later; the message names the first bad row), a_ii into diag (when not
 * NULL), and the number of strong F-F pairs (i F, k in S_i F) into *nff
 * (when not NULL). */
static ks_error scan_rows(const char *who, const ks_csr *A, const ks_strength *S, const int *cf,
                          double *diag, int64_t *nff, int64_t *nused)
{
    const ks_int n = A->nrows;
    ks_int bad = n;
    int64_t ff = 0, used = 0;
#pragma omp parallel for schedule(static) reduction(min : bad) reduction(+ : ff, used)
    for (ks_int i = 0; i < n; i++) {
        const ks_int a0 = A->rowptr[i], a1 = A->rowptr[i + 1];
        used += a1 > a0;
        const ks_int s0 = S->rowptr[i], s1 = S->rowptr[i + 1];
        int ok = a0 <= a1 && s0 <= s1;
        ks_int dpos = -1;
        for (ks_int k = a0; ok && k < a1; k++) {
            const ks_int j = A->colind[k];
            ok = j >= 0 && j < n && (k == a0 || j > A->colind[k - 1]);
            if (j == i)
                dpos = k;
        }
        for (ks_int k = s0; ok && k < s1; k++) {
            const ks_int j = S->colind[k];
            ok = j >= 0 && j < n && j != i && (k == s0 || j > S->colind[k - 1]);
        }
        if (!ok) {
            if (i < bad)
                bad = i;
            continue;
        }
        if (diag)
            diag[i] = dpos >= 0 ? A->val[dpos] : 0.0;
        if (nff && cf[i] != KS_CPT)
            for (ks_int k = s0; k < s1; k++)
                ff += cf[S->colind[k]] != KS_CPT;
    }
    if (bad < n)
        return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 " of the matrix or strength has a "
                         "decreasing row pointer or an unsorted, repeated, diagonal (strength) "
                         "or out-of-range column", who, bad);
    if (nff)
        *nff = ff;
    *nused = used;
    return KS_OK;
}

/* Compact rows of F points for extended+i (see ks_interp_ctx). The rows
 * are cut into nb contiguous blocks (one per thread, fewer when the
 * per-block column histograms would outweigh the matrix); pass 1 counts the
 * sc and ac rows and each block's histogram of F-F columns, pass 2 turns the
 * histograms into offsets, pass 3 fills sc and ac in row order and scatters
 * the F-F couplings into ft (a stable counting sort by column: since blocks
 * and the rows inside a block go in ascending order, every row of ft is
 * sorted, whatever nb). Needs q->diag. */
static ks_error build_compact(const char *who, const ks_csr *A, const ks_strength *S,
                              const int *cf, parts *q)
{
    const ks_int n = A->nrows;
    const size_t n1 = (size_t)n + 1;
    const double *diag = q->diag;
    ks_csr *ft = &q->ft;
    int nb = 1;
#ifdef _OPENMP
    nb = omp_get_max_threads();
#endif
    const int64_t cap = (int64_t)A->nnz / (2 * (int64_t)n1) + 1;
    if (nb > cap)
        nb = (int)cap;
    q->sc_rp = ks_malloc(n1 * sizeof *q->sc_rp, "interpolation strong C rows");
    q->ac_rp = ks_malloc(n1 * sizeof *q->ac_rp, "interpolation C coupling rows");
    ft->rowptr = ks_malloc(n1 * sizeof *ft->rowptr, "interpolation F coupling rows");
    /* block b's histogram spans the columns its rows reach, c0[b] ..
     * c1[b] - 1 (rows are sorted: their first and last columns), at
     * off[b]; on a mesh about the block's own rows, so the histograms
     * together hold about n counters, not nb * n to clear and walk. Blocks
     * reaching too far count over all columns. */
    int64_t *win = ks_malloc(3 * (size_t)nb * sizeof *win, "interpolation F coupling blocks");
    if (!q->sc_rp || !q->ac_rp || !ft->rowptr || !win) {
        free(win);
        return KS_ERR_MEMORY;
    }
    int64_t *c0 = win, *c1 = win + nb, *off = win + 2 * nb;
#pragma omp parallel for schedule(static, 1) num_threads(nb)
    for (int b = 0; b < nb; b++) {
        const ks_int lo = (ks_int)((int64_t)n * b / nb), hi = (ks_int)((int64_t)n * (b + 1) / nb);
        ks_int a = n, z = -1;
        for (ks_int i = lo; i < hi; i++)
            if (A->rowptr[i + 1] > A->rowptr[i]) {
                a = A->colind[A->rowptr[i]] < a ? A->colind[A->rowptr[i]] : a;
                z = A->colind[A->rowptr[i + 1] - 1] > z ? A->colind[A->rowptr[i + 1] - 1] : z;
            }
        c0[b] = z < 0 ? 0 : a;
        c1[b] = z < 0 ? 0 : z + 1;
    }
    int64_t total = 0;
    for (int b = 0; b < nb; b++)
        total += c1[b] - c0[b];
    if (total > 2 * (int64_t)n + 65536) {
        for (int b = 0; b < nb; b++) {
            c0[b] = 0;
            c1[b] = n;
        }
        total = (int64_t)nb * n;
    }
    for (int b = 0; b < nb; b++)
        off[b] = b ? off[b - 1] + (c1[b - 1] - c0[b - 1]) : 0;
    ks_int *hist = ks_malloc((size_t)total * sizeof *hist + 1, "interpolation F coupling counts");
    if (!hist) {
        free(win);
        return KS_ERR_MEMORY;
    }
#pragma omp parallel for schedule(static, 1) num_threads(nb)
    for (int b = 0; b < nb; b++) {
        const ks_int lo = (ks_int)((int64_t)n * b / nb), hi = (ks_int)((int64_t)n * (b + 1) / nb);
        ks_int *h = hist + off[b];
        const ks_int j0 = (ks_int)c0[b];
        memset(h, 0, (size_t)(c1[b] - c0[b]) * sizeof *h);
        for (ks_int i = lo; i < hi; i++) {
            ks_int ns = 0, na = 0;
            if (cf[i] != KS_CPT) {
                for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++)
                    ns += cf[S->colind[k]] == KS_CPT;
                for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                    const ks_int j = A->colind[k];
                    if (j != i && ahat_sign(diag[i], A->val[k])) {
                        if (cf[j] == KS_CPT)
                            na++;
                        else
                            h[j - j0]++;
                    }
                }
            }
            q->sc_rp[i + 1] = ns;
            q->ac_rp[i + 1] = na;
        }
    }
    /* Per column: block counts -> offsets within the column; totals to the
     * row counts of ft. */
#pragma omp parallel for schedule(static)
    for (ks_int j = 0; j < n; j++) {
        ks_int run = 0;
        for (int b = 0; b < nb; b++) {
            if (j < c0[b] || j >= c1[b])
                continue;
            ks_int *h = hist + off[b] + (j - c0[b]);
            const ks_int t = *h;
            *h = run;
            run += t;
        }
        ft->rowptr[j + 1] = run;
    }
    ks_error e = counts_to_offsets(q->sc_rp, n, who, "strong C couplings of F points");
    if (e == KS_OK)
        e = counts_to_offsets(q->ac_rp, n, who, "C couplings of F points");
    if (e == KS_OK)
        e = counts_to_offsets(ft->rowptr, n, who, "F-F couplings");
    if (e == KS_OK) {
        ft->nrows = ft->ncols = n;
        ft->nnz = ft->rowptr[n];
        q->sc_ci = ks_malloc(((size_t)q->sc_rp[n] + 1) * sizeof *q->sc_ci,
                             "interpolation strong C rows");
        q->ac_ci = ks_malloc(((size_t)q->ac_rp[n] + 1) * sizeof *q->ac_ci,
                             "interpolation C coupling rows");
        q->ac_va = ks_malloc(((size_t)q->ac_rp[n] + 1) * sizeof *q->ac_va,
                             "interpolation C coupling values");
        ft->colind = ks_malloc(((size_t)ft->nnz + 1) * sizeof *ft->colind,
                               "interpolation F coupling rows");
        ft->val = ks_malloc(((size_t)ft->nnz + 1) * sizeof *ft->val,
                            "interpolation F coupling values");
        if (!q->sc_ci || !q->ac_ci || !q->ac_va || !ft->colind || !ft->val)
            e = KS_ERR_MEMORY;
    }
    if (e != KS_OK) {
        free(hist);
        free(win);
        return e;
    }
#pragma omp parallel for schedule(static, 1) num_threads(nb)
    for (int b = 0; b < nb; b++) {
        const ks_int lo = (ks_int)((int64_t)n * b / nb), hi = (ks_int)((int64_t)n * (b + 1) / nb);
        ks_int *h = hist + off[b];
        const ks_int j0 = (ks_int)c0[b];
        for (ks_int i = lo; i < hi; i++) {
            if (cf[i] == KS_CPT)
                continue;
            ks_int ws = q->sc_rp[i], wa = q->ac_rp[i];
            for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++)
                if (cf[S->colind[k]] == KS_CPT)
                    q->sc_ci[ws++] = S->colind[k];
            for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                const ks_int j = A->colind[k];
                const double v = A->val[k];
                if (j == i || !ahat_sign(diag[i], v))
                    continue;
                if (cf[j] == KS_CPT) {
                    q->ac_ci[wa] = j;
                    q->ac_va[wa++] = v;
                } else {
                    const ks_int pos = ft->rowptr[j] + h[j - j0]++;
                    ft->colind[pos] = i;
                    ft->val[pos] = v;
                }
            }
        }
    }
    free(hist);
    free(win);
    return KS_OK;
}

/* Scan the rows and prepare what spec asks for; *use_compact says which row
 * builder runs. The compact rows pay off when the distance-two walks are
 * long: about two strong F-F pairs per row or more (they cost a few passes
 * over A; each pair saves a walk of two rows). Rows without entries do not
 * count: a rank's local system (mpi/interp_local.c) has one for each point
 * it only reaches. Either builder gives the same P, so the choice only
 * moves time. */
static ks_error prepare(const char *who, const ks_csr *A, const ks_strength *S, const int *cf,
                        const ks_interp_spec *spec, parts *q, ks_interp_ctx *ctx,
                        int *use_compact)
{
    const ks_int n = A->nrows;
    memset(q, 0, sizeof *q);
    *use_compact = 0;
    const int may_compact = spec->compact_row && spec->compact != KS_INTERP_COMPACT_NEVER;
    if ((spec->needs & KS_INTERP_NEED_DIAG) || may_compact) {
        q->diag = ks_malloc(((size_t)n + 1) * sizeof *q->diag, "interpolation diagonal");
        if (!q->diag)
            return KS_ERR_MEMORY;
    }
    int64_t nff = 0, nused = 0;
    KS_TRY(scan_rows(who, A, S, cf, q->diag, may_compact ? &nff : NULL, &nused));
    ctx->diag = q->diag;
    if (may_compact && (spec->compact == KS_INTERP_COMPACT_ALWAYS || nff >= 2 * nused)) {
        KS_TRY(build_compact(who, A, S, cf, q));
        ctx->sc_rp = q->sc_rp;
        ctx->sc_ci = q->sc_ci;
        ctx->ac_rp = q->ac_rp;
        ctx->ac_ci = q->ac_ci;
        ctx->ac_va = q->ac_va;
        ctx->ft_rp = q->ft.rowptr;
        ctx->ft_ci = q->ft.colind;
        ctx->ft_va = q->ft.val;
        *use_compact = 1;
    }
    return KS_OK;
}

typedef struct chunk {
    ks_interp_ws ws;
    int err;     /* KS_INTERP_ROW_* of the first failing row */
    ks_int row;  /* that row */
} chunk;

ks_error ks_interp_build(const char *who, const ks_csr *A, const ks_strength *S, const int *cf,
                         const ks_interp_spec *spec, ks_csr *P)
{
    return ks_interp_build_rows(who, A, S, cf, spec, 0, A ? A->nrows : 0, P);
}

ks_error ks_interp_build_rows(const char *who, const ks_csr *A, const ks_strength *S,
                              const int *cf, const ks_interp_spec *spec, ks_int r0, ks_int r1,
                              ks_csr *P)
{
    if (P)
        memset(P, 0, sizeof *P);
    KS_TRY(check_shapes(who, A, S, cf, P));
    const ks_int n = A->nrows;
    if (r0 < 0 || r1 < r0 || r1 > n)
        return ks_seterr(KS_ERR_ARG, "%s: rows %" PRId32 " .. %" PRId32 " of %" PRId32, who, r0,
                         r1, n);
    const ks_int nr = r1 - r0; /* the rows built; the others stay empty */
    parts q;
    ks_interp_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    int use_compact = 0;
    ks_error e = prepare(who, A, S, cf, spec, &q, &ctx, &use_compact);
    if (e != KS_OK) {
        parts_free(&q);
        return e;
    }
    const ks_interp_row_fn row = use_compact ? spec->compact_row : spec->row;
    ks_int *cmap = ks_malloc(((size_t)n + 1) * sizeof *cmap, "coarse map");
    ks_int *cnt = ks_malloc(((size_t)n + 1) * sizeof *cnt, "interpolation row counts");
    if (!cmap || !cnt) {
        parts_free(&q);
        free(cmap);
        free(cnt);
        return KS_ERR_MEMORY;
    }
    ctx.A = A;
    ctx.S = S;
    ctx.cf = cf;
    ctx.cmap = cmap;
    e = ks_amg_coarse_map(n, cf, cmap, &ctx.nc);
    if (e != KS_OK) {
        ks_adderr(e, "%s", who);
        parts_free(&q);
        free(cmap);
        free(cnt);
        return e;
    }

    int nchunk = 1;
#ifdef _OPENMP
    nchunk = omp_get_max_threads();
#endif
    if (nchunk > nr)
        nchunk = nr > 0 ? (int)nr : 1;
    chunk *ch = ks_calloc((size_t)nchunk, sizeof *ch, "interpolation chunks");
    if (!ch) {
        parts_free(&q);
        free(cmap);
        free(cnt);
        return KS_ERR_MEMORY;
    }

#pragma omp parallel for schedule(static, 1)
    for (int t = 0; t < nchunk; t++) {
        chunk *c = &ch[t];
        ks_interp_ws *ws = &c->ws;
        ks_int lo = r0 + (ks_int)((int64_t)nr * t / nchunk);
        ks_int hi = r0 + (ks_int)((int64_t)nr * (t + 1) / nchunk);
        if ((spec->needs & KS_INTERP_NEED_MARKER) && lo < hi) {
            ws->marker = malloc(((size_t)n + 1) * sizeof *ws->marker);
            if (!ws->marker) {
                c->err = KS_INTERP_ROW_NOMEM;
                c->row = lo;
                continue;
            }
            for (ks_int k = 0; k < n; k++)
                ws->marker[k] = cf[k] == KS_CPT ? -1 : KS_INTERP_MARK_F;
        }
        for (ks_int i = lo; i < hi; i++) {
            size_t start = ws->len;
            int r;
            if (cf[i] == KS_CPT) {
                r = ks_interp_reserve(ws, 1);
                if (r == KS_INTERP_ROW_OK)
                    ws->buf[ws->len++] = (ks_interp_entry){cmap[i], 1.0};
            } else {
                r = row(&ctx, i, ws);
                if (r == KS_INTERP_ROW_OK)
                    sort_row(ws->buf + start, ws->len - start);
            }
            if (r != KS_INTERP_ROW_OK) {
                c->err = r;
                c->row = i;
                break;
            }
            cnt[i] = (ks_int)(ws->len - start);
        }
    }
    parts_free(&q);

    /* Chunks are in row order and each stops at its first bad row, so the
     * first failing chunk names the first bad row overall. */
    for (int t = 0; t < nchunk && e == KS_OK; t++) {
        if (ch[t].err == KS_INTERP_ROW_ZERO_DIAG)
            e = ks_seterr(KS_ERR_NUMERIC, "%s: zero diagonal at row %" PRId32, who, ch[t].row);
        else if (ch[t].err == KS_INTERP_ROW_TOO_BIG)
            e = ks_seterr(KS_ERR_SIZE, "%s: interpolation reaches more than 2^31 entries at "
                          "row %" PRId32, who, ch[t].row);
        else if (ch[t].err == KS_INTERP_ROW_NOMEM)
            e = ks_seterr(KS_ERR_MEMORY, "%s: out of memory building row %" PRId32, who,
                          ch[t].row);
    }
    int64_t total = 0;
    for (int t = 0; t < nchunk; t++)
        total += (int64_t)ch[t].ws.len;
    if (e == KS_OK && total > INT32_MAX)
        e = ks_seterr(KS_ERR_SIZE, "%s: interpolation has %" PRId64 " entries, more than the "
                      "32-bit index allows", who, total);
    ks_csr out;
    if (e == KS_OK)
        e = ks_csr_alloc(&out, n, ctx.nc, (ks_int)total);
    if (e == KS_OK) {
        out.rowptr[0] = 0;
        for (ks_int i = 0; i < n; i++)
            out.rowptr[i + 1] = out.rowptr[i] + (i >= r0 && i < r1 ? cnt[i] : 0);
#pragma omp parallel for schedule(static, 1)
        for (int t = 0; t < nchunk; t++) {
            ks_int lo = r0 + (ks_int)((int64_t)nr * t / nchunk);
            const ks_interp_entry *b = ch[t].ws.buf;
            ks_int *ci = out.colind + (lo < n ? out.rowptr[lo] : 0);
            double *va = out.val + (lo < n ? out.rowptr[lo] : 0);
            for (size_t k = 0; k < ch[t].ws.len; k++) {
                ci[k] = b[k].col;
                va[k] = b[k].val;
            }
        }
        *P = out;
    }
    for (int t = 0; t < nchunk; t++) {
        free(ch[t].ws.buf);
        free(ch[t].ws.marker);
        free(ch[t].ws.tpos);
        free(ch[t].ws.tval);
    }
    free(ch);
    free(cmap);
    free(cnt);
    return e;
}

/* ---------------------------------------------------------- direct (D1) */

static int direct_row(const ks_interp_ctx *c, ks_int i, ks_interp_ws *ws)
{
    const ks_csr *A = c->A;
    const ks_strength *S = c->S;
    const ks_int as = A->rowptr[i], ae = A->rowptr[i + 1];
    if (ks_interp_reserve(ws, (size_t)(ae - as)))
        return KS_INTERP_ROW_NOMEM;
    const size_t start = ws->len;
    double diag = 0.0, n_neg = 0.0, n_pos = 0.0, p_neg = 0.0, p_pos = 0.0;
    ks_int s = S->rowptr[i];
    const ks_int se = S->rowptr[i + 1];
    /* A's row and S's row are both sorted, so one merge walk says which
     * couplings are strong. */
    for (ks_int k = as; k < ae; k++) {
        const ks_int j = A->colind[k];
        const double a = A->val[k];
        if (j == i) {
            diag = a;
            continue;
        }
        if (a < 0)
            n_neg += a;
        else
            n_pos += a;
        while (s < se && S->colind[s] < j)
            s++;
        if (s < se && S->colind[s] == j && c->cf[j] == KS_CPT) {
            ws->buf[ws->len++] = (ks_interp_entry){c->cmap[j], a};
            if (a < 0)
                p_neg += a;
            else
                p_pos += a;
        }
    }
    if (diag == 0.0) {
        ws->len = start;
        return KS_INTERP_ROW_ZERO_DIAG;
    }
    if (ws->len == start)
        return KS_INTERP_ROW_OK; /* no strong C neighbour: empty row */
    double d = diag;
    if (p_neg == 0.0)
        d += n_neg;
    if (p_pos == 0.0)
        d += n_pos;
    if (d == 0.0) {
        /* Lumping cancelled the diagonal: nothing sensible to interpolate
         * with; leave the row empty (the point is only smoothed). */
        ws->len = start;
        return KS_INTERP_ROW_OK;
    }
    const double alpha = p_neg != 0.0 ? n_neg / p_neg : 0.0;
    const double beta = p_pos != 0.0 ? n_pos / p_pos : 0.0;
    for (size_t k = start; k < ws->len; k++) {
        const double a = ws->buf[k].val;
        ws->buf[k].val = a < 0 ? -alpha * a / d : (a > 0 ? -beta * a / d : 0.0);
    }
    return KS_INTERP_ROW_OK;
}

static const ks_interp_spec direct_spec = {0, direct_row, NULL, KS_INTERP_COMPACT_NEVER};

ks_error ks_amg_interp_direct(const ks_csr *A, const ks_strength *S, const int *cf, ks_csr *P)
{
    return ks_interp_build("ks_amg_interp_direct", A, S, cf, &direct_spec, P);
}

ks_error ks_amg_interp_direct_rows(const ks_csr *A, const ks_strength *S, const int *cf,
                                   ks_int r0, ks_int r1, ks_csr *P)
{
    return ks_interp_build_rows("ks_amg_interp_direct", A, S, cf, &direct_spec, r0, r1, P);
}
