/* KS_DIA_SPMM: which kernel the cuda backend's dia SpMM runs
 * (dia_spmm_walk.cuh, docs/blocks.md), read when a dia matrix is set up.
 * Plain C, so that the cpu tests check the parsing. Not installed. */
#ifndef KS_DIA_SPMM_H
#define KS_DIA_SPMM_H

#include "../core/ks_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* KS_DIA_SPMM's variant names, in this order: old, tile, vec (also "new"),
 * vec256, vec1024 (the default, with KS_DIA_SPMM_DEFAULT_ROWS). */
enum ks_dia_spmm_variant {
    KS_DIA_SPMM_OLD,     /* one thread per entry of Y, 256 threads cover 256 / k rows */
    KS_DIA_SPMM_TILE,    /* one thread per entry, each 512-thread block walks a tile of rows */
    KS_DIA_SPMM_VEC,     /* as tile, two columns a thread (16-byte loads) where k is even */
    KS_DIA_SPMM_VEC256,  /* vec in 256-thread blocks */
    KS_DIA_SPMM_VEC1024, /* vec in 1024-thread blocks */
};

/* What KS_DIA_SPMM asks for: "NAME" or "NAME:ROWS" (the rows a block of the
 * tile variants walks, 1 to 2^24; a NAME alone: KS_DIA_SPMM_TILE_ROWS). Unset:
 * vec1024 walking KS_DIA_SPMM_DEFAULT_ROWS, or a tile fitted to the matrix
 * (ks_dia_spmm_fit_tile), the fastest measured (H200, 7-point 256^3, k = 8:
 * 978 us fitted, 1187 us at 16384 rows; docs/blocks.md). */
#define KS_DIA_SPMM_TILE_ROWS 4096
#define KS_DIA_SPMM_DEFAULT_ROWS 16384
#define KS_DIA_SPMM_DEFAULT_PREFETCH 2
/* On: H200, 7-point 256^3, one call, alternating: k = 8 998 -> 967 us and
 * 1005 -> 973 us (72 -> 74 % of the floor), k = 16 1898 -> 1881 us, k = 4
 * 544 -> 549 us (docs/blocks.md). */
#define KS_DIA_SPMM_DEFAULT_L2PF 1
typedef struct ks_dia_spmm_choice {
    int variant;
    int tile_rows;
    /* The tile variants with at most 8 diagonals: the offsets read once a
     * thread, not once a row, and the row's diagonals loaded in chunks
     * before their sums. KS_DIA_SPMM_HOIST (read into `hoist`): 0 turns it
     * off (for A/B), 1 (the default) takes the chunk measured fastest for
     * the pass (8 for the SpMM, 4 for the fused passes: dia_spmm_walk.cuh),
     * 2, 4 or 8 sets the chunk for both. */
    int hoist;
    /* Whether the hoisted kernel issues the epilogue's read from memory (B
     * of a fused pass, Y of an SpMM with beta != 0) before the row's sums:
     * 0 never, 1 always, 2 (the default) where it was measured faster
     * (dia_spmm_walk.cuh). KS_DIA_SPMM_PREFETCH=0 or 1 sets it, for A/B. */
    int prefetch;
    int rows_given; /* KS_DIA_SPMM named the rows: ks_dia_spmm_fit_tile keeps them */
    /* The hoisted kernel's loads of values and X with a 256-byte L2
     * prefetch (PTX .L2::256B): KS_DIA_SPMM_L2PF=0 or 1 (for A/B), else
     * KS_DIA_SPMM_DEFAULT_L2PF. */
    int l2pf;
} ks_dia_spmm_choice;

/* Read at each dia setup (unset or empty: vec1024, 16384 rows, hoisted);
 * KS_ERR_ARG for an unknown name, a bad row count, a KS_DIA_SPMM_HOIST
 * other than 0, 1, 2, 4 or 8, or a KS_DIA_SPMM_PREFETCH or KS_DIA_SPMM_L2PF
 * other than 0 or 1. */
ks_error ks_dia_spmm_choice_get(ks_dia_spmm_choice *c);

/* The tile length for one matrix, unless KS_DIA_SPMM named it: the largest
 * |offset| L when L is longer than the default and the matrix still makes
 * a tile for each of the nsm multiprocessors. Then the X rows that row i
 * reads at +L are the rows the next tile reads, at the same point of its
 * walk, while both are in flight: they come from L2 once (7-point 256^3,
 * L = n^2 = 65,536; H200, k = 8: 978 us against 1187 us at 16,384 rows).
 * Otherwise the +-L rows of a row are read a long time apart, and again
 * from memory. */
void ks_dia_spmm_fit_tile(ks_dia_spmm_choice *c, ks_int nrows, const ks_int *offset,
                          ks_int ndiag, int nsm);

#ifdef __cplusplus
}
#endif
#endif
