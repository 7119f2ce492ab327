/* The host memory figure that large allocations are checked against
 * (core/host_memory.h). */
#include "host_memory.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* "123", "64k", "2G": bytes, or 0 when the text is not such a count. */
static uint64_t parse_count(const char *s)
{
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return 0;
    unsigned long long v = strtoull(s, &end, 10);
    const char *units = "kmgt";
    const char *u = *end ? strchr(units, tolower((unsigned char)*end)) : NULL;
    if (u) {
        for (const char *q = units; q <= u; q++)
            v = v > (UINT64_MAX >> 10) ? UINT64_MAX : v << 10;
        end++;
    }
    while (isspace((unsigned char)*end))
        end++;
    return *end ? 0 : (uint64_t)v;
}

/* A number from the first line of a file; 0 when absent or "max". */
static uint64_t read_number(const char *path)
{
    char line[64] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(line, sizeof line, f))
        line[0] = '\0';
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    return parse_count(line);
}

static uint64_t meminfo_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    uint64_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}

/* What the cgroup (v2, else v1) still allows this process; 0 = no limit. */
static uint64_t cgroup_room(void)
{
    static const char *const lim[] = {"/sys/fs/cgroup/memory.max",
                                      "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    static const char *const use[] = {"/sys/fs/cgroup/memory.current",
                                      "/sys/fs/cgroup/memory/memory.usage_in_bytes"};
    for (int i = 0; i < 2; i++) {
        uint64_t l = read_number(lim[i]);
        if (l == 0 || l >= (UINT64_C(1) << 60)) /* "max" or v1's "unlimited" */
            continue;
        uint64_t u = read_number(use[i]);
        return l > u ? l - u : 1;
    }
    return 0;
}

uint64_t ks_host_memory_available(const char **source)
{
    const char *env = getenv("KS_MEM_AVAILABLE");
    uint64_t v = env ? parse_count(env) : 0;
    if (v) {
        if (source)
            *source = "KS_MEM_AVAILABLE";
        return v;
    }
    const char *src = "MemAvailable in /proc/meminfo";
    v = meminfo_available();
    uint64_t cg = cgroup_room();
    if (cg && (!v || cg < v)) {
        v = cg;
        src = "the cgroup's memory limit less its usage";
    }
    if (!v) {
        long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        if (pages > 0 && size > 0)
            v = (uint64_t)pages * (uint64_t)size;
        src = "free physical pages";
    }
    if (source)
        *source = v ? src : "unknown";
    return v;
}

const char *ks_bytes_human(double bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"bytes", "kB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (bytes >= 1000.0 && u < 5) {
        bytes /= 1000.0;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

ks_error ks_host_memory_check(uint64_t bytes, const char *what)
{
    const char *src;
    uint64_t avail = ks_host_memory_available(&src);
    if (!avail || bytes <= avail)
        return KS_OK;
    char need[32], have[32];
    return ks_seterr(KS_ERR_MEMORY, "%s needs %s, but %s of memory is available (%s)", what,
                     ks_bytes_human((double)bytes, need, sizeof need),
                     ks_bytes_human((double)avail, have, sizeof have), src);
}
