/* Thread-local last-error message and the error-code names. */
#define _POSIX_C_SOURCE 200809L
#include "ks_internal.h"

#include <stdio.h>
#include <string.h>

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
    case KS_ERR_MPI: return "KS_ERR_MPI";
    }
    return "KS_ERR_UNKNOWN";
}
