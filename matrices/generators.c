/* Structured-grid test matrices in the spirit of hypre's ij driver:
 * Laplacians (5/9-point 2D, 7/27-point 3D), anisotropic diffusion and
 * upwind convection-diffusion, Dirichlet boundaries (a boundary row simply
 * omits the neighbours outside the grid). Row r = i + nx*(j + ny*k); the
 * stencil is walked in (dk, dj, di) order so columns come out sorted. Any
 * row range can be generated on its own (gen_rows.h): the whole matrix is
 * the range [0, n), a rank of a distributed run takes its row block. */
#include "gen_rows.h"
#include "mmio_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#ifdef _OPENMP
#define KS_OMP_FOR _Pragma("omp parallel for schedule(static)")
#else
#define KS_OMP_FOR
#endif

static const char *const gen_names[] = {"poisson2d_5", "poisson2d_9", "poisson3d_7",
                                        "poisson3d_27", "aniso3d", "convdiff3d"};
#define NKINDS ((int)(sizeof gen_names / sizeof gen_names[0]))

void ks_gen_params_default(ks_gen_params *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    p->kind = KS_GEN_POISSON3D_7;
    p->nx = p->ny = p->nz = 10;
    p->cx = p->cy = p->cz = 1.0;
    p->vx = p->vy = p->vz = 1.0;
}

ks_error ks_gen_kind_from_name(const char *name, ks_gen_kind *kind)
{
    if (!name || !kind)
        return ks_seterr(KS_ERR_ARG, "ks_gen_kind_from_name: NULL %s", name ? "output" : "name");
    for (int k = 0; k < NKINDS; k++) {
        if (strcasecmp(name, gen_names[k]) == 0) {
            *kind = (ks_gen_kind)k;
            return KS_OK;
        }
    }
    return ks_seterr(KS_ERR_ARG, "unknown generator '%s' (expected one of poisson2d_5, "
                     "poisson2d_9, poisson3d_7, poisson3d_27, aniso3d, convdiff3d)", name);
}

const char *ks_gen_kind_name(ks_gen_kind kind)
{
    return (int)kind >= 0 && (int)kind < NKINDS ? gen_names[kind] : "unknown";
}

typedef struct stencil {
    int n;
    int d[27][3]; /* di, dj, dk */
    double c[27];
} stencil;

static void st_add(stencil *s, int di, int dj, int dk, double c)
{
    s->d[s->n][0] = di;
    s->d[s->n][1] = dj;
    s->d[s->n][2] = dk;
    s->c[s->n++] = c;
}

static int is3d(ks_gen_kind k) { return k != KS_GEN_POISSON2D_5 && k != KS_GEN_POISSON2D_9; }

static ks_error check_coef(const char *kind, const char *name, double v, int positive)
{
    if (!isfinite(v) || (positive && !(v > 0.0)))
        return ks_seterr(KS_ERR_ARG, "generator %s: %s = %g (expected a finite%s number)", kind,
                         name, v, positive ? " positive" : "");
    return KS_OK;
}

static ks_error check_params(const ks_gen_params *p)
{
    if ((int)p->kind < 0 || (int)p->kind >= NKINDS)
        return ks_seterr(KS_ERR_ARG, "generator: unknown kind %d", (int)p->kind);
    const char *name = gen_names[p->kind];
    if (p->nx < 1 || p->ny < 1 || (is3d(p->kind) && p->nz < 1)) {
        char grid[64];
        if (is3d(p->kind))
            snprintf(grid, sizeof grid, "%" PRId32 " x %" PRId32 " x %" PRId32, p->nx, p->ny, p->nz);
        else
            snprintf(grid, sizeof grid, "%" PRId32 " x %" PRId32, p->nx, p->ny);
        return ks_seterr(KS_ERR_ARG, "generator %s: grid %s (expected at least 1 point per axis)",
                         name, grid);
    }
    int uses_c = p->kind == KS_GEN_POISSON2D_5 || p->kind == KS_GEN_POISSON3D_7 ||
                 p->kind == KS_GEN_ANISO3D || p->kind == KS_GEN_CONVDIFF3D;
    if (uses_c) {
        KS_TRY(check_coef(name, "cx", p->cx, 1));
        KS_TRY(check_coef(name, "cy", p->cy, 1));
        if (is3d(p->kind))
            KS_TRY(check_coef(name, "cz", p->cz, 1));
    }
    if (p->kind == KS_GEN_CONVDIFF3D) {
        KS_TRY(check_coef(name, "vx", p->vx, 0));
        KS_TRY(check_coef(name, "vy", p->vy, 0));
        KS_TRY(check_coef(name, "vz", p->vz, 0));
    }
    return KS_OK;
}

static void build_stencil(const ks_gen_params *p, stencil *s)
{
    memset(s, 0, sizeof *s);
    switch (p->kind) {
    case KS_GEN_POISSON2D_5:
        st_add(s, 0, -1, 0, -p->cy);
        st_add(s, -1, 0, 0, -p->cx);
        st_add(s, 0, 0, 0, 2.0 * (p->cx + p->cy));
        st_add(s, 1, 0, 0, -p->cx);
        st_add(s, 0, 1, 0, -p->cy);
        break;
    case KS_GEN_POISSON2D_9:
        for (int dj = -1; dj <= 1; dj++)
            for (int di = -1; di <= 1; di++)
                st_add(s, di, dj, 0, di == 0 && dj == 0 ? 8.0 : -1.0);
        break;
    case KS_GEN_POISSON3D_27:
        for (int dk = -1; dk <= 1; dk++)
            for (int dj = -1; dj <= 1; dj++)
                for (int di = -1; di <= 1; di++)
                    st_add(s, di, dj, dk, di == 0 && dj == 0 && dk == 0 ? 26.0 : -1.0);
        break;
    case KS_GEN_POISSON3D_7:
    case KS_GEN_ANISO3D:
    case KS_GEN_CONVDIFF3D: {
        /* Diffusion, then first-order upwind convection scaled by the mesh
         * width h = 1/(n+1) per axis: for v > 0 the backward difference
         * (diag += h v, lower neighbour -= h v), for v < 0 the forward one.
         * Off-diagonals stay negative and interior rows sum to zero: an
         * M-matrix, weakly diagonally dominant, strictly at the boundary. */
        double lo[3] = {-p->cx, -p->cy, -p->cz}, hi[3] = {-p->cx, -p->cy, -p->cz};
        double diag = 2.0 * (p->cx + p->cy + p->cz);
        if (p->kind == KS_GEN_CONVDIFF3D) {
            const double v[3] = {p->vx, p->vy, p->vz};
            const ks_int n[3] = {p->nx, p->ny, p->nz};
            for (int a = 0; a < 3; a++) {
                double hv = v[a] / ((double)n[a] + 1.0);
                diag += fabs(hv);
                if (hv > 0)
                    lo[a] -= hv;
                else
                    hi[a] += hv;
            }
        }
        st_add(s, 0, 0, -1, lo[2]);
        st_add(s, 0, -1, 0, lo[1]);
        st_add(s, -1, 0, 0, lo[0]);
        st_add(s, 0, 0, 0, diag);
        st_add(s, 1, 0, 0, hi[0]);
        st_add(s, 0, 1, 0, hi[1]);
        st_add(s, 0, 0, 1, hi[2]);
        break;
    }
    }
}

/* Number of grid points that have a neighbour at offset d along an axis of n. */
static int64_t axis_pairs(int d, int64_t n) { return d == 0 ? n : n - 1; }

/* The grid a generator's rows live on (nz = 1 in 2D). */
static void grid_dims(const ks_gen_params *p, int64_t *nx, int64_t *ny, int64_t *nz)
{
    *nx = p->nx;
    *ny = p->ny;
    *nz = is3d(p->kind) ? p->nz : 1;
}

ks_error ks_gen_rows_global(const ks_gen_params *p, int64_t *nrows)
{
    KS_TRY(check_params(p));
    int64_t nx, ny, nz;
    grid_dims(p, &nx, &ny, &nz);
    /* Each axis is at most INT32_MAX, so nx*ny*nz can exceed int64: check
     * the product by division before forming it (a wrapped count would pass
     * the size checks of the callers and undersize their buffers). */
    if (ny > INT64_MAX / nx || nz > INT64_MAX / (nx * ny))
        return ks_seterr(KS_ERR_SIZE, "generator %s: %" PRId64 " x %" PRId64 " x %" PRId64
                         " grid has more rows than a 64-bit count holds", gen_names[p->kind],
                         nx, ny, nz);
    *nrows = nx * ny * nz;
    return KS_OK;
}

/* Rows [r0, r1) of p's matrix, grid line by grid line (a line: fixed j
 * and k), each line clipped to the range, so a row needs no divisions.
 * val == NULL: each row's length into rp[row - r0 + 1]; else its columns
 * (into ci32, or ci64 when ci32 is NULL) and values from rp[row - r0] on. */
static void walk_rows(const ks_gen_params *p, int64_t r0, int64_t r1, ks_int *rp, ks_int *ci32,
                      ks_gint *ci64, double *val)
{
    stencil s;
    build_stencil(p, &s);
    int64_t nx, ny, nz;
    grid_dims(p, &nx, &ny, &nz);
    const int count = val == NULL;
    const int64_t l0 = r0 / nx, l1 = (r1 + nx - 1) / nx;
    KS_OMP_FOR
    for (int64_t l = l0; l < l1; l++) {
        const int64_t j = l % ny, k = l / ny;
        const int64_t i0 = r0 > l * nx ? r0 - l * nx : 0;
        const int64_t i1 = r1 < (l + 1) * nx ? r1 - l * nx : nx;
        for (int64_t i = i0; i < i1; i++) {
            const int64_t row = l * nx + i;
            int64_t q = count ? 0 : rp[row - r0];
            for (int e = 0; e < s.n; e++) {
                int64_t ii = i + s.d[e][0], jj = j + s.d[e][1], kk = k + s.d[e][2];
                if (ii < 0 || ii >= nx || jj < 0 || jj >= ny || kk < 0 || kk >= nz)
                    continue;
                if (!count) {
                    int64_t col = ii + nx * (jj + ny * kk);
                    if (ci32)
                        ci32[q] = (ks_int)col;
                    else
                        ci64[q] = col;
                    val[q] = s.c[e];
                }
                q++;
            }
            if (count)
                rp[row - r0 + 1] = (ks_int)q;
        }
    }
}

ks_error ks_gen_rows_count(const ks_gen_params *p, int64_t r0, int64_t r1, ks_int *rp)
{
    /* Row lengths, then a serial prefix sum. */
    walk_rows(p, r0, r1, rp, NULL, NULL, NULL);
    rp[0] = 0;
    int64_t sum = 0;
    for (int64_t r = 0; r < r1 - r0; r++) {
        sum += rp[r + 1];
        if (sum > INT32_MAX)
            return ks_seterr(KS_ERR_SIZE, "generator %s: rows %" PRId64 "..%" PRId64 " hold more "
                             "than the 32-bit index limit %" PRId32 " (ks_int) of nonzeros",
                             gen_names[p->kind], r0, r1 - 1, INT32_MAX);
        rp[r + 1] = (ks_int)sum;
    }
    return KS_OK;
}

void ks_gen_rows_fill(const ks_gen_params *p, int64_t r0, int64_t r1, const ks_int *rp,
                      ks_int *ci32, ks_gint *ci64, double *val)
{
    walk_rows(p, r0, r1, (ks_int *)rp, ci32, ci64, val);
}

ks_error ks_generate(const ks_gen_params *p, ks_csr *A)
{
    if (!p || !A)
        return ks_seterr(KS_ERR_ARG, "ks_generate: NULL %s", p ? "matrix" : "parameters");
    memset(A, 0, sizeof *A);
    int64_t nrows;
    KS_TRY(ks_gen_rows_global(p, &nrows));
    int64_t nx, ny, nz;
    grid_dims(p, &nx, &ny, &nz);
    /* Rows first: below INT32_MAX rows each stencil term is at most nrows,
     * so the nonzero sum (27 terms at most) cannot overflow int64. */
    if (nrows > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "generator %s: %" PRId64 " x %" PRId64 " x %" PRId64
                         " grid gives %" PRId64 " rows, more than the 32-bit index limit %"
                         PRId32 " (ks_int)", gen_names[p->kind], nx, ny, nz, nrows, INT32_MAX);
    stencil s;
    build_stencil(p, &s);
    int64_t nnz = 0;
    for (int e = 0; e < s.n; e++)
        nnz += axis_pairs(s.d[e][0], nx) * axis_pairs(s.d[e][1], ny) * axis_pairs(s.d[e][2], nz);
    if (nrows > INT32_MAX || nnz > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "generator %s: %" PRId64 " x %" PRId64 " x %" PRId64
                         " grid gives %" PRId64 " rows and %" PRId64 " nonzeros, more than the "
                         "32-bit index limit %" PRId32 " (ks_int)", gen_names[p->kind], nx, ny, nz,
                         nrows, nnz, INT32_MAX);
    KS_TRY(ks_csr_alloc(A, (ks_int)nrows, (ks_int)nrows, (ks_int)nnz));
    /* The whole matrix is the row range [0, n). */
    ks_error e = ks_gen_rows_count(p, 0, nrows, A->rowptr);
    if (e != KS_OK) {
        ks_csr_free(A);
        return e;
    }
    ks_gen_rows_fill(p, 0, nrows, A->rowptr, A->colind, NULL, A->val);
    return KS_OK;
}
