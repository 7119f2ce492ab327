/* The cuda backend: device memory (stream-ordered allocations from a pool
 * of the backend's own), one stream per backend on which every kernel, copy
 * and cuSPARSE call is queued, and vector kernels.
 *
 * Reductions are two-stage and deterministic: a grid whose size depends only
 * on n (at most KS_CU_RED_BLOCKS blocks of KS_CU_THREADS threads) writes one
 * partial per block, reduced inside the block by warp shuffles in a fixed
 * tree; a second kernel reduces the partials the same way. No atomics, so
 * the same n and data give the same bits on every call. The second kernel
 * writes the result straight into mapped pinned host memory (no separate
 * copy: reductions are latency-bound for small n) and the call synchronises
 * the stream.
 *
 * The scratch buffers make one backend object unsafe to use from two host
 * threads at once (as is sharing its stream). */
#include "backend.h"
#include "block_cuda.h"
#include "block_smooth.h"
#include "cuda_check.h"
#include "cuda_pinned.h"
#include "smooth_value.h"

#include <cuda_runtime.h>
#include <cusparse.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define KS_CU_THREADS 256
#define KS_CU_RED_BLOCKS 1024
/* Streaming kernels use grid-stride loops; beyond this many blocks more
 * blocks only add scheduling work. */
#define KS_CU_MAX_BLOCKS 65535
/* Device allocations are at least this large, so an empty array still gets
 * a valid, aligned pointer. */
#define KS_CU_MIN_ALLOC 256
/* Bytes (in use and cached) the backend's memory pool keeps reserved when
 * a setup ends (ks_backend_trim); between trims it keeps every freed block. */
#define KS_CU_POOL_KEEP ((uint64_t)1 << 30)

typedef struct cuda_impl {
    int dev;
    cudaStream_t stream;
    cusparseHandle_t sparse;
    double *partials; /* device: KS_VEC_MULTI_MAX * KS_CU_RED_BLOCKS partials */
    double *result;   /* pinned, mapped host memory: KS_VEC_MULTI_MAX results */
    double *result_d; /* the device's address of `result` */
    cudaMemPool_t pool; /* the backend's own stream-ordered pool */
    ks_backend *side;   /* cuda_side's backend, made on first need */
    int borrowed;       /* 1 in a side backend: pool belongs to the parent */
    /* The staging queue (stage_download etc.), made on first use: a
     * stream, and events ordering it against `stream` both ways. */
    cudaStream_t stage;
    cudaEvent_t to_stage, from_stage;
    ks_cuda_pinned pinned; /* large uploads and downloads (cuda_pinned.h) */
} cuda_impl;

static cuda_impl *impl_of(ks_backend *be) { return (cuda_impl *)be->impl; }

/* ------------------------------------------------------- device helpers */

static __device__ __forceinline__ double warp_sum(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

/* max that propagates NaN: fmax would drop it and hide a broken vector. */
static __device__ __forceinline__ double nan_max(double a, double b)
{
    return (a > b || a != a) ? a : b;
}

static __device__ __forceinline__ double warp_max(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = nan_max(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over the block (blockDim.x a multiple of 32, at most 1024); the result
 * is valid in thread 0. Call at most once per shared array per kernel. */
static __device__ __forceinline__ double block_sum(double v, double *warps)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        warps[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = lane < (int)(blockDim.x >> 5) ? warps[lane] : 0.0;
        v = warp_sum(v);
    }
    return v;
}

static __device__ __forceinline__ double block_max(double v, double *warps)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0)
        warps[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = lane < (int)(blockDim.x >> 5) ? warps[lane] : 0.0;
        v = warp_max(v);
    }
    return v;
}

#define GRID_STRIDE(i, n)                                                                     \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n);  \
         i += (long long)gridDim.x * blockDim.x)

/* ---------------------------------------------------- streaming kernels */

static __global__ void k_fill(ks_int n, double a, double *x)
{
    GRID_STRIDE(i, n) x[i] = a;
}

static __global__ void k_scale(ks_int n, double a, double *x)
{
    GRID_STRIDE(i, n) x[i] *= a;
}

static __global__ void k_axpy(ks_int n, double a, const double *__restrict__ x, double *y)
{
    GRID_STRIDE(i, n) y[i] += a * x[i];
}

static __global__ void k_axpby(ks_int n, double a, const double *__restrict__ x, double b,
                               double *y)
{
    GRID_STRIDE(i, n) y[i] = a * x[i] + b * y[i];
}

/* b == 0: y is not read (it may hold NaN), as in BLAS. */
static __global__ void k_ax(ks_int n, double a, const double *__restrict__ x, double *y)
{
    GRID_STRIDE(i, n) y[i] = a * x[i];
}

static __global__ void k_axpbypcz(ks_int n, double a, const double *x, double b,
                                  const double *y, double c, double *z)
{
    GRID_STRIDE(i, n) z[i] = a * x[i] + b * y[i] + c * z[i];
}

/* xout = xin + c w.*r + a (xin - xprev), the fused passes' expression
 * (spmv/fused.h); NULL xin / xprev read as zero. */
static __global__ void k_smooth_update(ks_int n, double a, double c, const double *w,
                                       const double *r, const double *xin,
                                       const double *xprev, double *xout)
{
    GRID_STRIDE(i, n) xout[i] = ks_smooth_value(a, c, w[i], xin, xprev, i, r[i]);
}

static __global__ void k_axpby_z(ks_int n, double a, const double *x, double b,
                                 const double *y, double *z)
{
    GRID_STRIDE(i, n) z[i] = a * x[i] + b * y[i];
}

static __global__ void k_pmul(ks_int n, const double *w, const double *x, double *y)
{
    GRID_STRIDE(i, n) y[i] = w[i] * x[i];
}

/* ------------------------------------------------- reduction kernels */

static __global__ void k_dot_part(ks_int n, const double *__restrict__ x,
                                  const double *__restrict__ y, double *part)
{
    __shared__ double warps[32];
    double s = 0.0;
    GRID_STRIDE(i, n) s += x[i] * y[i];
    s = block_sum(s, warps);
    if (threadIdx.x == 0)
        part[blockIdx.x] = s;
}

static __global__ void k_dot2_part(ks_int n, const double *__restrict__ x,
                                   const double *__restrict__ y, const double *__restrict__ u,
                                   const double *__restrict__ v, double *part)
{
    __shared__ double w0[32], w1[32];
    double s = 0.0, t = 0.0;
    GRID_STRIDE(i, n)
    {
        s += x[i] * y[i];
        t += u[i] * v[i];
    }
    s = block_sum(s, w0);
    t = block_sum(t, w1);
    if (threadIdx.x == 0) {
        part[blockIdx.x] = s;
        part[KS_CU_RED_BLOCKS + blockIdx.x] = t;
    }
}

/* Pairs an mdot block handles (blockIdx.y picks its group): their sums
 * stay in registers, unrolled. */
#define KS_CU_MDOT_GROUP 8

/* The pointer lists travel as kernel arguments (512 bytes). */
typedef struct mdot_args {
    const double *x[KS_VEC_MULTI_MAX];
    const double *y[KS_VEC_MULTI_MAX];
} mdot_args;

typedef struct maxpy_args {
    const double *x[KS_VEC_MULTI_MAX];
    double a[KS_VEC_MULTI_MAX];
} maxpy_args;

/* Partial sums of pairs [8 blockIdx.y, +8) below k: each sum runs over the
 * entries in k_dot_part's order and is reduced by the same tree, so every
 * result has the bits a dot of that pair gets. */
static __global__ void k_mdot_part(ks_int n, int k, mdot_args g, double *part)
{
    __shared__ double warps[KS_CU_MDOT_GROUP][32];
    const int j0 = (int)blockIdx.y * KS_CU_MDOT_GROUP;
    double acc[KS_CU_MDOT_GROUP];
#pragma unroll
    for (int q = 0; q < KS_CU_MDOT_GROUP; q++)
        acc[q] = 0.0;
    GRID_STRIDE(i, n)
    {
#pragma unroll
        for (int q = 0; q < KS_CU_MDOT_GROUP; q++)
            if (j0 + q < k)
                acc[q] += g.x[j0 + q][i] * g.y[j0 + q][i];
    }
#pragma unroll
    for (int q = 0; q < KS_CU_MDOT_GROUP; q++) {
        double s = block_sum(acc[q], warps[q]);
        if (threadIdx.x == 0 && j0 + q < k)
            part[(size_t)(j0 + q) * KS_CU_RED_BLOCKS + blockIdx.x] = s;
    }
}

/* y += sum a_j x_j, the terms in order j = 0..k-1 as the cpu adds them. */
static __global__ void k_maxpy(ks_int n, int k, maxpy_args g, double *y)
{
    GRID_STRIDE(i, n)
    {
        double v = y[i];
        for (int j = 0; j < k; j++)
            v += g.a[j] * g.x[j][i];
        y[i] = v;
    }
}

static __global__ void k_asum_part(ks_int n, const double *__restrict__ x, double *part)
{
    __shared__ double warps[32];
    double s = 0.0;
    GRID_STRIDE(i, n) s += fabs(x[i]);
    s = block_sum(s, warps);
    if (threadIdx.x == 0)
        part[blockIdx.x] = s;
}

static __global__ void k_amax_part(ks_int n, const double *__restrict__ x, double *part)
{
    __shared__ double warps[32];
    double m = 0.0;
    GRID_STRIDE(i, n) m = nan_max(fabs(x[i]), m);
    m = block_max(m, warps);
    if (threadIdx.x == 0)
        part[blockIdx.x] = m;
}

static __global__ void k_axpy_sq_part(ks_int n, double a, const double *__restrict__ x,
                                      double *__restrict__ y, double *part)
{
    __shared__ double warps[32];
    double s = 0.0;
    GRID_STRIDE(i, n)
    {
        double v = y[i] + a * x[i];
        y[i] = v;
        s += v * v;
    }
    s = block_sum(s, warps);
    if (threadIdx.x == 0)
        part[blockIdx.x] = s;
}

/* Second stage, one block of KS_CU_RED_BLOCKS threads per result: block b
 * reduces part[b * KS_CU_RED_BLOCKS + (0..nparts)] into out[b]. */
static __global__ void k_final_sum(int nparts, const double *part, double *out)
{
    __shared__ double warps[32];
    const double *p = part + (size_t)blockIdx.x * KS_CU_RED_BLOCKS;
    double s = (int)threadIdx.x < nparts ? p[threadIdx.x] : 0.0;
    s = block_sum(s, warps);
    if (threadIdx.x == 0)
        out[blockIdx.x] = s;
}

static __global__ void k_final_max(int nparts, const double *part, double *out)
{
    __shared__ double warps[32];
    double m = (int)threadIdx.x < nparts ? part[threadIdx.x] : 0.0;
    m = block_max(m, warps);
    if (threadIdx.x == 0)
        out[0] = m;
}

/* --------------------------------------------------------- host side */

static unsigned stream_grid(ks_int n)
{
    long long b = ((long long)n + KS_CU_THREADS - 1) / KS_CU_THREADS;
    return (unsigned)(b < KS_CU_MAX_BLOCKS ? b : KS_CU_MAX_BLOCKS);
}

/* Depends on n only: this is what makes reductions reproducible. */
static int red_grid(ks_int n)
{
    long long b = ((long long)n + KS_CU_THREADS - 1) / KS_CU_THREADS;
    return (int)(b < KS_CU_RED_BLOCKS ? b : KS_CU_RED_BLOCKS);
}

/* Second stage over `nres` partial arrays of `nparts` entries into the
 * mapped host buffer, then wait for it. */
static ks_error finish_reduction(cuda_impl *c, int nparts, int nres, int is_max, double *r)
{
    double *dres = c->result_d;
    if (is_max) {
        k_final_max<<<1, KS_CU_RED_BLOCKS, 0, c->stream>>>(nparts, c->partials, dres);
        KS_CUDA_LAUNCH_CHECK("k_final_max");
    } else {
        k_final_sum<<<nres, KS_CU_RED_BLOCKS, 0, c->stream>>>(nparts, c->partials, dres);
        KS_CUDA_LAUNCH_CHECK("k_final_sum");
    }
    KS_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    for (int k = 0; k < nres; k++)
        r[k] = ((volatile double *)c->result)[k];
    return KS_OK;
}

static void cuda_cleanup(cuda_impl *c)
{
    ks_backend_destroy(&c->side); /* before the pool it borrows */
    if (c->stream)
        (void)cudaStreamSynchronize(c->stream);
    ks_cuda_pinned_free(&c->pinned);
    if (c->sparse)
        (void)cusparseDestroy(c->sparse);
    if (c->partials)
        (void)cudaFree(c->partials);
    if (c->result)
        (void)cudaFreeHost(c->result);
    if (c->stage)
        (void)cudaStreamSynchronize(c->stage);
    if (c->to_stage)
        (void)cudaEventDestroy(c->to_stage);
    if (c->from_stage)
        (void)cudaEventDestroy(c->from_stage);
    if (c->stage)
        (void)cudaStreamDestroy(c->stage);
    if (c->stream)
        (void)cudaStreamDestroy(c->stream);
    /* blocks still allocated keep it alive until they are freed */
    if (c->pool && !c->borrowed)
        (void)cudaMemPoolDestroy(c->pool);
    (void)cudaGetLastError();
    free(c);
}

/* A backend's queue: its stream, reduction scratch and cuSPARSE handle
 * (on the device current on this thread). */
static ks_error cuda_queue_init(cuda_impl *c)
{
    /* A blocking stream: it still orders against legacy default-stream work
     * (plain cudaMemcpy) that other code may do on the same buffers. The
     * main queue one step above the least priority, a side queue at the
     * least: the block scheduler serves the main queue's kernels first, so
     * a side job fills the idle gaps instead of delaying the main work. */
    int least = 0, greatest = 0;
    KS_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    const int prio = c->borrowed || least == greatest ? least : least - 1;
    KS_CUDA_CHECK(cudaStreamCreateWithPriority(&c->stream, cudaStreamDefault, prio));
    KS_CUDA_CHECK(cudaMalloc((void **)&c->partials,
                             (size_t)KS_VEC_MULTI_MAX * KS_CU_RED_BLOCKS * sizeof(double)));
    KS_CUDA_CHECK(cudaHostAlloc((void **)&c->result, KS_VEC_MULTI_MAX * sizeof(double),
                                cudaHostAllocMapped));
    KS_CUDA_CHECK(cudaHostGetDevicePointer((void **)&c->result_d, c->result, 0));
    KS_CUSPARSE_CHECK(cusparseCreate(&c->sparse));
    KS_CUSPARSE_CHECK(cusparseSetStream(c->sparse, c->stream));
    return KS_OK;
}

static ks_error cuda_init_impl(ks_backend *be, cuda_impl *c)
{
    /* The device current on this thread (0 unless the caller chose one:
     * cudaSetDevice, or ks_comm_select_device for one GPU an MPI rank). */
    KS_CUDA_CHECK(cudaGetDevice(&c->dev));
    /* Create the context now so failures surface here, not in a kernel. */
    KS_CUDA_CHECK(cudaSetDevice(c->dev));
    KS_CUDA_CHECK(cudaFree(0));
    cudaDeviceProp prop;
    KS_CUDA_CHECK(cudaGetDeviceProperties(&prop, c->dev));
    KS_TRY(cuda_queue_init(c));
    /* A pool of the backend's own (the device's default pool, and what
     * other code in the process does with it, are left alone) that keeps
     * every freed block for reuse: with a threshold, each synchronisation
     * returned what lay above it and the next large temporary mapped fresh
     * memory (7-point 256^3 AMG setup: 0.276 s with 4 GiB kept, 0.236 s
     * keeping all). What a setup leaves cached goes back at its end
     * (cuda_trim). */
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = c->dev;
    KS_CUDA_CHECK(cudaMemPoolCreate(&c->pool, &props));
    uint64_t keep = UINT64_MAX;
    KS_CUDA_CHECK(cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReleaseThreshold, &keep));
    snprintf(be->desc, sizeof be->desc, "%.80s (device %d, sm_%d%d, %d SMs, %.1f GiB)", prop.name,
             c->dev, prop.major, prop.minor, prop.multiProcessorCount,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    return KS_OK;
}

static ks_error cuda_init(ks_backend *be)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return ks_seterr(KS_ERR_UNSUPPORTED, "no CUDA device: %s", cudaGetErrorString(e));
    }
    if (count == 0)
        return ks_seterr(KS_ERR_UNSUPPORTED, "no CUDA device: cudaGetDeviceCount found none");

    cuda_impl *c = (cuda_impl *)ks_calloc(1, sizeof *c, "cuda backend state");
    if (!c)
        return KS_ERR_MEMORY;
    ks_error err = cuda_init_impl(be, c);
    if (err != KS_OK) {
        cuda_cleanup(c);
        return ks_adderr(err, "creating the cuda backend");
    }
    be->impl = c;
    return KS_OK;
}

static void cuda_fini(ks_backend *be)
{
    if (be->impl)
        cuda_cleanup(impl_of(be));
    be->impl = NULL;
}

/* Stream-ordered allocations from the device's pool: cudaMalloc and
 * cudaFree synchronise the whole device and cost 0.1-1 ms each, and a GPU
 * AMG setup makes thousands of temporaries. Freed blocks stay in the pool
 * (up to KS_CU_POOL_KEEP bytes) for the next allocation. */
static ks_error cuda_alloc(ks_backend *be, size_t bytes, void **p)
{
    KS_TRY(ks_track_admit(&be->track, bytes, "cuda"));
    size_t sz = bytes < KS_CU_MIN_ALLOC ? KS_CU_MIN_ALLOC : bytes;
    cudaError_t e = cudaMallocFromPoolAsync(p, sz, impl_of(be)->pool, impl_of(be)->stream);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *p = NULL;
        return ks_seterr(e == cudaErrorMemoryAllocation ? KS_ERR_MEMORY : KS_ERR_DEVICE,
                         "cudaMallocFromPoolAsync(%zu bytes, %zu in use by this backend): %s", bytes,
                         be->track.in_use, cudaGetErrorString(e));
    }
    ks_track_add(&be->track, *p, bytes);
    return KS_OK;
}

static void cuda_free(ks_backend *be, void *p)
{
    if (p) {
        ks_track_remove(&be->track, p);
        (void)cudaFreeAsync(p, impl_of(be)->stream);
        (void)cudaGetLastError();
    }
}

/* Host buffers are caller memory (usually pageable): wait, so the caller
 * may reuse or free them as soon as the call returns. Large ones go
 * through the backend's page-locked pair (cuda_pinned.h). */
static ks_error cuda_upload(ks_backend *be, void *dst, const void *src, size_t bytes)
{
    cuda_impl *c = impl_of(be);
    return ks_cuda_pinned_copy(&c->pinned, c->stream, dst, src, bytes, cudaMemcpyHostToDevice);
}

static ks_error cuda_download(ks_backend *be, void *dst, const void *src, size_t bytes)
{
    cuda_impl *c = impl_of(be);
    return ks_cuda_pinned_copy(&c->pinned, c->stream, dst, src, bytes, cudaMemcpyDeviceToHost);
}

static ks_error cuda_copy(ks_backend *be, void *dst, const void *src, size_t bytes)
{
    cuda_impl *c = impl_of(be);
    if (bytes == 0 || dst == src)
        return KS_OK;
    KS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream));
    return KS_OK;
}

static ks_error cuda_sync(ks_backend *be)
{
    KS_CUDA_CHECK(cudaStreamSynchronize(impl_of(be)->stream));
    return KS_OK;
}

__global__ void k_gather(ks_int n, const ks_int *__restrict__ idx, const double *__restrict__ x,
                         double *__restrict__ y)
{
    for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n;
         k += (long long)gridDim.x * blockDim.x)
        y[k] = x[idx[k]];
}

static ks_error cuda_gather(ks_backend *be, ks_int n, const ks_int *idx, const double *x,
                            double *y)
{
    if (n <= 0)
        return KS_OK;
    long long b = ((long long)n + KS_CU_THREADS - 1) / KS_CU_THREADS;
    k_gather<<<(unsigned)(b < KS_CU_MAX_BLOCKS ? b : KS_CU_MAX_BLOCKS), KS_CU_THREADS, 0,
               impl_of(be)->stream>>>(n, idx, x, y);
    KS_CUDA_CHECK(cudaGetLastError());
    return KS_OK;
}

/* Page-locked host memory: copies to and from it run at full PCIe speed
 * and never stage through the driver's own buffer. */
static ks_error cuda_host_alloc(ks_backend *be, size_t bytes, void **p)
{
    (void)be;
    *p = NULL;
    cudaError_t e = cudaHostAlloc(p, bytes ? bytes : 1, cudaHostAllocDefault);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *p = NULL;
        return ks_seterr(KS_ERR_MEMORY, "cudaHostAlloc(%zu bytes): %s", bytes,
                         cudaGetErrorString(e));
    }
    return KS_OK;
}

static void cuda_host_free(ks_backend *be, void *p)
{
    (void)be;
    if (p) {
        (void)cudaFreeHost(p);
        (void)cudaGetLastError();
    }
}

/* The staging queue of the halo exchange: a second stream, so the host
 * waits for the packed ghost values' copy alone while the local product
 * queued after it runs, and the received values' copy runs beside that
 * product (or NCCL's transfer kernels, stage_native). Made on first use
 * (only distributed matrices stage). At the greatest priority: a kernel
 * queued there (NCCL's) takes the first free block slots instead of
 * waiting behind the local product's blocks; copies ignore priority. */
static ks_error stage_queue(cuda_impl *c)
{
    if (c->stage)
        return KS_OK;
    int least = 0, greatest = 0;
    KS_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    KS_CUDA_CHECK(cudaEventCreateWithFlags(&c->to_stage, cudaEventDisableTiming));
    KS_CUDA_CHECK(cudaEventCreateWithFlags(&c->from_stage, cudaEventDisableTiming));
    KS_CUDA_CHECK(cudaStreamCreateWithPriority(&c->stage, cudaStreamDefault, greatest));
    return KS_OK;
}

static ks_error cuda_stage_native(ks_backend *be, void **queue)
{
    cuda_impl *c = impl_of(be);
    *queue = NULL;
    KS_TRY(stage_queue(c));
    *queue = (void *)c->stage;
    return KS_OK;
}

/* After everything queued on the stream so far (the gather that packed
 * src, the last reader of whatever the next stage_upload overwrites). */
static ks_error cuda_stage_download(ks_backend *be, void *dst, const void *src, size_t bytes)
{
    cuda_impl *c = impl_of(be);
    KS_TRY(stage_queue(c));
    KS_CUDA_CHECK(cudaEventRecord(c->to_stage, c->stream));
    KS_CUDA_CHECK(cudaStreamWaitEvent(c->stage, c->to_stage, 0));
    if (bytes > 0)
        KS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stage));
    return KS_OK;
}

/* Beside the kernels already queued; those queued later wait for it. */
static ks_error cuda_stage_upload(ks_backend *be, void *dst, const void *src, size_t bytes)
{
    cuda_impl *c = impl_of(be);
    KS_TRY(stage_queue(c));
    if (bytes > 0)
        KS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stage));
    KS_CUDA_CHECK(cudaEventRecord(c->from_stage, c->stage));
    KS_CUDA_CHECK(cudaStreamWaitEvent(c->stream, c->from_stage, 0));
    return KS_OK;
}

static ks_error cuda_stage_wait(ks_backend *be)
{
    cuda_impl *c = impl_of(be);
    if (c->stage)
        KS_CUDA_CHECK(cudaStreamSynchronize(c->stage));
    return KS_OK;
}

/* The blocks a setup freed go back to the device (beyond KS_CU_POOL_KEEP
 * reserved), so that other code in the process may use them. */
static ks_error cuda_trim(ks_backend *be)
{
    cuda_impl *c = impl_of(be);
    KS_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    KS_CUDA_CHECK(cudaMemPoolTrimTo(c->pool, KS_CU_POOL_KEEP));
    return KS_OK;
}

#define LAUNCH(kernel, n, ...)                                                                \
    do {                                                                                      \
        if ((n) <= 0)                                                                         \
            return KS_OK;                                                                     \
        kernel<<<stream_grid(n), KS_CU_THREADS, 0, impl_of(be)->stream>>>(n, __VA_ARGS__);    \
        KS_CUDA_LAUNCH_CHECK(#kernel);                                                        \
        return KS_OK;                                                                         \
    } while (0)

static ks_error cuda_fill(ks_backend *be, ks_int n, double a, double *x)
{
    LAUNCH(k_fill, n, a, x);
}

static ks_error cuda_scale(ks_backend *be, ks_int n, double a, double *x)
{
    LAUNCH(k_scale, n, a, x);
}

static ks_error cuda_axpy(ks_backend *be, ks_int n, double a, const double *x, double *y)
{
    LAUNCH(k_axpy, n, a, x, y);
}

static ks_error cuda_axpby(ks_backend *be, ks_int n, double a, const double *x, double b,
                           double *y)
{
    if (b == 0.0)
        LAUNCH(k_ax, n, a, x, y);
    LAUNCH(k_axpby, n, a, x, b, y);
}

static ks_error cuda_axpbypcz(ks_backend *be, ks_int n, double a, const double *x, double b,
                              const double *y, double c, double *z)
{
    if (c == 0.0)
        LAUNCH(k_axpby_z, n, a, x, b, y, z);
    LAUNCH(k_axpbypcz, n, a, x, b, y, c, z);
}

static ks_error cuda_smooth_update(ks_backend *be, ks_int n, double a, double c,
                                   const double *w, const double *r, const double *xin,
                                   const double *xprev, double *xout)
{
    LAUNCH(k_smooth_update, n, a, c, w, r, xin, xprev, xout);
}

static ks_error cuda_pmul(ks_backend *be, ks_int n, const double *w, const double *x, double *y)
{
    LAUNCH(k_pmul, n, w, x, y);
}

static ks_error cuda_dot(ks_backend *be, ks_int n, const double *x, const double *y, double *r)
{
    if (n <= 0) {
        *r = 0.0;
        return KS_OK;
    }
    cuda_impl *c = impl_of(be);
    int g = red_grid(n);
    k_dot_part<<<g, KS_CU_THREADS, 0, c->stream>>>(n, x, y, c->partials);
    KS_CUDA_LAUNCH_CHECK("k_dot_part");
    return finish_reduction(c, g, 1, 0, r);
}

static ks_error cuda_dot2(ks_backend *be, ks_int n, const double *x, const double *y,
                          const double *u, const double *v, double r[2])
{
    if (n <= 0) {
        r[0] = r[1] = 0.0;
        return KS_OK;
    }
    cuda_impl *c = impl_of(be);
    int g = red_grid(n);
    k_dot2_part<<<g, KS_CU_THREADS, 0, c->stream>>>(n, x, y, u, v, c->partials);
    KS_CUDA_LAUNCH_CHECK("k_dot2_part");
    return finish_reduction(c, g, 2, 0, r);
}

static ks_error cuda_mdot(ks_backend *be, ks_int n, int k, const double *const *x,
                          const double *const *y, double *r)
{
    if (n <= 0 || k <= 0) {
        for (int j = 0; j < k; j++)
            r[j] = 0.0;
        return KS_OK;
    }
    if (k > KS_VEC_MULTI_MAX)
        return ks_seterr(KS_ERR_ARG, "cuda mdot: %d pairs (at most %d)", k, KS_VEC_MULTI_MAX);
    cuda_impl *c = impl_of(be);
    mdot_args g;
    memset(&g, 0, sizeof g);
    for (int j = 0; j < k; j++) {
        g.x[j] = x[j];
        g.y[j] = y[j];
    }
    int nb = red_grid(n);
    dim3 grid((unsigned)nb, (unsigned)((k + KS_CU_MDOT_GROUP - 1) / KS_CU_MDOT_GROUP));
    k_mdot_part<<<grid, KS_CU_THREADS, 0, c->stream>>>(n, k, g, c->partials);
    KS_CUDA_LAUNCH_CHECK("k_mdot_part");
    return finish_reduction(c, nb, k, 0, r);
}

static ks_error cuda_maxpy(ks_backend *be, ks_int n, int k, const double *a,
                           const double *const *x, double *y)
{
    if (k > KS_VEC_MULTI_MAX)
        return ks_seterr(KS_ERR_ARG, "cuda maxpy: %d terms (at most %d)", k, KS_VEC_MULTI_MAX);
    maxpy_args g;
    memset(&g, 0, sizeof g);
    for (int j = 0; j < k; j++) {
        g.x[j] = x[j];
        g.a[j] = a[j];
    }
    LAUNCH(k_maxpy, n, k, g, y);
}

static ks_error cuda_norm1(ks_backend *be, ks_int n, const double *x, double *r)
{
    if (n <= 0) {
        *r = 0.0;
        return KS_OK;
    }
    cuda_impl *c = impl_of(be);
    int g = red_grid(n);
    k_asum_part<<<g, KS_CU_THREADS, 0, c->stream>>>(n, x, c->partials);
    KS_CUDA_LAUNCH_CHECK("k_asum_part");
    return finish_reduction(c, g, 1, 0, r);
}

static ks_error cuda_norminf(ks_backend *be, ks_int n, const double *x, double *r)
{
    if (n <= 0) {
        *r = 0.0;
        return KS_OK;
    }
    cuda_impl *c = impl_of(be);
    int g = red_grid(n);
    k_amax_part<<<g, KS_CU_THREADS, 0, c->stream>>>(n, x, c->partials);
    KS_CUDA_LAUNCH_CHECK("k_amax_part");
    return finish_reduction(c, g, 1, 1, r);
}

static ks_error cuda_axpy_norm2(ks_backend *be, ks_int n, double a, const double *x, double *y,
                                double *r)
{
    if (n <= 0) {
        *r = 0.0;
        return KS_OK;
    }
    cuda_impl *c = impl_of(be);
    int g = red_grid(n);
    k_axpy_sq_part<<<g, KS_CU_THREADS, 0, c->stream>>>(n, a, x, y, c->partials);
    KS_CUDA_LAUNCH_CHECK("k_axpy_sq_part");
    double s;
    KS_TRY(finish_reduction(c, g, 1, 0, &s));
    *r = sqrt(s);
    return KS_OK;
}

/* ---------------------------------------------------------- graphs */

static ks_error cuda_capture_begin(ks_backend *be)
{
    /* Thread-local mode: only this thread's unsafe calls (a cudaMalloc in
     * the captured sequence) are errors; other threads are not disturbed. */
    KS_CUDA_CHECK(cudaStreamBeginCapture(impl_of(be)->stream, cudaStreamCaptureModeThreadLocal));
    return KS_OK;
}

static ks_error cuda_capture_end(ks_backend *be, int ok, void **graph)
{
    *graph = NULL;
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(impl_of(be)->stream, &g);
    if (e != cudaSuccess || !ok) {
        if (g)
            (void)cudaGraphDestroy(g);
        (void)cudaGetLastError(); /* a failed capture is not sticky */
        if (!ok)
            return KS_OK;
        return ks_seterr(KS_ERR_DEVICE, "cudaStreamEndCapture: %s", cudaGetErrorString(e));
    }
    cudaGraphExec_t x = NULL;
    e = cudaGraphInstantiate(&x, g, 0);
    (void)cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return ks_seterr(KS_ERR_DEVICE, "cudaGraphInstantiate: %s", cudaGetErrorString(e));
    }
    *graph = (void *)x;
    return KS_OK;
}

static ks_error cuda_graph_launch(ks_backend *be, void *graph)
{
    KS_CUDA_CHECK(cudaGraphLaunch((cudaGraphExec_t)graph, impl_of(be)->stream));
    return KS_OK;
}

static void cuda_graph_destroy(ks_backend *be, void *graph)
{
    (void)be;
    if (graph)
        (void)cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

static ks_error cuda_attach(ks_backend *be)
{
    KS_CUDA_CHECK(cudaSetDevice(impl_of(be)->dev));
    return KS_OK;
}

/* The side backend: the same device and pool, a stream of its own (its
 * allocations and frees are ordered on that stream; the pool lets either
 * stream reuse what the other freed, adding the dependency it needs). */
static ks_backend *cuda_side(ks_backend *be)
{
    cuda_impl *c = impl_of(be);
    if (c->side || c->borrowed)
        return c->side;
    ks_backend *s = (ks_backend *)ks_calloc(1, sizeof *s, "cuda side backend");
    cuda_impl *d = (cuda_impl *)ks_calloc(1, sizeof *d, "cuda side backend state");
    ks_error e = s && d ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK) {
        d->dev = c->dev;
        d->pool = c->pool;
        d->borrowed = 1;
        s->ops = be->ops;
        s->impl = d;
        snprintf(s->desc, sizeof s->desc, "%s", be->desc);
        e = cuda_attach(be);
    }
    if (e == KS_OK)
        e = cuda_queue_init(d);
    if (e != KS_OK) {
        if (d)
            cuda_cleanup(d);
        free(s);
        ks_clear_error(); /* no side: the caller runs the work itself */
        return NULL;
    }
    c->side = s;
    return s;
}

/* Positional: C++17 has no designated initialisers. Order as in backend.h. */
extern "C" const ks_backend_ops ks_backend_cuda_ops = {
    "cuda",          /* name */
    KS_BACKEND_CUDA, /* kind */
    cuda_init,       /* init */
    cuda_fini,       /* fini */
    cuda_alloc,      /* alloc */
    cuda_free,       /* free */
    cuda_upload,     /* upload */
    cuda_download,   /* download */
    cuda_copy,       /* copy */
    cuda_sync,       /* sync */
    cuda_fill,       /* fill */
    cuda_scale,      /* scale */
    cuda_axpy,       /* axpy */
    cuda_axpby,      /* axpby */
    cuda_axpbypcz,   /* axpbypcz */
    cuda_pmul,       /* pmul */
    cuda_dot,        /* dot */
    cuda_dot2,       /* dot2 */
    cuda_mdot,       /* mdot */
    cuda_maxpy,      /* maxpy */
    cuda_norm1,      /* norm1 */
    cuda_norminf,    /* norminf */
    cuda_axpy_norm2, /* axpy_norm2 */
    cuda_smooth_update, /* smooth_update */
    cuda_capture_begin, /* capture_begin */
    cuda_capture_end,   /* capture_end */
    cuda_graph_launch,  /* graph_launch */
    cuda_graph_destroy, /* graph_destroy */
    cuda_trim,          /* trim */
    cuda_gather,        /* gather */
    cuda_host_alloc,    /* host_alloc */
    cuda_host_free,     /* host_free */
    cuda_side,          /* side */
    cuda_attach,        /* attach */
    cuda_stage_download, /* stage_download */
    cuda_stage_upload,   /* stage_upload */
    cuda_stage_wait,     /* stage_wait */
    cuda_stage_native,   /* stage_native */
    ks_cuda_baxpby,     /* baxpby */
    ks_cuda_baxpbypcz,  /* baxpbypcz */
    ks_cuda_bpmul,      /* bpmul */
    ks_cuda_bdot,       /* bdot */
    ks_cuda_bgather,    /* bgather */
    ks_cuda_bscatter,   /* bscatter */
    ks_cuda_bsmooth,    /* bsmooth */
    ks_cuda_baxpy_dot,  /* baxpy_dot */
    ks_cuda_baxpy_aypx, /* baxpy_aypx */
    0,                  /* host_memory: device memory */
};

extern "C" double *ks_cuda_partials(ks_backend *be) { return impl_of(be)->partials; }
extern "C" int ks_cuda_red_blocks(void) { return KS_CU_RED_BLOCKS; }
extern "C" ks_error ks_cuda_finish_sum(ks_backend *be, int nparts, int nres, double *r)
{
    return finish_reduction(impl_of(be), nparts, nres, 0, r);
}

extern "C" void *ks_cuda_stream(ks_backend *be)
{
    if (!be || be->ops != &ks_backend_cuda_ops || !be->impl)
        return NULL;
    return (void *)impl_of(be)->stream;
}

extern "C" void *ks_cuda_cusparse(ks_backend *be)
{
    if (!be || be->ops != &ks_backend_cuda_ops || !be->impl)
        return NULL;
    return (void *)impl_of(be)->sparse;
}

extern "C" int ks_cuda_device(const ks_backend *be)
{
    return ((const cuda_impl *)be->impl)->dev;
}

extern "C" int ks_cuda_device_count(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count;
}
