/* The cpu table of amg/kernels.h: each operation views its operands as host
 * CSRs / strength patterns (the cpu backend's memory is host memory) and
 * calls the host function of amg_cpu.h; results are adopted without a copy.
 * The projection of re-setup, the diagonal check and the smoother weights
 * live here: they are a loop each. */
#include "amg_cpu.h"

#include <math.h>
#include <string.h>

static ks_strength as_strength(const ks_sparse *S)
{
    ks_strength s = {S->nrows, S->rowptr, S->colind};
    return s;
}

/* S (a pattern on be with ncols columns) takes the arrays of the host
 * strength graph s. */
static ks_error adopt_pattern(ks_backend *be, ks_error e, ks_strength *s, ks_int ncols,
                              ks_sparse *S)
{
    if (e != KS_OK)
        return e;
    ks_sparse t = {be, s->n, ncols, s->rowptr[s->n], s->rowptr, s->colind, NULL, 0, 0};
    *S = t;
    memset(s, 0, sizeof *s);
    return KS_OK;
}

static ks_error adopt_strength(ks_backend *be, ks_error e, ks_strength *s, ks_sparse *S)
{
    return adopt_pattern(be, e, s, s->n, S);
}

static ks_error adopt_csr(ks_backend *be, ks_error e, ks_csr *H, ks_sparse *out)
{
    return e != KS_OK ? e : ks_sparse_adopt_csr(be, H, out);
}

static ks_error cpu_strength_classical(const ks_sparse *A, double theta, double mrs,
                                       ks_sparse *S)
{
    ks_csr a = ks_sparse_as_csr(A);
    ks_strength s;
    return adopt_strength(A->be, ks_amg_strength_classical(&a, theta, mrs, &s), &s, S);
}

static ks_error cpu_strength_symmetric(const ks_sparse *A, double theta, ks_sparse *S)
{
    ks_csr a = ks_sparse_as_csr(A);
    ks_strength s;
    return adopt_strength(A->be, ks_amg_strength_symmetric(&a, theta, &s), &s, S);
}

static ks_error cpu_strength_classical_blocks(const ks_sparse *L, const ks_sparse *G,
                                              ks_int nbelow, double theta, double mrs,
                                              ks_sparse *SL, ks_sparse *SG)
{
    if (!L || !SL || !SG || SL == SG)
        return ks_seterr(KS_ERR_ARG, "ks_amg_strength_classical_blocks: %s",
                         !L ? "NULL matrix" : SL && SG ? "one output for both blocks"
                                                       : "NULL output");
    ks_csr l = ks_sparse_as_csr(L), g = G ? ks_sparse_as_csr(G) : l;
    ks_strength sl, sg;
    /* as the cuda entry, rows a setup step made or a matrix checked are not scanned */
    ks_error e = (L->valid && (!G || G->valid) ? ks_amg_strength_classical_blocks_valid
                                               : ks_amg_strength_classical_blocks)(
        &l, G ? &g : NULL, nbelow, theta, mrs, &sl, &sg);
    KS_TRY(adopt_strength(L->be, e, &sl, SL));
    return adopt_pattern(L->be, e, &sg, G ? G->ncols : 0, SG);
}

static ks_error cpu_pmis(const ks_sparse *S, unsigned long long seed, int *cf, ks_int *nc)
{
    ks_strength s = as_strength(S);
    return ks_amg_pmis(&s, seed, cf, nc);
}

static ks_error cpu_hmis(const ks_sparse *S, unsigned long long seed, int block_rows, int *cf,
                         ks_int *nc)
{
    ks_strength s = as_strength(S);
    return ks_amg_hmis_rows(&s, seed, block_rows, cf, nc);
}

static ks_error cpu_interp_direct(const ks_sparse *A, const ks_sparse *S, const int *cf,
                                  ks_sparse *P)
{
    ks_csr a = ks_sparse_as_csr(A), p;
    ks_strength s = as_strength(S);
    return adopt_csr(A->be, ks_amg_interp_direct(&a, &s, cf, &p), &p, P);
}

static ks_error cpu_interp_extended_i(const ks_sparse *A, const ks_sparse *S, const int *cf,
                                      ks_sparse *P)
{
    ks_csr a = ks_sparse_as_csr(A), p;
    ks_strength s = as_strength(S);
    return adopt_csr(A->be, ks_amg_interp_extended_i(&a, &s, cf, &p), &p, P);
}

static ks_error cpu_interp_direct_rows(const ks_sparse *A, const ks_sparse *S, const int *cf,
                                       ks_int r0, ks_int r1, ks_sparse *P)
{
    ks_csr a = ks_sparse_as_csr(A), p;
    ks_strength s = as_strength(S);
    return adopt_csr(A->be, ks_amg_interp_direct_rows(&a, &s, cf, r0, r1, &p), &p, P);
}

static ks_error cpu_interp_extended_i_rows(const ks_sparse *A, const ks_sparse *S,
                                           const int *cf, ks_int r0, ks_int r1, ks_sparse *P)
{
    ks_csr a = ks_sparse_as_csr(A), p;
    ks_strength s = as_strength(S);
    return adopt_csr(A->be, ks_amg_interp_extended_i_rows(&a, &s, cf, r0, r1, &p), &p, P);
}

/* Truncation may shrink P's arrays (the host function reallocates them,
 * behind the backend's count: they are counted again afterwards). */
static ks_error cpu_interp_truncate(ks_sparse *P, int max_elements, double factor)
{
    ks_csr p = ks_sparse_as_csr(P);
    ks_be_untrack(P->be, P->colind);
    ks_be_untrack(P->be, P->val);
    ks_error e = ks_amg_interp_truncate(&p, max_elements, factor);
    *P = ks_sparse_view_csr(P->be, &p);
    ks_be_track(P->be, P->colind, (size_t)P->nnz * sizeof(ks_int));
    ks_be_track(P->be, P->val, (size_t)P->nnz * sizeof(double));
    return e;
}

/* Pn (recomputed, untruncated) onto P's pattern, in place in P: entries
 * outside it are dropped and the kept ones rescaled so each row keeps the
 * untruncated row sum, what truncation does with the kept set frozen. A
 * row that loses entries without truncation, or keeps no weight, does not
 * fit (*changed = 1). */
static ks_error cpu_interp_project(const ks_sparse *Pn, ks_sparse *P, int truncated,
                                   int *changed)
{
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
    for (ks_int i = 0; i < P->nrows; i++) {
        ks_int a = Pn->rowptr[i], ae = Pn->rowptr[i + 1];
        ks_int k0 = P->rowptr[i], k1 = P->rowptr[i + 1];
        double sum_all = 0.0, sum_kept = 0.0;
        int dropped = 0;
        for (ks_int j = a; j < ae; j++)
            sum_all += Pn->val[j];
        for (ks_int k = k0; k < k1; k++) {
            while (a < ae && Pn->colind[a] < P->colind[k]) {
                a++;
                dropped = 1;
            }
            double v = a < ae && Pn->colind[a] == P->colind[k] ? Pn->val[a++] : 0.0;
            P->val[k] = v;
            sum_kept += v;
        }
        if (a < ae)
            dropped = 1;
        if (!dropped)
            continue; /* same entries: no rescaling, exact */
        if (!truncated || sum_kept == 0.0) {
            bad = 1;
            continue;
        }
        double scale = sum_all / sum_kept;
        for (ks_int k = k0; k < k1; k++)
            P->val[k] *= scale;
    }
    *changed = bad;
    return KS_OK;
}

static ks_error cpu_aggregate(const ks_sparse *S, unsigned long long seed, ks_int *agg,
                              ks_int *na)
{
    ks_strength s = as_strength(S);
    return ks_amg_aggregate_seeded(&s, seed, agg, na);
}

static ks_error cpu_tentative(ks_backend *be, ks_int n, const ks_int *agg, ks_int na,
                              ks_sparse *P0)
{
    ks_csr p;
    return adopt_csr(be, ks_amg_tentative_prolongator(n, agg, na, &p), &p, P0);
}

static ks_error cpu_smooth_prolongator(const ks_sparse *A, const ks_sparse *P0, double rho,
                                       ks_sparse *P)
{
    ks_csr a = ks_sparse_as_csr(A), p0 = ks_sparse_as_csr(P0), p;
    return adopt_csr(A->be, ks_amg_smooth_prolongator(&a, &p0, rho, &p), &p, P);
}

static ks_error cpu_spectral_radius(const ks_sparse *A, int iters, int known_sym, double *rho,
                                    int *exact)
{
    ks_csr a = ks_sparse_as_csr(A);
    return ks_amg_spectral_radius_sym(&a, iters, known_sym, rho, exact);
}

static ks_error cpu_spectral_prepare_blocks(const ks_sparse *L, const ks_sparse *G, double *d,
                                            ks_spectral_prep *out)
{
    KS_TRY(ks_amg_spectral_blocks_args(L, G, d, out));
    ks_csr l = ks_sparse_as_csr(L), g = G ? ks_sparse_as_csr(G) : l;
    return ks_amg_spectral_prepare_csr(&l, G ? &g : NULL, !(L->valid && (!G || G->valid)), d,
                                       out);
}

static ks_error cpu_spectral_scale_start(ks_backend *be, ks_int n, ks_gint row_begin, int sym,
                                         double *d, double *start)
{
    (void)be;
    if (n < 0 || (n > 0 && (!d || !start)))
        return ks_seterr(KS_ERR_ARG, "ks_amg_spectral_scale_start: %s",
                         n < 0 ? "negative size" : "NULL array");
    ks_amg_spectral_scale_start(n, row_begin, sym, d, start);
    return KS_OK;
}

static ks_error cpu_symmetry_counts(const ks_sparse *L, const double *d, int64_t cnt[4])
{
    if (!L || !cnt || (L->nrows > 0 && (!d || !L->val)))
        return ks_seterr(KS_ERR_ARG, "ks_amg_symmetry_counts: NULL %s",
                         !L ? "matrix" : !cnt ? "counts" : !d ? "diagonal" : "values");
    ks_csr l = ks_sparse_as_csr(L);
    ks_amg_symmetry_counts_csr(&l, d, cnt);
    return KS_OK;
}

static ks_error cpu_check_diagonal(const ks_sparse *A, ks_int *bad, double *value, int *stored)
{
    *bad = A->nrows;
    *value = 0.0;
    *stored = 0;
    for (ks_int i = 0; i < A->nrows; i++) {
        double d = 0.0;
        int found = 0;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i) {
                d = A->val[k];
                found = 1;
                break;
            }
        if (d == 0.0 || !isfinite(d)) {
            *bad = i;
            *value = d;
            *stored = found;
            break;
        }
    }
    return KS_OK;
}

static ks_error cpu_smoother_weights(const ks_sparse *A, ks_amg_smoother_kind kind, double omega,
                                     double *w)
{
    const ks_int n = A->nrows;
#pragma omp parallel for schedule(static) if (n > 4096)
    for (ks_int i = 0; i < n; i++) {
        double diag = 0.0, off = 0.0;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            if (A->colind[k] == i)
                diag = A->val[k];
            else
                off += fabs(A->val[k]);
        }
        switch (kind) {
        case KS_SMOOTHER_JACOBI: w[i] = omega / diag; break;
        case KS_SMOOTHER_JACOBI_L1: w[i] = omega / (diag + copysign(off, diag)); break;
        default: w[i] = 1.0 / diag; break;
        }
    }
    return KS_OK;
}

const ks_amg_kernels ks_amg_cpu_kernels = {
    .backend = KS_BACKEND_CPU,
    .strength_classical = cpu_strength_classical,
    .strength_symmetric = cpu_strength_symmetric,
    .pmis = cpu_pmis,
    .hmis = cpu_hmis,
    .interp_direct = cpu_interp_direct,
    .interp_extended_i = cpu_interp_extended_i,
    .interp_direct_rows = cpu_interp_direct_rows,
    .interp_extended_i_rows = cpu_interp_extended_i_rows,
    .interp_truncate = cpu_interp_truncate,
    .interp_project = cpu_interp_project,
    .aggregate = cpu_aggregate,
    .tentative_prolongator = cpu_tentative,
    .smooth_prolongator = cpu_smooth_prolongator,
    .spectral_radius = cpu_spectral_radius,
    .check_diagonal = cpu_check_diagonal,
    .smoother_weights = cpu_smoother_weights,
    .strength_classical_blocks = cpu_strength_classical_blocks,
    .spectral_prepare_blocks = cpu_spectral_prepare_blocks,
    .spectral_scale_start = cpu_spectral_scale_start,
    .symmetry_counts = cpu_symmetry_counts,
    .pmis_joint_step = ks_amg_cpu_pmis_joint_step,
    .gather_int = ks_amg_cpu_gather_int,
};
