/* The cuda formats' upload and free helpers (format_cuda.h). */
#include "format_cuda.h"
#include "float_values.h"

#include <cstdio>
#include <cstdlib>

extern "C" ks_error ks_cufmt_upload(ks_backend *be, const ks_cufmt_array *a, int n,
                                    ks_cufmt_empty empty)
{
    for (int i = 0; i < n; i++) {
        ks_error e = KS_OK;
        if (a[i].bytes == 0 && empty == KS_CUFMT_EMPTY_NULL)
            *a[i].dev = NULL;
        else if (a[i].host)
            e = ks_be_upload_new(be, a[i].host, a[i].bytes, a[i].dev, a[i].what);
        else
            e = ks_be_alloc(be, a[i].bytes, a[i].dev, a[i].what);
        if (e != KS_OK) { /* the failed one is NULL already */
            for (int j = 0; j < i; j++) {
                if (*a[j].dev)
                    be->ops->free(be, *a[j].dev);
                *a[j].dev = NULL;
            }
            return e;
        }
    }
    return KS_OK;
}

extern "C" void ks_cufmt_free(ks_backend *be, void *const *p, int n)
{
    for (int i = 0; i < n; i++)
        if (p[i])
            be->ops->free(be, p[i]);
}

extern "C" ks_error ks_cufmt_upload_f32(ks_backend *be, const double *src, size_t n,
                                        float **dev, const char *what)
{
    float *h = NULL;
    KS_TRY(ks_float_values_new(src, n, what, &h));
    char label[96];
    snprintf(label, sizeof label, "%s float32 values", what);
    ks_error e = ks_be_upload_new(be, h, sizeof(float) * n, (void **)dev, label);
    free(h);
    return e;
}
