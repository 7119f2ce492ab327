/* Shared machinery of the classical interpolation builders (interp_direct.c,
 * interp_extended.c): argument checks, coarse numbering, and a row-parallel
 * assembler that calls one row builder per F point. Private to amg/interp_*.c.
 *
 * Assembly: rows are cut into contiguous chunks (one per thread); each chunk
 * appends its rows to its own growable buffer, then the buffers are copied
 * into P behind a prefix sum of the row counts. A row's entries depend only on
 * the row, so P is identical for any chunking or thread count. */
#ifndef KS_INTERP_COMMON_H
#define KS_INTERP_COMMON_H

#include "amg_impl.h"

#include <stddef.h>

typedef struct ks_interp_entry {
    ks_int col; /* coarse column */
    double val;
} ks_interp_entry;

/* One chunk's workspace. marker (only when the builder asked for it) has one
 * slot per coarse point, -1 initially; a builder stores the buffer position
 * of coarse column c in marker[c], so "c is in the current row" reads
 * marker[c] >= (position where the row started), with no reset between rows. */
typedef struct ks_interp_ws {
    ks_interp_entry *buf;
    size_t len, cap;
    ks_int *marker;
} ks_interp_ws;

typedef struct ks_interp_ctx {
    const ks_csr *A;
    const ks_strength *S;
    const int *cf;
    const ks_int *cmap; /* coarse index of each C point, -1 for F */
    ks_int nc;
} ks_interp_ctx;

/* Row builder results. */
enum {
    KS_INTERP_ROW_OK = 0,
    KS_INTERP_ROW_ZERO_DIAG, /* a_ii == 0 on an F row */
    KS_INTERP_ROW_NOMEM,
    KS_INTERP_ROW_TOO_BIG    /* a chunk's buffer would pass 2^31 - 1 entries */
};

/* Build the row of F point i: append its entries (unique columns, any order)
 * to ws->buf after ws->len. May leave the row empty. */
typedef int (*ks_interp_row_fn)(const ks_interp_ctx *c, ks_int i, ks_interp_ws *ws);

/* Make room for `extra` more entries; KS_INTERP_ROW_OK, _NOMEM or _TOO_BIG
 * (so buffer positions always fit a ks_int). Runs inside
 * parallel regions, so it records no error message itself. */
int ks_interp_reserve(ks_interp_ws *ws, size_t extra);

/* a_ii by binary search in the sorted row (0 when absent). */
double ks_interp_diag(const ks_csr *A, ks_int i);

/* Check inputs, number the C points, run `row` for every F row (C rows get
 * their unit entry), sort each row by column and assemble P (n x nc).
 * `who` names the caller in messages. On failure *P is left empty. */
ks_error ks_interp_build(const char *who, const ks_csr *A, const ks_strength *S, const int *cf,
                         int need_marker, ks_interp_row_fn row, ks_csr *P);

#endif
