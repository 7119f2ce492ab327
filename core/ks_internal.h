/* Private helpers shared by every part of the library: error reporting,
 * allocation, timing. Not installed. */
#ifndef KS_INTERNAL_H
#define KS_INTERNAL_H

#include "ksolve.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__GNUC__)
#define KS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define KS_PRINTF(a, b)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Record a message for ks_last_error() and return the code, so failures read
 *     return ks_seterr(KS_ERR_FORMAT, "%s:%ld: expected 3 fields", path, line);
 */
ks_error ks_seterr(ks_error code, const char *fmt, ...) KS_PRINTF(2, 3);
/* Prefix the current message with context ("while reading b: ...") and
 * return code unchanged. */
ks_error ks_adderr(ks_error code, const char *fmt, ...) KS_PRINTF(2, 3);

/* Every message the library prints goes through here: formatted and handed
 * to the callback of ks_set_print_callback, or written as before (level
 * KS_LOG_INFO to stdout, the others to stderr) when none is set; dropped
 * when level is above ks_set_log_level's. OR KS_LOG_STDERR into level for
 * an information line that belongs on stderr by default (progress, traces:
 * output a pipe of the results should not get). */
#define KS_LOG_STDERR 0x100
void ks_log(int level, const char *fmt, ...) KS_PRINTF(2, 3);
/* The level set by ks_set_log_level (KS_LOG_INFO by default). */
int ks_log_level(void);

/* malloc/calloc that record KS_ERR_MEMORY with the size and a label. */
void *ks_malloc(size_t bytes, const char *what);
void *ks_calloc(size_t n, size_t size, const char *what);
/* memcpy shared by the OpenMP threads when large: one thread copies at a
 * fraction of the memory bandwidth, and a setup copies matrices of 10^8
 * entries in several places. */
void ks_memcpy_par(void *dst, const void *src, size_t bytes);

/* Row counts to row pointers, in place and shared by the OpenMP threads
 * for long arrays (core/scan.c): on entry rp[i + 1] is row i's count (rp[0]
 * is ignored), on exit rp[0] = 0 and rp[i + 1] the sum of rows 0 .. i.
 * Returns the total; above INT32_MAX nothing is written (the counts stay),
 * so a caller that can overflow checks it. Inside a parallel region it
 * runs on the calling thread alone. */
int64_t ks_rowptr_scan(ks_int *rp, ks_int n);

/* The OpenMP threads a chunked walk over n items takes: one below
 * serial_below (waking the others costs more), else all, at most max (no
 * cap for max <= 0); 1 without OpenMP. */
int ks_threads_for(int64_t n, int64_t serial_below, int max);
/* Inside a parallel region: this thread's number and the region's thread
 * count (which may be fewer than asked); 0 and 1 without OpenMP. */
void ks_thread_me(int *t, int *used);

/* The first position in v[0 .. n) (ascending) whose value is not below
 * key (n when none): the binary search of sorted rows, id lists and
 * ghost maps; one body for the index types. */
#define KS_LOWER_BOUND_DEFINE(name, T)                                                       \
    static inline ks_int name(const T *v, ks_int n, T key)                                   \
    {                                                                                        \
        ks_int a = 0, b = n;                                                                 \
        while (a < b) {                                                                      \
            const ks_int m = a + (b - a) / 2;                                                \
            if (v[m] < key)                                                                  \
                a = m + 1;                                                                   \
            else                                                                             \
                b = m;                                                                       \
        }                                                                                    \
        return a;                                                                            \
    }
KS_LOWER_BOUND_DEFINE(ks_lower_bound, ks_int)
KS_LOWER_BOUND_DEFINE(ks_lower_bound_gint, ks_gint)

/* Propagate a failing call's code. */
#define KS_TRY(call)                  \
    do {                              \
        ks_error ks_try_e_ = (call);  \
        if (ks_try_e_ != KS_OK)       \
            return ks_try_e_;         \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
