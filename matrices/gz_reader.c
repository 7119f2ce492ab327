/* Chunked line reader for plain and gzip text: inflate writes straight
 * into our buffer, and plain files are copied from the raw input buffer, so
 * one code path serves both. */
#include "mmio_internal.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#define KS_GZR_CHUNK ((size_t)4 << 20)
#define KS_GZR_IN ((size_t)1 << 18)

ks_error ks_gzr_open(ks_gzr *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    errno = 0;
    r->f = fopen(path, "rb");
    if (!r->f)
        return ks_seterr(KS_ERR_IO, "cannot open %s: %s", path,
                         errno ? strerror(errno) : "out of memory");
    r->cap = KS_GZR_CHUNK;
    r->buf = ks_malloc(r->cap + 1, "file read buffer");
    r->in = ks_malloc(KS_GZR_IN, "file read buffer");
    if (!r->buf || !r->in) {
        ks_gzr_close(r);
        return ks_adderr(KS_ERR_MEMORY, "%s", path);
    }
    /* gzip when the file starts with its magic bytes, else plain text (the
     * bytes read to look stay in the input buffer). */
    size_t got = fread(r->in, 1, 2, r->f);
    r->z.next_in = r->in;
    r->z.avail_in = (uInt)got;
    if (got == 2 && r->in[0] == 0x1f && r->in[1] == 0x8b) {
        r->gzip = 1;
        if (inflateInit2(&r->z, 15 + 16) != Z_OK) {
            ks_gzr_close(r);
            return ks_seterr(KS_ERR_MEMORY, "%s: out of memory starting decompression", path);
        }
        r->zinit = 1;
    }
    return KS_OK;
}

void ks_gzr_close(ks_gzr *r)
{
    if (r->zinit)
        inflateEnd(&r->z);
    if (r->f)
        fclose(r->f);
    free(r->buf);
    free(r->in);
    r->f = NULL;
    r->buf = NULL;
    r->in = NULL;
    r->zinit = 0;
}

static int corrupt(ks_gzr *r, const char *what)
{
    r->err = ks_seterr(KS_ERR_FORMAT, "%s:%ld: compressed data is truncated or corrupt (zlib: %s)",
                       r->path, r->line + 1, what);
    return -1;
}

/* Refill the raw input buffer: 1, 0 at end of file, -1 on a read error. */
static int read_raw(ks_gzr *r)
{
    size_t got = fread(r->in, 1, KS_GZR_IN, r->f);
    if (got == 0 && ferror(r->f)) {
        r->err = ks_seterr(KS_ERR_IO, "%s:%ld: read error: %s", r->path, r->line + 1,
                           strerror(errno));
        return -1;
    }
    r->z.next_in = r->in;
    r->z.avail_in = (uInt)got;
    return got > 0;
}

/* Up to want bytes of text into dst: the count, 0 at the end, -1 on error.
 * Inflate is driven here rather than through gzread, which ignores bytes
 * after a gzip stream's end: a file with anything there but another gzip
 * member is damaged or not what it claims, and is refused. */
static long read_text(ks_gzr *r, char *dst, size_t want)
{
    if (!r->gzip) {
        if (r->z.avail_in == 0) { /* straight into dst: no copy */
            size_t got = fread(dst, 1, want, r->f);
            if (got == 0 && ferror(r->f)) {
                r->err = ks_seterr(KS_ERR_IO, "%s:%ld: read error: %s", r->path, r->line + 1,
                                   strerror(errno));
                return -1;
            }
            return (long)got;
        }
        size_t n = r->z.avail_in < want ? r->z.avail_in : want;
        memcpy(dst, r->z.next_in, n);
        r->z.next_in += n;
        r->z.avail_in -= (uInt)n;
        return (long)n;
    }
    r->z.next_out = (Bytef *)dst;
    r->z.avail_out = (uInt)want;
    while (r->z.avail_out == want) {
        if (r->z.avail_in == 0) {
            int st = read_raw(r);
            if (st < 0)
                return -1;
            if (st == 0)
                return r->member_done ? 0 : corrupt(r, "unexpected end of file");
        }
        if (r->member_done) { /* more bytes: only another member may follow */
            if (r->z.next_in[0] != 0x1f) {
                r->err = ks_seterr(KS_ERR_FORMAT,
                                   "%s: bytes after the end of the gzip stream (the file is "
                                   "damaged, or not one gzip file)",
                                   r->path);
                return -1;
            }
            inflateReset(&r->z);
            r->member_done = 0;
        }
        int ret = inflate(&r->z, Z_NO_FLUSH);
        if (ret == Z_STREAM_END)
            r->member_done = 1;
        else if (ret == Z_MEM_ERROR) {
            r->err = ks_seterr(KS_ERR_MEMORY, "%s: out of memory decompressing", r->path);
            return -1;
        } else if (ret != Z_OK && ret != Z_BUF_ERROR)
            return corrupt(r, r->z.msg ? r->z.msg : "invalid data");
    }
    return (long)(want - r->z.avail_out);
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
        long n = read_text(r, r->buf + old, r->cap - old);
        if (n < 0)
            return -1;
        if (n == 0) {
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

/* zlib's deflate cannot compress better than 1032 to 1 (a run of one byte
 * value: 258 bytes a match in at least 2 bits, plus block overhead). */
#define KS_DEFLATE_MAX_RATIO 1032

uint64_t ks_gzr_text_bound(const ks_gzr *r)
{
    struct stat sb;
    long at = ftell(r->f);
    if (fstat(fileno(r->f), &sb) != 0 || !S_ISREG(sb.st_mode) || at < 0)
        return UINT64_MAX; /* a pipe or a device: no size to go by */
    uint64_t raw = (uint64_t)(sb.st_size > at ? sb.st_size - at : 0) + r->z.avail_in;
    if (r->gzip && raw > UINT64_MAX / (2 * KS_DEFLATE_MAX_RATIO))
        return UINT64_MAX;
    uint64_t text = r->gzip ? raw * KS_DEFLATE_MAX_RATIO : raw;
    return text + (r->len - r->pos) + 1; /* + the newline a last line may lack */
}
