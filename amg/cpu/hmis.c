/* HMIS coarsening (De Sterck, Falgout, Nolting, Yang 2008): a Ruge-Stueben
 * first pass, then PMIS on the points it left undecided.
 *
 * First pass: the measure of an undecided point is
 *     lambda_i = |S^T_i| + (number of F points among S^T_i),
 * i.e. points that many others depend on, and that F points need, go first.
 * Repeatedly the point with the largest lambda becomes C, its undecided
 * neighbours in the symmetrized graph (its strong dependents S^T_i and, for
 * a nonsymmetric S, its strong influences S_i) become F, and each new F
 * point j raises lambda_k of the undecided k it depends on (k in S_j).
 * Lambdas only grow, so bucket stacks give O(nnz) work (see buckets).
 * Ties: within a bucket the most recently raised point comes first (the
 * usual RS discipline, which sweeps the grid like a front); the initial
 * order puts the lowest index first. The pass stops when every undecided
 * point has lambda = 0 (no undecided or F point depends on it).
 *
 * Blocks (ks_amg_hmis_blocked; off in ks_amg_hmis, see below). The pass
 * is sequential by nature. As hypre does across processes, the rows can be
 * cut into blocks of bs rows, the pass running in every block at once over
 * the block's interior points (all of S_i and S^T_i inside the block).
 * Pass 2 then runs the same way on blocks shifted by bs/2, whose middles
 * hold the first blocks' boundaries, over the points still undecided there,
 * with what is decided counting as in one serial pass (undecided neighbours
 * of C points become F first, lambda includes the F dependents). Points
 * straddling both partitions (long-range connections) become F when next
 * to a C point; PMIS decides the rest. The splitting depends on bs, never
 * on the threads.
 *
 * Automatic bs (block = 0): levels below KS_HMIS_BLOCKED_ROWS rows stay
 * serial; otherwise bs = 2 m r, r the largest forward reach max(S_i, S^T_i)
 * - i of any point, m the smallest power of two such that at most
 * 1/KS_HMIS_BOUNDARY_SHARE of the connected points have a strong connection
 * across a block boundary. Where two blocks' RS fronts meet, their C
 * patterns may be out of phase, which costs C points along the seam. With
 * bs an even multiple of r a 3D 7-point Laplacian in natural order gets
 * exactly the serial splitting (measured: 16^3 to 130^3, and the 2.1M-row
 * level of 128^3 runs the pass 2.1x faster on 2 threads), but a 27-point
 * one does not (128^3: 5 -> 7 PCG iterations; there r = n^2 + n + 1, so
 * the automatic blocks, 528416 rows, cut the z-planes off their edges:
 * blocks of 16 planes (262144 rows, given as hmis_block_rows) take 5, of 32
 * planes 6; a better automatic size is the open lever), so
 * KS_HMIS_AUTO_BLOCKS is 0
 * and ks_amg_hmis runs the serial pass; the AMG key hmis_block_rows lets
 * users choose the blocks (ks_amg_hmis_rows).
 *
 * With a structurally symmetric S the PMIS stage's fix-up never fires;
 * with a nonsymmetric S the PMIS stage also decides the points of lambda =
 * 0, and its fix-up (pmis.c) gives HMIS the same guarantees as PMIS: every
 * F point with strong connections has a C point in S_i, and the C points
 * are independent in S + S^T except next to fix-up promotions (every pass
 * makes the undecided neighbours of a C point F, and PMIS's new C points
 * are independent of each other). The PMIS stage is called unconditionally
 * so the MPI version only has to restrict the blocks to local rows. */
#include "coarsen_internal.h"

#include <inttypes.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Smallest automatic block (rows). */
#define KS_HMIS_MIN_BLOCK 4096
/* At most 1/16 of the connected points may lie on block boundaries. */
#define KS_HMIS_BOUNDARY_SHARE 16
/* Smaller levels run the serial pass. */
#define KS_HMIS_BLOCKED_ROWS (1 << 21)
/* ks_amg_hmis uses automatic blocks (1) or the serial pass (0): see the
 * file comment for why it is 0. */
#define KS_HMIS_AUTO_BLOCKS 0

/* Buckets as stacks with lazy deletion: raising lambda_i pushes i onto
 * the stack of its new value and leaves the old entry behind; a popped
 * entry counts only if the point is still undecided and its lambda still
 * equals the bucket's. Each (point, value) pair is pushed at most once
 * (lambdas only grow), so the live entries of a stack, read from the top,
 * are its points in order of their last raise: the same order as doubly
 * linked lists with insertion at the head, without their scattered unlink
 * traffic. */
typedef struct stack {
    ks_int *a;
    size_t len, cap;
} stack;

typedef struct buckets {
    stack *st;      /* per lambda value */
    ks_int *lambda; /* indexed by i - lo */
    ks_int top;     /* no stack above top has a live entry */
    ks_int lo;      /* first row of the block */
    int nomem;
} buckets;

static void bucket_push(buckets *b, ks_int i)
{
    const ks_int l = b->lambda[i - b->lo];
    stack *t = &b->st[l];
    if (t->len == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        ks_int *a = realloc(t->a, cap * sizeof *a);
        if (!a) {
            b->nomem = 1;
            return;
        }
        t->a = a;
        t->cap = cap;
    }
    t->a[t->len++] = i;
    if (l > b->top)
        b->top = l;
}

/* Which points a block pass works on: undecided ones that are interior to
 * the pass's partition (bnd[i] & mask == 0; bnd NULL: all are). */
typedef struct pass {
    const unsigned char *bnd;
    unsigned char mask;
} pass;

static inline int active(const int *cf, const pass *ps, ks_int i)
{
    return cf[i] == KS_UNDECIDED && !(ps->bnd && (ps->bnd[i] & ps->mask));
}

/* j becomes F; the active points it depends on gain weight. */
static void make_fine(const ks_strength *S, int *cf, const pass *ps, buckets *b, ks_int j)
{
    ks_int *lambda = b->lambda;
    const ks_int lo = b->lo;
    cf[j] = KS_FPT;
    for (ks_int k = S->rowptr[j]; k < S->rowptr[j + 1]; k++) {
        const ks_int m = S->colind[k];
        if (!active(cf, ps, m))
            continue;
        lambda[m - lo]++;
        bucket_push(b, m);
    }
}

/* The RS pass over the active points of rows [lo, hi). Their strong
 * connections stay inside the block, so it reads cf only there and writes
 * it only for active points. Decisions made before (an earlier pass) count
 * as in one serial pass: active points next to a C point become F first,
 * and lambda starts at |S^T_i| + (F points among S^T_i). */
static void rs_block(const ks_strength *S, const ks_strength *ST, int *cf, const pass *ps,
                     ks_int lo, ks_int hi, ks_int nbuckets, buckets *b)
{
    for (ks_int l = 0; l < nbuckets; l++)
        b->st[l].len = 0;
    b->top = 0;
    b->lo = lo;
    if (ps->bnd) {
        for (ks_int i = lo; i < hi; i++) {
            if (!active(cf, ps, i))
                continue;
            int c = 0;
            for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1] && !c; k++)
                c = cf[S->colind[k]] == KS_CPT;
            for (ks_int k = ST->rowptr[i]; k < ST->rowptr[i + 1] && !c; k++)
                c = cf[ST->colind[k]] == KS_CPT;
            if (c)
                cf[i] = KS_FPT;
        }
    }
    for (ks_int i = hi - 1; i >= lo; i--) { /* pushed last = first out: lowest index */
        ks_int l = ST->rowptr[i + 1] - ST->rowptr[i];
        if (!active(cf, ps, i))
            continue;
        if (ps->bnd)
            for (ks_int k = ST->rowptr[i]; k < ST->rowptr[i + 1]; k++)
                l += cf[ST->colind[k]] == KS_FPT;
        b->lambda[i - lo] = l;
        if (l >= 1)
            bucket_push(b, i);
    }
    while (!b->nomem) {
        stack *t = &b->st[b->top];
        while (b->top > 0 && t->len == 0)
            t = &b->st[--b->top];
        if (b->top == 0)
            break;
        const ks_int i = t->a[--t->len];
        if (cf[i] != KS_UNDECIDED || b->lambda[i - lo] != b->top)
            continue; /* stale entry */
        cf[i] = KS_CPT;
        for (ks_int k = ST->rowptr[i]; k < ST->rowptr[i + 1]; k++)
            if (active(cf, ps, ST->colind[k]))
                make_fine(S, cf, ps, b, ST->colind[k]);
        for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++)
            if (active(cf, ps, S->colind[k]))
                make_fine(S, cf, ps, b, S->colind[k]);
    }
}

/* Span of point i: the smallest and largest index among i, S_i and S^T_i
 * (rows are sorted, so their ends). */
static inline void span(const ks_strength *S, const ks_strength *ST, ks_int i, ks_int *lo,
                        ks_int *hi)
{
    ks_int a = i, z = i;
    if (S->rowptr[i] < S->rowptr[i + 1]) {
        if (S->colind[S->rowptr[i]] < a)
            a = S->colind[S->rowptr[i]];
        if (S->colind[S->rowptr[i + 1] - 1] > z)
            z = S->colind[S->rowptr[i + 1] - 1];
    }
    if (ST->rowptr[i] < ST->rowptr[i + 1]) {
        if (ST->colind[ST->rowptr[i]] < a)
            a = ST->colind[ST->rowptr[i]];
        if (ST->colind[ST->rowptr[i + 1] - 1] > z)
            z = ST->colind[ST->rowptr[i + 1] - 1];
    }
    *lo = a;
    *hi = z;
}

/* Points with a strong connection across a boundary of blocks of bs rows
 * whose first block starts at row -shift. */
static int64_t count_boundary(const ks_strength *S, const ks_strength *ST, int64_t bs,
                              int64_t shift)
{
    const ks_int n = S->n;
    int64_t cnt = 0;
#pragma omp parallel for schedule(static) reduction(+ : cnt)
    for (ks_int i = 0; i < n; i++) {
        ks_int lo, hi;
        span(S, ST, i, &lo, &hi);
        cnt += (lo + shift) / bs != (hi + shift) / bs;
    }
    return cnt;
}

/* Block size (see the file comment): 2 m r rows, r the largest forward
 * reach max(S_i, S^T_i) - i of any point, m the smallest power of two
 * giving at least KS_HMIS_MIN_BLOCK rows and at most one boundary point in
 * KS_HMIS_BOUNDARY_SHARE connected ones. n means one block. */
static ks_int block_rows(const ks_strength *S, const ks_strength *ST)
{
    const ks_int n = S->n;
    if (n < KS_HMIS_BLOCKED_ROWS)
        return n;
    ks_int reach = 0;
    int64_t connected = 0;
#pragma omp parallel for schedule(static) reduction(max : reach) reduction(+ : connected)
    for (ks_int i = 0; i < n; i++) {
        ks_int lo, hi;
        span(S, ST, i, &lo, &hi);
        if (hi - i > reach)
            reach = hi - i;
        connected += lo != hi;
    }
    if (reach == 0)
        return n;
    for (int64_t bs = 2 * (int64_t)reach; bs < n; bs *= 2) {
        if (bs < KS_HMIS_MIN_BLOCK)
            continue;
        if (count_boundary(S, ST, bs, 0) * KS_HMIS_BOUNDARY_SHARE <= connected)
            return (ks_int)bs;
    }
    return n;
}

/* One pass over blocks of bs rows, the first starting at row `first`
 * (<= 0), in parallel. */
static ks_error rs_pass(const ks_strength *S, const ks_strength *ST, int *cf, const pass *ps,
                        ks_int first, ks_int bs, ks_int nbuckets)
{
    const ks_int n = S->n;
    const ks_int nblk = (ks_int)(((int64_t)n - first + bs - 1) / bs);
    int memfail = 0;
#pragma omp parallel if (nblk > 1)
    {
        buckets b = {0};
        b.st = calloc((size_t)nbuckets, sizeof *b.st);
        b.lambda = malloc(((size_t)bs + 1) * sizeof *b.lambda);
        const int ok = b.st && b.lambda;
        if (!ok) {
#pragma omp atomic write
            memfail = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (ks_int k = 0; k < nblk; k++) {
            const int64_t lo = (int64_t)first + (int64_t)k * bs, hi = lo + bs;
            if (ok && !b.nomem)
                rs_block(S, ST, cf, ps, lo < 0 ? 0 : (ks_int)lo, hi > n ? n : (ks_int)hi,
                         nbuckets, &b);
        }
        if (b.nomem) {
#pragma omp atomic write
            memfail = 1;
        }
        if (b.st)
            for (ks_int l = 0; l < nbuckets; l++)
                free(b.st[l].a);
        free(b.st);
        free(b.lambda);
    }
    if (memfail)
        return ks_seterr(KS_ERR_MEMORY, "ks_amg_hmis: out of memory for the RS buckets "
                         "(%" PRId32 " rows per block)", bs);
    return KS_OK;
}

/* Buckets the RS pass needs: lambda <= 2 |S^T_i| (each dependent counts
 * once, and once more when F). */
static ks_int bucket_count(const ks_strength *ST)
{
    const ks_int n = ST->n;
    ks_int maxst = 0;
#pragma omp parallel for schedule(static) reduction(max : maxst)
    for (ks_int i = 0; i < n; i++) {
        ks_int c = ST->rowptr[i + 1] - ST->rowptr[i];
        if (c > maxst)
            maxst = c;
    }
    return 2 * maxst + 1;
}

/* Does point i have a C point in S_i or S^T_i? */
static int next_to_c(const ks_strength *S, const ks_strength *ST, const int *cf, ks_int i)
{
    for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++)
        if (cf[S->colind[k]] == KS_CPT)
            return 1;
    for (ks_int k = ST->rowptr[i]; k < ST->rowptr[i + 1]; k++)
        if (cf[ST->colind[k]] == KS_CPT)
            return 1;
    return 0;
}

/* Undecided points next to a C point become F (flags first, so no point
 * reads a cf entry that another thread writes; flag: n bytes of scratch). */
static void fine_next_to_c(const ks_strength *S, const ks_strength *ST, int *cf,
                           unsigned char *flag)
{
    const ks_int n = S->n;
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++)
        flag[i] = (unsigned char)(cf[i] == KS_UNDECIDED && next_to_c(S, ST, cf, i));
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++)
        if (flag[i])
            cf[i] = KS_FPT;
}

ks_error ks_amg_rs_first_pass(const ks_strength *S, const ks_strength *ST,
                              const unsigned char *fixed, int *cf)
{
    const ks_int n = S->n;
    /* With fixed, rs_block also counts decisions made before; at the start
     * of a first pass there are none (no C point; the F points are isolated,
     * in no S^T_i), so it is the same pass. */
    const pass ps = {fixed, 1};
    return rs_pass(S, ST, cf, &ps, 0, n > 0 ? n : 1, bucket_count(ST));
}

/* The RS part over blocks of bs rows (bs >= n: one serial pass). Pass 1
 * runs on the blocks [k bs, (k + 1) bs); pass 2 on blocks shifted by half
 * a block, whose middles hold pass 1's block boundaries, decides the
 * boundary points with both sides known; what still straddles both
 * partitions and is next to a C point becomes F. */
static ks_error rs_blocks(const ks_strength *S, const ks_strength *ST, ks_int bs, int *cf)
{
    const ks_int n = S->n;
    const ks_int nbuckets = bucket_count(ST);
    if (bs >= n) {
        const pass ps = {NULL, 0};
        return rs_pass(S, ST, cf, &ps, 0, n > 0 ? n : 1, nbuckets);
    }
    const ks_int half = bs / 2;
    unsigned char *bnd = ks_malloc((size_t)n, "HMIS block boundary flags");
    if (!bnd)
        return KS_ERR_MEMORY;
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        ks_int lo, hi;
        span(S, ST, i, &lo, &hi);
        bnd[i] = (unsigned char)((lo / bs != hi / bs) |
                                 (((int64_t)lo + half) / bs != ((int64_t)hi + half) / bs) << 1);
    }
    const pass p1 = {bnd, 1}, p2 = {bnd, 2};
    ks_error e = rs_pass(S, ST, cf, &p1, 0, bs, nbuckets);
    if (e == KS_OK)
        e = rs_pass(S, ST, cf, &p2, -half, bs, nbuckets);
    if (e != KS_OK) {
        free(bnd);
        return e;
    }
    fine_next_to_c(S, ST, cf, bnd);
    free(bnd);
    return KS_OK;
}

ks_error ks_amg_hmis_blocked(const ks_strength *S, unsigned long long seed, ks_int block,
                             int *cf, ks_int *nc, unsigned char *promoted)
{
    if (!cf || !nc)
        return ks_seterr(KS_ERR_ARG, "ks_amg_hmis: NULL %s", cf ? "nc" : "cf");
    if (block < 0 || block == 1)
        return ks_seterr(KS_ERR_ARG, "ks_amg_hmis: block of %" PRId32 " rows (expected 0: "
                         "automatic, or at least 2)", block);
    KS_TRY(ks_strength_check(S, "ks_amg_hmis"));
    ks_strength ST;
    KS_TRY(ks_strength_transpose_unchecked(S, &ST));
    const ks_int n = S->n;
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) /* isolated points: F, outside both passes */
        cf[i] = S->rowptr[i] == S->rowptr[i + 1] && ST.rowptr[i] == ST.rowptr[i + 1]
                    ? KS_FPT : KS_UNDECIDED;
    ks_error e = rs_blocks(S, &ST, block ? block : block_rows(S, &ST), cf);
    if (e == KS_OK)
        e = ks_amg_pmis_stage(S, &ST, seed, cf, promoted);
    ks_strength_free(&ST);
    if (e != KS_OK)
        return e;
    ks_int c = 0;
#pragma omp parallel for schedule(static) reduction(+ : c)
    for (ks_int i = 0; i < n; i++)
        c += cf[i] == KS_CPT;
    *nc = c;
    return KS_OK;
}

ks_error ks_amg_hmis_ex(const ks_strength *S, unsigned long long seed, int *cf, ks_int *nc,
                        unsigned char *promoted)
{
    const ks_int serial = S && S->n > 1 ? S->n : 2;
    return ks_amg_hmis_blocked(S, seed, KS_HMIS_AUTO_BLOCKS ? 0 : serial, cf, nc, promoted);
}

ks_error ks_amg_hmis_rows(const ks_strength *S, unsigned long long seed, int block_rows, int *cf,
                          ks_int *nc)
{
    if (block_rows == 0 || (S && block_rows >= S->n)) /* one block: the serial pass */
        return ks_amg_hmis(S, seed, cf, nc);
    return ks_amg_hmis_blocked(S, seed, block_rows < 0 ? 0 : block_rows, cf, nc, NULL);
}

ks_error ks_amg_hmis(const ks_strength *S, unsigned long long seed, int *cf, ks_int *nc)
{
    return ks_amg_hmis_ex(S, seed, cf, nc, NULL);
}
