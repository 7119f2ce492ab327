/* vec/gpu.h in a build without CUDA: no GPUs. */
#include "gpu.h"

#ifndef KS_HAVE_CUDA
#include <string.h>

int ks_gpu_count(void) { return 0; }

ks_error ks_gpu_use(int device)
{
    return ks_seterr(KS_ERR_UNSUPPORTED, "GPU %d: ksolve was built without CUDA", device);
}

ks_error ks_backend_gpu(const ks_backend *be, ks_gpu_desc *d)
{
    (void)be;
    memset(d, 0, sizeof *d);
    d->device = -1;
    return KS_OK;
}
#endif
