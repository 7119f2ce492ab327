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

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* ------------------------------------------------------------ assembler */

int ks_interp_reserve(ks_interp_ws *ws, size_t extra)
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

int ks_interp_scratch(ks_interp_ws *ws, size_t m)
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

double ks_interp_diag(const ks_csr *A, ks_int i)
{
    ks_int lo = A->rowptr[i], hi = A->rowptr[i + 1];
    while (lo < hi) {
        ks_int mid = lo + (hi - lo) / 2;
        if (A->colind[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < A->rowptr[i + 1] && A->colind[lo] == i) ? A->val[lo] : 0.0;
}

/* Rows are short (tens of entries): insertion sort, and above 32 entries an
 * inlined quicksort (median of three, smaller side first) rather than
 * qsort, whose callback per comparison dominates on long distance-two rows.
 * Columns within a row are distinct. */
static void sort_row(ks_interp_entry *e, size_t m)
{
    while (m > 32) {
        ks_int a = e[0].col, b = e[m / 2].col, d = e[m - 1].col;
        ks_int piv = a < b ? (b < d ? b : (a < d ? d : a)) : (a < d ? a : (b < d ? d : b));
        size_t i = 0, j = m - 1;
        for (;;) { /* Hoare partition: e[0..j] <= piv <= e[j+1..m) */
            while (e[i].col < piv)
                i++;
            while (e[j].col > piv)
                j--;
            if (i >= j)
                break;
            ks_interp_entry t = e[i];
            e[i] = e[j];
            e[j] = t;
            i++;
            j--;
        }
        size_t left = j + 1, right = m - left;
        if (left < right) {
            sort_row(e, left);
            e += left;
            m = right;
        } else {
            sort_row(e + left, right);
            m = left;
        }
    }
    for (size_t a = 1; a < m; a++) {
        ks_interp_entry t = e[a];
        size_t b = a;
        while (b > 0 && e[b - 1].col > t.col) {
            e[b] = e[b - 1];
            b--;
        }
        e[b] = t;
    }
}

/* Shapes, pointers and index ranges of A and S (a bad index would read out
 * of bounds later); the message names the first bad row. */
static ks_error check_inputs(const char *who, const ks_csr *A, const ks_strength *S,
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
    ks_int bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (ks_int i = 0; i < n; i++) {
        int ok = A->rowptr[i] <= A->rowptr[i + 1] && S->rowptr[i] <= S->rowptr[i + 1];
        for (ks_int k = A->rowptr[i]; ok && k < A->rowptr[i + 1]; k++)
            ok = A->colind[k] >= 0 && A->colind[k] < n && (k == A->rowptr[i] ||
                                                           A->colind[k] > A->colind[k - 1]);
        for (ks_int k = S->rowptr[i]; ok && k < S->rowptr[i + 1]; k++)
            ok = S->colind[k] >= 0 && S->colind[k] < n && S->colind[k] != i &&
                 (k == S->rowptr[i] || S->colind[k] > S->colind[k - 1]);
        if (!ok && i < bad)
            bad = i;
    }
    if (bad < n)
        return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 " of the matrix or strength has a "
                         "decreasing row pointer or an unsorted, repeated, diagonal (strength) "
                         "or out-of-range column", who, bad);
    return KS_OK;
}

typedef struct chunk {
    ks_interp_ws ws;
    int err;     /* KS_INTERP_ROW_* of the first failing row */
    ks_int row;  /* that row */
} chunk;

ks_error ks_interp_build(const char *who, const ks_csr *A, const ks_strength *S, const int *cf,
                         int need_marker, ks_interp_row_fn row, ks_csr *P)
{
    if (P)
        memset(P, 0, sizeof *P);
    KS_TRY(check_inputs(who, A, S, cf, P));
    const ks_int n = A->nrows;
    ks_int *cmap = ks_malloc(((size_t)n + 1) * sizeof *cmap, "coarse map");
    ks_int *cnt = ks_malloc(((size_t)n + 1) * sizeof *cnt, "interpolation row counts");
    if (!cmap || !cnt) {
        free(cmap);
        free(cnt);
        return KS_ERR_MEMORY;
    }
    ks_interp_ctx ctx = {A, S, cf, cmap, 0};
    ks_error e = ks_amg_coarse_map(n, cf, cmap, &ctx.nc);
    if (e != KS_OK) {
        ks_adderr(e, "%s", who);
        free(cmap);
        free(cnt);
        return e;
    }

    int nchunk = 1;
#ifdef _OPENMP
    nchunk = omp_get_max_threads();
#endif
    if (nchunk > n)
        nchunk = n > 0 ? (int)n : 1;
    chunk *ch = ks_calloc((size_t)nchunk, sizeof *ch, "interpolation chunks");
    if (!ch) {
        free(cmap);
        free(cnt);
        return KS_ERR_MEMORY;
    }

#pragma omp parallel for schedule(static, 1)
    for (int t = 0; t < nchunk; t++) {
        chunk *c = &ch[t];
        ks_interp_ws *ws = &c->ws;
        ks_int lo = (ks_int)((int64_t)n * t / nchunk), hi = (ks_int)((int64_t)n * (t + 1) / nchunk);
        if (need_marker && lo < hi) {
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
            out.rowptr[i + 1] = out.rowptr[i] + cnt[i];
#pragma omp parallel for schedule(static, 1)
        for (int t = 0; t < nchunk; t++) {
            ks_int lo = (ks_int)((int64_t)n * t / nchunk);
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

ks_error ks_amg_interp_direct(const ks_csr *A, const ks_strength *S, const int *cf, ks_csr *P)
{
    return ks_interp_build("ks_amg_interp_direct", A, S, cf, 0, direct_row, P);
}
