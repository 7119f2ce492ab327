/* Helpers of the config tests: the library's keys (test_config.c) and the
 * ksolve tool's scope beside them (test_cli_config.c) load, fail, dump
 * and check their documentation the same way. scope NULL: the library's
 * keys alone. */
#ifndef KS_CONFIG_CASES_H
#define KS_CONFIG_CASES_H

#include "ks_test.h"
#include "solver/config_scope.h"

#include <jansson.h>

/* A config from JSON text; the test fails when it does not load. */
ks_config *cfgtest_load(const ks_config_scope *scope, const char *json);
/* The config must fail with `code` and a message holding every substring
 * (sub2 may be NULL). */
void cfgtest_expect_fail(const ks_config_scope *scope, const char *json, ks_error code,
                         const char *sub1, const char *sub2);
/* ks_config_dump as a JSON tree (json_decref it). */
json_t *cfgtest_dump_tree(const ks_config *cfg);
/* root.a(.b(.c)); the test fails when absent. */
json_t *cfgtest_at(json_t *root, const char *a, const char *b, const char *c);
/* <source root>/rel. */
const char *cfgtest_source_path(const char *rel);
/* docs/config.md's text (a static buffer). */
const char *cfgtest_config_doc(void);
/* Every leaf of a dumped tree is documented as `a.b.c` in doc. */
void cfgtest_check_documented(const char *doc, json_t *node, const char *prefix);
/* Each default leaf value appears as a `token` of its docs table row's
 * default cell (numbers compared by value: `1e-8` documents 1e-08). */
void cfgtest_check_defaults(const char *doc, json_t *node, const char *prefix);

#endif
