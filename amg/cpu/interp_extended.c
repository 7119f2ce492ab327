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

/* Implementation (speed only: both row builders add the same terms in the
 * same order as the formula's plain walk of the rows, so P is the same bit
 * for bit whichever runs; ks_interp_build picks one per level).
 *
 * Shared: a_kk comes from the per-level diagonal (ctx.diag), so the walk of
 * row k knows the wanted sign of ahat before it starts and keeps only
 * entries of that sign in Chat_i U {i}; D_k sums exactly those, in row
 * order. i's own term a_ik ahat_ki / D_k goes to a spare slot just past the
 * row that starts at -0.0; adding the slot to atil_ii right after the
 * spreading of k gives the same value as adding the term itself (-0.0 + x
 * == x for every x, and x + -0.0 == x when there is no term). (Exact
 * equality assumes no contraction of a*b + c into fused multiply-adds,
 * which ISO C mode (-std=c11) does not do.)
 *
 * Plain (extended_i_row): Chat_i from the S rows of the strong F
 * neighbours; row k of A walked whole, "l in Chat_i U {i}" being the
 * single marker test because marker[i] points to the spare slot while row
 * i is built (k's own diagonal is an F point, so the same test skips it).
 *
 * Compact (extended_i_row_compact), for levels with long distance-two walks:
 * Chat_i from the strong-C rows (ctx.sc); from row k only its C entries of
 * the ahat sign (ctx.ac, in row order) and a_ki, which comes from the
 * transposed F-F couplings (ctx.ft, merged with row i) and enters D_k at
 * its place in the column order. */

/* Chat_i, the interpolatory set of F row i: its strong C neighbours and,
 * for each strong F neighbour k, the C points of list k of (nrp, nci)
 * (S's row k, whose F entries the marker test skips, or the strong-C rows),
 * appended to ws with weight 0 and marked by buffer position from *start.
 * Room is kept for one more entry: the spare slot of i's own term. The
 * invariant: cap >= len + (S entries of row i still to visit) + 1, so the
 * strong C neighbours need no check of their own, also after a list k. */
static int interp_set(const ks_interp_ctx *c, ks_int i, ks_interp_ws *ws, const ks_int *nrp,
                      const ks_int *nci, ks_int *start_out)
{
    const ks_int *cmap = c->cmap; /* >= 0 exactly for C points */
    const ks_int *srp = c->S->rowptr, *sci = c->S->colind;
    ks_int *mk = ws->marker; /* by fine index: position, or KS_INTERP_MARK_F */
    if (c->diag[i] == 0.0)
        return KS_INTERP_ROW_ZERO_DIAG;
    const ks_int ss = srp[i], se = srp[i + 1];
    int r = ks_interp_reserve(ws, (size_t)(se - ss) + 1);
    if (r != KS_INTERP_ROW_OK)
        return r;
    const ks_int start = (ks_int)ws->len;
    *start_out = start;
    for (ks_int s = ss; s < se; s++) {
        const ks_int k = sci[s];
        if (mk[k] != KS_INTERP_MARK_F) {
            if (mk[k] < start) {
                mk[k] = (ks_int)ws->len;
                ws->buf[ws->len++] = (ks_interp_entry){cmap[k], 0.0};
            }
            continue;
        }
        const ks_int t0 = nrp[k], t1 = nrp[k + 1];
        /* list k, the se - s - 1 entries after s, and the spare slot */
        r = ks_interp_reserve(ws, (size_t)(t1 - t0) + (size_t)(se - s));
        if (r != KS_INTERP_ROW_OK) {
            ws->len = (size_t)start;
            return r;
        }
        ks_interp_entry *buf = ws->buf;
        size_t len = ws->len;
        for (ks_int t = t0; t < t1; t++) {
            const ks_int l = nci[t];
            if (mk[l] >= start) /* F, or C already in the row */
                continue;
            mk[l] = (ks_int)len;
            buf[len++] = (ks_interp_entry){cmap[l], 0.0};
        }
        ws->len = len;
    }
    return KS_INTERP_ROW_OK;
}

/* Leave row i empty after interp_set(c, i, ws, nrp, nci, start): the C
 * points it marked get their initial marker back, else the next row of the
 * chunk (starting at the same position) would take them for its own. */
static void drop_row(const ks_interp_ctx *c, ks_int i, ks_interp_ws *ws, const ks_int *nrp,
                     const ks_int *nci, ks_int start)
{
    const ks_int *srp = c->S->rowptr, *sci = c->S->colind;
    ks_int *mk = ws->marker;
    for (ks_int s = srp[i]; s < srp[i + 1]; s++) {
        const ks_int k = sci[s];
        if (mk[k] != KS_INTERP_MARK_F) {
            if (mk[k] >= start)
                mk[k] = -1;
            continue;
        }
        for (ks_int t = nrp[k]; t < nrp[k + 1]; t++)
            if (mk[nci[t]] >= start && mk[nci[t]] != KS_INTERP_MARK_F)
                mk[nci[t]] = -1;
    }
    ws->len = (size_t)start;
}

static int extended_i_row(const ks_interp_ctx *c, ks_int i, ks_interp_ws *ws)
{
    const ks_csr *A = c->A;
    const ks_strength *S = c->S;
    const double *diag = c->diag;
    const ks_int *arp = A->rowptr, *aci = A->colind, *srp = S->rowptr, *sci = S->colind;
    const double *ava = A->val;
    ks_int *mk = ws->marker; /* by fine index: position, or KS_INTERP_MARK_F */

    ks_int start;
    int r = interp_set(c, i, ws, srp, sci, &start);
    if (r != KS_INTERP_ROW_OK)
        return r;
    if ((ks_int)ws->len == start)
        return KS_INTERP_ROW_OK; /* nothing to interpolate from */
    const double a_ii = diag[i];
    const ks_int ss = srp[i], se = srp[i + 1];

    ks_interp_entry *buf = ws->buf; /* no more growth in this row */
    const ks_int own = (ks_int)ws->len; /* spare slot for i's own term */
    buf[own].val = -0.0;
    mk[i] = own;

    /* Walk row i; S's row is sorted like A's, so a merge says what is strong. */
    double atil = a_ii;
    int err = KS_INTERP_ROW_OK;
    ks_int s = ss;
    for (ks_int q = arp[i]; q < arp[i + 1]; q++) {
        const ks_int j = aci[q];
        const double a = ava[q];
        if (j == i)
            continue;
        while (s < se && sci[s] < j)
            s++;
        const int strong = s < se && sci[s] == j;
        const ks_int pj = mk[j];
        if (pj >= start && pj != KS_INTERP_MARK_F) {
            buf[pj].val += a;
        } else if (strong && pj == KS_INTERP_MARK_F) {
            /* Strong F neighbour k = j: spread a_ik over Chat_i U {i} in
             * proportion to ahat_kl. One pass keeps the entries of the
             * wanted sign in Chat_i U {i} (buffer position, value) in row
             * order and sums them; the spreading pass visits only those. */
            const ks_int k = j, ks = arp[k], ke = arp[k + 1];
            err = ks_interp_scratch(ws, (size_t)(ke - ks));
            if (err != KS_INTERP_ROW_OK)
                break;
            ks_int *tp = ws->tpos, nt = 0;
            double *tv = ws->tval;
            double D = 0.0;
            if (diag[k] < 0) { /* ahat keeps the sign opposite to a_kk */
                for (ks_int m = ks; m < ke; m++) {
                    const ks_int p = mk[aci[m]];
                    const double v = ava[m];
                    if (p >= start && p != KS_INTERP_MARK_F && v > 0) {
                        tp[nt] = p;
                        tv[nt++] = v;
                        D += v;
                    }
                }
            } else {
                for (ks_int m = ks; m < ke; m++) {
                    const ks_int p = mk[aci[m]];
                    const double v = ava[m];
                    if (p >= start && p != KS_INTERP_MARK_F && v < 0) {
                        tp[nt] = p;
                        tv[nt++] = v;
                        D += v;
                    }
                }
            }
            if (D == 0.0) {
                atil += a;
                continue;
            }
            const double dist = a / D;
            for (ks_int t = 0; t < nt; t++)
                buf[tp[t]].val += dist * tv[t];
            atil += buf[own].val;
            buf[own].val = -0.0;
        } else {
            atil += a; /* weak and outside Chat_i: lumped */
        }
    }
    mk[i] = KS_INTERP_MARK_F;
    if (err != KS_INTERP_ROW_OK || atil == 0.0) {
        drop_row(c, i, ws, srp, sci, start);
        return err;
    }
    for (size_t q = (size_t)start; q < ws->len; q++)
        buf[q].val = -buf[q].val / atil;
    return KS_INTERP_ROW_OK;
}

static int extended_i_row_compact(const ks_interp_ctx *c, ks_int i, ks_interp_ws *ws)
{
    const ks_csr *A = c->A;
    const ks_strength *S = c->S;
    const double *diag = c->diag;
    const ks_int *arp = A->rowptr, *aci = A->colind, *srp = S->rowptr, *sci = S->colind;
    const ks_int *scr = c->sc_rp, *scc = c->sc_ci, *acr = c->ac_rp, *acc = c->ac_ci;
    const ks_int *ftc = c->ft_ci;
    const double *ava = A->val, *acv = c->ac_va, *ftv = c->ft_va;
    ks_int *mk = ws->marker;

    ks_int start;
    int r = interp_set(c, i, ws, scr, scc, &start);
    if (r != KS_INTERP_ROW_OK)
        return r;
    if ((ks_int)ws->len == start)
        return KS_INTERP_ROW_OK;
    const double a_ii = diag[i];
    const ks_int ss = srp[i], se = srp[i + 1];

    ks_interp_entry *buf = ws->buf;
    const ks_int own = (ks_int)ws->len;
    buf[own].val = -0.0;

    double atil = a_ii;
    int err = KS_INTERP_ROW_OK;
    ks_int s = ss, f = c->ft_rp[i];
    const ks_int fe = c->ft_rp[i + 1];
    for (ks_int q = arp[i]; q < arp[i + 1]; q++) {
        const ks_int j = aci[q];
        const double a = ava[q];
        if (j == i)
            continue;
        while (s < se && sci[s] < j)
            s++;
        const int strong = s < se && sci[s] == j;
        const ks_int pj = mk[j];
        if (pj >= start && pj != KS_INTERP_MARK_F) {
            buf[pj].val += a;
        } else if (strong && pj == KS_INTERP_MARK_F) {
            const ks_int k = j, m0 = acr[k], m1 = acr[k + 1];
            err = ks_interp_scratch(ws, (size_t)(m1 - m0) + 1);
            if (err != KS_INTERP_ROW_OK)
                break;
            while (f < fe && ftc[f] < k)
                f++;
            int pend = f < fe && ftc[f] == k; /* a_ki, of the ahat sign of row k */
            const double v_ki = pend ? ftv[f] : 0.0;
            ks_int *tp = ws->tpos, nt = 0;
            double *tv = ws->tval;
            double D = 0.0;
            for (ks_int m = m0; m < m1; m++) {
                const ks_int l = acc[m];
                if (pend && l > i) {
                    tp[nt] = own;
                    tv[nt++] = v_ki;
                    D += v_ki;
                    pend = 0;
                }
                const ks_int p = mk[l];
                if (p >= start) {
                    tp[nt] = p;
                    tv[nt++] = acv[m];
                    D += acv[m];
                }
            }
            if (pend) {
                tp[nt] = own;
                tv[nt++] = v_ki;
                D += v_ki;
            }
            if (D == 0.0) {
                atil += a;
                continue;
            }
            const double dist = a / D;
            for (ks_int t = 0; t < nt; t++)
                buf[tp[t]].val += dist * tv[t];
            atil += buf[own].val;
            buf[own].val = -0.0;
        } else {
            atil += a;
        }
    }
    if (err != KS_INTERP_ROW_OK || atil == 0.0) {
        drop_row(c, i, ws, scr, scc, start);
        return err;
    }
    for (size_t q = (size_t)start; q < ws->len; q++)
        buf[q].val = -buf[q].val / atil;
    return KS_INTERP_ROW_OK;
}

ks_error ks_interp_extended_i_with(const ks_csr *A, const ks_strength *S, const int *cf,
                                   int compact, ks_csr *P)
{
    const ks_interp_spec spec = {KS_INTERP_NEED_MARKER | KS_INTERP_NEED_DIAG, extended_i_row,
                                 extended_i_row_compact, compact};
    return ks_interp_build("ks_amg_interp_extended_i", A, S, cf, &spec, P);
}

ks_error ks_amg_interp_extended_i(const ks_csr *A, const ks_strength *S, const int *cf,
                                  ks_csr *P)
{
    return ks_interp_extended_i_with(A, S, cf, KS_INTERP_COMPACT_AUTO, P);
}

ks_error ks_amg_interp_extended_i_rows(const ks_csr *A, const ks_strength *S, const int *cf,
                                       ks_int r0, ks_int r1, ks_csr *P)
{
    const ks_interp_spec spec = {KS_INTERP_NEED_MARKER | KS_INTERP_NEED_DIAG, extended_i_row,
                                 extended_i_row_compact, KS_INTERP_COMPACT_AUTO};
    return ks_interp_build_rows("ks_amg_interp_extended_i", A, S, cf, &spec, r0, r1, P);
}
