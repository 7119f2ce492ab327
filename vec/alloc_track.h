/* What a backend has allocated: live bytes, their peak, an optional limit.
 * Each backend's alloc and free report here (so every allocation on a
 * backend counts, whoever makes it); the sizes are kept per pointer in an
 * open-addressing table, since free() is not told the size. Not installed. */
#ifndef KS_ALLOC_TRACK_H
#define KS_ALLOC_TRACK_H

#include "../core/ks_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_alloc_track {
    void **keys;   /* pointers; NULL = empty slot, (void *)1 = deleted */
    size_t *sizes;
    size_t cap, used, live_count;
    size_t in_use, peak, limit; /* bytes; limit 0 = none */
} ks_alloc_track;

/* Before allocating `bytes`: KS_ERR_MEMORY (message names the bytes asked,
 * in use and the limit) when the limit would be passed. */
ks_error ks_track_admit(const ks_alloc_track *t, size_t bytes, const char *backend);
/* After an allocation or before a free. Tracking never fails the caller:
 * without room for the table the bytes still count (an untracked pointer
 * freed later just does not decrease in_use). */
void ks_track_add(ks_alloc_track *t, void *p, size_t bytes);
void ks_track_remove(ks_alloc_track *t, void *p);
void ks_track_free(ks_alloc_track *t);

#ifdef __cplusplus
}
#endif
#endif
