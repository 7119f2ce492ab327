/* Private pieces shared by the strength and coarsening files (strength.c,
 * pmis.c, hmis.c) and their tests. Not installed. */
#ifndef KS_COARSEN_INTERNAL_H
#define KS_COARSEN_INTERNAL_H

#include "amg_cpu.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Structure check of a strength pattern: n >= 0, rowptr monotone from 0,
 * columns in [0, n) and never the row itself. `who` prefixes the message. */
ks_error ks_strength_check(const ks_strength *S, const char *who);

/* ks_strength_transpose of a pattern the caller has checked already. */
ks_error ks_strength_transpose_unchecked(const ks_strength *S, ks_strength *ST);

/* Counter-based random bits for point i (splitmix64 of the stream `seed`
 * at position i): the same for any thread count or visiting order. The
 * PMIS measure is |S^T_i| + hash / 2^64, compared exactly as the pair
 * (|S^T_i|, hash) with the index as the last tie-break. */
static inline uint64_t ks_coarsen_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
/* i is a global index (ks_gint) so a distributed version can draw the
 * same weights whatever the partition. */
static inline uint64_t ks_coarsen_hash(unsigned long long seed, ks_gint i)
{
    const uint64_t golden = UINT64_C(0x9E3779B97F4A7C15);
    uint64_t key = ks_coarsen_mix64((uint64_t)seed + golden);
    return ks_coarsen_mix64(key + golden * ((uint64_t)i + 1));
}

/* Shared PMIS stage. cf[i] on entry: KS_CPT / KS_FPT are kept, KS_UNDECIDED
 * points are decided by PMIS rounds (ST = transpose of S). Afterwards the
 * F-point fix-up runs over all points (see pmis.c). promoted (may be NULL,
 * n entries) gets 1 where the fix-up turned an F point into a C point, 0
 * elsewhere. */
ks_error ks_amg_pmis_stage(const ks_strength *S, const ks_strength *ST, unsigned long long seed,
                           int *cf, unsigned char *promoted);

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

#ifdef __cplusplus
}
#endif
#endif
