/* The library's own output: the log level and the print callback every
 * message of the library goes through (ks_log). */
#include "ks_internal.h"

#include <stdio.h>
#include <string.h>

/* Plain globals, not thread-local: they are set once by the application
 * before it calls into the library from several threads (ksolve.h says so). */
static ks_print_fn log_fn;
static void *log_ctx;
static int log_level = KS_LOG_INFO;

void ks_set_print_callback(ks_print_fn fn, void *ctx)
{
    log_fn = fn;
    log_ctx = fn ? ctx : NULL;
}

void ks_set_log_level(int level)
{
    log_level = level < KS_LOG_ERROR ? KS_LOG_ERROR : level > KS_LOG_DEBUG ? KS_LOG_DEBUG : level;
}

int ks_log_level(void) { return log_level; }

void ks_log(int level, const char *fmt, ...)
{
    int to_stderr = (level & KS_LOG_STDERR) != 0;
    level &= ~KS_LOG_STDERR;
    if (level > log_level)
        return;
    char small[512];
    char *msg = small;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    /* A long line is formatted again in full rather than cut: a callback
     * writing to a log file should get what stderr would have. */
    if ((size_t)n >= sizeof small) {
        msg = malloc((size_t)n + 1);
        if (msg)
            vsnprintf(msg, (size_t)n + 1, fmt, ap2);
        else {
            msg = small;
            n = (int)sizeof small - 1;
        }
    }
    va_end(ap2);
    if (log_fn) {
        log_fn(msg, n, log_ctx);
    } else {
        /* Today's streams: information (the monitor, the solve summary) on
         * standard output, the rest on standard error. Flushed per message
         * so a pipe gets each line as it comes, not in bursts. */
        FILE *out = level == KS_LOG_INFO && !to_stderr ? stdout : stderr;
        fwrite(msg, 1, (size_t)n, out);
        fflush(out);
    }
    if (msg != small)
        free(msg);
}
