/* Backend seam: memory and vector kernels. A solver only calls these through
 * ks_vec_* and never knows which backend it runs on. Not installed. */
#ifndef KS_BACKEND_H
#define KS_BACKEND_H

#include "../core/ks_internal.h"
#include "alloc_track.h"
#include "comm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ks_backend_kind { KS_BACKEND_CPU = 1, KS_BACKEND_CUDA = 2 } ks_backend_kind;

/* Most vectors one mdot / maxpy call takes (ks_vec_mdot and ks_vec_maxpy
 * split longer lists into calls of this many). */
#define KS_VEC_MULTI_MAX 32

/* All vector kernels work on n doubles in the backend's memory space.
 * Reductions are deterministic: fixed blocking independent of the thread
 * count (cpu) or a fixed grid and two-stage sum (cuda), never atomics, so
 * the same build and backend give bitwise-equal results. Results of
 * reductions are returned on the host (the call synchronises). */
typedef struct ks_backend_ops {
    const char *name;
    ks_backend_kind kind;
    ks_error (*init)(ks_backend *be);
    void (*fini)(ks_backend *be);

    ks_error (*alloc)(ks_backend *be, size_t bytes, void **p);
    void (*free)(ks_backend *be, void *p);
    ks_error (*upload)(ks_backend *be, void *dst, const void *src, size_t bytes);   /* host -> be */
    ks_error (*download)(ks_backend *be, void *dst, const void *src, size_t bytes); /* be -> host */
    ks_error (*copy)(ks_backend *be, void *dst, const void *src, size_t bytes);     /* be -> be */
    ks_error (*sync)(ks_backend *be);

    ks_error (*fill)(ks_backend *be, ks_int n, double a, double *x);
    ks_error (*scale)(ks_backend *be, ks_int n, double a, double *x);
    ks_error (*axpy)(ks_backend *be, ks_int n, double a, const double *x, double *y);
    ks_error (*axpby)(ks_backend *be, ks_int n, double a, const double *x, double b, double *y);
    /* z = a x + b y + c z (BiCGStab's p update in one pass) */
    ks_error (*axpbypcz)(ks_backend *be, ks_int n, double a, const double *x, double b,
                         const double *y, double c, double *z);
    ks_error (*pmul)(ks_backend *be, ks_int n, const double *w, const double *x, double *y);
    ks_error (*dot)(ks_backend *be, ks_int n, const double *x, const double *y, double *r);
    /* r[0] = x.y and r[1] = u.v in one pass */
    ks_error (*dot2)(ks_backend *be, ks_int n, const double *x, const double *y,
                     const double *u, const double *v, double r[2]);
    /* r[j] = x[j].y[j] for j < k (1 <= k <= KS_VEC_MULTI_MAX) in one pass,
     * each r[j] summed exactly as dot sums it (the same bits). The pointer
     * arrays are on the host; GMRES passes one y k times (dots of a block
     * of basis vectors with one vector), pipelined methods k pairs. */
    ks_error (*mdot)(ks_backend *be, ks_int n, int k, const double *const *x,
                     const double *const *y, double *r);
    /* y += sum_{j<k} a[j] x[j] in one pass, terms added in order j = 0..k-1
     * (1 <= k <= KS_VEC_MULTI_MAX; a and the pointer array on the host). */
    ks_error (*maxpy)(ks_backend *be, ks_int n, int k, const double *a, const double *const *x,
                      double *y);
    ks_error (*norm1)(ks_backend *be, ks_int n, const double *x, double *r);
    ks_error (*norminf)(ks_backend *be, ks_int n, const double *x, double *r);
    /* y += a x, then *r = ||y||_2, in one pass */
    ks_error (*axpy_norm2)(ks_backend *be, ks_int n, double a, const double *x, double *y,
                           double *r);
    /* Smoother update in one pass (Jacobi, or Chebyshev in three-term
     * form): xout = xin + c (w .* r) + a (xin - xprev). xin NULL or xprev
     * NULL mean zero; xprev is not read when a == 0 and may be xout (read
     * before written); xin may be xout only when a == 0 or xprev is NULL. */
    ks_error (*smooth_update)(ks_backend *be, ks_int n, double a, double c, const double *w,
                              const double *r, const double *xin, const double *xprev,
                              double *xout);

    /* Optional (NULL where the backend has no such thing): record the work
     * the backend's calls enqueue between capture_begin and capture_end
     * (nothing runs meanwhile) as a graph that graph_launch replays with
     * one call, the same kernels on the same buffers. capture_end always
     * ends the capture; ok = 0 discards it (a call inside failed). For
     * fixed sequences of many small kernels (an AMG cycle on its coarse
     * levels), where launch latency rather than memory is the cost. */
    ks_error (*capture_begin)(ks_backend *be);
    ks_error (*capture_end)(ks_backend *be, int ok, void **graph);
    ks_error (*graph_launch)(ks_backend *be, void *graph);
    void (*graph_destroy)(ks_backend *be, void *graph);
    /* Optional: give memory the backend keeps cached for reuse back to
     * the system (called when a setup ends). */
    ks_error (*trim)(ks_backend *be);
    /* y[k] = x[idx[k]] for k < n, idx and both vectors in be's memory (a
     * distributed matrix packs the x entries its neighbours need).
     * Required for distributed matrices on a backend without host memory. */
    ks_error (*gather)(ks_backend *be, ks_int n, const ks_int *idx, const double *x, double *y);
    /* Optional: host memory the backend copies to and from fastest (cuda:
     * page-locked), for staging; NULL: malloc and free. */
    ks_error (*host_alloc)(ks_backend *be, size_t bytes, void **p);
    void (*host_free)(ks_backend *be, void *p);
    /* Optional (NULL: none): a second backend on be's device and memory
     * with a queue of its own, so a host thread can run independent work
     * beside be's (the AMG setup's level-0 spectral estimate). Made on
     * first call, destroyed with be; NULL when it cannot be made. Its
     * arrays are be's arrays: either may read what the other made once
     * the maker has synchronised. attach: call it first on such a thread
     * (cuda: makes the device current there). */
    ks_backend *(*side)(ks_backend *be);
    ks_error (*attach)(ks_backend *be);
    /* Optional: copies between host_alloc memory and be's on a staging
     * queue of their own, returning at once (a distributed matrix's halo:
     * the host waits for the ghost values it sends without waiting for the
     * kernels queued after them, and what arrived is copied in beside
     * them). stage_download runs after all work queued on be so far (with
     * bytes 0 it only orders the queue so); stage_upload after the staging
     * copies before it, and work queued on be afterwards waits for it;
     * stage_wait returns when every staging copy is done. Required to
     * stage a halo (a backend without host memory, an MPI that does not
     * read its memory). */
    ks_error (*stage_download)(ks_backend *be, void *dst, const void *src, size_t bytes);
    ks_error (*stage_upload)(ks_backend *be, void *dst, const void *src, size_t bytes);
    ks_error (*stage_wait)(ks_backend *be);
    /* Optional, for a library that queues its own work on the staging
     * queue (mpi/halo_nccl.c: NCCL's sends and receives): *queue = its
     * native handle (cuda: the cudaStream_t), made on first use. With
     * bytes 0, stage_download orders that queue after the work queued on
     * be so far, and stage_upload the work queued on be afterwards after
     * what is queued on it so far: the event record / wait pair such work
     * needs, the host waiting for neither. */
    ks_error (*stage_native)(ks_backend *be, void **queue);

    /* Block vectors (ks_block): n rows of k columns, row-interleaved
     * (entry (i, j) at x[i*k + j]), 1 <= k <= KS_BLOCK_MAX_COLS; the
     * per-column scalars a, b, c and results r are host arrays of k.
     * fill and copy of a block are fill and copy of its n*k doubles. */
    /* y[:,j] = a[j] x[:,j] + b[j] y[:,j]; x NULL: no x term (y[:,j] *= b[j]);
     * y not read in a column with b[j] == 0. */
    ks_error (*baxpby)(ks_backend *be, ks_int n, int k, const double *a, const double *x,
                       const double *b, double *y);
    /* z[:,j] = a[j] x[:,j] + b[j] y[:,j] + c[j] z[:,j] (z not read where c[j] == 0) */
    ks_error (*baxpbypcz)(ks_backend *be, ks_int n, int k, const double *a, const double *x,
                          const double *b, const double *y, const double *c, double *z);
    /* y[i*k + j] = w[i] x[i*k + j] (w: n entries) */
    ks_error (*bpmul)(ks_backend *be, ks_int n, int k, const double *w, const double *x,
                      double *y);
    /* r[j] = sum_i x[i*k + j] y[i*k + j], deterministic (fixed order for a
     * given n and k). */
    ks_error (*bdot)(ks_backend *be, ks_int n, int k, const double *x, const double *y,
                     double *r);
    /* y[i*m + q] = x[i*kx + cols[q]] for q < m (cols on the host): gathers
     * columns (m == 1: one column into a plain vector). */
    ks_error (*bgather)(ks_backend *be, ks_int n, int kx, const double *x, int m,
                        const int *cols, double *y);
    /* x[i*kx + cols[q]] = y[i*m + q] for q < m: the inverse scatter. */
    ks_error (*bscatter)(ks_backend *be, ks_int n, int m, const double *y, const int *cols,
                         int kx, double *x);
    /* Optional (NULL: the AMG cycle applies blocks column by column): the
     * smoother update on k row-interleaved columns, xout[e] = xin[e] +
     * c w[e/k] (b[e] - t[e]) + a (xin[e] - xprev[e]) (t, xin, xprev NULL:
     * zero; xprev may be xout), vec/block_smooth.h. */
    ks_error (*bsmooth)(ks_backend *be, ks_int n, int k, double a, double c, const double *w,
                        const double *b, const double *t, const double *xin,
                        const double *xprev, double *xout);
    /* Optional (NULL: baxpby, then bdot): y[:,j] += a[j] x[:,j], then
     * r[j] = y[:,j].y[:,j] in the same pass, each column's sum in bdot's
     * order and y updated as baxpby updates it (b = 1), so the results
     * have the two calls' bits (vec/vec_fused.h, ks_block_axpy_norm2). */
    ks_error (*baxpy_dot)(ks_backend *be, ks_int n, int k, const double *a, const double *x,
                          double *y, double *r);
    /* Optional (NULL: baxpby twice): y[:,j] += a[j] p[:,j], then p[:,j] =
     * z[:,j] + b[j] p[:,j], in one pass (CG's x update and its next search
     * direction: p read once), each entry as baxpby makes it, so the
     * results have the two calls' bits (ks_block_axpy_aypx). */
    ks_error (*baxpy_aypx)(ks_backend *be, ks_int n, int k, const double *a, double *p,
                           double *y, const double *b, const double *z);

    /* Capabilities, for code outside vec/ (which never compares kinds):
     * host_memory = 1 when the backend's memory is ordinary host memory
     * (pointers from alloc may be read on the host, and freed with free()).
     * Last, so positional initialisers (C++) may leave it out. */
    int host_memory;
} ks_backend_ops;

struct ks_backend {
    const ks_backend_ops *ops;
    void *impl;        /* backend private state (cuda: stream, handles, scratch) */
    char desc[160];    /* ks_backend_description() */
    /* Every live allocation of the backend (its alloc and free report
     * here): bytes in use, peak, limit. */
    ks_alloc_track track;
};

struct ks_vec {
    ks_backend *be;
    ks_int n;
    double *data;      /* in the backend's memory space */
    /* A distributed vector (mpi/): n is this rank's part; reductions
     * combine the ranks' partial results through comm. offsets (owned,
     * comm->size + 1 entries, the same on every rank) say where each
     * rank's part starts, so operations compare layouts and refuse a
     * mismatch on every rank alike. Both NULL for a local vector. */
    const ks_comm *comm;
    ks_gint *offsets;
};

/* A block of k vectors, row-interleaved (ksolve.h, ks_block_*): local to
 * one process. */
struct ks_block {
    ks_backend *be;
    ks_int n;
    int k;
    double *data;      /* n*k doubles in the backend's memory space */
};

extern const ks_backend_ops ks_backend_cpu_ops;
#ifdef KS_HAVE_CUDA
extern const ks_backend_ops ks_backend_cuda_ops;
/* The cuda backend's stream and cuSPARSE handle, for formats. */
void *ks_cuda_stream(ks_backend *be);
void *ks_cuda_cusparse(ks_backend *be);
/* Number of usable devices; 0 (and no error) when there is no driver. */
int ks_cuda_device_count(void);
/* The device a cuda backend runs on. */
int ks_cuda_device(const ks_backend *be);
#endif

/* ops->trim where the backend has one. */
ks_error ks_backend_trim(ks_backend *be);
/* "cpu", "cuda" (also for a kind this build lacks). */
const char *ks_backend_kind_name(ks_backend_kind k);
/* 1 when be's memory is host memory (see ks_backend_ops.host_memory). */
int ks_backend_host_memory(const ks_backend *be);

/* Arrays a host-memory backend takes over from malloc (adopted CSRs) are
 * counted as its own from then on; untrack before such an array is
 * reallocated outside the backend. */
void ks_be_track(ks_backend *be, void *p, size_t bytes);
void ks_be_untrack(ks_backend *be, void *p);

/* Backend memory helpers that record an error naming `what`. */
ks_error ks_be_alloc(ks_backend *be, size_t bytes, void **p, const char *what);
ks_error ks_be_upload_new(ks_backend *be, const void *host, size_t bytes, void **dev,
                          const char *what);

#ifdef __cplusplus
}
#endif
#endif
