/* AMG settings: the name tables, the documented defaults and the one
 * validation (config load and setup both call ks_amg_params_check). */
#include "params.h"

#include <stdio.h>
#include <string.h>

const ks_name ks_amg_algorithm_names[] = {
    {"CLASSICAL", KS_AMG_CLASSICAL, 0}, {"AGGREGATION", KS_AMG_AGGREGATION, 0}, {NULL, 0, 0}};
const ks_name ks_amg_selector_names[] = {
    {"PMIS", KS_AMG_PMIS, 0}, {"HMIS", KS_AMG_HMIS, 0}, {NULL, 0, 0}};
const ks_name ks_amg_interp_names[] = {{"D1", KS_AMG_D1, 0}, {"D2", KS_AMG_D2, 0}, {NULL, 0, 0}};
const ks_name ks_amg_cycle_names[] = {
    {"V", KS_AMG_V, 0}, {"W", KS_AMG_W, 0}, {"F", KS_AMG_F, 0}, {NULL, 0, 0}};
const ks_name ks_amg_precision_names[] = {
    {"DOUBLE", KS_AMG_DOUBLE, 0}, {"FLOAT", KS_AMG_FLOAT, 0}, {NULL, 0, 0}};
const ks_name ks_amg_coarse_solver_names[] = {
    {"DENSE_LU", KS_AMG_DENSE_LU, 0},
    {"DENSE_LU_SOLVER", KS_AMG_DENSE_LU, 1}, /* AmgX's name */
    {NULL, 0, 0}};
const ks_name ks_amg_smoother_names[] = {
    {"JACOBI", KS_SMOOTHER_JACOBI, 0},
    {"JACOBI_L1", KS_SMOOTHER_JACOBI_L1, 0},
    {"CHEBYSHEV", KS_SMOOTHER_CHEBYSHEV, 0},
    {"GS", KS_SMOOTHER_GS, 0},
    {"SGS", KS_SMOOTHER_SGS, 0},
    {"BLOCK_JACOBI", KS_SMOOTHER_JACOBI, 1},    /* AmgX's usual name; blocks of size 1 */
    {"MULTICOLOR_GS", KS_SMOOTHER_GS, 1},       /* AmgX's: hybrid GS here */
    {"MULTICOLOR_SGS", KS_SMOOTHER_SGS, 1},
    {NULL, 0, 0}};

void ks_amg_params_default(ks_amg_params *p)
{
    memset(p, 0, sizeof *p);
    p->algorithm = KS_AMG_CLASSICAL;
    p->selector = KS_AMG_PMIS;
    p->interpolator = KS_AMG_D2;
    p->strength_threshold = 0.25;
    p->max_row_sum = 0.9;
    p->interp_max_elements = 4;
    p->interp_truncation_factor = 0.0;
    p->aggressive_levels = 0;
    p->aggressive_interpolator = KS_AMG_D2;
    p->smoother.solver = KS_SMOOTHER_CHEBYSHEV;
    p->smoother.relaxation_factor = 1.0;
    p->smoother.chebyshev_degree = 2;
    p->smoother.chebyshev_lower = 0.3;
    p->presweeps = 1;
    p->postsweeps = 1;
    p->cycle = KS_AMG_V;
    p->max_levels = 25;
    p->min_coarse_rows = 2;
    p->coarse_max_rows = 300;
    p->coarse_solver = KS_AMG_DENSE_LU;
    p->seed = 1;
    strcpy(p->level_format, "auto");
    p->hierarchy_precision = KS_AMG_DOUBLE;
}

const char *ks_amg_hmis_blocks_label(const ks_amg_params *p, char *buf, size_t len)
{
    if (len == 0)
        return "";
    buf[0] = '\0';
    if (p->selector != KS_AMG_HMIS || p->hmis_block_rows == 0)
        return buf;
    if (p->hmis_block_rows < 0)
        snprintf(buf, len, " with blocked RS (automatic blocks)");
    else
        snprintf(buf, len, " with blocked RS (%d rows)", p->hmis_block_rows);
    return buf;
}

/* An enum field set in code may hold any int: it must name a table entry. */
static ks_error check_enum(const ks_name *t, int v, const char *sc, const char *key)
{
    if (ks_name_of(t, v)[0] != '?')
        return KS_OK;
    char list[128];
    return ks_seterr(KS_ERR_CONFIG, "%s.%s: invalid value %d (expected %s)", sc, key, v,
                     ks_name_list(t, list, sizeof list));
}

ks_error ks_amg_params_check(const ks_amg_params *p, const char *scope)
{
    const char *sc = scope && scope[0] ? scope : "amg";
    if (!p)
        return ks_seterr(KS_ERR_ARG, "%s: NULL AMG parameters", sc);
    KS_TRY(check_enum(ks_amg_algorithm_names, (int)p->algorithm, sc, "algorithm"));
    KS_TRY(check_enum(ks_amg_selector_names, (int)p->selector, sc, "selector"));
    KS_TRY(check_enum(ks_amg_interp_names, (int)p->interpolator, sc, "interpolator"));
    KS_TRY(check_enum(ks_amg_interp_names, (int)p->aggressive_interpolator, sc,
                      "aggressive_interpolator"));
    KS_TRY(check_enum(ks_amg_cycle_names, (int)p->cycle, sc, "cycle"));
    KS_TRY(check_enum(ks_amg_precision_names, (int)p->hierarchy_precision, sc,
                      "hierarchy_precision"));
    KS_TRY(check_enum(ks_amg_coarse_solver_names, (int)p->coarse_solver, sc, "coarse_solver"));
    KS_TRY(check_enum(ks_amg_smoother_names, (int)p->smoother.solver, sc, "smoother.solver"));
    if (p->hmis_block_rows < -1 || p->hmis_block_rows == 1)
        return ks_seterr(KS_ERR_CONFIG,
                         "%s.hmis_block_rows: %d (expected 0: serial, -1: automatic blocks, or "
                         "at least 2 rows)",
                         sc, p->hmis_block_rows);
    if (!(p->strength_threshold >= 0.0 && p->strength_threshold <= 1.0))
        return ks_seterr(KS_ERR_CONFIG, "%s.strength_threshold: %g is not in [0, 1]", sc,
                         p->strength_threshold);
    if (!(p->max_row_sum > 0.0 && p->max_row_sum <= 1.0))
        return ks_seterr(KS_ERR_CONFIG, "%s.max_row_sum: %g is not in (0, 1]", sc,
                         p->max_row_sum);
    if (p->interp_max_elements < 0)
        return ks_seterr(KS_ERR_CONFIG, "%s.interp_max_elements: %d is negative (0 = no limit)",
                         sc, p->interp_max_elements);
    if (!(p->interp_truncation_factor >= 0.0 && p->interp_truncation_factor < 1.0))
        return ks_seterr(KS_ERR_CONFIG, "%s.interp_truncation_factor: %g is not in [0, 1)", sc,
                         p->interp_truncation_factor);
    if (p->aggressive_levels < 0)
        return ks_seterr(KS_ERR_CONFIG, "%s.aggressive_levels: %d is negative", sc,
                         p->aggressive_levels);
    if (p->aggressive_levels > 0 && p->algorithm == KS_AMG_AGGREGATION)
        return ks_seterr(KS_ERR_CONFIG,
                         "%s.aggressive_levels: %d: aggressive coarsening applies to the "
                         "CLASSICAL algorithm only (aggregation coarsens aggressively already)",
                         sc, p->aggressive_levels);
    if (!(p->smoother.relaxation_factor >= 0.0 && p->smoother.relaxation_factor < 2.0))
        return ks_seterr(KS_ERR_CONFIG,
                         "%s.smoother.relaxation_factor: %g is not in [0, 2) (0 = default: "
                         "2/3 for JACOBI, 1 otherwise)",
                         sc, p->smoother.relaxation_factor);
    if (p->smoother.chebyshev_degree < 1 || p->smoother.chebyshev_degree > 16)
        return ks_seterr(KS_ERR_CONFIG, "%s.smoother.chebyshev_degree: %d is not in [1, 16]", sc,
                         p->smoother.chebyshev_degree);
    if (!(p->smoother.chebyshev_lower > 0.0 && p->smoother.chebyshev_lower < 1.0))
        return ks_seterr(KS_ERR_CONFIG, "%s.smoother.chebyshev_lower: %g is not in (0, 1)", sc,
                         p->smoother.chebyshev_lower);
    if (p->presweeps < 0 || p->postsweeps < 0 || p->presweeps > 100 || p->postsweeps > 100)
        return ks_seterr(KS_ERR_CONFIG, "%s.%s: %d is not in [0, 100]", sc,
                         p->presweeps < 0 || p->presweeps > 100 ? "presweeps" : "postsweeps",
                         p->presweeps < 0 || p->presweeps > 100 ? p->presweeps : p->postsweeps);
    if (p->presweeps + p->postsweeps == 0)
        return ks_seterr(KS_ERR_CONFIG, "%s.presweeps, %s.postsweeps: both 0 (no smoothing)",
                         sc, sc);
    if (p->max_levels < 1)
        return ks_seterr(KS_ERR_CONFIG, "%s.max_levels: %d is below 1", sc, p->max_levels);
    if (p->min_coarse_rows < 1)
        return ks_seterr(KS_ERR_CONFIG, "%s.min_coarse_rows: %d is below 1", sc,
                         p->min_coarse_rows);
    if (p->coarse_max_rows < 1 || p->coarse_max_rows > 8192)
        return ks_seterr(KS_ERR_CONFIG,
                         "%s.coarse_max_rows: %d is not in [1, 8192] (the coarsest level is "
                         "solved densely)",
                         sc, p->coarse_max_rows);
    if (!memchr(p->level_format, '\0', sizeof p->level_format))
        return ks_seterr(KS_ERR_CONFIG, "%s.spmv_format: not a terminated string", sc);
    return KS_OK;
}
