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
#include <stdint.h>

typedef struct ks_interp_entry {
    ks_int col; /* coarse column */
    double val;
} ks_interp_entry;

/* One chunk's workspace. marker (only when the builder asked for it) has one
 * slot per fine point: -1 initially for C points, KS_INTERP_MARK_F for F
 * points (never changed). A builder stores the buffer position of C point
 * j's column in marker[j], so "j is in the current row" reads
 * marker[j] >= (position where the row started) && j is C, with no reset
 * between rows; and "j is F or already in the row" is the single test
 * marker[j] >= start, since positions stay below KS_INTERP_MARK_F
 * (ks_interp_reserve). One array answers both, which halves the random
 * loads of the distance-two walks. tpos / tval is per-row scratch of tcap
 * entries (ks_interp_scratch). */
#define KS_INTERP_MARK_F INT32_MAX
typedef struct ks_interp_ws {
    ks_interp_entry *buf;
    size_t len, cap;
    ks_int *marker;
    ks_int *tpos;
    double *tval;
    size_t tcap;
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

/* Room for m entries in tpos / tval; KS_INTERP_ROW_OK or _NOMEM. */
int ks_interp_scratch(ks_interp_ws *ws, size_t m);

/* a_ii by binary search in the sorted row (0 when absent). */
double ks_interp_diag(const ks_csr *A, ks_int i);

/* Check inputs, number the C points, run `row` for every F row (C rows get
 * their unit entry), sort each row by column and assemble P (n x nc).
 * `who` names the caller in messages. On failure *P is left empty. */
ks_error ks_interp_build(const char *who, const ks_csr *A, const ks_strength *S, const int *cf,
                         int need_marker, ks_interp_row_fn row, ks_csr *P);

#endif
