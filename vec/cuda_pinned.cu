/* Pageable host <-> device copies through a page-locked pair
 * (cuda_pinned.h). */
#include "cuda_pinned.h"
#include "cuda_check.h"

#include <stdlib.h>
#include <string.h>

static int pinned_wanted(void)
{
    const char *s = getenv("KS_CUDA_PINNED_COPY");
    return !(s && strcmp(s, "0") == 0);
}

/* The pair, made once; -1 (plain copies from then on) when refused. */
static int pinned_ready(ks_cuda_pinned *p)
{
    if (p->state != 0)
        return p->state > 0;
    p->state = -1;
    for (int b = 0; b < 2; b++) {
        void *buf = NULL;
        cudaEvent_t ev = NULL;
        const int ok = cudaHostAlloc(&buf, KS_CUDA_PINNED_CHUNK, cudaHostAllocDefault) ==
                       cudaSuccess;
        if (ok)
            p->buf[b] = buf; /* only what was allocated is freed below */
        if (!ok || cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) {
            (void)cudaGetLastError();
            ks_cuda_pinned_free(p);
            p->state = -1;
            return 0;
        }
        p->done[b] = ev;
    }
    p->state = 1;
    return 1;
}

static ks_error plain(cudaStream_t stream, void *dst, const void *src, size_t bytes,
                      cudaMemcpyKind kind)
{
    KS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream));
    KS_CUDA_CHECK(cudaStreamSynchronize(stream));
    return KS_OK;
}

/* Device to host: chunk i lands in buffer i % 2; the host copies it out
 * while chunk i + 1 comes over, then queues chunk i + 2 into the buffer it
 * emptied. */
static ks_error download(ks_cuda_pinned *p, cudaStream_t stream, char *dst, const char *src,
                         size_t bytes)
{
    const size_t ch = KS_CUDA_PINNED_CHUNK, n = (bytes + ch - 1) / ch;
    for (size_t i = 0; i < n && i < 2; i++) {
        const size_t len = bytes - i * ch < ch ? bytes - i * ch : ch;
        KS_CUDA_CHECK(cudaMemcpyAsync(p->buf[i], src + i * ch, len, cudaMemcpyDeviceToHost,
                                      stream));
        KS_CUDA_CHECK(cudaEventRecord(p->done[i], stream));
    }
    for (size_t i = 0; i < n; i++) {
        const int b = (int)(i & 1);
        const size_t len = bytes - i * ch < ch ? bytes - i * ch : ch;
        KS_CUDA_CHECK(cudaEventSynchronize(p->done[b]));
        ks_memcpy_par(dst + i * ch, p->buf[b], len);
        const size_t j = i + 2;
        if (j < n) {
            const size_t lj = bytes - j * ch < ch ? bytes - j * ch : ch;
            KS_CUDA_CHECK(cudaMemcpyAsync(p->buf[b], src + j * ch, lj, cudaMemcpyDeviceToHost,
                                          stream));
            KS_CUDA_CHECK(cudaEventRecord(p->done[b], stream));
        }
    }
    return KS_OK;
}

/* Host to device: the host fills buffer i % 2 (once the copy of chunk
 * i - 2 out of it is done) while the device takes chunk i - 1. */
static ks_error upload(ks_cuda_pinned *p, cudaStream_t stream, char *dst, const char *src,
                       size_t bytes)
{
    const size_t ch = KS_CUDA_PINNED_CHUNK, n = (bytes + ch - 1) / ch;
    for (size_t i = 0; i < n; i++) {
        const int b = (int)(i & 1);
        const size_t len = bytes - i * ch < ch ? bytes - i * ch : ch;
        if (i >= 2)
            KS_CUDA_CHECK(cudaEventSynchronize(p->done[b]));
        ks_memcpy_par(p->buf[b], src + i * ch, len);
        KS_CUDA_CHECK(cudaMemcpyAsync(dst + i * ch, p->buf[b], len, cudaMemcpyHostToDevice,
                                      stream));
        KS_CUDA_CHECK(cudaEventRecord(p->done[b], stream));
    }
    KS_CUDA_CHECK(cudaStreamSynchronize(stream));
    return KS_OK;
}

ks_error ks_cuda_pinned_copy(ks_cuda_pinned *p, cudaStream_t stream, void *dst, const void *src,
                             size_t bytes, cudaMemcpyKind kind)
{
    if (bytes == 0)
        return KS_OK;
    if (bytes < KS_CUDA_PINNED_MIN || !pinned_wanted() || !pinned_ready(p))
        return plain(stream, dst, src, bytes, kind);
    ks_error e = kind == cudaMemcpyDeviceToHost
                     ? download(p, stream, (char *)dst, (const char *)src, bytes)
                     : upload(p, stream, (char *)dst, (const char *)src, bytes);
    if (e != KS_OK) /* nothing of ours left queued on a buffer */
        (void)cudaStreamSynchronize(stream);
    return e;
}

void ks_cuda_pinned_free(ks_cuda_pinned *p)
{
    for (int b = 0; b < 2; b++) {
        if (p->done[b])
            (void)cudaEventSynchronize(p->done[b]);
        if (p->done[b])
            (void)cudaEventDestroy(p->done[b]);
        if (p->buf[b])
            (void)cudaFreeHost(p->buf[b]);
        p->buf[b] = NULL;
        p->done[b] = NULL;
    }
    p->state = 0;
    (void)cudaGetLastError();
}
