/* Thread-local last-error message, allocation wrappers and the wall clock. */
#define _POSIX_C_SOURCE 200809L
#include "ks_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static _Thread_local char ks_errmsg[2048];

ks_error ks_seterr(ks_error code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ks_errmsg, sizeof ks_errmsg, fmt, ap);
    va_end(ap);
    return code;
}

ks_error ks_adderr(ks_error code, const char *fmt, ...)
{
    char prefix[1024], old[sizeof ks_errmsg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, ks_errmsg, sizeof old);
    /* A long context keeps the end of the original message: it names the cause. */
    size_t keep = sizeof ks_errmsg - 3 - strlen(prefix);
    size_t len = strlen(old);
    const char *tail = len > keep ? old + (len - keep) : old;
    int n = snprintf(ks_errmsg, sizeof ks_errmsg, "%s: ", prefix);
    memcpy(ks_errmsg + n, tail, strlen(tail) + 1);
    return code;
}

const char *ks_last_error(void) { return ks_errmsg; }

void ks_clear_error(void) { ks_errmsg[0] = '\0'; }

const char *ks_error_name(ks_error e)
{
    switch (e) {
    case KS_OK: return "KS_OK";
    case KS_ERR_ARG: return "KS_ERR_ARG";
    case KS_ERR_MEMORY: return "KS_ERR_MEMORY";
    case KS_ERR_IO: return "KS_ERR_IO";
    case KS_ERR_FORMAT: return "KS_ERR_FORMAT";
    case KS_ERR_CONFIG: return "KS_ERR_CONFIG";
    case KS_ERR_UNSUPPORTED: return "KS_ERR_UNSUPPORTED";
    case KS_ERR_DEVICE: return "KS_ERR_DEVICE";
    case KS_ERR_NUMERIC: return "KS_ERR_NUMERIC";
    case KS_ERR_SIZE: return "KS_ERR_SIZE";
    }
    return "KS_ERR_UNKNOWN";
}

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

double ks_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
