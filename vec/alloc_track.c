/* Allocation tracking of a backend (alloc_track.h). */
#include "alloc_track.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define DELETED ((void *)1)

static size_t slot_of(const ks_alloc_track *t, const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return (size_t)h & (t->cap - 1);
}

ks_error ks_track_admit(const ks_alloc_track *t, size_t bytes, const char *backend)
{
    if (t->limit && (bytes > t->limit || t->in_use > t->limit - bytes))
        return ks_seterr(KS_ERR_MEMORY,
                         "%s: out of memory: %zu bytes asked, %zu in use, limit %zu "
                         "(ks_backend_set_memory_limit)",
                         backend, bytes, t->in_use, t->limit);
    return KS_OK;
}

/* Grow the table to twice its size (or 1024 slots). */
static int grow(ks_alloc_track *t)
{
    size_t cap = t->cap ? 2 * t->cap : 1024;
    void **keys = calloc(cap, sizeof *keys);
    size_t *sizes = calloc(cap, sizeof *sizes);
    if (!keys || !sizes) {
        free(keys);
        free(sizes);
        return 0;
    }
    ks_alloc_track n = *t;
    n.keys = keys;
    n.sizes = sizes;
    n.cap = cap;
    n.used = 0;
    for (size_t i = 0; i < t->cap; i++) {
        void *k = t->keys[i];
        if (!k || k == DELETED)
            continue;
        size_t s = slot_of(&n, k);
        while (n.keys[s])
            s = (s + 1) & (cap - 1);
        n.keys[s] = k;
        n.sizes[s] = t->sizes[i];
        n.used++;
    }
    free(t->keys);
    free(t->sizes);
    *t = n;
    return 1;
}

void ks_track_add(ks_alloc_track *t, void *p, size_t bytes)
{
    t->in_use += bytes;
    if (t->in_use > t->peak)
        t->peak = t->in_use;
    if (!p)
        return;
    if ((t->used + 1) * 2 > t->cap && !grow(t))
        return;
    size_t s = slot_of(t, p);
    while (t->keys[s] && t->keys[s] != DELETED)
        s = (s + 1) & (t->cap - 1);
    if (!t->keys[s])
        t->used++;
    t->keys[s] = p;
    t->sizes[s] = bytes;
    t->live_count++;
}

void ks_track_remove(ks_alloc_track *t, void *p)
{
    if (!p || !t->cap)
        return;
    size_t s = slot_of(t, p);
    for (size_t n = 0; n < t->cap && t->keys[s]; n++, s = (s + 1) & (t->cap - 1)) {
        if (t->keys[s] == p) {
            t->in_use -= t->sizes[s];
            t->keys[s] = DELETED;
            t->live_count--;
            return;
        }
    }
}

void ks_track_free(ks_alloc_track *t)
{
    free(t->keys);
    free(t->sizes);
    memset(t, 0, sizeof *t);
}
