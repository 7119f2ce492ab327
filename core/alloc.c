/* Allocation wrappers that record KS_ERR_MEMORY with the size and a label,
 * and the threaded copy large setups use. */
#include "ks_internal.h"

#include <string.h>

void *ks_malloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        ks_seterr(KS_ERR_MEMORY, "out of host memory allocating %zu bytes for %s", bytes, what);
    return p;
}

void *ks_calloc(size_t n, size_t size, const char *what)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        ks_seterr(KS_ERR_MEMORY, "out of host memory allocating %zu x %zu bytes for %s", n, size,
                  what);
    return p;
}

void ks_memcpy_par(void *dst, const void *src, size_t bytes)
{
    const size_t chunk = (size_t)1 << 22; /* 4 MiB a task: below, one memcpy */
    if (bytes <= chunk) {
        if (bytes)
            memcpy(dst, src, bytes);
        return;
    }
    const long nchunks = (long)((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (long c = 0; c < nchunks; c++) {
        const size_t off = (size_t)c * chunk;
        memcpy((char *)dst + off, (const char *)src + off, bytes - off < chunk ? bytes - off : chunk);
    }
}
