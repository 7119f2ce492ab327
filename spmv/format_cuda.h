/* What the cuda SpMV formats share around their kernels: uploading a
 * state's device arrays from the host layout (all of them or none),
 * freeing them, ending a setup, and an apply's launch size and stream.
 * For the .cu format files only. Not installed. */
#ifndef KS_FORMAT_CUDA_H
#define KS_FORMAT_CUDA_H

#include "../vec/backend.h"

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One device array of a format's state. */
typedef struct ks_cufmt_array {
    void **dev;       /* the state's slot, (void **)&s->colind; set by the upload */
    const void *host; /* what it holds; NULL: allocated only (scratch the kernels write) */
    size_t bytes;
    const char *what; /* names the array in errors: "ell column indices" */
} ks_cufmt_array;

/* What an array of 0 bytes becomes. Each format keeps the rule it was
 * written and tested with. */
typedef enum ks_cufmt_empty {
    KS_CUFMT_EMPTY_NULL,  /* NULL, nothing allocated: the kernel never reads it */
    KS_CUFMT_EMPTY_ALLOC, /* an allocation like any other (the backend's smallest) */
} ks_cufmt_empty;

#define KS_CUFMT_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Allocates and fills a[0, n), in order. On failure frees those it made,
 * sets their slots to NULL, and returns the error, which names the array
 * (ks_be_upload_new). */
ks_error ks_cufmt_upload(ks_backend *be, const ks_cufmt_array *a, int n, ks_cufmt_empty empty);

/* Frees the non-NULL device arrays p[0, n) (a state's, in its destroy). */
void ks_cufmt_free(ks_backend *be, void *const *p, int n);

/* src[0, n) rounded to float32 (float_values.h) into a new device array,
 * through a host buffer freed before return. `what` names the format. */
ks_error ks_cufmt_upload_f32(ks_backend *be, const double *src, size_t n, float **dev,
                             const char *what);

/* The end of a setup: a state that failed part way goes to its destroy
 * (which frees whatever was made), else it becomes *state. */
static inline ks_error ks_cufmt_done(ks_backend *be, ks_error e, void *s,
                                     void (*destroy)(ks_backend *, void *), void **state)
{
    if (e != KS_OK) {
        destroy(be, s);
        return e;
    }
    *state = s;
    return KS_OK;
}

static inline cudaStream_t ks_cufmt_stream(ks_backend *be)
{
    return (cudaStream_t)ks_cuda_stream(be);
}

/* The current device's multiprocessors (0 when CUDA cannot say: callers
 * then keep their defaults). */
static inline int ks_cufmt_sm_count(void)
{
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return 0;
    return n;
}

/* Blocks covering n items (threads, slices), per_block a block; n is 64-bit
 * so rows * lanes cannot overflow before the division. */
static inline unsigned ks_cufmt_blocks(long long n, int per_block)
{
    return (unsigned)((n + per_block - 1) / per_block);
}

/* An apply's launch over n items, per_block a block, on the backend's
 * stream. */
typedef struct ks_cufmt_launch {
    cudaStream_t stream;
    unsigned blocks;
} ks_cufmt_launch;

/* The prologue of an apply: 0 when n == 0 (no rows: nothing to launch),
 * else 1 with l filled. */
static inline int ks_cufmt_launch_for(ks_backend *be, long long n, int per_block,
                                      ks_cufmt_launch *l)
{
    if (n == 0)
        return 0;
    l->stream = ks_cufmt_stream(be);
    l->blocks = ks_cufmt_blocks(n, per_block);
    return 1;
}

#ifdef __cplusplus
}
#endif
#endif
