/* The one structure check of a host CSR, shared by ks_csr_validate and
 * every host kernel that indexes with a CSR's arrays (transpose, SpGEMM).
 * Not installed. */
#ifndef KS_CSR_CHECK_H
#define KS_CSR_CHECK_H

#include "../core/ks_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Shape, allocation, rowptr (monotone from 0 to nnz) and column ranges;
 * full = 1 also wants values, sorted and unique columns and finite values
 * (ks_csr_validate). Messages start with `who` and name the first bad row
 * (the same row for any thread count). With full = 0 val may be NULL (a
 * pattern). */
ks_error ks_csr_check(const ks_csr *A, const char *who, int full);

#ifdef __cplusplus
}
#endif
#endif
