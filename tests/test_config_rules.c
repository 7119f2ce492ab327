/* The rule for keys that do not apply (docs/config.md, "Keys that do not
 * apply"), pair by pair: every key that depends on another key's choice is
 * refused under a choice that does not read it when it asks for something
 * (a value other than its default), warned about once when it only repeats
 * its default, accepted under a choice that reads it, and left out of the
 * dump where it does not apply; in either key order, and through
 * ks_config_set. Also: every choice key is checked at load with its values
 * listed. */
#include "config_cases.h"
#include "solver/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Warnings the library logged (ks_set_print_callback). */
static char logged[8192];
static int nlogged;

static void collect(const char *msg, int len, void *ctx)
{
    (void)ctx;
    size_t used = strlen(logged);
    if (used + (size_t)len < sizeof logged)
        memcpy(logged + used, msg, (size_t)len + 1);
    nlogged++;
}

static void log_reset(void)
{
    logged[0] = '\0';
    nlogged = 0;
    ks_set_print_callback(collect, NULL);
    ks_set_log_level(KS_LOG_WARN);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* One dependent key: its name (in the AMG scope, or the preconditioner's
 * for Jacobi's damping), a value other than its default and the default,
 * the choice key it depends on, a choice that does not read it (and the
 * name the message gives that choice) and one that does. */
typedef struct pair {
    const char *key, *value, *dflt;
    const char *choice, *off, *on, *reader;
} pair;

static const pair pairs[] = {
    {"selector", "\"HMIS\"", "\"PMIS\"", "algorithm", "\"AGGREGATION\"", "\"CLASSICAL\"",
     "the CLASSICAL algorithm"},
    {"interpolator", "\"D1\"", "\"D2\"", "algorithm", "\"AGGREGATION\"", "\"CLASSICAL\"",
     "the CLASSICAL algorithm"},
    {"max_row_sum", "0.5", "0.9", "algorithm", "\"AGGREGATION\"", "\"CLASSICAL\"",
     "the CLASSICAL algorithm"},
    {"interp_max_elements", "6", "4", "algorithm", "\"AGGREGATION\"", "\"CLASSICAL\"",
     "the CLASSICAL algorithm"},
    {"interp_truncation_factor", "0.1", "0.0", "algorithm", "\"AGGREGATION\"", "\"CLASSICAL\"",
     "the CLASSICAL algorithm"},
    {"aggressive_levels", "1", "0", "algorithm", "\"AGGREGATION\"", "\"CLASSICAL\"",
     "the CLASSICAL algorithm"},
    {"hmis_block_rows", "8", "0", "selector", "\"PMIS\"", "\"HMIS\"", "the HMIS selector"},
    {"aggressive_interpolator", "\"D1\"", "\"D2\"", "aggressive_levels", "0", "1",
     "aggressive coarsening"},
    {"smoother.chebyshev_degree", "3", "2", "smoother.solver", "\"GS\"", "\"CHEBYSHEV\"",
     "the CHEBYSHEV smoother"},
    {"smoother.chebyshev_lower", "0.2", "0.3", "smoother.solver", "\"JACOBI\"", "\"CHEBYSHEV\"",
     "the CHEBYSHEV smoother"},
    {"smoother.relaxation_factor", "0.7", "1.0", "smoother.solver", "\"CHEBYSHEV\"", "\"SGS\"",
     "the JACOBI, JACOBI_L1, GS and SGS smoothers"},
    {"relaxation_factor", "0.7", "1.0", "solver", "\"NOSOLVER\"", "\"JACOBI_L1\"",
     "the JACOBI and JACOBI_L1 preconditioners and AMG's smoother"},
    /* AmgX's name, in the AMG scope, of the smoother's damping */
    {"relaxation_factor", "0.7", "1.0", "smoother.solver", "\"CHEBYSHEV\"", "\"JACOBI_L1\"",
     "the JACOBI, JACOBI_L1, GS and SGS smoothers"},
};
#define NPAIRS ((int)(sizeof pairs / sizeof pairs[0]))

/* `"a": {"b": v}` for the dotted name a.b (one dot at most). */
static void member(char *out, size_t len, const char *name, const char *v)
{
    const char *dot = strchr(name, '.');
    if (dot)
        snprintf(out, len, "\"%.*s\": {\"%s\": %s}", (int)(dot - name), name, dot + 1, v);
    else
        snprintf(out, len, "\"%s\": %s", name, v);
}

/* A config with the pair's key = v and its choice = c in scope sc (0: the
 * preconditioner, AMG unless the choice is the preconditioner itself; 1:
 * AMG as the solver), the key first or last. Both under "smoother" merge. */
static void config(char *out, size_t len, const pair *p, int sc, const char *v, const char *c,
                   int key_last)
{
    char k[160], ch[160], both[400];
    const char *kdot = strchr(p->key, '.'), *cdot = strchr(p->choice, '.');
    if (kdot && cdot) /* both inside the smoother */
        snprintf(both, sizeof both, "\"smoother\": {\"%s\": %s, \"%s\": %s}",
                 key_last ? cdot + 1 : kdot + 1, key_last ? c : v, key_last ? kdot + 1 : cdot + 1,
                 key_last ? v : c);
    else {
        member(k, sizeof k, p->key, v);
        member(ch, sizeof ch, p->choice, c);
        snprintf(both, sizeof both, "%s, %s", key_last ? ch : k, key_last ? k : ch);
    }
    int pc_choice = strcmp(p->choice, "solver") == 0;
    if (sc == 0)
        snprintf(out, len, "{\"solver\": {\"solver\": \"PCG\", \"preconditioner\": {%s%s}}}",
                 pc_choice ? "" : "\"solver\": \"AMG\", ", both);
    else
        snprintf(out, len, "{\"solver\": {\"solver\": \"AMG\", %s}}", both);
}

START_TEST(test_each_pair)
{
    for (int i = 0; i < NPAIRS; i++) {
        const pair *p = &pairs[i];
        int nscopes = strcmp(p->choice, "solver") == 0 ? 1 : 2;
        for (int sc = 0; sc < nscopes; sc++) {
            const char *scope = sc ? "solver" : "solver.preconditioner";
            char path[128], choice[128], json[1024], want[400];
            snprintf(path, sizeof path, "%s.%s", scope, p->key);
            snprintf(choice, sizeof choice, "%s.%s", scope, p->choice);
            for (int last = 0; last < 2; last++) {
                /* a value that would be lost: an error naming key, choice and value */
                config(json, sizeof json, p, sc, p->value, p->off, last);
                char off[64];
                snprintf(off, sizeof off, "%s", p->off[0] == '"' ? p->off + 1 : p->off);
                if (off[strlen(off) - 1] == '"')
                    off[strlen(off) - 1] = '\0';
                snprintf(want, sizeof want, "%s: applies to %s only, but %s is %s", path,
                         p->reader, choice, off);
                cfgtest_expect_fail(NULL, json, KS_ERR_CONFIG, want, NULL);
                /* under a choice that reads it: taken */
                config(json, sizeof json, p, sc, p->value, p->on, last);
                ks_config *cfg = cfgtest_load(NULL, json);
                char *d = ks_config_dump(cfg);
                ck_assert_msg(strstr(d, strrchr(p->key, '.') ? strrchr(p->key, '.') + 1 : p->key),
                              "%s: the key is not dumped where it applies", json);
                free(d);
                ks_config_destroy(&cfg);
                /* only the default: one warning naming it, not dumped */
                log_reset();
                config(json, sizeof json, p, sc, p->dflt, p->off, last);
                cfg = cfgtest_load(NULL, json);
                ck_assert_msg(count(logged, path) == 1, "%s: warnings '%s'", json, logged);
                ck_assert_msg(strstr(logged, "ignored (its value is the default)"), "%s", logged);
                d = ks_config_dump(cfg);
                json_t *t = json_loads(d, 0, NULL);
                json_t *node = json_object_get(t, "solver");
                if (!sc)
                    node = json_object_get(node, "preconditioner");
                if (strchr(p->key, '.'))
                    node = json_object_get(node, "smoother");
                ck_assert_msg(!node || !json_object_get(node, strrchr(p->key, '.')
                                                                  ? strrchr(p->key, '.') + 1
                                                                  : p->key),
                              "%s: dumped where it does not apply:\n%s", json, d);
                json_decref(t);
                free(d);
                ks_config_destroy(&cfg);
                ks_set_print_callback(NULL, NULL);
            }
        }
    }
}
END_TEST

/* ks_config_set: switching the choice away from a key given with a value
 * fails and leaves the config as it was; switching back works. */
START_TEST(test_rule_through_set)
{
    ks_config *cfg = cfgtest_load(NULL, "{\"solver\": {\"preconditioner\": {\"solver\": \"AMG\","
                                        " \"interpolator\": \"D1\", \"max_row_sum\": 0.5}}}");
    ck_assert_int_eq(ks_config_set(cfg, "solver.preconditioner.algorithm", "AGGREGATION"),
                     KS_ERR_CONFIG);
    ck_assert_msg(strstr(ks_last_error(), "solver.preconditioner.interpolator: applies to the "
                                          "CLASSICAL algorithm only"),
                  "%s", ks_last_error());
    ck_assert_int_eq(ks_config_solver_params(cfg)->pc.amg.algorithm, KS_AMG_CLASSICAL);
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.smoother", "JACOBI"));
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.smoother.relaxation_factor", "0.6"));
    ck_assert_int_eq(ks_config_set(cfg, "solver.preconditioner.smoother.solver", "CHEBYSHEV"),
                     KS_ERR_CONFIG);
    ck_assert_msg(strstr(ks_last_error(), "smoother.relaxation_factor: applies to the JACOBI, "
                                          "JACOBI_L1, GS and SGS smoothers only, but "
                                          "solver.preconditioner.smoother.solver is CHEBYSHEV"),
                  "%s", ks_last_error());
    ck_assert(ks_config_solver_params(cfg)->pc.amg.smoother.relaxation_factor == 0.6);
    /* a warned key warns once: a later set does not repeat it */
    ks_config_destroy(&cfg);
    log_reset();
    cfg = cfgtest_load(NULL, "{\"solver\": {\"preconditioner\": {\"solver\": \"AMG\", "
                             "\"algorithm\": \"AGGREGATION\", \"interpolator\": \"D2\"}}}");
    ck_assert_int_eq(nlogged, 1);
    KS_CHECK(ks_config_set(cfg, "solver.max_iters", "20"));
    ck_assert_int_eq(nlogged, 1);
    KS_CHECK(ks_config_set(cfg, "solver.preconditioner.max_row_sum", "0.9"));
    ck_assert_int_eq(nlogged, 2);
    ck_assert_int_eq(count(logged, "solver.preconditioner.max_row_sum"), 1);
    ks_set_print_callback(NULL, NULL);
    ks_config_destroy(&cfg);
}
END_TEST

/* Every choice key of the library (a fixed set of names) is checked at
 * load, naming the key and listing every allowed value; no key takes a
 * free string but the "scope" labels. */
START_TEST(test_every_choice_checked)
{
    const ks_config_scope *sc = &ks_config_solver_scope;
    int nchoice = 0;
    for (int i = 0; i < sc->nkeys; i++) {
        const ks_key_spec *k = &sc->keys[i];
        ck_assert_msg(k->type != KT_STR && k->type != KT_CUSTOM,
                      "%s takes any string: make it a choice key", k->path);
        if (k->type != KT_ENUM && k->type != KT_FORMAT)
            continue;
        nchoice++;
        ks_config *cfg = NULL;
        KS_CHECK(ks_config_create_default(&cfg));
        ck_assert_int_eq(ks_config_set(cfg, k->path, "not_a_choice"), KS_ERR_CONFIG);
        const char *msg = ks_last_error();
        char want[160];
        snprintf(want, sizeof want, "%s: unknown %s 'not_a_choice'", k->path,
                 k->type == KT_ENUM ? "value" : "SpMV format");
        ck_assert_msg(strstr(msg, want), "%s: '%s' lacks '%s'", k->path, msg, want);
        ck_assert_msg(strstr(msg, "allowed: "), "%s: '%s' lists no values", k->path, msg);
        for (const ks_name *c = k->choices; k->type == KT_ENUM && c->name; c++)
            ck_assert_msg(c->alias || strstr(msg, c->name), "%s: '%s' does not list %s", k->path,
                          msg, c->name);
        if (k->type == KT_FORMAT)
            ck_assert_msg(strstr(msg, "auto") && strstr(msg, "csr"), "%s: %s", k->path, msg);
        ks_config_destroy(&cfg);
    }
    /* at least: solver, convergence, norm, the preconditioner, and the AMG
     * choices in both scopes (algorithm, selector, interpolator, aggressive
     * interpolator, smoother, cycle, coarse solver, format, precision) */
    ck_assert_int_ge(nchoice, 4 + 2 * 9);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config_rules");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, test_each_pair);
    tcase_add_test(tc, test_rule_through_set);
    tcase_add_test(tc, test_every_choice_checked);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
