/* Matrix Market reader (.mtx and .mtx.gz).
 *
 * Lenient about the header (case, a missing field or symmetry word, blank
 * lines, comments before the size line, CRLF, trailing blanks), strict
 * about the data: every defect is KS_ERR_FORMAT with "path:LINE: what is
 * wrong (what was expected)". Speed comes from parsing whole runs of lines
 * in the read buffer with hand-written number parsers, growing flat COO
 * arrays, and building CSR by a counting sort (ks_csr_build_coo).
 *
 * A header can claim sizes its file cannot back (a 78-byte file declaring
 * 10^9 x 10^9): allocations are sized by the entries the rest of the file
 * can hold, and the reader's peak is checked against the memory available
 * (core/host_memory.h) before anything of that size is allocated. */
#include "mmio_internal.h"
#include "mmio_sized.h"
#include "../core/host_memory.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef ks_mm_header mm_header;

static ks_error fmt_err(const ks_gzr *r, long line, const char *fmt, ...) KS_PRINTF(3, 4);
static ks_error fmt_err(const ks_gzr *r, long line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ks_seterr(KS_ERR_FORMAT, "%s:%ld: %s", r->path, line, msg);
}

/* Copy the whitespace-delimited token at p for a message (at most 40 chars). */
static const char *token(const char *p, char *buf, size_t size)
{
    size_t k = 0;
    while (p[k] && p[k] != '\n' && p[k] != '\r' && p[k] != ' ' && p[k] != '\t' && k < 40 &&
           k + 1 < size) {
        buf[k] = isprint((unsigned char)p[k]) ? p[k] : '?';
        k++;
    }
    if (k == 40 && k + 4 < size)
        memcpy(buf + k, "...", 3), k += 3;
    buf[k] = '\0';
    return buf;
}

static inline const char *skip_blank(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r')
        p++;
    return p;
}

static inline int is_end(char c) { return c == '\n' || c == '\0'; }
static inline int is_sep(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Unsigned decimal integer; saturates at 2^50 (callers range-check). */
static inline const char *parse_uint(const char *p, int64_t *v)
{
    if ((unsigned)(*p - '0') >= 10)
        return NULL;
    uint64_t x = 0;
    do {
        if (x < (UINT64_C(1) << 50))
            x = x * 10 + (unsigned)(*p - '0');
        p++;
    } while ((unsigned)(*p - '0') < 10);
    *v = (int64_t)x;
    return p;
}

/* ---------------------------------------------------------------- header */

static int word_is(const char *w, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcasecmp(w, list[i]) == 0)
            return i;
    return -1;
}

static ks_error parse_banner(ks_gzr *r, char *line, mm_header *h)
{
    static const char *const objects[] = {"matrix", NULL};
    static const char *const formats[] = {"coordinate", "array", NULL};
    static const char *const fields[] = {"real", "double", "integer", "pattern", "complex", NULL};
    static const char *const syms[] = {"general", "symmetric", "skew-symmetric", "skewsymmetric",
                                       "skew", "hermitian", NULL};
    const char *expect = "(expected '%%MatrixMarket matrix coordinate real general')";
    long ln = r->line;
    int have_obj = 0, have_fmt = 0, have_field = 0, have_sym = 0;
    char *save = NULL;
    char *w = strtok_r(line, " \t\r", &save);
    if (!w || strcasecmp(w, "%%MatrixMarket") != 0) {
        char buf[64];
        return fmt_err(r, ln, "missing '%%%%MatrixMarket' header, found '%s' %s",
                       token(w ? w : "", buf, sizeof buf), expect);
    }
    h->field = KS_MM_REAL;
    h->sym = KS_MM_GENERAL;
    while ((w = strtok_r(NULL, " \t\r", &save)) != NULL) {
        int k;
        const char *dup = NULL;
        if ((k = word_is(w, objects)) >= 0) {
            dup = have_obj++ ? "object" : NULL;
        } else if ((k = word_is(w, formats)) >= 0) {
            dup = have_fmt++ ? "format" : NULL;
            h->array = k == 1;
        } else if ((k = word_is(w, fields)) >= 0) {
            dup = have_field++ ? "field" : NULL;
            if (k == 4)
                return ks_seterr(KS_ERR_UNSUPPORTED, "%s:%ld: complex matrices are not supported "
                                 "(expected real, integer or pattern)", r->path, ln);
            h->field = k <= 1 ? KS_MM_REAL : k == 2 ? KS_MM_INTEGER : KS_MM_PATTERN;
        } else if ((k = word_is(w, syms)) >= 0) {
            dup = have_sym++ ? "symmetry" : NULL;
            if (k == 5)
                return ks_seterr(KS_ERR_UNSUPPORTED, "%s:%ld: hermitian matrices are not supported "
                                 "(expected general, symmetric or skew-symmetric)", r->path, ln);
            h->sym = k == 0 ? KS_MM_GENERAL : k == 1 ? KS_MM_SYMMETRIC : KS_MM_SKEW;
        } else {
            char buf[64];
            return fmt_err(r, ln, "unknown word '%s' in the header %s", token(w, buf, sizeof buf),
                           expect);
        }
        if (dup)
            return fmt_err(r, ln, "header names the %s twice %s", dup, expect);
    }
    if (!have_fmt)
        return fmt_err(r, ln, "header lacks the format (expected 'coordinate' or 'array')");
    if (h->array && h->field == KS_MM_PATTERN)
        return fmt_err(r, ln, "'array pattern' is not a valid combination "
                       "(expected 'coordinate pattern' or 'array real')");
    return KS_OK;
}

/* Banner, comments and the size line. */
ks_error ks_mm_read_header(ks_gzr *r, ks_mm_header *h)
{
    char *line;
    int st;
    memset(h, 0, sizeof *h);
    /* The banner: the first non-blank line. */
    for (;;) {
        st = ks_gzr_line(r, &line);
        if (st < 0)
            return r->err;
        if (st == 0)
            return fmt_err(r, r->line + 1, "empty file (expected a '%%%%MatrixMarket' header line)");
        if (*skip_blank(line))
            break;
    }
    h->banner_line = r->line;
    KS_TRY(parse_banner(r, (char *)skip_blank(line), h));
    /* Comments and blank lines, then the size line. */
    for (;;) {
        st = ks_gzr_line(r, &line);
        if (st < 0)
            return r->err;
        if (st == 0)
            return fmt_err(r, r->line + 1, "file ends before the size line (expected '%s')",
                           h->array ? "rows cols" : "rows cols entries");
        const char *p = skip_blank(line);
        if (*p && *p != '%')
            break;
    }
    h->size_line = r->line;
    const char *p = skip_blank(line);
    int64_t v[3] = {0, 0, 0};
    int want = h->array ? 2 : 3, got = 0;
    const char *expect = h->array ? "'rows cols'" : "'rows cols entries'";
    while (*p && got < 3) {
        const char *q = parse_uint(p, &v[got]);
        if (!q || (*q && !is_sep(*q))) {
            char buf[64];
            return fmt_err(r, r->line, "bad size line: '%s' is not a non-negative integer "
                           "(expected %s)", token(p, buf, sizeof buf), expect);
        }
        got++;
        p = skip_blank(q);
    }
    if (got != want || *p)
        return fmt_err(r, r->line, "size line has %s%d numbers (expected %s)",
                       *p ? "more than " : "", got, expect);
    if (!h->array)
        h->nnz = v[2];
    if (v[0] > INT32_MAX || v[1] > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "%s:%ld: size %" PRId64 " x %" PRId64 " exceeds the 32-bit "
                         "index limit %" PRId32 " (ks_int)", r->path, r->line, v[0], v[1], INT32_MAX);
    h->m = v[0];
    h->n = v[1];
    if (h->array)
        h->nnz = h->m * h->n;
    if (h->sym != KS_MM_GENERAL && h->m != h->n)
        return fmt_err(r, r->line, "%s matrix of size %" PRId64 " x %" PRId64 " is not square "
                       "(expected rows == cols)", h->sym == KS_MM_SYMMETRIC ? "symmetric" : "skew-symmetric",
                       h->m, h->n);
    return KS_OK;
}

/* ------------------------------------------------------------ coordinate */

typedef ks_mm_coo coo;

void ks_mm_coo_free(ks_mm_coo *c)
{
    free(c->row);
    free(c->col);
    free(c->val);
    memset(c, 0, sizeof *c);
}

static ks_error coo_grow(coo *c, int64_t limit, int with_val)
{
    int64_t ncap = c->cap ? 2 * c->cap : (int64_t)1 << 16;
    if (ncap > limit)
        ncap = limit;
    ks_int *r = realloc(c->row, (size_t)ncap * sizeof *r);
    if (r)
        c->row = r;
    ks_int *k = realloc(c->col, (size_t)ncap * sizeof *k);
    if (k)
        c->col = k;
    double *v = with_val ? realloc(c->val, (size_t)ncap * sizeof *v) : NULL;
    if (v)
        c->val = v;
    if (!r || !k || (with_val && !v))
        return ks_seterr(KS_ERR_MEMORY, "out of host memory storing %" PRId64 " matrix entries",
                         ncap);
    c->cap = ncap;
    return KS_OK;
}

/* Parse one value token at p; on success *out and the position after it.
 * Returns NULL after setting the error. */
static const char *parse_value(ks_gzr *r, long ln, const char *p, ks_mm_field field,
                               double *out)
{
    char buf[64];
    const char *e;
    if (field == KS_MM_INTEGER) {
        const char *q = p;
        int neg = 0;
        if (*q == '-' || *q == '+')
            neg = *q++ == '-';
        int64_t x;
        e = parse_uint(q, &x);
        if (!e || !(is_sep(*e) || is_end(*e))) {
            fmt_err(r, ln, "bad value '%s' (expected an integer)", token(p, buf, sizeof buf));
            return NULL;
        }
        if (x > (INT64_C(1) << 53)) {
            fmt_err(r, ln, "integer value '%s' too large (expected |value| <= 2^53)",
                    token(p, buf, sizeof buf));
            return NULL;
        }
        *out = neg ? -(double)x : (double)x;
        return e;
    }
    if (!ks_num_parse_double(p, &e, out) || !(is_sep(*e) || is_end(*e))) {
        fmt_err(r, ln, "bad value '%s' (expected a real number)", token(p, buf, sizeof buf));
        return NULL;
    }
    if (!isfinite(*out)) {
        fmt_err(r, ln, "value '%s' is %s (expected a finite number)", token(p, buf, sizeof buf),
                isnan(*out) ? "NaN" : "infinite or out of range");
        return NULL;
    }
    return e;
}

ks_error ks_mm_read_entries(ks_gzr *r, const ks_mm_header *h, ks_mm_coo *c,
                            ks_mm_flush_fn flush, void *ctx)
{
    const int pattern = h->field == KS_MM_PATTERN;
    const int64_t m = h->m, n = h->n, nnz = h->nnz;
    const char *need = pattern ? "'row col'" : "'row col value'";
    char buf[64];
    if (!flush)
        memset(c, 0, sizeof *c);
    c->n = c->total = 0;
    long ln = r->line;
    int64_t k = 0; /* entries read so far; b of them are in the buffer */
    int64_t b = 0;
    for (;;) {
        char *run, *lim;
        r->line = ln;
        int st = ks_gzr_run(r, &run, &lim);
        if (st < 0)
            return r->err;
        if (st == 0)
            break;
        const char *p = run;
        while (p < lim) {
            ln++;
            const char *q = skip_blank(p);
            if (*q == '\n' || *q == '%') { /* blank line or comment */
                p = (const char *)memchr(q, '\n', (size_t)(lim - q)) + 1;
                continue;
            }
            if (k == nnz)
                return fmt_err(r, ln, "more entries than the %" PRId64 " declared on line %ld "
                               "(expected end of data)", nnz, h->size_line);
            if (b == c->cap) {
                if (flush) { /* the caller takes the full buffer and empties it */
                    c->n = b;
                    c->total = k;
                    KS_TRY(flush(ctx, c));
                    b = c->n;
                } else if (coo_grow(c, nnz, !pattern) != KS_OK) {
                    return ks_adderr(KS_ERR_MEMORY, "%s:%ld", r->path, ln + 1);
                }
            }
            int64_t i, j;
            const char *t = parse_uint(q, &i);
            if (!t || !is_sep(*t)) {
                if (t && is_end(*t))
                    return fmt_err(r, ln, "missing column index (expected %s)", need);
                return fmt_err(r, ln, "bad row index '%s' (expected an integer 1..%" PRId64 ")",
                               token(q, buf, sizeof buf), m);
            }
            t = skip_blank(t);
            if (is_end(*t))
                return fmt_err(r, ln, "missing column index (expected %s)", need);
            q = t;
            t = parse_uint(q, &j);
            if (!t || !(is_sep(*t) || is_end(*t)))
                return fmt_err(r, ln, "bad column index '%s' (expected an integer 1..%" PRId64 ")",
                               token(q, buf, sizeof buf), n);
            if (i < 1 || i > m)
                return fmt_err(r, ln, "row index %" PRId64 " out of range (expected 1..%" PRId64 ")",
                               i, m);
            if (j < 1 || j > n)
                return fmt_err(r, ln, "column index %" PRId64 " out of range (expected 1..%" PRId64
                               ")", j, n);
            if (h->sym == KS_MM_SYMMETRIC && j > i)
                return fmt_err(r, ln, "entry (%" PRId64 ", %" PRId64 ") above the diagonal in a "
                               "symmetric file (expected the lower triangle, row >= col)", i, j);
            if (h->sym == KS_MM_SKEW && j >= i)
                return fmt_err(r, ln, "%s entry (%" PRId64 ", %" PRId64 ") in a skew-symmetric "
                               "file (expected the strict lower triangle, row > col)",
                               i == j ? "diagonal" : "upper-triangle", i, j);
            t = skip_blank(t);
            if (!pattern) {
                if (is_end(*t))
                    return fmt_err(r, ln, "missing value (expected %s)", need);
                t = parse_value(r, ln, t, h->field, &c->val[b]);
                if (!t)
                    return KS_ERR_FORMAT;
                t = skip_blank(t);
            }
            if (!is_end(*t))
                return fmt_err(r, ln, "unexpected text '%s' after the %s (expected end of line)",
                               token(t, buf, sizeof buf), pattern ? "column index" : "value");
            if (*t == '\0') /* a NUL byte inside the line */
                return fmt_err(r, ln, "NUL byte in the data (expected text)");
            c->row[b] = (ks_int)(i - 1);
            c->col[b] = (ks_int)(j - 1);
            b++;
            k++;
            p = t + 1;
        }
        r->pos = r->lim;
    }
    r->line = ln;
    if (k < nnz)
        return fmt_err(r, ln + 1, "file ends after %" PRId64 " of the %" PRId64 " entries declared "
                       "on line %ld (expected %" PRId64 " entries)", k, nnz, h->size_line, nnz);
    c->n = b;
    c->total = k;
    return KS_OK;
}

/* ----------------------------------------------------------------- public */

ks_error ks_mm_read_matrix_header(ks_gzr *r, ks_mm_header *h)
{
    KS_TRY(ks_mm_read_header(r, h));
    if (h->array)
        return fmt_err(r, h->banner_line, "dense 'array' format is not supported for matrices "
                       "(expected 'coordinate'; ks_mm_read_vector reads array vectors)");
    return KS_OK;
}

/* Entries (or array values) the rest of the file can hold at most, each
 * taking at least min_bytes with its newline; the declared count caps it. */
static int64_t entries_bound(const ks_gzr *r, int64_t declared, int min_bytes)
{
    uint64_t bound = ks_gzr_text_bound(r) / (uint64_t)min_bytes;
    return bound < (uint64_t)declared ? (int64_t)bound : declared;
}

/* Refuse at the size line when `bytes` exceed the memory available. */
static ks_error check_memory(const ks_gzr *r, const mm_header *h, uint64_t bytes,
                             const char *what)
{
    if (ks_host_memory_check(bytes, what) != KS_OK)
        return ks_adderr(KS_ERR_MEMORY, "%s:%ld", r->path, h->size_line);
    return KS_OK;
}

static ks_error read_matrix(ks_gzr *r, ks_csr *A, ks_mm_info *info, uint64_t extra_row_bytes,
                            const char *extra)
{
    mm_header h;
    KS_TRY(ks_mm_read_matrix_header(r, &h));
    /* The reader's peak while building: the 32-bit row counts that become
     * rowptr, the COO entries ("1 1\n" or "1 1 1\n" at least a line) and
     * the CSR they become (twice as many when a symmetric file mirrors). */
    const int pattern = h.field == KS_MM_PATTERN;
    const int64_t ent = entries_bound(r, h.nnz, pattern ? 4 : 6);
    const uint64_t csr_ent = (uint64_t)ent * (h.sym == KS_MM_GENERAL ? 1 : 2);
    uint64_t need = 4 * ((uint64_t)h.m + 2) + (uint64_t)ent * (pattern ? 8 : 16) + csr_ent * 12 +
                    extra_row_bytes * (uint64_t)h.m;
    char what[256];
    snprintf(what, sizeof what, "reading this %" PRId64 " x %" PRId64 " matrix (%" PRId64
             " entries declared)%s%s", h.m, h.n, h.nnz, extra_row_bytes ? " and " : "",
             extra_row_bytes && extra ? extra : "");
    KS_TRY(check_memory(r, &h, need, what));
    coo c;
    ks_error e = ks_mm_read_entries(r, &h, &c, NULL, NULL);
    if (e == KS_OK) {
        int mirror = h.sym == KS_MM_SYMMETRIC ? 1 : h.sym == KS_MM_SKEW ? -1 : 0;
        int64_t ndup = 0;
        e = ks_csr_build_coo((ks_int)h.m, (ks_int)h.n, c.n, c.row, c.col, c.val, mirror, A, &ndup);
        if (e != KS_OK)
            ks_adderr(e, "%s", r->path);
        else if (info) {
            info->field = h.field;
            info->symmetry = h.sym;
            info->entries_stored = c.n;
            info->duplicates_summed = ndup;
        }
    }
    ks_mm_coo_free(&c);
    return e;
}

ks_error ks_mm_read_csr_sized(const char *path, ks_csr *A, ks_mm_info *info,
                              uint64_t extra_row_bytes, const char *extra)
{
    if (!A)
        return ks_seterr(KS_ERR_ARG, "ks_mm_read_csr: NULL matrix");
    memset(A, 0, sizeof *A);
    if (!path)
        return ks_seterr(KS_ERR_ARG, "ks_mm_read_csr: NULL path");
    ks_gzr r;
    KS_TRY(ks_gzr_open(&r, path));
    /* Every message names the file once: format errors as path:line, the
     * rest as path: (set where they arise). */
    ks_error e = read_matrix(&r, A, info, extra_row_bytes, extra);
    ks_gzr_close(&r);
    return e;
}

ks_error ks_mm_read_csr(const char *path, ks_csr *A, ks_mm_info *info)
{
    return ks_mm_read_csr_sized(path, A, info, 0, NULL);
}

/* The values of an array file into *v, grown as they come (up to the
 * declared count), so that a header alone never sizes the allocation. */
static ks_error read_array_values(ks_gzr *r, const mm_header *h, double **v)
{
    long ln = r->line;
    int64_t k = 0, cap = 0;
    char buf[64];
    for (;;) {
        char *run, *lim;
        r->line = ln;
        int st = ks_gzr_run(r, &run, &lim);
        if (st < 0)
            return r->err;
        if (st == 0)
            break;
        const char *p = run;
        while (p < lim) {
            ln++;
            const char *q = skip_blank(p);
            if (*q == '\n' || *q == '%') {
                p = (const char *)memchr(q, '\n', (size_t)(lim - q)) + 1;
                continue;
            }
            if (k == h->nnz)
                return fmt_err(r, ln, "more values than the %" PRId64 " declared on line %ld "
                               "(expected end of data)", h->nnz, h->size_line);
            if (k == cap) {
                int64_t ncap = cap ? 2 * cap : (int64_t)1 << 16;
                if (ncap > h->nnz)
                    ncap = h->nnz;
                double *nv = realloc(*v, (size_t)ncap * sizeof *nv);
                if (!nv)
                    return ks_seterr(KS_ERR_MEMORY, "%s:%ld: out of host memory storing %" PRId64
                                     " vector values", r->path, ln, ncap);
                *v = nv;
                cap = ncap;
            }
            const char *t = parse_value(r, ln, q, h->field, &(*v)[k]);
            if (!t)
                return KS_ERR_FORMAT;
            t = skip_blank(t);
            if (*t != '\n')
                return fmt_err(r, ln, "unexpected text '%s' after the value (expected one value "
                               "per line)", token(t, buf, sizeof buf));
            k++;
            p = t + 1;
        }
        r->pos = r->lim;
    }
    r->line = ln;
    if (k < h->nnz)
        return fmt_err(r, ln + 1, "file ends after %" PRId64 " of the %" PRId64 " values declared "
                       "on line %ld (expected %" PRId64 " values)", k, h->nnz, h->size_line, h->nnz);
    return KS_OK;
}

/* A vector (n x 1 or 1 x n), or with `multi` also an n x k block (k
 * columns, stored column after column as the file lists them). */
static ks_error read_dense(ks_gzr *r, int64_t want, const char *name, const char *of, int multi,
                           double **out, ks_int *nout, int *kout)
{
    mm_header h;
    KS_TRY(ks_mm_read_header(r, &h));
    /* A block has the rows asked for; else a 1 x n file is a vector. */
    const int block = multi && (want < 0 ? h.m != 1 : h.m == want);
    if (!block && h.m != 1 && h.n != 1 && multi)
        return ks_seterr(KS_ERR_SIZE, "%s:%ld: %s has %" PRId64 " rows but %s has %" PRId64,
                         r->path, h.size_line, name, h.m, of, want);
    if (!block && h.m != 1 && h.n != 1)
        return fmt_err(r, h.size_line, "size %" PRId64 " x %" PRId64 " is not a vector "
                       "(expected n x 1 or 1 x n)", h.m, h.n);
    if (h.sym != KS_MM_GENERAL)
        return fmt_err(r, h.banner_line, "a vector file must be 'general' (expected no symmetry)");
    const int64_t rows = block ? h.m : h.m * h.n, cols = block ? h.n : 1;
    int64_t len = rows * cols;
    if (want >= 0 && rows != want)
        return ks_seterr(KS_ERR_SIZE, "%s:%ld: %s has %" PRId64 " rows but %s has %" PRId64,
                         r->path, h.size_line, name, rows, of, want);
    if (cols > 1 && (cols > INT32_MAX || len > INT32_MAX))
        return ks_seterr(KS_ERR_SIZE, "%s:%ld: %s is %" PRId64 " x %" PRId64 ": more entries "
                         "than a 32-bit count holds", r->path, h.size_line, name, rows, cols);
    /* An array's values are stored as they come (at least "0\n" each); a
     * coordinate vector is dense from the start, plus its entries. */
    uint64_t need = h.array ? 8 * (uint64_t)entries_bound(r, len, 2)
                            : 8 * (uint64_t)len + 16 * (uint64_t)entries_bound(r, h.nnz, 4);
    char what[160];
    snprintf(what, sizeof what, "reading this %s of %" PRId64 " rows",
             cols > 1 ? "block of vectors" : "vector", rows);
    KS_TRY(check_memory(r, &h, need, what));
    double *v = NULL;
    ks_error e;
    if (h.array) {
        e = len ? read_array_values(r, &h, &v) : KS_OK;
        if (e == KS_OK && !v && !(v = ks_malloc(sizeof *v, "vector")))
            e = ks_adderr(KS_ERR_MEMORY, "%s", r->path);
    } else {
        v = ks_calloc((size_t)(len ? len : 1), sizeof *v, "vector");
        if (!v)
            return ks_adderr(KS_ERR_MEMORY, "%s:%ld", r->path, h.size_line);
        coo c;
        e = ks_mm_read_entries(r, &h, &c, NULL, NULL);
        if (e == KS_OK) /* missing entries stay zero, duplicates add up */
            for (int64_t k = 0; k < c.n; k++) {
                int64_t at = rows == h.m ? (int64_t)c.col[k] * rows + c.row[k] : c.col[k];
                v[at] += c.val ? c.val[k] : 1.0;
            }
        ks_mm_coo_free(&c);
    }
    if (e != KS_OK) {
        free(v);
        return e;
    }
    *out = v;
    *nout = (ks_int)rows;
    if (kout)
        *kout = (int)cols;
    return KS_OK;
}

static ks_error read_dense_path(const char *path, int64_t want, const char *name,
                                const char *of, int multi, double **v, ks_int *n, int *k)
{
    if (!v || !n)
        return ks_seterr(KS_ERR_ARG, "ks_mm_read_vector: NULL output");
    *v = NULL;
    *n = 0;
    if (!path)
        return ks_seterr(KS_ERR_ARG, "ks_mm_read_vector: NULL path");
    ks_gzr r;
    KS_TRY(ks_gzr_open(&r, path));
    /* Every message names the file once (set where it arises). */
    ks_error e = read_dense(&r, want, name, of, multi, v, n, k);
    ks_gzr_close(&r);
    return e;
}

ks_error ks_mm_read_block_sized(const char *path, int64_t want, const char *name,
                                const char *of, double **v, ks_int *n, int *k)
{
    if (!k)
        return ks_seterr(KS_ERR_ARG, "ks_mm_read_block: NULL column count");
    *k = 0;
    return read_dense_path(path, want, name, of, 1, v, n, k);
}

ks_error ks_mm_read_vector_sized(const char *path, int64_t want, const char *name,
                                 const char *of, double **v, ks_int *n)
{
    return read_dense_path(path, want, name, of, 0, v, n, NULL);
}

ks_error ks_mm_read_vector(const char *path, double **v, ks_int *n)
{
    return ks_mm_read_vector_sized(path, -1, "the vector", "expected", v, n);
}
