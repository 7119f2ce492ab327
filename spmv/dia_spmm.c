/* KS_DIA_SPMM's parsing (dia_spmm.h). */
#include "dia_spmm.h"

#include <stdlib.h>
#include <string.h>

ks_error ks_dia_spmm_choice_get(ks_dia_spmm_choice *c)
{
    static const char *const names[] = {"old", "tile", "vec", "vec256", "vec1024"};
    const char *s = getenv("KS_DIA_SPMM");
    c->variant = KS_DIA_SPMM_VEC1024;
    c->tile_rows = KS_DIA_SPMM_DEFAULT_ROWS;
    c->rows_given = 0;
    c->hoist = 1;
    c->prefetch = KS_DIA_SPMM_DEFAULT_PREFETCH;
    c->l2pf = KS_DIA_SPMM_DEFAULT_L2PF;
    const char *l2 = getenv("KS_DIA_SPMM_L2PF");
    if (l2 && *l2) {
        if (strcmp(l2, "0") != 0 && strcmp(l2, "1") != 0)
            return ks_seterr(KS_ERR_ARG, "KS_DIA_SPMM_L2PF=%s: expected 0 or 1", l2);
        c->l2pf = l2[0] == '1';
    }
    const char *pf = getenv("KS_DIA_SPMM_PREFETCH");
    if (pf && *pf) {
        if (strcmp(pf, "0") != 0 && strcmp(pf, "1") != 0)
            return ks_seterr(KS_ERR_ARG, "KS_DIA_SPMM_PREFETCH=%s: expected 0 or 1", pf);
        c->prefetch = pf[0] == '1';
    }
    const char *h = getenv("KS_DIA_SPMM_HOIST");
    if (h && *h) {
        static const char *const ok[] = {"0", "1", "2", "4", "8"};
        int found = 0;
        for (int i = 0; i < 5; i++)
            found |= strcmp(h, ok[i]) == 0;
        if (!found)
            return ks_seterr(KS_ERR_ARG,
                             "KS_DIA_SPMM_HOIST=%s: expected 0 (off), 1 (on, the chunk "
                             "chosen for the pass), 2, 4 or 8 (diagonals a chunk)",
                             h);
        c->hoist = h[0] - '0';
    }
    if (!s || !*s)
        return KS_OK;
    const char *colon = strchr(s, ':');
    const size_t len = colon ? (size_t)(colon - s) : strlen(s);
    int v = -1;
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strlen(names[i]) == len && strncmp(s, names[i], len) == 0)
            v = i;
    if (len == 3 && strncmp(s, "new", 3) == 0)
        v = KS_DIA_SPMM_VEC;
    long rows = KS_DIA_SPMM_TILE_ROWS;
    char *end = NULL;
    if (colon)
        rows = strtol(colon + 1, &end, 10);
    if (v < 0 || (colon && (end == colon + 1 || *end || rows < 1 || rows > (1L << 24))))
        return ks_seterr(KS_ERR_ARG,
                         "KS_DIA_SPMM=%s: expected old, tile, vec (or new), vec256 or vec1024, "
                         "optionally :ROWS (1 to %ld, the rows a block walks)",
                         s, 1L << 24);
    c->variant = v;
    c->tile_rows = (int)rows;
    c->rows_given = colon != NULL;
    return KS_OK;
}

void ks_dia_spmm_fit_tile(ks_dia_spmm_choice *c, ks_int nrows, const ks_int *offset,
                          ks_int ndiag, int nsm)
{
    if (c->rows_given || nsm < 1)
        return;
    long long L = 0;
    for (ks_int d = 0; d < ndiag; d++) {
        const long long a = offset[d] < 0 ? -(long long)offset[d] : offset[d];
        if (a > L)
            L = a;
    }
    if (L > c->tile_rows && L <= (1L << 24) && (long long)nrows / L >= nsm)
        c->tile_rows = (int)L;
}
