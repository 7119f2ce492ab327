/* How much host memory a new allocation can get, so that a size read from
 * a file header is refused before it is allocated (Linux overcommits: a
 * calloc of more than there is succeeds and the process dies later while
 * touching it). Not installed. */
#ifndef KS_HOST_MEMORY_H
#define KS_HOST_MEMORY_H

#include "ks_internal.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes available: KS_MEM_AVAILABLE from the environment when set (a byte
 * count, optionally with a k, M, G or T suffix: powers of 1024; the tests
 * fake a small machine with it), else the smaller of /proc/meminfo's
 * MemAvailable and the cgroup's limit less its usage, else free physical
 * pages (sysconf). 0 when nothing says (no limit is applied). *source (may
 * be NULL) names where the figure came from. */
uint64_t ks_host_memory_available(const char **source);

/* KS_OK when `bytes` fit in the memory available; else KS_ERR_MEMORY with
 * "<what> needs <bytes>, but <available> of memory is available (<source>)"
 * (the caller prefixes where: file and line). */
ks_error ks_host_memory_check(uint64_t bytes, const char *what);

/* "1.5 GB" style (decimal units) into buf (at least 16 bytes). */
const char *ks_bytes_human(double bytes, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
