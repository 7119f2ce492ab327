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

#include "amg_cpu.h"

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
    const double *diag; /* a_ii of every row (KS_INTERP_NEED_DIAG, compact_row), else NULL */
    /* Only for a spec's compact_row (else NULL): for each F row k, in row
     * order,
     *   sc: its strong C neighbours (the C part of S_k),
     *   ac: the entries a_kl of A with l a C point and the sign opposite to
     *       a_kk (a_kk >= 0 counts as positive; zeros are left out),
     * so distance-two walks skip the F columns they would only test and
     * drop; and for each F row i,
     *   ft: the entries a_ki (column k, sorted) with k != i an F point and
     *       a_ki of the sign opposite to a_kk: the transpose of the F-F part
     *       of those couplings, so a walk of row i finds a_ki by merging
     *       instead of searching row k.
     * C rows are empty. */
    const ks_int *sc_rp, *sc_ci;
    const ks_int *ac_rp, *ac_ci;
    const double *ac_va;
    const ks_int *ft_rp, *ft_ci;
    const double *ft_va;
    ks_int nc;
} ks_interp_ctx;

/* What a row builder needs besides A, S, cf and cmap. */
enum {
    KS_INTERP_NEED_MARKER = 1, /* ks_interp_ws.marker */
    KS_INTERP_NEED_DIAG = 2    /* ks_interp_ctx.diag */
};

/* When the compact rows (and the builder that reads them) are used. */
enum {
    KS_INTERP_COMPACT_AUTO = 0, /* when distance-two walks are long enough */
    KS_INTERP_COMPACT_NEVER,
    KS_INTERP_COMPACT_ALWAYS
};

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
 * parallel regions, so it records no error message itself. The check is
 * inline (it runs several times per row); growing is not. */
int ks_interp_grow(ks_interp_ws *ws, size_t extra);
static inline int ks_interp_reserve(ks_interp_ws *ws, size_t extra)
{
    return ws->len + extra <= ws->cap ? KS_INTERP_ROW_OK : ks_interp_grow(ws, extra);
}

/* Room for m entries in tpos / tval; KS_INTERP_ROW_OK or _NOMEM. */
int ks_interp_scratch_grow(ks_interp_ws *ws, size_t m);
static inline int ks_interp_scratch(ks_interp_ws *ws, size_t m)
{
    return m <= ws->tcap ? KS_INTERP_ROW_OK : ks_interp_scratch_grow(ws, m);
}

/* A row builder and what it needs. compact_row (may be NULL) builds the
 * same rows from the compact rows of the context (sc, ac, ft); `compact`
 * (KS_INTERP_COMPACT_*) says when it replaces `row`. */
typedef struct ks_interp_spec {
    unsigned needs; /* KS_INTERP_NEED_* */
    ks_interp_row_fn row;
    ks_interp_row_fn compact_row;
    int compact;
} ks_interp_spec;

/* Check inputs, number the C points, run the row builder for every F row
 * (C rows get their unit entry), sort each row by column and assemble P
 * (n x nc). `who` names the caller in messages. On failure *P is left
 * empty. */
ks_error ks_interp_build(const char *who, const ks_csr *A, const ks_strength *S, const int *cf,
                         const ks_interp_spec *spec, ks_csr *P);
/* The same for rows r0 .. r1 - 1 only; the other rows of P stay empty. */
ks_error ks_interp_build_rows(const char *who, const ks_csr *A, const ks_strength *S,
                              const int *cf, const ks_interp_spec *spec, ks_int r0, ks_int r1,
                              ks_csr *P);

/* ks_amg_interp_extended_i with the choice of row builder forced
 * (KS_INTERP_COMPACT_*), for tests: every choice gives the same P. */
ks_error ks_interp_extended_i_with(const ks_csr *A, const ks_strength *S, const int *cf,
                                   int compact, ks_csr *P);

#endif
