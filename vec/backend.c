/* Backend objects: lookup by name, life cycle, description and the memory
 * helpers every format and solver uses to allocate in the backend's space. */
#include "backend.h"

#include <stdio.h>
#include <string.h>

/* Every backend known to this build, in the order "auto" choices prefer. */
static const ks_backend_ops *const ks_backends[] = {
    &ks_backend_cpu_ops,
#ifdef KS_HAVE_CUDA
    &ks_backend_cuda_ops,
#endif
    NULL};

ks_error ks_backend_create(const char *name, ks_backend **be)
{
    if (!be)
        return ks_seterr(KS_ERR_ARG, "ks_backend_create: NULL output pointer");
    *be = NULL;
    if (!name)
        return ks_seterr(KS_ERR_ARG, "ks_backend_create: NULL backend name (valid: cpu, cuda)");

    const ks_backend_ops *ops = NULL;
    for (int i = 0; ks_backends[i]; i++)
        if (strcmp(ks_backends[i]->name, name) == 0)
            ops = ks_backends[i];
    if (!ops) {
#ifndef KS_HAVE_CUDA
        if (strcmp(name, "cuda") == 0)
            return ks_seterr(KS_ERR_UNSUPPORTED,
                             "backend \"cuda\" is not available: ksolve was built without CUDA");
#endif
        return ks_seterr(KS_ERR_ARG, "unknown backend \"%s\" (valid: cpu, cuda)", name);
    }

    ks_backend *b = ks_calloc(1, sizeof *b, "backend");
    if (!b)
        return KS_ERR_MEMORY;
    b->ops = ops;
    ks_error e = ops->init(b);
    if (e != KS_OK) {
        free(b);
        return e;
    }
    *be = b;
    return KS_OK;
}

void ks_backend_destroy(ks_backend **bep)
{
    ks_backend *be = bep ? *bep : NULL;
    if (!be)
        return;
    *bep = NULL; /* a second destroy of the same handle is a no-op */
    be->ops->fini(be);
    ks_track_free(&be->track);
    free(be);
}

size_t ks_backend_memory_in_use(const ks_backend *be) { return be ? be->track.in_use : 0; }

size_t ks_backend_memory_peak(const ks_backend *be) { return be ? be->track.peak : 0; }

void ks_backend_memory_reset_peak(ks_backend *be)
{
    if (be)
        be->track.peak = be->track.in_use;
}

ks_error ks_backend_set_memory_limit(ks_backend *be, size_t limit)
{
    if (!be)
        return ks_seterr(KS_ERR_ARG, "ks_backend_set_memory_limit: NULL backend");
    be->track.limit = limit;
    return KS_OK;
}

const char *ks_backend_name(const ks_backend *be) { return be ? be->ops->name : "(null)"; }

int ks_backend_available(const char *name)
{
    /* Probing must not disturb the caller's last error message. */
    char saved[2048];
    snprintf(saved, sizeof saved, "%s", ks_last_error());
    ks_backend *be = NULL;
    ks_error e = ks_backend_create(name, &be);
    ks_backend_destroy(&be);
    ks_seterr(KS_OK, "%s", saved);
    return e == KS_OK;
}

ks_error ks_backend_sync(ks_backend *be)
{
    if (!be)
        return ks_seterr(KS_ERR_ARG, "ks_backend_sync: NULL backend");
    return be->ops->sync(be);
}

ks_error ks_backend_trim(ks_backend *be)
{
    return be && be->ops->trim ? be->ops->trim(be) : KS_OK;
}

const char *ks_backend_description(const ks_backend *be) { return be ? be->desc : "(null)"; }

const char *ks_backend_kind_name(ks_backend_kind k)
{
    switch (k) {
    case KS_BACKEND_CPU: return "cpu";
    case KS_BACKEND_CUDA: return "cuda";
    }
    return "unknown";
}

int ks_backend_host_memory(const ks_backend *be) { return be && be->ops->host_memory; }

void ks_be_track(ks_backend *be, void *p, size_t bytes)
{
    if (be && p)
        ks_track_add(&be->track, p, bytes);
}

void ks_be_untrack(ks_backend *be, void *p)
{
    if (be && p)
        ks_track_remove(&be->track, p);
}

ks_error ks_be_alloc(ks_backend *be, size_t bytes, void **p, const char *what)
{
    *p = NULL;
    ks_error e = be->ops->alloc(be, bytes, p);
    if (e != KS_OK)
        return ks_adderr(e, "allocating %s on %s", what, be->ops->name);
    return KS_OK;
}

ks_error ks_be_upload_new(ks_backend *be, const void *host, size_t bytes, void **dev,
                          const char *what)
{
    KS_TRY(ks_be_alloc(be, bytes, dev, what));
    if (bytes == 0)
        return KS_OK;
    ks_error e = be->ops->upload(be, *dev, host, bytes);
    if (e != KS_OK) {
        be->ops->free(be, *dev);
        *dev = NULL;
        return ks_adderr(e, "uploading %s (%zu bytes) to %s", what, bytes, be->ops->name);
    }
    return KS_OK;
}
