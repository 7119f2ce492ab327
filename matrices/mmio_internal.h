/* Private seams of the matrices/ folder: the CSR builder shared by
 * ks_csr_from_coo and the Matrix Market reader, the buffered (gzip or plain)
 * line reader, the number parser, and the reader's header and entry loop
 * (also used by mpi/mm_dist.c). Not installed; tests include it to check
 * the parser directly. */
#ifndef KS_MMIO_INTERNAL_H
#define KS_MMIO_INTERNAL_H

#include "../core/ks_internal.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <zlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Build CSR from 0-based triplets by a counting sort on rows, then a sort
 * within the (few) rows whose columns are out of order, then summing
 * duplicates. val == NULL means every value is 1.0 (pattern). mirror = +1
 * adds (j,i,v) for every off-diagonal (i,j,v) (symmetric), -1 adds (j,i,-v)
 * (skew), 0 adds nothing. Duplicates are counted once per stored pair (a
 * mirrored duplicate is not counted twice). Indices are checked; the
 * message names the offending entry. Fails with KS_ERR_SIZE when the
 * entries (mirrored ones included, before duplicates are summed) exceed
 * INT32_MAX. The row counts are 32-bit and become rowptr in place, so the
 * rows cost 4 bytes each. */
ks_error ks_csr_build_coo(ks_int nrows, ks_int ncols, int64_t nent, const ks_int *row,
                          const ks_int *col, const double *val, int mirror, ks_csr *A,
                          int64_t *ndup);

/* Parse a decimal floating-point number starting at p (no leading
 * whitespace). On success stores the value, sets *end past the token and
 * returns 1; returns 0 when no number starts at p. Correctly rounded: a
 * hand-written fast path covers up to 19 significant digits and decimal
 * exponents within +-27 of them (every %.17g output of ordinary magnitude);
 * other inputs (long mantissas, huge exponents, "inf", "nan", hex) go to
 * strtod. The caller checks what follows the token and isfinite(). */
int ks_num_parse_double(const char *p, const char **end, double *out);

/* Chunked reader of plain or gzip text (gzip by its magic bytes; bytes
 * after the last gzip member are an error). Hands out whole lines; a
 * missing final newline is supplied. */
typedef struct ks_gzr {
    FILE *f;
    z_stream z;          /* gzip: inflate's state; plain: next_in/avail_in hold bytes read ahead */
    unsigned char *in;   /* raw input buffer */
    int gzip;            /* 1: gzip members, 0: plain text */
    int zinit;           /* inflateInit2 done (inflateEnd due) */
    int member_done;     /* the last member ended: only another member may follow */
    const char *path;
    char *buf;
    size_t cap; /* allocated bytes (one spare for a supplied '\n') */
    size_t pos; /* first unconsumed byte */
    size_t lim; /* end of the complete lines in the buffer */
    size_t len; /* end of valid data */
    int eof;
    long line; /* lines handed out by ks_gzr_line */
    ks_error err; /* code of the failure when a call returned -1 */
} ks_gzr;

/* KS_ERR_IO (with strerror) when the file cannot be opened. */
ks_error ks_gzr_open(ks_gzr *r, const char *path);
void ks_gzr_close(ks_gzr *r);
/* Make [*p, *lim) a non-empty run of complete lines, each ending in '\n'.
 * Returns 1, 0 at end of file, or -1 with the error set (KS_ERR_IO, or
 * KS_ERR_FORMAT for corrupt/truncated gzip data, naming line+1). The
 * caller consumes the run by setting r->pos = r->lim (or less). */
int ks_gzr_run(ks_gzr *r, char **p, char **lim);
/* The most bytes of text the rest of the file can hold (what the buffer
 * holds, the raw bytes left, times deflate's best ratio for gzip);
 * UINT64_MAX when the size is not known (a pipe). Bounds what a header's
 * counts may make a reader allocate. */
uint64_t ks_gzr_text_bound(const ks_gzr *r);
/* Next line, NUL-terminated in place ('\n' and a trailing '\r' removed),
 * r->line incremented. Returns 1, 0 at end of file, -1 on error. */
int ks_gzr_line(ks_gzr *r, char **line);

/* ---------------------------------------------------------- mmio_read.c
 * The reader's pieces, for readers that do not build one CSR (the
 * distributed reader, mpi/mm_dist.c, streams the entries to their ranks). */
typedef struct ks_mm_header {
    int array;           /* 1: array (dense) format, 0: coordinate */
    ks_mm_field field;
    ks_mm_symmetry sym;
    int64_t m, n, nnz;   /* nnz: declared entries (m * n for arrays) */
    long banner_line;    /* line number of the %%MatrixMarket line */
    long size_line;      /* line number of the size line */
} ks_mm_header;

/* Banner, comments and the size line; r stands at the first data line. */
ks_error ks_mm_read_header(ks_gzr *r, ks_mm_header *h);
/* The same, refusing the array format (a matrix must be coordinate). */
ks_error ks_mm_read_matrix_header(ks_gzr *r, ks_mm_header *h);

/* Coordinate entries, 0-based, in file order (not expanded). */
typedef struct ks_mm_coo {
    ks_int *row, *col;
    double *val;   /* NULL for pattern */
    int64_t n;     /* entries in the buffer */
    int64_t cap;   /* the buffer's room */
    int64_t total; /* entries read from the file so far */
} ks_mm_coo;

void ks_mm_coo_free(ks_mm_coo *c);

/* Takes the c->n entries of a full buffer (file order) and sets c->n = 0. */
typedef ks_error (*ks_mm_flush_fn)(void *ctx, ks_mm_coo *c);

/* The data lines of a coordinate file after ks_mm_read_header, checked as
 * ks_mm_read_csr checks them (indices in range, the triangle of a
 * symmetric file, finite values; errors name path:line). flush NULL: c
 * grows to hold every entry. Else c is the caller's buffer (cap > 0, val
 * allocated unless pattern), handed to flush whenever it is full; at the
 * end c holds the last c->n entries, not yet flushed. */
ks_error ks_mm_read_entries(ks_gzr *r, const ks_mm_header *h, ks_mm_coo *c,
                            ks_mm_flush_fn flush, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
