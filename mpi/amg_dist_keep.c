/* What the distributed setup keeps for a values-only re-setup
 * (amg_dist_resetup.c): one ks_dist_level_keep per level, held by the
 * hierarchy as amg->dist_keep and freed through amg->dist_keep_free, so
 * amg/ needs to know nothing of it. */
#include "amg_dist_setup.h"

#include <string.h>

typedef struct dist_keep {
    int nlevels;                 /* entries of lv (prm.max_levels) */
    ks_dist_level_keep *lv;
} dist_keep;

static void level_keep_free(ks_dist_level_keep *K)
{
    ks_dist_strength_free(&K->S);
    free(K->cf);
    ks_dist_coarse_free(&K->C);
    free(K->cf2);
    ks_dist_prows_free(&K->P0);
    ks_dist_prows_free(&K->P);
    ks_dist_prows_free(&K->R);
    ks_dist_transpose_plan_free(&K->tr);
    ks_dist_rap_plan_free(&K->rap);
    ks_dist_ext_rows_free(&K->ext);
    free(K->coff);
    memset(K, 0, sizeof *K);
}

static void keep_free(void *p)
{
    dist_keep *k = p;
    if (!k)
        return;
    for (int l = 0; l < k->nlevels; l++)
        level_keep_free(&k->lv[l]);
    free(k->lv);
    free(k);
}

ks_error ks_amg_dist_keep_start(ks_amg *amg)
{
    if (amg->dist_keep_free)
        amg->dist_keep_free(amg->dist_keep);
    amg->dist_keep = NULL;
    amg->dist_keep_free = keep_free;
    dist_keep *k = ks_calloc(1, sizeof *k, "AMG re-setup data");
    if (k) {
        k->lv = ks_calloc((size_t)amg->prm.max_levels, sizeof *k->lv, "AMG re-setup levels");
        k->nlevels = amg->prm.max_levels;
    }
    if (k && !k->lv) {
        free(k);
        k = NULL;
    }
    amg->dist_keep = k;
    return ks_matrix_agree(amg->levels[0].Am, k ? KS_OK : KS_ERR_MEMORY);
}

ks_dist_level_keep *ks_amg_dist_keep_level(ks_amg *amg, int l)
{
    dist_keep *k = amg->dist_keep;
    return k && l < k->nlevels ? &k->lv[l] : NULL;
}

void ks_amg_dist_keep_rebind(ks_amg *amg, int l)
{
    ks_dist_level_keep *K = ks_amg_dist_keep_level(amg, l);
    if (!K || !K->cf)
        return;
    const ks_dist_impl *d = (const ks_dist_impl *)amg->levels[l].Am->dist;
    K->S.offsets = d->base.offsets;
    K->S.ghost_gid = d->ghost_gid;
    K->S.halo = d->halo;
}
