/* The wall clock every timing in the library reads. */
#define _POSIX_C_SOURCE 200809L
#include "ks_internal.h"

#include <time.h>

double ks_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
