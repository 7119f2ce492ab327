/* KS_DIA_SPMM: which kernel the cuda backend's dia SpMM runs
 * (dia_spmm_cuda.cu, docs/blocks.md), read when a dia matrix is set up.
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
 * vec1024 walking KS_DIA_SPMM_DEFAULT_ROWS, the fastest measured (H100,
 * 7-point 256^3, k = 8: 1658 us against vec's 1737 us; docs/blocks.md). */
#define KS_DIA_SPMM_TILE_ROWS 4096
#define KS_DIA_SPMM_DEFAULT_ROWS 16384
typedef struct ks_dia_spmm_choice {
    int variant;
    int tile_rows;
    /* The tile variants with at most 8 diagonals: the offsets read once a
     * thread, not once a row (KS_DIA_SPMM_HOIST=0 turns it off, for A/B). */
    int hoist;
} ks_dia_spmm_choice;

/* Read at each dia setup (unset or empty: vec1024, 16384 rows, hoisted);
 * KS_ERR_ARG for an unknown name, a bad row count or a KS_DIA_SPMM_HOIST
 * other than 0 or 1. */
ks_error ks_dia_spmm_choice_get(ks_dia_spmm_choice *c);

#ifdef __cplusplus
}
#endif
#endif
