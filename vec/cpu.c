/* The cpu backend: 64-byte aligned host memory and OpenMP vector kernels.
 *
 * Reductions split [0, n) into fixed blocks of KS_CPU_BLOCK entries; each
 * block is summed serially (8 interleaved accumulators, combined in a fixed
 * tree) into a partial, and the partials are combined pairwise in index
 * order. Which thread computes a block never changes a bit of the result,
 * so dot products and norms are identical for any OMP_NUM_THREADS. */
#include "backend.h"
#include "block_cpu.h"
#include "block_smooth.h"
#include "smooth_value.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define KS_CPU_ALIGN 64
#define KS_CPU_BLOCK 8192
/* Below this many entries a streaming kernel runs on one thread: starting
 * the team would cost more than the work. */
#define KS_CPU_PAR_MIN 16384
/* Partials for up to this many blocks (8M entries) live on the stack. */
#define KS_CPU_STACK_BLOCKS 1024

/* ------------------------------------------------------------- memory */

static ks_error cpu_alloc(ks_backend *be, size_t bytes, void **p)
{
    KS_TRY(ks_track_admit(&be->track, bytes, "cpu"));
    /* aligned_alloc wants a size that is a multiple of the alignment. */
    size_t sz = (bytes + KS_CPU_ALIGN - 1) / KS_CPU_ALIGN * KS_CPU_ALIGN;
    if (sz < bytes)
        return ks_seterr(KS_ERR_MEMORY, "host allocation of %zu bytes overflows", bytes);
    if (sz == 0)
        sz = KS_CPU_ALIGN;
    void *q = NULL;
    if (posix_memalign(&q, KS_CPU_ALIGN, sz) != 0 || !q)
        return ks_seterr(KS_ERR_MEMORY, "out of host memory allocating %zu bytes", bytes);
    ks_track_add(&be->track, q, bytes);
    *p = q;
    return KS_OK;
}

static void cpu_free(ks_backend *be, void *p)
{
    ks_track_remove(&be->track, p);
    free(p);
}

static ks_error cpu_memcpy(ks_backend *be, void *dst, const void *src, size_t bytes)
{
    (void)be;
    if (bytes == 0 || dst == src)
        return KS_OK;
    /* Large copies in chunks across the team: one thread cannot saturate
     * the memory bandwidth of a many-core socket. */
    const size_t chunk = (size_t)1 << 16;
    long nchunk = (long)((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static) if (nchunk > 2)
    for (long c = 0; c < nchunk; c++) {
        size_t off = (size_t)c * chunk, len = bytes - off < chunk ? bytes - off : chunk;
        memcpy((char *)dst + off, (const char *)src + off, len);
    }
    return KS_OK;
}

static ks_error cpu_sync(ks_backend *be)
{
    (void)be;
    return KS_OK;
}

/* ------------------------------------------------------- life cycle */

static ks_error cpu_init(ks_backend *be)
{
    char model[96] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                const char *c = strchr(line, ':');
                if (c) {
                    c++;
                    while (*c == ' ' || *c == '\t')
                        c++;
                    snprintf(model, sizeof model, "%s", c);
                    model[strcspn(model, "\n")] = '\0';
                }
                break;
            }
        }
        fclose(f);
    }
#ifdef _OPENMP
    snprintf(be->desc, sizeof be->desc, "%s, %d OpenMP threads", model, omp_get_max_threads());
#else
    snprintf(be->desc, sizeof be->desc, "%s, 1 thread (built without OpenMP)", model);
#endif
    be->impl = NULL;
    return KS_OK;
}

static void cpu_fini(ks_backend *be) { (void)be; }

/* ---------------------------------------------------- streaming kernels */

static ks_error cpu_fill(ks_backend *be, ks_int n, double a, double *x)
{
    (void)be;
#pragma omp parallel for simd schedule(static) if (n > KS_CPU_PAR_MIN)
    for (ks_int i = 0; i < n; i++)
        x[i] = a;
    return KS_OK;
}

static ks_error cpu_scale(ks_backend *be, ks_int n, double a, double *x)
{
    (void)be;
#pragma omp parallel for simd schedule(static) if (n > KS_CPU_PAR_MIN)
    for (ks_int i = 0; i < n; i++)
        x[i] *= a;
    return KS_OK;
}

static ks_error cpu_axpy(ks_backend *be, ks_int n, double a, const double *x, double *y)
{
    (void)be;
#pragma omp parallel for simd schedule(static) if (n > KS_CPU_PAR_MIN)
    for (ks_int i = 0; i < n; i++)
        y[i] += a * x[i];
    return KS_OK;
}

static ks_error cpu_axpby(ks_backend *be, ks_int n, double a, const double *x, double b,
                          double *y)
{
    (void)be;
    /* b == 0 must not read y: it may hold garbage or NaN (BLAS semantics). */
    if (b == 0.0) {
#pragma omp parallel for simd schedule(static) if (n > KS_CPU_PAR_MIN)
        for (ks_int i = 0; i < n; i++)
            y[i] = a * x[i];
    } else {
#pragma omp parallel for simd schedule(static) if (n > KS_CPU_PAR_MIN)
        for (ks_int i = 0; i < n; i++)
            y[i] = a * x[i] + b * y[i];
    }
    return KS_OK;
}

static ks_error cpu_smooth_update(ks_backend *be, ks_int n, double a, double c,
                                  const double *w, const double *r, const double *xin,
                                  const double *xprev, double *xout)
{
    (void)be;
    /* The same per-entry expression as the fused SpMV passes (fused.h), so
     * the generic and fused paths round alike. */
#pragma omp parallel for schedule(static) if (n > KS_CPU_PAR_MIN)
    for (ks_int i = 0; i < n; i++)
        xout[i] = ks_smooth_value(a, c, w[i], xin, xprev, i, r[i]);
    return KS_OK;
}

static ks_error cpu_axpbypcz(ks_backend *be, ks_int n, double a, const double *x, double b,
                             const double *y, double c, double *z)
{
    (void)be;
    if (c == 0.0) {
#pragma omp parallel for simd schedule(static) if (n > KS_CPU_PAR_MIN)
        for (ks_int i = 0; i < n; i++)
            z[i] = a * x[i] + b * y[i];
    } else {
#pragma omp parallel for simd schedule(static) if (n > KS_CPU_PAR_MIN)
        for (ks_int i = 0; i < n; i++)
            z[i] = a * x[i] + b * y[i] + c * z[i];
    }
    return KS_OK;
}

static ks_error cpu_pmul(ks_backend *be, ks_int n, const double *w, const double *x, double *y)
{
    (void)be;
#pragma omp parallel for simd schedule(static) if (n > KS_CPU_PAR_MIN)
    for (ks_int i = 0; i < n; i++)
        y[i] = w[i] * x[i];
    return KS_OK;
}

static ks_error cpu_gather(ks_backend *be, ks_int n, const ks_int *idx, const double *x,
                           double *y)
{
    (void)be;
#pragma omp parallel for schedule(static) if (n > KS_CPU_PAR_MIN)
    for (ks_int k = 0; k < n; k++)
        y[k] = x[idx[k]];
    return KS_OK;
}

/* ------------------------------------------------------- reductions */

/* Block partial sums use eight interleaved accumulators a0..a7 (entry i of
 * the block goes to lane i % 8), combined in a fixed tree: independent adds
 * that the compiler keeps in vector registers, in an order that never
 * depends on the thread count. */
#define LANES_DECL double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0
#define LANES_SUM (((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)))
/* Apply TERM(j) to the 8 entries i..i+7, then the remainder, lane by lane. */
#define LANES_LOOP(lo, hi, TERM)                                                              \
    do {                                                                                      \
        ks_int i = (lo);                                                                      \
        for (; i + 8 <= (hi); i += 8) {                                                       \
            a0 += TERM(i);                                                                    \
            a1 += TERM(i + 1);                                                                \
            a2 += TERM(i + 2);                                                                \
            a3 += TERM(i + 3);                                                                \
            a4 += TERM(i + 4);                                                                \
            a5 += TERM(i + 5);                                                                \
            a6 += TERM(i + 6);                                                                \
            a7 += TERM(i + 7);                                                                \
        }                                                                                     \
        double *lane[7] = {&a0, &a1, &a2, &a3, &a4, &a5, &a6};                                \
        for (int k = 0; i < (hi); i++, k++)                                                   \
            *lane[k] += TERM(i);                                                              \
    } while (0)

static double block_dot(const double *x, const double *y, ks_int lo, ks_int hi)
{
    LANES_DECL;
#define DOT_TERM(j) (x[j] * y[j])
    LANES_LOOP(lo, hi, DOT_TERM);
#undef DOT_TERM
    return LANES_SUM;
}

static double block_asum(const double *x, ks_int lo, ks_int hi)
{
    LANES_DECL;
#define ASUM_TERM(j) fabs(x[j])
    LANES_LOOP(lo, hi, ASUM_TERM);
#undef ASUM_TERM
    return LANES_SUM;
}

/* max |x| that propagates NaN (fmax would drop it). */
static double block_amax(const double *x, ks_int lo, ks_int hi)
{
    double m = 0.0;
    for (ks_int i = lo; i < hi; i++) {
        double a = fabs(x[i]);
        if (!(a <= m))
            m = a;
    }
    return m;
}

/* y[j] += a x[j], yielding the new y[j]^2. */
static inline double axpy_sq(double a, const double *x, double *y, ks_int j)
{
    double v = y[j] + a * x[j];
    y[j] = v;
    return v * v;
}

static inline double baxpy_sq(double a, const double *x, double *y, size_t e)
{
    double v = y[e];
    v = a * x[e] + v;
    y[e] = v;
    return v * v;
}

static double block_axpy_sq(double a, const double *x, double *y, ks_int lo, ks_int hi)
{
    LANES_DECL;
#define AXPY_SQ_TERM(j) axpy_sq(a, x, y, j)
    LANES_LOOP(lo, hi, AXPY_SQ_TERM);
#undef AXPY_SQ_TERM
    return LANES_SUM;
}

/* Pairwise sum of p[0..m) in a fixed order. */
static double pairwise_sum(const double *p, ks_int m)
{
    if (m <= 8) {
        double s = 0.0;
        for (ks_int i = 0; i < m; i++)
            s += p[i];
        return s;
    }
    ks_int h = m / 2;
    return pairwise_sum(p, h) + pairwise_sum(p + h, m - h);
}

static ks_int nblocks(ks_int n) { return (ks_int)(((int64_t)n + KS_CPU_BLOCK - 1) / KS_CPU_BLOCK); }

/* Partials buffer: on the stack for moderate n, else on the heap. */
typedef struct partials {
    double stack[2 * KS_CPU_STACK_BLOCKS];
    double *p;
} partials;

static ks_error partials_get(partials *pt, ks_int nb, int per_block)
{
    if (nb * per_block <= 2 * KS_CPU_STACK_BLOCKS) {
        pt->p = pt->stack;
        return KS_OK;
    }
    pt->p = ks_malloc((size_t)nb * (size_t)per_block * sizeof(double), "reduction partials");
    return pt->p ? KS_OK : KS_ERR_MEMORY;
}

static void partials_put(partials *pt)
{
    if (pt->p != pt->stack)
        free(pt->p);
}

/* Operands of one reduction; each block function reads what it needs. */
typedef struct red_args {
    const double *x, *y, *u, *v;
    const double *const *xs, *const *ys; /* mdot's k pairs */
    int k;
    double a;
    double *w; /* written (axpy_norm2, baxpy_dot) */
    const double *as; /* per-column scalars (baxpy_dot) */
} red_args;

/* Computes nout values for entries [lo, hi) into out[0..nout). */
typedef void (*block_fn)(const red_args *g, ks_int lo, ks_int hi, double *out);

/* The one driver of every reduction: fixed blocks of KS_CPU_BLOCK entries in
 * parallel, then per output a pairwise sum (or a NaN-propagating max) of the
 * block results in block order, so the result does not depend on threads. */
static ks_error reduce_blocks(ks_int n, int nout, block_fn f, const red_args *g, int use_max,
                              double *r)
{
    ks_int nb = nblocks(n);
    partials pt;
    KS_TRY(partials_get(&pt, nb, nout));
    double *p = pt.p;
#pragma omp parallel for schedule(static) if (nb > 1)
    for (ks_int b = 0; b < nb; b++) {
        ks_int lo = b * KS_CPU_BLOCK, hi = lo + KS_CPU_BLOCK < n ? lo + KS_CPU_BLOCK : n;
        double out[KS_VEC_MULTI_MAX];
        f(g, lo, hi, out);
        for (int k = 0; k < nout; k++)
            p[(ks_int)k * nb + b] = out[k];
    }
    for (int k = 0; k < nout; k++) {
        const double *pk = p + (ks_int)k * nb;
        if (use_max) {
            double m = 0.0;
            for (ks_int b = 0; b < nb; b++)
                if (!(pk[b] <= m))
                    m = pk[b];
            r[k] = m;
        } else {
            r[k] = pairwise_sum(pk, nb);
        }
    }
    partials_put(&pt);
    return KS_OK;
}

static void blk_dot(const red_args *g, ks_int lo, ks_int hi, double *out)
{
    out[0] = block_dot(g->x, g->y, lo, hi);
}

/* Both sums walk the block while it is in cache: one trip to memory. */
static void blk_dot2(const red_args *g, ks_int lo, ks_int hi, double *out)
{
    out[0] = block_dot(g->x, g->y, lo, hi);
    out[1] = block_dot(g->u, g->v, lo, hi);
}

/* The k sums of one block while it is in cache (y is often one vector
 * for all k: GMRES's new basis vector). */
static void blk_mdot(const red_args *g, ks_int lo, ks_int hi, double *out)
{
    for (int j = 0; j < g->k; j++)
        out[j] = block_dot(g->xs[j], g->ys[j], lo, hi);
}

/* Column j of a row-interleaved block (stride k) summed term by term as
 * block_dot sums a vector: the same lanes, the same tree. */
static double block_dot_col(const double *x, const double *y, int stride, ks_int lo, ks_int hi)
{
    LANES_DECL;
    /* (not named k: LANES_LOOP's remainder loop counts with a k) */
#define COL_TERM(j) (x[(size_t)(j) * (size_t)stride] * y[(size_t)(j) * (size_t)stride])
    LANES_LOOP(lo, hi, COL_TERM);
#undef COL_TERM
    return LANES_SUM;
}

/* Columns a .. a + g->k - 1 of the blocks g->x, g->y of g->a columns. */
static void blk_bdot(const red_args *g, ks_int lo, ks_int hi, double *out)
{
    const int stride = (int)g->a;
    for (int j = 0; j < g->k; j++)
        out[j] = block_dot_col(g->u + j, g->v + j, stride, lo, hi);
}

/* Column j of the block y (stride k) updated as ks_cpu_baxpby updates it
 * (b = 1), each new entry's square summed as block_dot_col sums: the bits
 * of baxpby, then bdot. */
static double block_baxpy_sq_col(double a, const double *x, double *y, int stride, ks_int lo,
                                 ks_int hi)
{
    LANES_DECL;
#define BAXPY_SQ_TERM(j) baxpy_sq(a, x, y, (size_t)(j) * (size_t)stride)
    LANES_LOOP(lo, hi, BAXPY_SQ_TERM);
#undef BAXPY_SQ_TERM
    return LANES_SUM;
}

/* Columns 0 .. g->k - 1 of g->x, g->w (stride g->a), scalars g->as. */
static void blk_baxpy_sq(const red_args *g, ks_int lo, ks_int hi, double *out)
{
    const int stride = (int)g->a;
    for (int j = 0; j < g->k; j++)
        out[j] = block_baxpy_sq_col(g->as[j], g->x + j, g->w + j, stride, lo, hi);
}

static void blk_asum(const red_args *g, ks_int lo, ks_int hi, double *out)
{
    out[0] = block_asum(g->x, lo, hi);
}

static void blk_amax(const red_args *g, ks_int lo, ks_int hi, double *out)
{
    out[0] = block_amax(g->x, lo, hi);
}

static void blk_axpy_sq(const red_args *g, ks_int lo, ks_int hi, double *out)
{
    out[0] = block_axpy_sq(g->a, g->x, g->w, lo, hi);
}

static ks_error cpu_dot(ks_backend *be, ks_int n, const double *x, const double *y, double *r)
{
    (void)be;
    red_args g = {.x = x, .y = y};
    return reduce_blocks(n, 1, blk_dot, &g, 0, r);
}

static ks_error cpu_dot2(ks_backend *be, ks_int n, const double *x, const double *y,
                         const double *u, const double *v, double r[2])
{
    (void)be;
    red_args g = {.x = x, .y = y, .u = u, .v = v};
    return reduce_blocks(n, 2, blk_dot2, &g, 0, r);
}

static ks_error cpu_mdot(ks_backend *be, ks_int n, int k, const double *const *x,
                         const double *const *y, double *r)
{
    (void)be;
    red_args g = {.xs = x, .ys = y, .k = k};
    return reduce_blocks(n, k, blk_mdot, &g, 0, r);
}

/* Chunks small enough that y's piece stays in L1 while the k terms are
 * added: one trip to memory for y, the terms in order j = 0..k-1. */
#define KS_CPU_MAXPY_CHUNK 1024

static ks_error cpu_maxpy(ks_backend *be, ks_int n, int k, const double *a,
                          const double *const *x, double *y)
{
    (void)be;
    ks_int nc = (n + KS_CPU_MAXPY_CHUNK - 1) / KS_CPU_MAXPY_CHUNK;
#pragma omp parallel for schedule(static) if (n > KS_CPU_PAR_MIN)
    for (ks_int c = 0; c < nc; c++) {
        ks_int lo = c * KS_CPU_MAXPY_CHUNK;
        ks_int hi = lo + KS_CPU_MAXPY_CHUNK < n ? lo + KS_CPU_MAXPY_CHUNK : n;
        for (int j = 0; j < k; j++) {
            const double aj = a[j], *xj = x[j];
#pragma omp simd
            for (ks_int i = lo; i < hi; i++)
                y[i] += aj * xj[i];
        }
    }
    return KS_OK;
}

/* Block dot: each column reduced exactly as cpu_dot reduces a vector (the
 * same blocks, lanes and pairwise tree), so column j's result has the bits
 * of ks_vec_dot on that column, and a block solve repeats its columns'
 * single solves step for step (BiCGStab amplifies the last bit). */
static ks_error cpu_bdot(ks_backend *be, ks_int n, int k, const double *x, const double *y,
                         double *r)
{
    (void)be;
    for (int j0 = 0; j0 < k; j0 += KS_VEC_MULTI_MAX) {
        int m = k - j0 < KS_VEC_MULTI_MAX ? k - j0 : KS_VEC_MULTI_MAX;
        red_args g = {.u = x + j0, .v = y + j0, .k = m, .a = (double)k};
        KS_TRY(reduce_blocks(n, m, blk_bdot, &g, 0, r + j0));
    }
    return KS_OK;
}

/* Block y += a x and its columns' squared sums in one pass: the row
 * blocks of cpu_bdot, each column updated, then squared, while its block
 * is in cache. */
static ks_error cpu_baxpy_dot(ks_backend *be, ks_int n, int k, const double *a, const double *x,
                              double *y, double *r)
{
    (void)be;
    for (int j0 = 0; j0 < k; j0 += KS_VEC_MULTI_MAX) {
        int m = k - j0 < KS_VEC_MULTI_MAX ? k - j0 : KS_VEC_MULTI_MAX;
        red_args g = {.x = x + j0, .w = y + j0, .as = a + j0, .k = m, .a = (double)k};
        KS_TRY(reduce_blocks(n, m, blk_baxpy_sq, &g, 0, r + j0));
    }
    return KS_OK;
}

static ks_error cpu_norm1(ks_backend *be, ks_int n, const double *x, double *r)
{
    (void)be;
    red_args g = {.x = x};
    return reduce_blocks(n, 1, blk_asum, &g, 0, r);
}

static ks_error cpu_norminf(ks_backend *be, ks_int n, const double *x, double *r)
{
    (void)be;
    red_args g = {.x = x};
    return reduce_blocks(n, 1, blk_amax, &g, 1, r);
}

static ks_error cpu_axpy_norm2(ks_backend *be, ks_int n, double a, const double *x, double *y,
                               double *r)
{
    (void)be;
    red_args g = {.x = x, .a = a, .w = y};
    KS_TRY(reduce_blocks(n, 1, blk_axpy_sq, &g, 0, r));
    *r = sqrt(*r);
    return KS_OK;
}

const ks_backend_ops ks_backend_cpu_ops = {
    .name = "cpu",
    .kind = KS_BACKEND_CPU,
    .init = cpu_init,
    .fini = cpu_fini,
    .host_memory = 1,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_memcpy,
    .download = cpu_memcpy,
    .copy = cpu_memcpy,
    .sync = cpu_sync,
    /* host memory: a staging copy is done when the call returns (the
     * halo's staged path runs so in tests: ks_halo_stage_always) */
    .stage_download = cpu_memcpy,
    .stage_upload = cpu_memcpy,
    .stage_wait = cpu_sync,
    .fill = cpu_fill,
    .scale = cpu_scale,
    .axpy = cpu_axpy,
    .axpby = cpu_axpby,
    .axpbypcz = cpu_axpbypcz,
    .smooth_update = cpu_smooth_update,
    .pmul = cpu_pmul,
    .gather = cpu_gather,
    .dot = cpu_dot,
    .dot2 = cpu_dot2,
    .mdot = cpu_mdot,
    .maxpy = cpu_maxpy,
    .norm1 = cpu_norm1,
    .norminf = cpu_norminf,
    .axpy_norm2 = cpu_axpy_norm2,
    .baxpby = ks_cpu_baxpby,
    .baxpbypcz = ks_cpu_baxpbypcz,
    .bpmul = ks_cpu_bpmul,
    .bdot = cpu_bdot,
    .bgather = ks_cpu_bgather,
    .bscatter = ks_cpu_bscatter,
    .bsmooth = ks_cpu_bsmooth,
    .baxpy_dot = cpu_baxpy_dot,
    .baxpy_aypx = ks_cpu_baxpy_aypx,
};
