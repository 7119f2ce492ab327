/* Private pieces shared by the strength and coarsening files (strength.c,
 * pmis.c, hmis.c) and their tests. Not installed. */
#ifndef KS_COARSEN_INTERNAL_H
#define KS_COARSEN_INTERNAL_H

#include "amg_cpu.h"
#include "../coarsen_hash.h" /* ks_coarsen_hash, also the cuda coarsening's */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Structure check of a strength pattern: n >= 0, rowptr monotone from 0,
 * columns in [0, n) and never the row itself. `who` prefixes the message. */
ks_error ks_strength_check(const ks_strength *S, const char *who);

/* ks_strength_transpose of a pattern the caller has checked already. */
ks_error ks_strength_transpose_unchecked(const ks_strength *S, ks_strength *ST);
/* The same, each transposed row i followed by room[i + 1] - room[i]
 * entries left for the caller to write (room: n + 1 row pointers; NULL:
 * none), so rows that go on elsewhere need no second copy. */
ks_error ks_strength_transpose_room(const ks_strength *S, const ks_int *room, ks_strength *ST);

/* Shared PMIS stage. cf[i] on entry: KS_CPT / KS_FPT are kept, KS_UNDECIDED
 * points are decided by PMIS rounds (ST = transpose of S). Afterwards the
 * F-point fix-up runs over all points (see pmis.c). promoted (may be NULL,
 * n entries) gets 1 where the fix-up turned an F point into a C point, 0
 * elsewhere. */
ks_error ks_amg_pmis_stage(const ks_strength *S, const ks_strength *ST, unsigned long long seed,
                           int *cf, unsigned char *promoted);

/* The fix-up's serial pass: in index order, every candidate (cand[i] = 1:
 * an F point with strong connections and, before the pass, no C point
 * among them; ncand of them) that still has no C point in S_i becomes C
 * (promoted[i] = 1 when promoted is not NULL). An earlier promotion can
 * satisfy a later candidate, so the order matters: the cpu and cuda PMIS
 * both run this one loop. */
void ks_amg_pmis_fixup(const ks_strength *S, const unsigned char *cand, ks_int ncand, int *cf,
                       unsigned char *promoted);

/* ks_amg_pmis / ks_amg_hmis that also report the fix-up promotions
 * (promoted may be NULL). The only C points with a C neighbour in the
 * symmetrized strength graph are promoted ones or neighbours of them; no
 * point is promoted when S is structurally symmetric. */
ks_error ks_amg_pmis_ex(const ks_strength *S, unsigned long long seed, int *cf, ks_int *nc,
                        unsigned char *promoted);
ks_error ks_amg_hmis_ex(const ks_strength *S, unsigned long long seed, int *cf, ks_int *nc,
                        unsigned char *promoted);
/* HMIS with the RS pass in blocks of `block` rows (see hmis.c); block = 0
 * chooses the size from S (serial below 2^21 rows); block >= n runs the
 * serial pass, which is what ks_amg_hmis does. The splitting depends on
 * the block size (not on the threads). */
ks_error ks_amg_hmis_blocked(const ks_strength *S, unsigned long long seed, ks_int block,
                             int *cf, ks_int *nc, unsigned char *promoted);

/* HMIS's Ruge-Stueben first pass (hmis.c) over the undecided points of S
 * (cf: KS_UNDECIDED, isolated points KS_FPT): with fixed NULL, ks_amg_hmis's
 * first pass exactly. S and S^T have n = S->n rows; with fixed, their
 * columns may reach points j >= n (cf and fixed cover them), and points with
 * fixed[j] set are never decided, only counted: |S^T_i| includes them, so
 * a point's measure is its measure in the whole graph (mpi/hmis_dist.c
 * passes a rank's rows of the global graph, the other ranks' points fixed).
 * Points it leaves undecided (no dependents) are for the PMIS stage. */
ks_error ks_amg_rs_first_pass(const ks_strength *S, const ks_strength *ST,
                              const unsigned char *fixed, int *cf);

#ifdef __cplusplus
}
#endif
#endif
