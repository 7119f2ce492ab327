/* AmgX-style hierarchy report: one row per level, complexities, coarse
 * solver, setup time per phase. */
#include "hierarchy.h"


void ks_amg_print(const ks_amg *amg, FILE *out)
{
    if (!amg || !out)
        return;
    const ks_amg_params *p = &amg->prm;
    int agg = p->algorithm == KS_AMG_AGGREGATION;
    char blk[64];
    const char *where = ks_backend_host_memory(amg->be) ? "host" : "device";
    if (agg)
        fprintf(out, "AMG hierarchy: AGGREGATION (smoothed, theta %g)", p->strength_threshold);
    else
        fprintf(out, "AMG hierarchy: CLASSICAL (%s%s, %s, theta %g, max_row_sum %g, %d elements)",
                ks_name_of(ks_amg_selector_names, p->selector), ks_amg_hmis_blocks_label(p, blk, sizeof blk),
                ks_name_of(ks_amg_interp_names, p->interpolator),
                p->strength_threshold, p->max_row_sum, p->interp_max_elements);
    if (!agg && p->aggressive_levels > 0)
        fprintf(out, ", aggressive on %d level%s (second stage %s)", p->aggressive_levels,
                p->aggressive_levels == 1 ? "" : "s",
                ks_name_of(ks_amg_interp_names, p->aggressive_interpolator));
    fprintf(out, ", smoother %s", ks_name_of(ks_amg_smoother_names, amg->smoother));
    if (amg->smoother == KS_SMOOTHER_CHEBYSHEV)
        fprintf(out, " (degree %d)", p->smoother.chebyshev_degree);
    if (p->hierarchy_precision == KS_AMG_FLOAT)
        fprintf(out, ", float32 values below level 0");
    fprintf(out, ", %s(%d,%d), backend %s\n", ks_name_of(ks_amg_cycle_names, p->cycle), p->presweeps, p->postsweeps,
            ks_backend_name(amg->be));
    if (amg->nlevels < 1) {
        fprintf(out, "  (no hierarchy: the last setup failed)\n");
        return;
    }
    fprintf(out, "  %5s %12s %14s %9s %12s  %-8s %s\n", "level", "rows", "nonzeros", "nnz/row",
            "memory (MB)", "location", "format");
    double total = 0.0;
    for (int l = 0; l < amg->nlevels; l++) {
        const ks_amg_level *L = &amg->levels[l];
        /* over ranks: global sizes; memory stays this rank's */
        const long rows = amg->ranks ? (long)L->rows_global : (long)L->A.nrows;
        const long nnz = amg->ranks ? (long)L->nnz_global : (long)L->A.nnz;
        double mb = ks_amg_level_bytes(amg, l) / 1048576.0;
        total += mb;
        /* Each level's matrix chose its own format ("auto" in upload_level). */
        const char *fmt = ks_matrix_format(ks_amg_cycle_matrix(amg, l));
        fprintf(out, "  %5d %12ld %14ld %9.2f %12.2f  %-8s %s\n", l, rows, nnz,
                rows ? (double)nnz / rows : 0.0, mb, where, fmt ? fmt : "-");
    }
    if (amg->ranks)
        fprintf(out, "  (rows and nonzeros over %d MPI ranks; memory: this rank's)\n",
                amg->ranks);
    fprintf(out,
            "  grid complexity %.3f, operator complexity %.3f, memory %.2f MB (operators; "
            "%.2f MB with smoother data, work vectors and splittings)\n",
            amg->grid_complexity, amg->operator_complexity, total, amg->bytes / 1048576.0);
    const ks_amg_level *Lc = &amg->levels[amg->nlevels - 1];
    const long nc = amg->ranks ? (long)Lc->rows_global : (long)Lc->A.nrows;
    if (amg->coarse_inv && amg->ranks)
        fprintf(out,
                "  coarsest level: gathered on every rank, dense LU, explicit inverse applied "
                "as one distributed SpMV (%ld rows, format %s)\n",
                nc, ks_matrix_format(amg->coarse_inv));
    else if (amg->coarse_inv)
        fprintf(out,
                "  coarsest level: dense LU, explicit inverse applied as one SpMV (%ld rows, "
                "format %s)\n",
                nc, ks_matrix_format(amg->coarse_inv));
    else
        fprintf(out, "  coarsest level: %ld rows, too many for the dense solve: smoothed\n",
                nc);
    double sum = 0.0;
    for (int k = 0; k < KS_AMG_NPHASES; k++)
        sum += amg->phase_seconds[k];
    if (amg->last_was_resetup)
        fprintf(out, "  re-setup %.4f s%s (full setup %.4f s):", amg->resetup_seconds,
                amg->resetup_fell_back ? " (rebuilt: another pattern, or no values-only path)" : "",
                amg->setup_seconds);
    else
        fprintf(out, "  setup %.4f s:", amg->setup_seconds);
    for (int k = 0; k < KS_AMG_NPHASES; k++)
        fprintf(out, "%s %s %.4f", k ? "," : "", ks_amg_phase_names[k], amg->phase_seconds[k]);
    fprintf(out, " (phases sum %.4f s)\n", sum);
}
