/* Chunked line reader for plain and gzip text. gzread reads plain files
 * transparently and, for requests larger than its own buffer, straight into
 * ours, so one code path serves both at full speed. */
#include "mmio_internal.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#define KS_GZR_CHUNK ((size_t)4 << 20)

ks_error ks_gzr_open(ks_gzr *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    errno = 0;
    r->gz = gzopen(path, "rb");
    if (!r->gz)
        return ks_seterr(KS_ERR_IO, "cannot open %s: %s", path,
                         errno ? strerror(errno) : "out of memory");
    gzbuffer(r->gz, 1u << 18);
    r->cap = KS_GZR_CHUNK;
    r->buf = ks_malloc(r->cap + 1, "file read buffer");
    if (!r->buf) {
        gzclose(r->gz);
        r->gz = NULL;
        return KS_ERR_MEMORY;
    }
    return KS_OK;
}

void ks_gzr_close(ks_gzr *r)
{
    if (r->gz)
        gzclose(r->gz);
    free(r->buf);
    r->gz = NULL;
    r->buf = NULL;
}

static int read_error(ks_gzr *r)
{
    int zerr = Z_OK;
    const char *msg = gzerror(r->gz, &zerr);
    if (zerr == Z_ERRNO)
        r->err = ks_seterr(KS_ERR_IO, "%s:%ld: read error: %s", r->path, r->line + 1, strerror(errno));
    else
        r->err = ks_seterr(KS_ERR_FORMAT, "%s:%ld: compressed data is truncated or corrupt (zlib: %s)",
                  r->path, r->line + 1, msg ? msg : "unknown error");
    return -1;
}

int ks_gzr_run(ks_gzr *r, char **p, char **lim)
{
    if (r->pos < r->lim) {
        *p = r->buf + r->pos;
        *lim = r->buf + r->lim;
        return 1;
    }
    /* Everything up to lim is consumed: keep the partial last line. */
    size_t rest = r->len - r->lim;
    if (rest && r->lim)
        memmove(r->buf, r->buf + r->lim, rest);
    r->len = rest;
    r->pos = r->lim = 0;
    for (;;) {
        if (r->eof) {
            if (r->len == 0)
                return 0;
            r->buf[r->len++] = '\n'; /* the spare byte: supply the missing newline */
            r->lim = r->len;
            break;
        }
        if (r->len == r->cap) { /* one line longer than the buffer */
            size_t ncap = r->cap * 2;
            char *nb = ncap < INT_MAX ? realloc(r->buf, ncap + 1) : NULL;
            if (!nb) {
                r->err = ks_seterr(KS_ERR_MEMORY, "%s:%ld: line too long (over %zu bytes)", r->path,
                          r->line + 1, r->cap);
                return -1;
            }
            r->buf = nb;
            r->cap = ncap;
        }
        size_t old = r->len;
        int n = gzread(r->gz, r->buf + old, (unsigned)(r->cap - old));
        if (n < 0)
            return read_error(r);
        if (n == 0) {
            int zerr = Z_OK;
            gzerror(r->gz, &zerr);
            if (zerr != Z_OK)
                return read_error(r);
            r->eof = 1;
            continue;
        }
        r->len = old + (size_t)n;
        size_t k = r->len;
        while (k > old && r->buf[k - 1] != '\n')
            k--;
        if (k > old) {
            r->lim = k;
            break;
        }
    }
    *p = r->buf;
    *lim = r->buf + r->lim;
    return 1;
}

int ks_gzr_line(ks_gzr *r, char **line)
{
    char *p, *lim;
    int st = ks_gzr_run(r, &p, &lim);
    if (st <= 0)
        return st;
    char *nl = memchr(p, '\n', (size_t)(lim - p)); /* runs end in '\n' */
    r->pos = (size_t)(nl - r->buf) + 1;
    r->line++;
    *nl = '\0';
    if (nl > p && nl[-1] == '\r')
        nl[-1] = '\0';
    *line = p;
    return 1;
}
