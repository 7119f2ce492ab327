/* Helpers shared by the benchmark programs: the median of timings, and the
 * copy bandwidth of a backend (the byte floor's yardstick: bench_spmv sets
 * each format against it, bench_amg the cpu-vs-cuda speedup). */
#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef KS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* GB/s of a device-to-device (or host) copy, read + write bytes counted. */
double bench_copy_bandwidth(ks_backend *be, double matrix_bytes, double *mib, int *samples)
{
    double want = fmax(1024.0 * 1024 * 1024, 4.0 * matrix_bytes);
#ifdef KS_HAVE_CUDA
    if (be->ops->kind == KS_BACKEND_CUDA) {
        size_t freeb = 0, total = 0;
        if (cudaMemGetInfo(&freeb, &total) == cudaSuccess && want > 0.4 * (double)freeb)
            want = 0.4 * (double)freeb;
        size_t bytes = (size_t)want & ~(size_t)255;
        void *src = NULL, *dst = NULL;
        cudaStream_t st = (cudaStream_t)ks_cuda_stream(be);
        cudaEvent_t e0, e1;
        const int nrep = 30;
        double t[30];
        double gbs = NAN;
        if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess ||
            cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
            fprintf(stderr, "copy bandwidth: %s\n",
                    cudaGetErrorString(cudaGetLastError()));
        } else {
            cudaMemsetAsync(src, 1, bytes, st);
            cudaMemsetAsync(dst, 0, bytes, st);
            for (int r = 0; r < 3; r++)
                cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st);
            int ok = 1;
            for (int r = 0; r < nrep && ok; r++) {
                float ms = 0.0f;
                ok = cudaEventRecord(e0, st) == cudaSuccess &&
                     cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st) ==
                         cudaSuccess &&
                     cudaEventRecord(e1, st) == cudaSuccess &&
                     cudaEventSynchronize(e1) == cudaSuccess &&
                     cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
                t[r] = 1e-3 * ms;
            }
            if (ok)
                gbs = 2.0 * (double)bytes / bench_median(t, nrep) * 1e-9;
            else
                fprintf(stderr, "copy bandwidth: %s\n",
                        cudaGetErrorString(cudaGetLastError()));
            cudaEventDestroy(e0);
            cudaEventDestroy(e1);
        }
        cudaFree(src);
        cudaFree(dst);
        *mib = (double)bytes / (1024.0 * 1024.0);
        *samples = nrep;
        return gbs;
    }
#endif
    (void)be;
    /* Host: a quarter of physical memory at most, threads copy slices. */
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    want = fmin(fmax(256.0 * 1024 * 1024, 4.0 * matrix_bytes), phys > 0 ? 0.25 * phys : want);
    size_t bytes = (size_t)want & ~(size_t)4095;
    char *src = malloc(bytes), *dst = malloc(bytes);
    const int nrep = 10;
    double t[10];
    double gbs = NAN;
    if (src && dst) {
        for (int r = -1; r < nrep; r++) { /* r = -1: first touch, untimed */
            double t0 = ks_wtime();
#ifdef _OPENMP
#pragma omp parallel
#endif
            {
                int nt = 1, id = 0;
#ifdef _OPENMP
                nt = omp_get_num_threads();
                id = omp_get_thread_num();
#endif
                size_t chunk = (bytes / (size_t)nt) & ~(size_t)63;
                size_t b0 = chunk * (size_t)id, b1 = id == nt - 1 ? bytes : b0 + chunk;
                if (r < 0) {
                    memset(src + b0, 1, b1 - b0);
                    memset(dst + b0, 0, b1 - b0);
                } else {
                    memcpy(dst + b0, src + b0, b1 - b0);
                }
            }
            if (r >= 0)
                t[r] = ks_wtime() - t0;
        }
        gbs = 2.0 * (double)bytes / bench_median(t, nrep) * 1e-9;
    } else {
        fprintf(stderr, "copy bandwidth: cannot allocate %zu bytes\n", bytes);
    }
    free(src);
    free(dst);
    *mib = (double)bytes / (1024.0 * 1024.0);
    *samples = nrep;
    return gbs;
}


ks_error bench_time(ks_backend *be, ks_error (*fn)(void *ctx), void *ctx, int reps, int warmup,
                    int batch, double *t)
{
    for (int r = 0; r < warmup; r++)
        KS_TRY(fn(ctx));
    KS_TRY(ks_backend_sync(be));
#ifdef KS_HAVE_CUDA
    if (be->ops->kind == KS_BACKEND_CUDA) {
        cudaStream_t st = (cudaStream_t)ks_cuda_stream(be);
        cudaEvent_t e0, e1;
        cudaError_t ce = cudaEventCreate(&e0);
        if (ce == cudaSuccess)
            ce = cudaEventCreate(&e1);
        if (ce != cudaSuccess)
            return ks_seterr(KS_ERR_DEVICE, "cudaEventCreate: %s", cudaGetErrorString(ce));
        ks_error e = KS_OK;
        for (int r = 0; r < reps && e == KS_OK; r++) {
            float ms = 0.0f;
            ce = cudaEventRecord(e0, st);
            for (int k = 0; k < batch && e == KS_OK; k++)
                e = fn(ctx);
            if (ce == cudaSuccess)
                ce = cudaEventRecord(e1, st);
            if (ce == cudaSuccess)
                ce = cudaEventSynchronize(e1);
            if (ce == cudaSuccess)
                ce = cudaEventElapsedTime(&ms, e0, e1);
            if (ce != cudaSuccess && e == KS_OK)
                e = ks_seterr(KS_ERR_DEVICE, "timing events: %s", cudaGetErrorString(ce));
            t[r] = 1e-3 * ms / batch;
        }
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        return e;
    }
#endif
    for (int r = 0; r < reps; r++) {
        double t0 = ks_wtime();
        for (int k = 0; k < batch; k++)
            KS_TRY(fn(ctx));
        KS_TRY(ks_backend_sync(be));
        t[r] = (ks_wtime() - t0) / batch;
    }
    return KS_OK;
}

ks_backend *bench_backend(const char *prog, const char *name)
{
    ks_backend *be = NULL;
    if (ks_backend_create(name, &be) != KS_OK)
        fprintf(stderr, "%s: backend %s: %s\n", prog, name, ks_last_error());
    return be;
}
