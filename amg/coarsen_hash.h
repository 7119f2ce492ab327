/* The random bits of PMIS/HMIS, shared by the cpu (amg/cpu/) and cuda
 * (amg/cuda/) coarsenings so that both draw exactly the same measures:
 * one definition, compiled for the host and, under nvcc, for the device.
 * Not installed. */
#ifndef KS_COARSEN_HASH_H
#define KS_COARSEN_HASH_H

#include "../core/ks_internal.h"

#include <stdint.h>

#if defined(__CUDACC__)
#define KS_HASH_FN static __host__ __device__ __forceinline__
#else
#define KS_HASH_FN static inline
#endif

/* Counter-based random bits for point i (splitmix64 of the stream `seed`
 * at position i): the same for any thread count or visiting order. The
 * PMIS measure is |S^T_i| + hash / 2^64, compared exactly as the pair
 * (|S^T_i|, hash) with the index as the last tie-break. Integer operations
 * only, so host and device agree bit for bit. */
KS_HASH_FN uint64_t ks_coarsen_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* i is a global index (ks_gint) so a distributed version can draw the
 * same weights whatever the partition. */
KS_HASH_FN uint64_t ks_coarsen_hash(unsigned long long seed, ks_gint i)
{
    const uint64_t golden = UINT64_C(0x9E3779B97F4A7C15);
    uint64_t key = ks_coarsen_mix64((uint64_t)seed + golden);
    return ks_coarsen_mix64(key + golden * ((uint64_t)i + 1));
}

#endif
