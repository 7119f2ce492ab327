/* The AMG kernel table a device test program checks against the cpu's
 * (test_amg_cuda.c, test_amg_strength_blocks.c, test_amg_spectral_blocks.c):
 * the cuda table where a CUDA device is usable; with KS_AMG_CUDA_TEST_SELF=1
 * the cpu table stands in for it (cpu against cpu: a check of the test
 * program itself on a machine without a GPU); else NULL (the caller skips).
 * *name: the backend to create for it. */
#ifndef KS_TEST_AMG_DEVICE_TABLE_H
#define KS_TEST_AMG_DEVICE_TABLE_H

#include "ks_test.h"
#include "amg/kernels.h"

#include <stdio.h>
#include <stdlib.h>

static inline const ks_amg_kernels *ks_test_amg_device_table(const char **name)
{
    const char *self = getenv("KS_AMG_CUDA_TEST_SELF");
    if (self && atoi(self)) {
        *name = "cpu";
        printf("KS_AMG_CUDA_TEST_SELF: the cpu table stands in for the cuda one\n");
        return &ks_amg_cpu_kernels;
    }
#ifdef KS_HAVE_CUDA
    if (ks_test_have_cuda()) {
        *name = "cuda";
        return &ks_amg_cuda_kernels;
    }
#endif
    *name = NULL;
    return NULL;
}

#endif
