/* vec/gpu.h with CUDA: the node's devices, choosing one for this thread,
 * and naming the one a backend runs on (name and PCI bus id, so a report
 * tells the cards of a node apart). */
#include "gpu.h"
#include "cuda_check.h"

#include <stdio.h>
#include <string.h>

extern "C" int ks_gpu_count(void) { return ks_cuda_device_count(); }

extern "C" ks_error ks_gpu_use(int device)
{
    KS_CUDA_CHECK(cudaSetDevice(device));
    return KS_OK;
}

extern "C" ks_error ks_backend_gpu(const ks_backend *be, ks_gpu_desc *d)
{
    memset(d, 0, sizeof *d);
    d->device = be && be->ops == &ks_backend_cuda_ops ? ks_cuda_device(be) : -1;
    if (d->device < 0)
        return KS_OK;
    cudaDeviceProp prop;
    KS_CUDA_CHECK(cudaGetDeviceProperties(&prop, d->device));
    snprintf(d->name, sizeof d->name, "%.95s", prop.name);
    KS_CUDA_CHECK(cudaDeviceGetPCIBusId(d->pci_bus_id, (int)sizeof d->pci_bus_id, d->device));
    return KS_OK;
}
