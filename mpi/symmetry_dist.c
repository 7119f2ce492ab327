/* Is a distributed matrix symmetric to rounding? The serial spectral
 * estimate's rule (amg/cpu/spectral.c), over the ranks: every strictly
 * upper entry a_ij has a partner a_ji with |a_ij - a_ji| <= tol
 * sqrt(|a_ii a_jj|), and there are as many lower as upper entries (so
 * the match is a bijection). A partner in this rank's rows is looked up
 * here; one in another rank's rows travels to that rank as (j, i, a_ij,
 * a_ii) (an Alltoall of the counts, an Alltoallv of the entries), which
 * looks it up in its ghost block. The counts and failures are summed over
 * the ranks, so every rank gets the same answer, the serial answer for
 * the global matrix; so is whether every pair is equal bit for bit (what
 * lets the coarse levels skip the check, as serially). */
#include "amg_dist_setup.h"
#include "../amg/spectral_common.h"
#include "../amg/cpu/amg_cpu.h"

#include <math.h>
#include <stdint.h>
#include <string.h>


#define KS_SYM_MAX_THREADS 256

typedef struct sym_entry {
    ks_gint row, col; /* the partner's position (j, i) */
    double val, diag; /* a_ij, a_ii */
} sym_entry;

static ks_int find_gid(const ks_gint *ids, ks_int n, ks_gint g)
{
    const ks_int k = ks_lower_bound_gint(ids, n, g);
    return k < n && ids[k] == g ? k : -1;
}

static int close_enough(double a, double b, double di, double dj)
{
    return fabs(a - b) <= KS_SPEC_SYM_TOL * sqrt(fabs(di * dj));
}

/* This rank's own checks and counts; the upper entries whose partner is
 * elsewhere, by destination (out, scount / sdispl in bytes). */
static ks_error local_pass(const ks_matrix *A, const double *d, const double *d_be,
                           ks_gint cnt[4], int *scount, int *sdispl, sym_entry **out)
{
    const ks_dist_impl *di = (const ks_dist_impl *)A->dist;
    const ks_sparse *Ls = ks_matrix_sparse(di->base.local);
    const ks_csr *G = di->base.ghost ? ks_matrix_host_csr(di->base.ghost) : NULL;
    const ks_comm *c = A->dist->comm;
    const int p = c->size;
    const ks_gint *off = A->dist->offsets, rb = off[c->rank];
    const ks_int n = Ls->nrows;
    const ks_int ng = G ? G->nnz : 0;
    /* the owned block's pairs: by the AMG kernels where the block lives
     * (d_be: the diagonal there), else on the host copy */
    int64_t lc[4] = {0, 0, 0, 0};
    ks_error e = KS_OK;
    if (d_be) {
        ks_amg_exec x;
        memset(&x, 0, sizeof x);
        e = ks_amgk_symmetry_counts(&x, Ls, d_be, lc);
        ks_amg_exec_free(&x);
    } else {
        const ks_csr *L = ks_matrix_host_csr(di->base.local);
        if (L)
            ks_amg_symmetry_counts_csr(L, d, lc);
        else
            e = ks_seterr(KS_ERR_MEMORY, "symmetry check: host rows of the owned block");
    }
    if (e == KS_OK && di->base.ghost && !G)
        e = ks_seterr(KS_ERR_MEMORY, "symmetry check: host rows of the ghost block");
    if (e != KS_OK)
        return e;
    for (int q = 0; q < 4; q++)
        cnt[q] += lc[q];
    int64_t *pos = ks_calloc((size_t)p, sizeof *pos, "symmetry counts");
    *out = ks_malloc((size_t)ng * sizeof **out + 1, "symmetry entries");
    if (!pos || !*out) {
        free(pos);
        return KS_ERR_MEMORY;
    }
    /* The ghost entries: lower ones counted, upper ones sent to their
     * partners' owners. Threads take row chunks: each counts its chunk's
     * by destination, the counts are laid out destination by destination
     * in chunk order, then each writes its chunk's: the serial order. */
    int nt = ks_threads_for(n, 16384, KS_SYM_MAX_THREADS);
    int64_t *tpos = ks_calloc((size_t)nt * (size_t)p + 1, sizeof *tpos, "symmetry counts");
    if (!tpos) {
        free(pos);
        return KS_ERR_MEMORY;
    }
    ks_gint gup = 0, glow = 0;
    int over = 0;
#pragma omp parallel num_threads(nt) if (nt > 1) reduction(+ : gup, glow)
    {
        int t, used;
        ks_thread_me(&t, &used);
        const ks_int i0 = (ks_int)((int64_t)n * t / used), i1 = (ks_int)((int64_t)n * (t + 1) / used);
        int64_t *mine = tpos + (size_t)t * (size_t)p;
        for (ks_int i = i0; i < i1 && G; i++)
            for (ks_int k = G->rowptr[i]; k < G->rowptr[i + 1]; k++) {
                const ks_gint gj = di->ghost_gid[G->colind[k]];
                if (gj < rb + i) {
                    glow++;
                } else {
                    gup++;
                    mine[ks_layout_owner(off, p, gj)]++;
                }
            }
#pragma omp barrier
#pragma omp single
        {
            const int64_t total = ks_layout_rank_scan(tpos, used, p, pos);
            int64_t first = 0;
            for (int r = 0; r < p; r++) {
                sdispl[r] = (int)(first * (int64_t)sizeof(sym_entry));
                scount[r] = (int)(pos[r] * (int64_t)sizeof(sym_entry));
                first += pos[r];
            }
            over = total * (int64_t)sizeof(sym_entry) > INT32_MAX;
        } /* its barrier publishes the places */
        for (ks_int i = i0; i < i1 && G && !over; i++)
            for (ks_int k = G->rowptr[i]; k < G->rowptr[i + 1]; k++) {
                const ks_gint gj = di->ghost_gid[G->colind[k]];
                if (gj > rb + i)
                    (*out)[mine[ks_layout_owner(off, p, gj)]++] =
                        (sym_entry){gj, rb + i, G->val[k], d[i]};
            }
    }
    cnt[0] += gup;
    cnt[1] += glow;
    free(tpos);
    if (over) {
        free(pos);
        return ks_seterr(KS_ERR_SIZE, "symmetry check: more than 2^31 bytes to send");
    }
    free(pos);
    return KS_OK;
}

/* The partners of the entries received: in this rank's ghost block. */
static void remote_pass(const ks_matrix *A, const double *d, const sym_entry *in, int64_t n,
                        ks_gint cnt[4])
{
    const ks_dist_impl *di = (const ks_dist_impl *)A->dist;
    const ks_csr *G = di->base.ghost ? ks_matrix_host_csr(di->base.ghost) : NULL;
    const ks_gint rb = A->dist->offsets[A->dist->comm->rank];
    ks_gint bad = 0, differ = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad, differ) if (n >= 16384)
    for (int64_t t = 0; t < n; t++) {
        const ks_int j = (ks_int)(in[t].row - rb);
        const ks_int g = find_gid(di->ghost_gid, di->nghost, in[t].col);
        const ks_int kt = G && g >= 0 ? ks_amg_csr_find(G, j, g) : -1;
        bad += kt < 0 || !close_enough(in[t].val, G->val[kt], in[t].diag, d[j]);
        differ += kt < 0 || in[t].val != G->val[kt];
    }
    cnt[2] += bad;
    cnt[3] += differ;
}

ks_error ks_dist_symmetric(const ks_matrix *A, const double *d, const double *d_be, int *sym,
                           int *exact)
{
    const ks_comm *c = A->dist->comm;
    const int p = c->size;
    ks_gint cnt[4] = {0, 0, 0, 0}; /* upper, lower, mismatches, pairs not equal bit for bit */
    int *w = ks_calloc(4 * (size_t)p, sizeof *w, "symmetry counts");
    int *scount = w, *rcount = w + p, *sdispl = w + 2 * p, *rdispl = w + 3 * p;
    sym_entry *out = NULL, *in = NULL;
    int64_t nin = 0;
    ks_error e = w ? local_pass(A, d, d_be, cnt, scount, sdispl, &out) : KS_ERR_MEMORY;
    e = ks_comm_agree(c, e);
    if (e == KS_OK) {
        int64_t bytes = 0;
        e = ks_exchange_bytes(c, out, scount, sdispl, rcount, rdispl, (void **)&in, &bytes,
                              "symmetry check entries");
        nin = bytes / (int64_t)sizeof(sym_entry);
    }
    if (e == KS_OK) {
        remote_pass(A, d, in, nin, cnt);
        e = ks_comm_sum_gint(c, cnt, 4);
    }
    free(in);
    free(out);
    free(w);
    *sym = e == KS_OK && cnt[2] == 0 && cnt[0] == cnt[1];
    if (exact)
        *exact = *sym && cnt[3] == 0;
    return e;
}
