/* Extended+i interpolation ("D2", hypre interp_type 6).
 *
 * Reference: H. De Sterck, R. D. Falgout, J. W. Nolting, U. M. Yang,
 * "Distance-two interpolation for parallel algebraic multigrid", Numer.
 * Linear Algebra Appl. 15 (2008) 115-139, section on extended+i.
 *
 * For an F point i let
 *   C_i^s, F_i^s   strong C / strong F neighbours of i (row i of S),
 *   Chat_i         = C_i^s  U  (union over k in F_i^s of C_k^s),
 *                  the interpolatory set (C points at distance <= 2),
 *   N_i^w          off-diagonal neighbours of i in neither Chat_i nor F_i^s
 *                  (weak F points and weak C points outside Chat_i),
 *   ahat_kl        = a_kl if a_kl has the sign opposite to a_kk (a_kk >= 0
 *                  counts as positive), else 0.
 * Then, with D_k = sum_{l in Chat_i U {i}} ahat_kl for k in F_i^s,
 *   w_ij   = -1/atil_ii * ( a_ij + sum_{k in F_i^s} a_ik ahat_kj / D_k ),  j in Chat_i,
 *   atil_ii = a_ii + sum_{n in N_i^w} a_in + sum_{k in F_i^s} a_ik ahat_ki / D_k.
 * a_ij is i's own coupling (0 for distance-two points; a weak C neighbour
 * that lies in Chat_i keeps its coupling instead of being lumped). The "+i"
 * is the l = i term in D_k: the part of a_ik that row k sends back to i goes
 * to the diagonal rather than being spread over Chat_i. When D_k = 0 the
 * whole a_ik is lumped into atil_ii (hypre's choice; the paper does not
 * cover it). These are the rules of hypre's BuildExtPIInterp on one process.
 *
 * With zero row sums, -atil_ii equals the bracket summed over j, so
 * sum_j w_ij = 1: constants are interpolated exactly. If atil_ii comes out 0
 * (only for strange, non-M-matrix rows) the row is left empty. */
#include "interp_common.h"

static int extended_i_row(const ks_interp_ctx *c, ks_int i, ks_interp_ws *ws)
{
    const ks_csr *A = c->A;
    const ks_strength *S = c->S;
    const ks_int *cmap = c->cmap; /* >= 0 exactly for C points */
    ks_int *mk = ws->marker; /* by fine index: position, or KS_INTERP_MARK_F */

    const double a_ii = ks_interp_diag(A, i);
    if (a_ii == 0.0)
        return KS_INTERP_ROW_ZERO_DIAG;

    /* Interpolatory set: entries with weight 0, marked by buffer position. */
    const ks_int ss = S->rowptr[i], se = S->rowptr[i + 1];
    size_t bound = (size_t)(se - ss);
    for (ks_int s = ss; s < se; s++) {
        const ks_int k = S->colind[s];
        if (mk[k] == KS_INTERP_MARK_F)
            bound += (size_t)(S->rowptr[k + 1] - S->rowptr[k]);
    }
    int r = ks_interp_reserve(ws, bound);
    if (r != KS_INTERP_ROW_OK)
        return r;
    const ks_int start = (ks_int)ws->len;
    for (ks_int s = ss; s < se; s++) {
        const ks_int k = S->colind[s];
        if (mk[k] != KS_INTERP_MARK_F) {
            if (mk[k] < start) {
                mk[k] = (ks_int)ws->len;
                ws->buf[ws->len++] = (ks_interp_entry){cmap[k], 0.0};
            }
            continue;
        }
        for (ks_int t = S->rowptr[k]; t < S->rowptr[k + 1]; t++) {
            const ks_int l = S->colind[t];
            if (mk[l] >= start) /* F, or C already in the row */
                continue;
            mk[l] = (ks_int)ws->len;
            ws->buf[ws->len++] = (ks_interp_entry){cmap[l], 0.0};
        }
    }
    if ((ks_int)ws->len == start)
        return KS_INTERP_ROW_OK; /* nothing to interpolate from */

    /* Walk row i; S's row is sorted like A's, so a merge says what is strong. */
    double atil = a_ii;
    ks_int s = ss;
    for (ks_int q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) {
        const ks_int j = A->colind[q];
        const double a = A->val[q];
        if (j == i)
            continue;
        while (s < se && S->colind[s] < j)
            s++;
        const int strong = s < se && S->colind[s] == j;
        const ks_int pj = mk[j];
        if (pj >= start && pj != KS_INTERP_MARK_F) {
            ws->buf[pj].val += a;
        } else if (strong && pj == KS_INTERP_MARK_F) {
            /* Strong F neighbour k = j: spread a_ik over Chat_i U {i} in
             * proportion to ahat_kl. One pass finds a_kk and both signed
             * sums and keeps the entries of Chat_i U {i} (buffer position,
             * -1 for i) in row order, so the spreading pass visits only
             * those, adding in the same order as a second full walk. */
            const ks_int k = j, ks = A->rowptr[k], ke = A->rowptr[k + 1];
            r = ks_interp_scratch(ws, (size_t)(ke - ks));
            if (r != KS_INTERP_ROW_OK) {
                ws->len = (size_t)start;
                return r;
            }
            ks_int *tp = ws->tpos, nt = 0;
            double *tv = ws->tval;
            double a_kk = 0.0, sum_neg = 0.0, sum_pos = 0.0;
            for (ks_int m = ks; m < ke; m++) {
                const ks_int l = A->colind[m];
                const double v = A->val[m];
                if (l == k) {
                    a_kk = v;
                    continue;
                }
                ks_int p = -1; /* l == i */
                if (l != i) {
                    p = mk[l];
                    if (p < start || p == KS_INTERP_MARK_F)
                        continue; /* C outside Chat_i, or F other than i */
                }
                tp[nt] = p;
                tv[nt++] = v;
                if (v < 0)
                    sum_neg += v;
                else
                    sum_pos += v;
            }
            const int want_pos = a_kk < 0; /* ahat keeps the sign opposite to a_kk */
            const double D = want_pos ? sum_pos : sum_neg;
            if (D == 0.0) {
                atil += a;
                continue;
            }
            const double dist = a / D;
            for (ks_int t = 0; t < nt; t++) {
                const double v = tv[t];
                if (!(want_pos ? v > 0 : v < 0))
                    continue;
                if (tp[t] < 0)
                    atil += dist * v;
                else
                    ws->buf[tp[t]].val += dist * v;
            }
        } else {
            atil += a; /* weak and outside Chat_i: lumped */
        }
    }
    if (atil == 0.0) {
        ws->len = (size_t)start;
        return KS_INTERP_ROW_OK;
    }
    for (size_t q = (size_t)start; q < ws->len; q++)
        ws->buf[q].val = -ws->buf[q].val / atil;
    return KS_INTERP_ROW_OK;
}

ks_error ks_amg_interp_extended_i(const ks_csr *A, const ks_strength *S, const int *cf,
                                  ks_csr *P)
{
    return ks_interp_build("ks_amg_interp_extended_i", A, S, cf, 1, extended_i_row, P);
}
