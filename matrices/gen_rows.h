/* Row ranges of the generated matrices (generators.c): ks_generate builds
 * the range [0, n), ks_generate_dist (mpi/) one rank's row block with global
 * column numbers; the rows are the same bits either way. Not installed. */
#ifndef KS_GEN_ROWS_H
#define KS_GEN_ROWS_H

#include "../core/ks_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Check p (the messages of ks_generate) and give the grid's row count. */
ks_error ks_gen_rows_global(const ks_gen_params *p, int64_t *nrows);
/* rowptr[0..r1-r0] of rows [r0, r1) (0 <= r0 <= r1 <= rows, p checked):
 * the row lengths summed from 0. KS_ERR_SIZE when the rows hold more than
 * INT32_MAX entries. */
ks_error ks_gen_rows_count(const ks_gen_params *p, int64_t r0, int64_t r1, ks_int *rowptr);
/* Columns and values of rows [r0, r1) at rowptr's positions; columns go to
 * ci32 (ks_int) or, when ci32 is NULL, to ci64 (global ks_gint). Columns
 * come out sorted within each row. */
void ks_gen_rows_fill(const ks_gen_params *p, int64_t r0, int64_t r1, const ks_int *rowptr,
                      ks_int *ci32, ks_gint *ci64, double *val);

#ifdef __cplusplus
}
#endif
#endif
