/* Helpers of the config tests (config_cases.h). */
#include "config_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ks_config *cfgtest_load(const ks_config_scope *scope, const char *json)
{
    ks_config *cfg = NULL;
    KS_CHECK(ks_config_create_from_string_scoped(json, scope, &cfg));
    ck_assert_ptr_nonnull(cfg);
    return cfg;
}

void cfgtest_expect_fail(const ks_config_scope *scope, const char *json, ks_error code,
                         const char *sub1, const char *sub2)
{
    ks_config *cfg = (ks_config *)0x1;
    ks_clear_error();
    ks_error e = ks_config_create_from_string_scoped(json, scope, &cfg);
    ck_assert_msg(e == code, "%s: expected %s, got %s (%s)", json, ks_error_name(code),
                  ks_error_name(e), ks_last_error());
    ck_assert_ptr_null(cfg);
    ck_assert_msg(strstr(ks_last_error(), sub1), "message '%s' lacks '%s'", ks_last_error(), sub1);
    if (sub2)
        ck_assert_msg(strstr(ks_last_error(), sub2), "message '%s' lacks '%s'", ks_last_error(),
                      sub2);
}

json_t *cfgtest_dump_tree(const ks_config *cfg)
{
    char *text = ks_config_dump(cfg);
    ck_assert_ptr_nonnull(text);
    json_error_t err;
    json_t *t = json_loads(text, 0, &err);
    ck_assert_msg(t != NULL, "dump is not JSON: %s\n%s", err.text, text);
    free(text);
    return t;
}

json_t *cfgtest_at(json_t *root, const char *a, const char *b, const char *c)
{
    json_t *v = json_object_get(root, a);
    if (v && b)
        v = json_object_get(v, b);
    if (v && c)
        v = json_object_get(v, c);
    ck_assert_msg(v != NULL, "dump lacks %s%s%s%s%s", a, b ? "." : "", b ? b : "", c ? "." : "",
                  c ? c : "");
    return v;
}

/* <source root>/rel: KS_TEST_DATA is <source>/matrices/samples, so strip two
 * components by text (the folder need not exist). */
const char *cfgtest_source_path(const char *rel)
{
    static char path[1200];
    const char *data = getenv("KS_TEST_DATA");
    snprintf(path, sizeof path, "%s", data ? data : "./matrices/samples");
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(path, '/');
        if (slash)
            *slash = '\0';
    }
    strncat(path, "/", sizeof path - strlen(path) - 1);
    strncat(path, rel, sizeof path - strlen(path) - 1);
    return path;
}

void cfgtest_check_documented(const char *doc, json_t *node, const char *prefix)
{
    const char *k;
    json_t *v;
    json_object_foreach(node, k, v) {
        char path[200], want[210];
        snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", k);
        if (json_is_object(v)) {
            cfgtest_check_documented(doc, v, path);
            continue;
        }
        snprintf(want, sizeof want, "`%s`", path);
        ck_assert_msg(strstr(doc, want), "docs/config.md lacks %s", want);
    }
}

/* The "default" cell (4th) of the docs table row whose key cell holds
 * `path`, copied into cell; 0 when there is no such row. */
static int doc_default_cell(const char *doc, const char *path, char *cell, size_t len)
{
    char want[210];
    snprintf(want, sizeof want, "`%s`", path);
    for (const char *line = doc; *line;) {
        const char *eol = strchr(line, '\n');
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        const char *bar2 = line[0] == '|' ? memchr(line + 1, '|', n - 1) : NULL;
        const char *hit = bar2 ? strstr(line, want) : NULL;
        if (hit && hit < bar2) {
            const char *c = bar2;
            for (int k = 0; k < 2 && c; k++) /* skip type and allowed values */
                c = memchr(c + 1, '|', n - (size_t)(c + 1 - line));
            const char *e = c ? memchr(c + 1, '|', n - (size_t)(c + 1 - line)) : NULL;
            if (!e)
                return 0;
            snprintf(cell, len, "%.*s", (int)(e - c - 1), c + 1);
            return 1;
        }
        line += n + (eol ? 1 : 0);
    }
    return 0;
}

void cfgtest_check_defaults(const char *doc, json_t *node, const char *prefix)
{
    const char *k;
    json_t *v;
    json_object_foreach(node, k, v) {
        char path[200], cell[512];
        snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", k);
        if (json_is_object(v)) {
            cfgtest_check_defaults(doc, v, path);
            continue;
        }
        if (json_is_array(v))
            continue;
        ck_assert_msg(doc_default_cell(doc, path, cell, sizeof cell),
                      "docs/config.md has no table row for `%s`", path);
        int found = 0;
        for (char *t = strchr(cell, '`'); t && !found;) {
            char *e = strchr(t + 1, '`');
            if (!e)
                break;
            *e = '\0';
            const char *tok = t + 1;
            if (json_is_string(v)) {
                found = strcmp(tok, json_string_value(v)) == 0;
            } else {
                char *end;
                double x = strtod(tok, &end);
                found = end != tok && *end == '\0' && x == json_number_value(v);
            }
            t = strchr(e + 1, '`');
        }
        char *val = json_dumps(v, JSON_ENCODE_ANY);
        ck_assert_msg(found, "docs/config.md: the default of `%s` is %s, the table says '%s'",
                      path, val, cell);
        free(val);
    }
}

const char *cfgtest_config_doc(void)
{
    const char *docpath = cfgtest_source_path("docs/config.md");
    FILE *f = fopen(docpath, "r");
    ck_assert_msg(f != NULL, "cannot open %s", docpath);
    static char doc[1 << 18];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    ck_assert_msg(n < sizeof doc - 1, "docs/config.md is larger than the test's buffer");
    fclose(f);
    return doc;
}
