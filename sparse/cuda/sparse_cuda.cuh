/* What the files of the cuda sparse table share (the .cu files of sparse/cuda/):
 * temporaries freed together, a launch check usable in error chains, row
 * binning, the segmented row sort, the structure check, and the
 * operations the table in sparse_cuda.cu points to. Not installed. */
#ifndef KS_SPARSE_CUDA_CUH
#define KS_SPARSE_CUDA_CUH

#include "../sparse.h"
#include "cuda_util.cuh"

#include <cuda_runtime.h>

#define KS_CU_FULL_MASK 0xffffffffu

/* --------------------------------------------------------- temporaries */
/* The device temporaries of one operation: each is recorded as it is
 * allocated and ks_cu_tmp_free releases them all, on success and on every
 * error path alike (no goto over initialisations in C++). */
#define KS_CU_TMP_MAX 24
typedef struct ks_cu_tmp {
    ks_backend *be;
    void *p[KS_CU_TMP_MAX];
    int n;
} ks_cu_tmp;

static inline void ks_cu_tmp_init(ks_cu_tmp *t, ks_backend *be)
{
    t->be = be;
    t->n = 0;
}

static inline ks_error ks_cu_tmp_alloc(ks_cu_tmp *t, size_t bytes, void **p, const char *what)
{
    *p = NULL;
    if (t->n == KS_CU_TMP_MAX)
        return ks_seterr(KS_ERR_ARG, "internal error: too many temporaries (%s)", what);
    KS_TRY(ks_be_alloc(t->be, bytes, p, what));
    t->p[t->n++] = *p;
    return KS_OK;
}

static inline void ks_cu_tmp_free(ks_cu_tmp *t)
{
    while (t->n > 0)
        t->be->ops->free(t->be, t->p[--t->n]);
}

/* Free temporary p (of t; NULL or unknown: nothing) before the others, so
 * that later allocations can reuse its memory. */
static inline void ks_cu_tmp_release(ks_cu_tmp *t, void *p)
{
    for (int k = 0; p && k < t->n; k++)
        if (t->p[k] == p) {
            t->be->ops->free(t->be, p);
            t->p[k] = t->p[--t->n];
            return;
        }
}

/* After a launch: KS_OK, or the configuration error naming the kernel
 * (faults inside a kernel surface at the next synchronising call). */
static inline ks_error ks_cu_launched(const char *kernel)
{
    cudaError_t ce = cudaGetLastError();
    if (ce != cudaSuccess)
        return ks_seterr(KS_ERR_DEVICE, "launch of kernel %s failed: %s", kernel,
                         cudaGetErrorString(ce));
    return KS_OK;
}

/* cudaMemsetAsync on the backend's stream, as a ks_error. */
static inline ks_error ks_cu_memset(ks_backend *be, void *p, int byte, size_t bytes,
                                    const char *what)
{
    if (bytes == 0)
        return KS_OK;
    cudaError_t ce = cudaMemsetAsync(p, byte, bytes, ks_cu_stream(be));
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        return ks_seterr(KS_ERR_DEVICE, "cudaMemsetAsync (%s, %zu bytes): %s", what, bytes,
                         cudaGetErrorString(ce));
    }
    return KS_OK;
}

/* Grid for `items` work items of which a block takes per_block (at least
 * 1 block, at most 2^20: the kernels loop over the rest). */
static inline unsigned ks_cu_grid(long long items, int per_block)
{
    long long b = (items + per_block - 1) / per_block;
    return (unsigned)(b < 1 ? 1 : b > (1LL << 20) ? (1LL << 20) : b);
}

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- binning */
#define KS_CU_MAX_BINS 8
/* Rows grouped by bin: bin b is rows[start[b] .. start[b + 1]) (host
 * offsets, device row list; the order inside a bin is arbitrary, so a bin's
 * kernel must treat each row on its own). */
typedef struct ks_cu_bins {
    ks_int *rows;
    ks_int start[KS_CU_MAX_BINS + 1];
} ks_cu_bins;

/* Group the n rows by bin[i] < nbins (device bytes); the row list is a
 * temporary of tmp. Synchronises (the bin sizes come to the host). */
ks_error ks_cu_bin_rows(ks_cu_tmp *tmp, ks_int n, const unsigned char *bin, int nbins,
                        ks_cu_bins *out);

/* --------------------------------------------------------- row sorting */
/* Sort each segment key[segptr[i] .. segptr[i + 1]) ascending, val (may be
 * NULL) following. Stable (equal keys keep their order), so the result is
 * the same on every run whatever the key values. segptr must be a valid
 * row pointer array (monotone, within the arrays). */
ks_error ks_cu_seg_sort(ks_backend *be, ks_int nseg, const ks_int *segptr, ks_int *key,
                        double *val);
/* The same for the segments rows[0 .. count) only (a device list of
 * distinct segment indices; count on the host). */
ks_error ks_cu_seg_sort_rows(ks_backend *be, const ks_int *rows, ks_int count,
                             const ks_int *segptr, ks_int *key, double *val);

/* ----------------------------------------------------- structure check */
/* ks_csr_check (matrices/csr_check.h) for a matrix on a cuda backend: the
 * same tests, the same first bad row, the same message (starting with
 * `who`); full = 1 also wants sorted unique columns and finite values. */
ks_error ks_cu_check(const ks_sparse *A, const char *who, int full);
/* The same tests (full = 0) without a sync: those of the sizes and
 * pointers return their error now; the others set `bit` in *flag (device
 * memory) when A fails any of them, for the caller to read with its next
 * download and then call ks_cu_check for the message. Kernels that run
 * before the flag is known clear must not trust A's indices. */
ks_error ks_cu_check_async(const ks_sparse *A, const char *who, int *flag, int bit);

/* ----------------------------------------- the operations of the table */
/* ks_sparse_ops.mark_cols and .split_cols (split.cu). */
ks_error ks_cu_mark_cols(const ks_sparse *T, unsigned char *used, int *unsorted);
ks_error ks_cu_split_cols(const ks_sparse *T, ks_int nb, ks_int nown, const ks_int *gnum,
                          ks_int nghost, ks_sparse *L, ks_sparse *G, ks_int *nonfinite);
ks_error ks_cu_transpose(const ks_sparse *A, ks_sparse *AT);
ks_error ks_cu_spgemm(const ks_sparse *A, const ks_sparse *B, ks_sparse *C);
ks_error ks_cu_spgemm_numeric(const ks_sparse *A, const ks_sparse *B, ks_sparse *C);
ks_error ks_cu_rap(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P, ks_sparse *Ac);
ks_error ks_cu_rap_numeric(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P,
                           ks_sparse *Ac, int *outside);
ks_error ks_cu_validate(const ks_sparse *A);
ks_error ks_cu_sort_rows(ks_sparse *A);
ks_error ks_cu_merge_blocks(const ks_sparse *L, const ks_sparse *G, ks_int nb, ks_sparse *M);

/* The product through our kernels and through cuSPARSE (inputs trusted:
 * checked by the callers). *was_sorted (may be NULL) = 1 when cuSPARSE
 * returned sorted rows (they are sorted here otherwise). */
ks_error ks_cu_spgemm_ours(const ks_sparse *A, const ks_sparse *B, ks_sparse *C);
ks_error ks_cu_spgemm_cusparse(const ks_sparse *A, const ks_sparse *B, ks_sparse *C,
                               int *was_sorted);

#ifdef __cplusplus
}
#endif
#endif
