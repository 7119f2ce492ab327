/* The thread count of a chunked walk and a thread's place in it: the
 * setups' two-pass walks (count by chunk, scan, write by chunk) all start
 * so. */
#include "ks_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

int ks_threads_for(int64_t n, int64_t serial_below, int max)
{
#ifdef _OPENMP
    int nt = n >= serial_below ? omp_get_max_threads() : 1;
    return max > 0 && nt > max ? max : nt;
#else
    (void)n;
    (void)serial_below;
    (void)max;
    return 1;
#endif
}

void ks_thread_me(int *t, int *used)
{
#ifdef _OPENMP
    *t = omp_get_thread_num();
    *used = omp_get_num_threads();
#else
    *t = 0;
    *used = 1;
#endif
}
