/* Row counts to row pointers, shared by the OpenMP threads: the setups turn
 * counts of millions of rows into offsets in many places, and one thread
 * walking them is a serial step between parallel passes.
 *
 * Two passes over static chunks: each thread sums its chunk, the chunk
 * sums are scanned (in 64 bits, so an overflow is seen before anything is
 * written), then each thread writes its chunk's offsets. Integer sums: the
 * result is the serial loop's for any thread count. Chunk boundaries fall
 * on 64-byte lines of the array, so no two threads write one line. */
#include "ks_internal.h"

#include <stdint.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many rows one thread is faster than waking the others. */
#define KS_SCAN_SERIAL_ROWS 32768
/* Entries of a 64-byte line, and the most threads given a chunk each. */
#define KS_SCAN_LINE (64 / (int)sizeof(ks_int))
#define KS_SCAN_MAX_THREADS 256

static int64_t scan_serial(ks_int *rp, ks_int n)
{
    int64_t s = 0;
    for (ks_int i = 1; i <= n; i++)
        s += rp[i];
    if (s > INT32_MAX)
        return s;
    ks_int a = 0;
    rp[0] = 0;
    for (ks_int i = 1; i <= n; i++) {
        a += rp[i];
        rp[i] = a;
    }
    return s;
}

/* The first index of chunk t of nt over entries 1 .. n of rp, on a line
 * boundary of the array (entry 1 for t = 0, n + 1 for t = nt). */
static ks_int chunk_start(const ks_int *rp, ks_int n, int t, int nt)
{
    if (t == 0)
        return 1;
    if (t == nt)
        return n + 1;
    ks_int b = 1 + (ks_int)((int64_t)n * t / nt);
    const uintptr_t at = (uintptr_t)(rp + b) / sizeof(ks_int);
    b += (ks_int)((KS_SCAN_LINE - at % KS_SCAN_LINE) % KS_SCAN_LINE);
    return b < n + 1 ? b : n + 1;
}

int64_t ks_rowptr_scan(ks_int *rp, ks_int n)
{
    if (n <= 0) {
        if (rp)
            rp[0] = 0;
        return 0;
    }
    int nt = 1;
#ifdef _OPENMP
    if (n >= KS_SCAN_SERIAL_ROWS && !omp_in_parallel())
        nt = omp_get_max_threads();
#endif
    if (nt > KS_SCAN_MAX_THREADS)
        nt = KS_SCAN_MAX_THREADS;
    if (nt <= 1)
        return scan_serial(rp, n);
    int64_t part[KS_SCAN_MAX_THREADS + 1];
    int64_t total = 0;
#pragma omp parallel num_threads(nt)
    {
        int t, used;
        ks_thread_me(&t, &used);
        const ks_int b = chunk_start(rp, n, t, used), e = chunk_start(rp, n, t + 1, used);
        int64_t s = 0;
        for (ks_int i = b; i < e; i++)
            s += rp[i];
        part[t + 1] = s;
#pragma omp barrier
#pragma omp single
        {
            part[0] = 0;
            for (int q = 1; q <= used; q++)
                part[q] += part[q - 1];
            total = part[used];
        } /* its implied barrier publishes part and total */
        if (total <= INT32_MAX) {
            ks_int a = (ks_int)part[t];
            for (ks_int i = b; i < e; i++) {
                a += rp[i];
                rp[i] = a;
            }
        }
    }
    if (total <= INT32_MAX)
        rp[0] = 0;
    return total;
}
