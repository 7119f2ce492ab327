/* Allocation wrappers that record KS_ERR_MEMORY with the size and a label,
 * and the threaded copy large setups use.
 *
 * Large arrays are asked for transparent huge pages. The AMG setup makes
 * and frees arrays of hundreds of MB level after level; malloc takes each
 * from the kernel afresh, and with 4 KiB pages every first touch is a page
 * fault, which serialise on the process's memory map: on a 16-core host
 * they were a third of a 256^3 distributed setup on 16 threads (37.7 s;
 * 23.2 s with huge pages, docs/performance.md 2026-11-29). Where the
 * system gives huge pages only on request (THP "madvise", the common
 * default) a request is what makes them; elsewhere it changes nothing.
 * KS_HOST_HUGEPAGES=0 turns the request off. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* madvise */
#endif
#include "ks_internal.h"

#include <stdint.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define HUGE_PAGE ((uintptr_t)2 << 20)

static int huge_pages_wanted(void)
{
    static _Atomic int wanted = -1; /* threads that race compute the same value */
    int w = wanted;
    if (w < 0) {
        const char *v = getenv("KS_HOST_HUGEPAGES");
        wanted = w = !(v && v[0] == '0' && v[1] == '\0');
    }
    return w;
}

/* The whole huge pages inside [p, p + bytes) asked for as huge pages; an
 * advice, so a refusal is ignored. */
static void advise_huge(void *p, size_t bytes)
{
#if defined(MADV_HUGEPAGE)
    if (!p || bytes < 2 * HUGE_PAGE || !huge_pages_wanted())
        return;
    const uintptr_t b = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    const uintptr_t e = ((uintptr_t)p + bytes) & ~(HUGE_PAGE - 1);
    if (e > b)
        (void)madvise((void *)b, e - b, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

void *ks_malloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        ks_seterr(KS_ERR_MEMORY, "out of host memory allocating %zu bytes for %s", bytes, what);
    advise_huge(p, bytes);
    return p;
}

void *ks_calloc(size_t n, size_t size, const char *what)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        ks_seterr(KS_ERR_MEMORY, "out of host memory allocating %zu x %zu bytes for %s", n, size,
                  what);
    else if (size && n <= SIZE_MAX / size)
        advise_huge(p, n * size);
    return p;
}

void ks_memcpy_par(void *dst, const void *src, size_t bytes)
{
    const size_t chunk = (size_t)1 << 20; /* 1 MiB a task: below, one memcpy */
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
