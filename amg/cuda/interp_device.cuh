/* Pieces shared by the cuda interpolation files (amg_cuda_interp.h): device
 * helpers for the per-row kernels, and host helpers defined in
 * interp_common.cu. C++ only (the .cu files). Not installed.
 *
 * The kernels are one thread per row, two passes (row sizes; scan; fill),
 * so every row is built by one thread in the cpu's order of operations and
 * the result does not depend on the launch shape (extended+i builds a row
 * with a group of lanes, in the same order: see interp_extended.cu). Rows whose columns are a
 * union of sorted lists (extended+i: the strong C points of i and of its
 * strong F neighbours; the smoothed prolongator: the P0 rows of i's
 * neighbours) are formed by a k-way merge with a binary min-heap of list
 * heads in per-row global scratch: the columns come out sorted and unique
 * without a sort or a per-thread marker array of the coarse size. */
#ifndef KS_AMG_CUDA_INTERP_DEVICE_CUH
#define KS_AMG_CUDA_INTERP_DEVICE_CUH

#include "amg_cuda_interp.h"
#include "../../sparse/cuda/cuda_util.cuh"

/* ------------------------------------------------------------- host side */

/* KS_OK, or KS_ERR_DEVICE naming the kernel when its launch failed (a
 * configuration error; faults inside show at the next synchronisation).
 * Unlike KS_CUDA_LAUNCH_CHECK it does not return, so callers can free
 * their temporaries first. */
static inline ks_error ks_cu_launched(const char *kernel)
{
    cudaError_t ce = cudaGetLastError();
    if (ce == cudaSuccess)
        return KS_OK;
    return ks_seterr(KS_ERR_DEVICE, "launch of kernel %s failed: %s", kernel,
                     cudaGetErrorString(ce));
}

/* bytes on be, or NULL (then *e is set) when an earlier step failed. */
static inline void *ks_cu_alloc_if(ks_backend *be, ks_error *e, size_t bytes, const char *what)
{
    void *p = NULL;
    if (*e == KS_OK)
        *e = ks_be_alloc(be, bytes, &p, what);
    return p;
}

/* The C++ helpers of interp_common.cu. */

/* First rows of a structure check of a CSR on the device, downloaded:
 * bad[0] = first row whose row pointers leave [0, nnz] or decrease, or
 * whose columns are out of [0, ncols), unsorted or repeated, or (when
 * no_diag) include the row itself; also rowptr[0] != 0 or rowptr[n] !=
 * nnz (reported as row 0 / row n - 1). bad[1] = first row holding a value
 * that is not finite (only when check_values and val != NULL). n when
 * none. */
ks_error ks_cu_check_csr(ks_backend *be, ks_int n, ks_int ncols, ks_int nnz, const ks_int *rp,
                         const ks_int *ci, const double *val, int no_diag, int check_values,
                         ks_int bad[2]);

/* Interpolation inputs as the cpu builders check them (interp_direct.c):
 * shapes, the rows to build r0 .. r1 - 1 (within 0 .. n), the structure
 * of A and S (every row), the splitting (coarse numbering into cmap, n + 1
 * slots, *nc), and a nonzero diagonal on every F row built (the first one
 * zero or missing is KS_ERR_NUMERIC). When diag is not NULL it gets a_ii
 * of every row (0 where not stored). `who` names the caller. */
ks_error ks_cu_interp_inputs(const char *who, const ks_sparse *A, const ks_sparse *S,
                             const int *cf, ks_int r0, ks_int r1, ks_int *cmap, double *diag,
                             ks_int *nc);

/* *nnz = the entries of A's rows r0 .. r1 - 1 (A's structure checked): a
 * builder's launch shape follows the mean length of the rows it builds.
 * Two small downloads unless the range is all of A. */
ks_error ks_cu_rows_nnz(const ks_sparse *A, ks_int r0, ks_int r1, long long *nnz);

/* P's rows shortened to their first keep[i] entries (keep: device, n + 1
 * slots, overwritten by its scan): new row pointers, new arrays when
 * anything goes, the old ones freed. P is unchanged on failure. */
ks_error ks_cu_compact_rows(ks_sparse *P, ks_int *keep);

/* ----------------------------------------------------------- device side */

/* Position of key in the sorted c[0..m), or -1. */
__device__ __forceinline__ ks_int ks_cu_find(const ks_int *c, ks_int m, ks_int key)
{
    ks_int lo = 0, hi = m;
    while (lo < hi) {
        const ks_int mid = lo + (hi - lo) / 2;
        if (c[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m && c[lo] == key ? lo : -1;
}

/* A sorted list being merged: its current key and position, and its end. */
struct ks_cu_run {
    ks_int key, pos, end;
};

__device__ __forceinline__ void ks_cu_sift_down(ks_cu_run *h, ks_int m, ks_int t)
{
    const ks_cu_run x = h[t];
    for (;;) {
        ks_int c = 2 * t + 1;
        if (c >= m)
            break;
        if (c + 1 < m && h[c + 1].key < h[c].key)
            c++;
        if (h[c].key >= x.key)
            break;
        h[t] = h[c];
        t = c;
    }
    h[t] = x;
}

/* The distinct keys of nh sorted lists, ascending, into out (when not
 * NULL); returns how many. h[0..nh) hold each list's (pos, end) on entry
 * and serve as the heap. src.next(pos, end, key) moves pos to the list's
 * next element at or after pos that counts (a filter: extended+i skips F
 * points) and gives its key, or returns false at the end. Keys are >= 0
 * and each list is sorted by key, so equal keys leave the heap one after
 * the other and the duplicates are the repeats of the last key. */
template <class Src>
__device__ ks_int ks_cu_merge_unique(const Src &src, ks_cu_run *h, ks_int nh, ks_int *out)
{
    ks_int m = 0;
    for (ks_int t = 0; t < nh; t++) {
        ks_int pos = h[t].pos, key;
        const ks_int end = h[t].end;
        if (src.next(pos, end, key)) { /* m <= t: h[t] is read before h[m] is written */
            h[m].key = key;
            h[m].pos = pos;
            h[m].end = end;
            m++;
        }
    }
    for (ks_int t = m / 2 - 1; t >= 0; t--)
        ks_cu_sift_down(h, m, t);
    ks_int cnt = 0, last = -1;
    while (m > 0) {
        const ks_int key = h[0].key;
        if (key != last) {
            if (out)
                out[cnt] = key;
            cnt++;
            last = key;
        }
        ks_int pos = h[0].pos + 1, next;
        if (src.next(pos, h[0].end, next)) {
            h[0].key = next;
            h[0].pos = pos;
        } else {
            h[0] = h[--m];
        }
        if (m > 0)
            ks_cu_sift_down(h, m, 0);
    }
    return cnt;
}

#endif
