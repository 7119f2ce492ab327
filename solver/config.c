/* The config engine: JSON with AmgX-style scopes ("solver": {...}). What
 * keys exist is not known here: key tables (config_scope.h) describe each
 * key (path, type, range or choices, where the value goes), the library's
 * own in config_keys.c and, beside them, the keys of a client scope (the
 * ksolve tool's matrix, rhs, backend...). Validation, ks_config_set and
 * ks_config_dump follow those tables. The JSON tree is kept as given (for
 * dump and set); after every create/set it is validated from scratch into
 * each scope's struct, starting from its defaults, so a config is never
 * half-applied. */
#include "config_amgx.h"
#include "config_scope.h"
#include "params.h"
#include "../spmv/format.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* The library's keys, then the client's scope if any. */
enum { MAX_SCOPES = 2 };

typedef struct schema {
    const ks_config_scope *sc[MAX_SCOPES];
    int n;
} schema;

struct ks_config {
    json_t *root;             /* the user's tree (paths resolved, sets applied) */
    schema sch;
    void *block[MAX_SCOPES];  /* each scope's parsed, validated struct */
    json_t *warned;           /* key path -> warning already emitted for it */
};

/* Warnings of the validation running on this thread (ks_config_warn):
 * path -> message, the first message per path. */
static _Thread_local json_t *warn_sink;

void ks_config_warn(const char *path, const char *fmt, ...)
{
    if (!warn_sink || json_object_get(warn_sink, path))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_object_set_new(warn_sink, path, json_string_nocheck(msg));
}

/* Log the warnings of a validation that are not in `already` (the ones a
 * config emitted before a set). */
static void emit_warnings(const json_t *warnings, const json_t *already)
{
    const char *path;
    json_t *msg;
    json_object_foreach((json_t *)warnings, path, msg) {
        if (!already || !json_object_get(already, path))
            ks_log(KS_LOG_WARN, "warning: %s: %s\n", path, json_string_value(msg));
    }
}

/* Keys are numbered across the scopes, the library's first (its order
 * is the dump's and decides ties between suggestions). */
static int key_count(const schema *sch)
{
    int n = 0;
    for (int t = 0; t < sch->n; t++)
        n += sch->sc[t]->nkeys;
    return n;
}

/* Key j; its scope in *s (may be NULL) and its index there in *i (may be NULL). */
static const ks_key_spec *key_at(const schema *sch, int j, int *s, int *i)
{
    int t = 0;
    while (j >= sch->sc[t]->nkeys)
        j -= sch->sc[t++]->nkeys;
    if (s)
        *s = t;
    if (i)
        *i = j;
    return &sch->sc[t]->keys[j];
}

/* The key at path, or NULL; where it is as in key_at. */
static const ks_key_spec *find_key(const schema *sch, const char *path, int *s, int *i)
{
    for (int j = 0, n = key_count(sch); j < n; j++) {
        const ks_key_spec *k = key_at(sch, j, s, i);
        if (strcmp(k->path, path) == 0)
            return k;
    }
    return NULL;
}

/* The library's keys plus client's; a client key may not redefine one of
 * the library's (the first found would win silently). */
static ks_error make_schema(const ks_config_scope *client, schema *sch)
{
    *sch = (schema){{&ks_config_solver_scope, client}, client ? 2 : 1};
    for (int i = 0; client && i < client->nkeys; i++) {
        int s;
        if (find_key(sch, client->keys[i].path, &s, NULL) && s == 0)
            return ks_seterr(KS_ERR_ARG, "config scope: '%s' is one of the library's keys",
                             client->keys[i].path);
    }
    return KS_OK;
}

int ks_config_given(const ks_config_scope *scope, const unsigned char *given, const char *path)
{
    for (int i = 0; i < scope->nkeys; i++)
        if (strcmp(scope->keys[i].path, path) == 0)
            return given[i];
    return 0;
}

ks_error ks_config_keys_not_applying(const ks_config_scope *scope, const void *block,
                                     const unsigned char *given,
                                     int (*applies)(const void *block, int cond),
                                     void (*why)(const void *block, const ks_key_spec *k,
                                                 char *buf, size_t len))
{
    for (int i = 0; i < scope->nkeys; i++) {
        const ks_key_spec *k = &scope->keys[i];
        if (!given[i] || k->type == KT_SCOPE || k->type == KT_IGNORED || applies(block, k->cond))
            continue;
        char reason[400];
        why(block, k, reason, sizeof reason);
        if (given[i] != KS_GIVEN_DEFAULT)
            return ks_seterr(KS_ERR_CONFIG, "%s: %s", k->path, reason);
        ks_config_warn(k->path, "ignored (its value is the default): %s", reason);
    }
    return KS_OK;
}

/* Length of the parent part of a dotted path ("solver.max_iters" -> 6). */
static size_t parent_len(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? (size_t)(dot - path) : 0;
}

static const char *last_part(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

/* -------------------------------------------------------------- messages */
static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "value";
}

static int edit_distance(const char *a, const char *b)
{
    enum { M = 64 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= M || lb >= M)
        return M;
    int d[M + 1];
    for (size_t j = 0; j <= lb; j++)
        d[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = d[0];
        d[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = d[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (d[j - 1] + 1 < best)
                best = d[j - 1] + 1;
            d[j] = best;
            diag = up;
        }
    }
    return d[lb];
}

/* "unknown key 'solver.max_iter' (did you mean 'max_iters'?)": suggest the
 * closest sibling, else the same name in another scope, else list the
 * keys of the scope. */
static ks_error unknown_key(const schema *sch, const char *path)
{
    size_t plen = parent_len(path);
    const char *name = last_part(path);
    const ks_key_spec *best = NULL;
    int bestd = 1 << 20, n = key_count(sch);
    for (int j = 0; j < n; j++) {
        const ks_key_spec *k = key_at(sch, j, NULL, NULL);
        if (parent_len(k->path) != plen || strncmp(k->path, path, plen) != 0 ||
            k->type == KT_IGNORED)
            continue;
        const char *cand = last_part(k->path);
        int d = edit_distance(name, cand);
        size_t ln = strlen(name), lc = strlen(cand);
        /* a truncated or extended name ("relaxation") counts as close */
        if (ln >= 4 && lc >= 4 && strncmp(name, cand, ln < lc ? ln : lc) == 0)
            d = d < 1 ? d : 1;
        if (d < bestd) {
            bestd = d;
            best = k;
        }
    }
    size_t nlen = strlen(name);
    int limit = nlen <= 4 ? 1 : nlen <= 8 ? 2 : 3;
    if (best && bestd <= limit)
        return ks_seterr(KS_ERR_CONFIG, "unknown key '%s' (did you mean '%s'?)", path,
                         last_part(best->path));
    for (int j = 0; j < n; j++) {
        const ks_key_spec *k = key_at(sch, j, NULL, NULL);
        if (k->type != KT_IGNORED && strcmp(last_part(k->path), name) == 0)
            return ks_seterr(KS_ERR_CONFIG, "unknown key '%s' (did you mean '%s'?)", path,
                             k->path);
    }
    char list[512] = "";
    size_t used = 0;
    for (int j = 0; j < n; j++) {
        const ks_key_spec *k = key_at(sch, j, NULL, NULL);
        if (parent_len(k->path) != plen || strncmp(k->path, path, plen) != 0 ||
            k->type == KT_IGNORED)
            continue;
        int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                         last_part(k->path));
        if (w < 0 || (size_t)w >= sizeof list - used)
            break;
        used += (size_t)w;
    }
    return ks_seterr(KS_ERR_CONFIG, "unknown key '%s' (keys allowed here: %s)", path, list);
}

ks_error ks_config_type_error(const char *path, const char *expected, const json_t *v)
{
    return ks_seterr(KS_ERR_CONFIG, "%s: expected %s, got %s", path, expected, json_type_name(v));
}

static ks_error range_error(const ks_key_spec *k, const char *path, double got)
{
    if (k->lo == k->hi)
        return ks_seterr(KS_ERR_CONFIG, "%s: must be %g (got %g)", path, k->lo, got);
    if (isinf(k->hi) || k->hi == INT_MAX)
        return ks_seterr(KS_ERR_CONFIG, "%s: must be %s %g (got %g)", path,
                         k->lo_open ? ">" : ">=", k->lo, got);
    return ks_seterr(KS_ERR_CONFIG, "%s: must be in %c%g, %g%c (got %g)", path,
                     k->lo_open ? '(' : '[', k->lo, k->hi, k->hi_open ? ')' : ']', got);
}

static int in_range(const ks_key_spec *k, double x)
{
    if (!isfinite(x))
        return 0;
    if (k->lo_open ? !(x > k->lo) : !(x >= k->lo))
        return 0;
    if (k->hi_open ? !(x < k->hi) : !(x <= k->hi))
        return 0;
    return 1;
}

/* ----------------------------------------------------------- validation */
static void store_int(void *block, const ks_key_spec *k, int v)
{
    memcpy((char *)block + k->off, &v, sizeof v);
}

static void store_double(void *block, const ks_key_spec *k, double v)
{
    memcpy((char *)block + k->off, &v, sizeof v);
}

static ks_error store_string(void *block, const ks_key_spec *k, const char *path, const char *s)
{
    size_t n = strlen(s);
    if (n >= k->size)
        return ks_seterr(KS_ERR_CONFIG, "%s: longer than %zu characters", path, k->size - 1);
    memcpy((char *)block + k->off, s, n + 1);
    return KS_OK;
}

static ks_error check_enum(const ks_key_spec *k, const char *path, const json_t *v,
                           const ks_name **out)
{
    if (!json_is_string(v))
        return ks_config_type_error(path, "a string", v);
    const char *s = json_string_value(v);
    const ks_name *nocase = NULL;
    for (const ks_name *c = k->choices; c->name; c++) {
        if (strcmp(c->name, s) == 0) {
            *out = c;
            return KS_OK;
        }
        if (!nocase && strcasecmp(c->name, s) == 0)
            nocase = c;
    }
    char list[256] = "";
    size_t used = 0;
    for (const ks_name *c = k->choices; c->name; c++) {
        if (c->alias)
            continue;
        int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", c->name);
        if (w < 0 || (size_t)w >= sizeof list - used)
            break;
        used += (size_t)w;
    }
    if (nocase)
        return ks_seterr(KS_ERR_CONFIG, "%s: unknown value '%s' (did you mean '%s'? allowed: %s)",
                         path, s, nocase->name, list);
    return ks_seterr(KS_ERR_CONFIG, "%s: unknown value '%s' (allowed: %s)", path, s, list);
}

ks_error ks_config_check_int(const ks_key_spec *k, const char *path, const json_t *v,
                             json_int_t *out)
{
    if (!json_is_integer(v))
        return ks_config_type_error(path, "an integer", v);
    json_int_t x = json_integer_value(v);
    if (k->int_set) {
        for (const int *p = k->int_set; *p >= 0; p++)
            if (x == *p) {
                *out = x;
                return KS_OK;
            }
        char list[128] = "";
        size_t used = 0;
        for (const int *p = k->int_set; *p >= 0; p++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d", used ? ", " : "",
                                     *p);
        return ks_seterr(KS_ERR_CONFIG, "%s: must be one of %s (got %lld)", path, list,
                         (long long)x);
    }
    if ((double)x < k->lo || (double)x > k->hi)
        return range_error(k, path, (double)x);
    *out = x;
    return KS_OK;
}

ks_error ks_config_check_num(const ks_key_spec *k, const char *path, const json_t *v,
                             double *out)
{
    if (!json_is_number(v))
        return ks_config_type_error(path, "a number", v);
    double x = json_number_value(v);
    if (!in_range(k, x))
        return range_error(k, path, x);
    *out = x;
    return KS_OK;
}

/* Check v against k and store it in block. */
static ks_error apply_leaf(void *block, const ks_key_spec *k, const char *path, const json_t *v)
{
    switch (k->type) {
    case KT_INT: {
        json_int_t x;
        KS_TRY(ks_config_check_int(k, path, v, &x));
        if (k->store == ST_INT) {
            store_int(block, k, (int)x);
        } else if (k->store == ST_ULL) {
            unsigned long long u = (unsigned long long)x; /* x >= 0 checked */
            memcpy((char *)block + k->off, &u, sizeof u);
        }
        return KS_OK;
    }
    case KT_NUM: {
        double x;
        KS_TRY(ks_config_check_num(k, path, v, &x));
        store_double(block, k, x);
        return KS_OK;
    }
    case KT_BOOL: {
        int b;
        if (json_is_boolean(v))
            b = json_is_true(v);
        else if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1))
            b = (int)json_integer_value(v);
        else if (json_is_integer(v))
            return ks_seterr(KS_ERR_CONFIG, "%s: expected 0, 1 or a boolean, got %lld", path,
                             (long long)json_integer_value(v));
        else
            return ks_config_type_error(path, "0, 1 or a boolean", v);
        store_int(block, k, b);
        return KS_OK;
    }
    case KT_ENUM: {
        const ks_name *ch = NULL;
        KS_TRY(check_enum(k, path, v, &ch));
        if (k->store == ST_ENUM_INT)
            store_int(block, k, ch->value);
        else
            KS_TRY(store_string(block, k, path, k->choices[ch->value].name));
        return KS_OK;
    }
    case KT_FORMAT:
        if (json_is_string(v) && json_string_value(v)[0]) { /* checked at load, not at setup */
            char list[512];
            if (!ks_spmv_format_name_known(json_string_value(v), list, sizeof list))
                return ks_seterr(KS_ERR_CONFIG, "%s: unknown SpMV format '%s' (allowed: %s)",
                                 path, json_string_value(v), list);
        }
        /* fallthrough */
    case KT_STR:
    case KT_PATH:
        if (!json_is_string(v))
            return ks_config_type_error(
                path, k->type == KT_PATH ? "a file path (string)" : "a string", v);
        if (json_string_value(v)[0] == '\0')
            return ks_seterr(KS_ERR_CONFIG, "%s: must not be empty", path);
        return store_string(block, k, path, json_string_value(v));
    case KT_CUSTOM:
        if (k->parse)
            return k->parse(block, k, path, v);
        break;
    case KT_IGNORED:
        if (!json_is_string(v))
            return ks_config_type_error(path, "a string", v);
        return KS_OK;
    case KT_SCOPE:
        break;
    }
    return ks_seterr(KS_ERR_CONFIG, "%s: internal schema error", path);
}

typedef struct parse_ctx {
    const schema *sch;
    void *block[MAX_SCOPES];          /* each scope's struct being filled */
    void *defaults[MAX_SCOPES];       /* each scope's defaults, to compare given values */
    unsigned char *given[MAX_SCOPES]; /* given[s][i]: key i of scope s was given */
    json_t *problems;                 /* every key error of the walk, in order */
} parse_ctx;

/* A key error of the walk: kept, and the walk goes on, so one run reports
 * every unknown key and bad value. Other errors (memory) stop it. */
static ks_error note_problem(parse_ctx *c, ks_error e)
{
    if (e != KS_ERR_CONFIG)
        return e;
    /* no UTF-8 check: a message cut at the buffer's end may split a character */
    json_t *m = json_string_nocheck(ks_last_error());
    if (!m || json_array_append_new(c->problems, m) != 0)
        return e; /* out of memory: this problem alone, but never lost */
    return KS_OK;
}

/* given[s][i] after k's value was stored: 1, or KS_GIVEN_DEFAULT when the
 * stored value is the key's default. */
static void mark_given(parse_ctx *c, int s, int i, const ks_key_spec *k)
{
    const char *a = (const char *)c->block[s] + k->off, *d = (const char *)c->defaults[s] + k->off;
    int same = 0;
    if (k->type == KT_SCOPE || k->type == KT_IGNORED || k->size == 0)
        same = 0;
    else if (k->store == ST_STRING)
        same = strncmp(a, d, k->size) == 0;
    else if (k->store == ST_DOUBLE) {
        double x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, d, sizeof y);
        same = x == y;
    } else
        same = memcmp(a, d, k->size) == 0;
    c->given[s][i] = same ? KS_GIVEN_DEFAULT : 1;
}

/* AmgX's keys and values (config_amgx.c) are the library's business: the
 * engine asks there for a path in no table, and for a value of one of the
 * library's choice keys (scope 0) that is not among its choices. */
static const char *foreign_value(int s, const ks_key_spec *k, const char *path, const json_t *v)
{
    if (s != 0 || k->type != KT_ENUM || !json_is_string(v))
        return NULL;
    for (const ks_name *ch = k->choices; ch->name; ch++)
        if (strcmp(ch->name, json_string_value(v)) == 0)
            return NULL;
    return ks_config_amgx_value(path, json_string_value(v));
}

/* Store v (given at path) as key k (index i of scope s), or note why not. */
static ks_error take_value(parse_ctx *c, int s, int i, const ks_key_spec *k, const char *path,
                           const json_t *v)
{
    const char *why = foreign_value(s, k, path, v);
    if (why) { /* e.g. AmgX's aggregation selector SIZE_2: the default stays */
        ks_config_warn(path, "%s", why);
        return KS_OK;
    }
    ks_error e = apply_leaf(c->block[s], k, path, v);
    if (e == KS_OK)
        mark_given(c, s, i, k);
    return note_problem(c, e);
}

static ks_error walk(parse_ctx *c, const json_t *obj, const char *prefix)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        char path[256];
        if (snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", key) >=
            (int)sizeof path) {
            KS_TRY(note_problem(c, ks_seterr(KS_ERR_CONFIG, "unknown key '%s' (name too long)",
                                             path)));
            continue;
        }
        if (strchr(key, '.')) {
            KS_TRY(note_problem(c, ks_seterr(KS_ERR_CONFIG,
                                             "unknown key '%s' (a key name has no dots: nest "
                                             "objects instead, e.g. {\"solver\": "
                                             "{\"max_iters\": 100}})",
                                             path)));
            continue;
        }
        int s, i;
        const ks_key_spec *k = find_key(c->sch, path, &s, &i);
        if (!k) {
            char to[256];
            const char *why = NULL;
            ks_foreign_kind f = ks_config_amgx_key(path, to, sizeof to, &why);
            if (f == KS_FOREIGN_WARN) {
                ks_config_warn(path, "%s", why);
                continue;
            }
            k = f == KS_FOREIGN_MAP ? find_key(c->sch, to, &s, &i) : NULL;
            if (!k) {
                KS_TRY(note_problem(c, unknown_key(c->sch, path)));
                continue;
            }
            /* AmgX's name of one of our keys: the value goes there, errors
             * name the key as written */
            if (json_object_get((json_t *)obj, last_part(to))) {
                KS_TRY(note_problem(c, ks_seterr(KS_ERR_CONFIG,
                                                 "%s: AmgX's name for '%s', which is given "
                                                 "too (give one of them)",
                                                 path, to)));
                continue;
            }
        }
        if (k->type != KT_SCOPE) {
            KS_TRY(take_value(c, s, i, k, path, v));
        } else if (json_is_object(v)) {
            c->given[s][i] = 1;
            KS_TRY(walk(c, v, path));
        } else if (k->shorthand && json_is_string(v)) {
            c->given[s][i] = 1;
            char sub[300];
            snprintf(sub, sizeof sub, "%s.%s", path, k->shorthand);
            const ks_key_spec *ks = find_key(c->sch, sub, &s, &i);
            KS_TRY(take_value(c, s, i, ks, path, v));
        } else {
            KS_TRY(note_problem(c, ks_config_type_error(
                path, k->shorthand ? "an object or a name (string)" : "an object", v)));
        }
    }
    return KS_OK;
}

static void ctx_free(parse_ctx *c)
{
    for (int s = 0; s < MAX_SCOPES; s++) {
        free(c->block[s]);
        free(c->defaults[s]);
        free(c->given[s]);
    }
    json_decref(c->problems);
}

/* The walk's problems as one error: the message itself when there is
 * one, else their count and each message, in the order of the file. */
static ks_error report_problems(const json_t *problems)
{
    size_t n = json_array_size(problems);
    if (n == 1)
        return ks_seterr(KS_ERR_CONFIG, "%s", json_string_value(json_array_get(problems, 0)));
    char all[2048];
    size_t used = (size_t)snprintf(all, sizeof all, "%zu problems: ", n);
    for (size_t j = 0; j < n && used < sizeof all; j++)
        used += (size_t)snprintf(all + used, sizeof all - used, "%s%s", j ? "; " : "",
                                 json_string_value(json_array_get(problems, j)));
    return ks_seterr(KS_ERR_CONFIG, "%s", all);
}

/* Parse root into fresh structs (out[s], allocated here, each scope's
 * size) from the defaults; every scope's rules run once all keys are in.
 * The warnings (path -> message) go to *warnings (json_decref it). */
static ks_error validate(const schema *sch, const json_t *root, void *out[MAX_SCOPES],
                         json_t **warnings)
{
    parse_ctx c = {sch, {NULL}, {NULL}, {NULL}, json_array()};
    json_t *w = json_object();
    *warnings = NULL;
    if (!c.problems || !w) {
        ctx_free(&c);
        json_decref(w);
        return ks_seterr(KS_ERR_MEMORY, "out of memory validating a config");
    }
    for (int s = 0; s < sch->n; s++) {
        c.block[s] = ks_calloc(1, sch->sc[s]->size, "config");
        c.defaults[s] = ks_calloc(1, sch->sc[s]->size, "config");
        c.given[s] = ks_calloc((size_t)sch->sc[s]->nkeys, 1, "config parser");
        if (!c.block[s] || !c.defaults[s] || !c.given[s]) {
            ctx_free(&c);
            json_decref(w);
            return KS_ERR_MEMORY;
        }
        if (sch->sc[s]->defaults) {
            sch->sc[s]->defaults(c.block[s]);
            sch->sc[s]->defaults(c.defaults[s]);
        }
    }
    json_t *outer = warn_sink; /* none: validations do not nest, but stay safe */
    warn_sink = w;
    ks_error e = walk(&c, root, "");
    if (e == KS_OK && json_array_size(c.problems) > 0)
        e = report_problems(c.problems);
    for (int s = 0; s < sch->n && e == KS_OK; s++)
        if (sch->sc[s]->check)
            e = sch->sc[s]->check(c.block[s], c.given[s]);
    warn_sink = outer;
    if (e == KS_OK) {
        for (int s = 0; s < sch->n; s++) {
            out[s] = c.block[s];
            c.block[s] = NULL;
        }
        *warnings = w;
    } else {
        json_decref(w);
    }
    ctx_free(&c);
    return e;
}

/* Replace cfg's structs with those of a successful validate. */
static void replace_blocks(ks_config *cfg, void *blocks[MAX_SCOPES])
{
    for (int s = 0; s < MAX_SCOPES; s++) {
        free(cfg->block[s]);
        cfg->block[s] = blocks[s];
    }
}

/* ----------------------------------------------------------- tree access */
/* Node at a dotted path or NULL. */
static json_t *tree_get(json_t *root, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *node = root;
    for (char *save = NULL, *part = strtok_r(buf, ".", &save); part;
         part = strtok_r(NULL, ".", &save)) {
        if (!json_is_object(node))
            return NULL;
        node = json_object_get(node, part);
        if (!node)
            return NULL;
    }
    return node;
}

/* Make relative paths of a config file relative to its folder, so the
 * config works from any working directory. */
static ks_error resolve_paths(const schema *sch, json_t *root, const char *cfgpath)
{
    const char *slash = strrchr(cfgpath, '/');
    if (!slash)
        return KS_OK; /* same folder as the working directory */
    int dirlen = (int)(slash - cfgpath);
    for (int j = 0, n = key_count(sch); j < n; j++) {
        const ks_key_spec *k = key_at(sch, j, NULL, NULL);
        if (k->type != KT_PATH)
            continue;
        json_t *v = tree_get(root, k->path);
        if (!v || !json_is_string(v))
            continue; /* validation reports wrong types */
        const char *s = json_string_value(v);
        if (s[0] == '\0' || s[0] == '/')
            continue;
        char full[KS_PATH_MAX];
        if (snprintf(full, sizeof full, "%.*s/%s", dirlen, cfgpath, s) >= (int)sizeof full)
            return ks_seterr(KS_ERR_CONFIG, "%s: path longer than %d characters", k->path,
                             KS_PATH_MAX - 1);
        if (json_string_set(v, full) != 0)
            return ks_seterr(KS_ERR_MEMORY, "out of memory resolving %s", k->path);
    }
    return KS_OK;
}

static ks_error config_from_tree(json_t *root, const schema *sch, ks_config **cfg)
{
    if (!json_is_object(root)) {
        ks_error e = ks_seterr(KS_ERR_CONFIG, "the top level must be a JSON object, got %s",
                               json_type_name(root));
        json_decref(root);
        return e;
    }
    ks_config *c = ks_calloc(1, sizeof *c, "config");
    if (!c) {
        json_decref(root);
        return KS_ERR_MEMORY;
    }
    c->root = root;
    c->sch = *sch;
    void *blocks[MAX_SCOPES] = {NULL};
    ks_error e = validate(sch, root, blocks, &c->warned);
    if (e != KS_OK) {
        ks_config_destroy(&c);
        return e;
    }
    replace_blocks(c, blocks);
    emit_warnings(c->warned, NULL);
    *cfg = c;
    return KS_OK;
}

/* ------------------------------------------------------------- creation */
ks_error ks_config_create_from_file_scoped(const char *path, const ks_config_scope *scope,
                                           ks_config **cfg)
{
    if (!path || !cfg)
        return ks_seterr(KS_ERR_ARG, "ks_config_create_from_file: NULL argument");
    *cfg = NULL;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return ks_seterr(KS_ERR_IO, "cannot read config file '%s': it is a directory", path);
    json_error_t err;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        if (json_error_code(&err) == json_error_cannot_open_file)
            return ks_seterr(KS_ERR_IO, "cannot open config file '%s': %s", path, err.text);
        return ks_seterr(KS_ERR_CONFIG, "%s:%d:%d: %s", path, err.line, err.column, err.text);
    }
    schema sch;
    ks_error e = make_schema(scope, &sch);
    if (e == KS_OK)
        e = resolve_paths(&sch, root, path);
    if (e != KS_OK) {
        json_decref(root);
        return ks_adderr(e, "%s", path);
    }
    e = config_from_tree(root, &sch, cfg);
    return e == KS_OK ? e : ks_adderr(e, "%s", path);
}

ks_error ks_config_create_from_string_scoped(const char *json, const ks_config_scope *scope,
                                             ks_config **cfg)
{
    if (!json || !cfg)
        return ks_seterr(KS_ERR_ARG, "ks_config_create_from_string: NULL argument");
    *cfg = NULL;
    schema sch;
    KS_TRY(make_schema(scope, &sch));
    json_error_t err;
    json_t *root = json_loads(json, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return ks_seterr(KS_ERR_CONFIG, "config string:%d:%d: %s", err.line, err.column, err.text);
    return config_from_tree(root, &sch, cfg);
}

ks_error ks_config_create_default_scoped(const ks_config_scope *scope, ks_config **cfg)
{
    if (!cfg)
        return ks_seterr(KS_ERR_ARG, "ks_config_create_default: NULL argument");
    *cfg = NULL;
    schema sch;
    KS_TRY(make_schema(scope, &sch));
    json_t *root = json_object();
    if (!root)
        return ks_seterr(KS_ERR_MEMORY, "out of memory creating a config");
    return config_from_tree(root, &sch, cfg);
}

ks_error ks_config_create_from_file(const char *path, ks_config **cfg)
{
    return ks_config_create_from_file_scoped(path, NULL, cfg);
}

ks_error ks_config_create_from_string(const char *json, ks_config **cfg)
{
    return ks_config_create_from_string_scoped(json, NULL, cfg);
}

ks_error ks_config_create_default(ks_config **cfg)
{
    return ks_config_create_default_scoped(NULL, cfg);
}

void ks_config_destroy(ks_config **cfgp)
{
    ks_config *cfg = cfgp ? *cfgp : NULL;
    if (!cfg)
        return;
    *cfgp = NULL; /* a second destroy of the same handle is a no-op */
    json_decref(cfg->root);
    json_decref(cfg->warned);
    for (int s = 0; s < MAX_SCOPES; s++)
        free(cfg->block[s]);
    free(cfg);
}

const ks_solver_params *ks_config_solver_params(const ks_config *cfg)
{
    return cfg ? cfg->block[0] : NULL;
}

const void *ks_config_scope_block(const ks_config *cfg, const ks_config_scope *scope)
{
    if (!cfg || !scope)
        return NULL;
    for (int s = 0; s < cfg->sch.n; s++)
        if (cfg->sch.sc[s] == scope)
            return cfg->block[s];
    return NULL;
}

/* ------------------------------------------------------------------ set */
/* Put value at keypath in root (steals value), creating objects on the way
 * and removing the keys it excludes. */
static ks_error tree_set(const schema *sch, json_t *root, const char *keypath, json_t *value)
{
    char buf[256];
    size_t len = strlen(keypath);
    if (len == 0 || len >= sizeof buf || keypath[0] == '.' || keypath[len - 1] == '.' ||
        strstr(keypath, "..")) {
        json_decref(value);
        return ks_seterr(KS_ERR_CONFIG, "invalid key path '%s'", keypath);
    }
    memcpy(buf, keypath, len + 1);
    json_t *node = root;
    char *part = buf;
    for (char *dot; (dot = strchr(part, '.')) != NULL; part = dot + 1) {
        *dot = '\0';
        json_t *next = json_object_get(node, part);
        if (next && !json_is_object(next)) {
            const ks_key_spec *k = find_key(sch, buf, NULL, NULL);
            if (k && k->shorthand && json_is_string(next)) {
                /* "preconditioner": "JACOBI" -> {"solver": "JACOBI"} */
                json_t *obj = json_pack("{sO}", k->shorthand, next);
                if (!obj || json_object_set_new(node, part, obj) != 0) {
                    json_decref(value);
                    return ks_seterr(KS_ERR_MEMORY, "out of memory setting '%s'", keypath);
                }
                next = obj;
            } else {
                ks_error e = ks_seterr(KS_ERR_CONFIG, "cannot set '%s': '%s' is %s %s, not an object",
                                       keypath, buf, json_is_integer(next) || json_is_array(next) ? "an" : "a",
                                       json_type_name(next));
                json_decref(value);
                return e;
            }
        } else if (!next) {
            next = json_object();
            if (!next || json_object_set_new(node, part, next) != 0) {
                json_decref(value);
                return ks_seterr(KS_ERR_MEMORY, "out of memory setting '%s'", keypath);
            }
        }
        node = next;
        *dot = '.';
    }
    int s;
    const ks_key_spec *k = find_key(sch, keypath, &s, NULL);
    if (k && k->xgroup != 0) {
        const ks_config_scope *sc = sch->sc[s];
        for (int j = 0; j < sc->nkeys; j++)
            if (sc->keys[j].xgroup == k->xgroup && sc->keys[j].xside != k->xside)
                json_object_del(node, last_part(sc->keys[j].path));
    }
    if (json_object_set_new(node, part, value) != 0)
        return ks_seterr(KS_ERR_MEMORY, "out of memory setting '%s'", keypath);
    return KS_OK;
}

/* A command-line value: JSON when it parses ("200", "[30,30]", "true"),
 * otherwise the text itself as a string ("PCG", "cpu,cuda"). */
static json_t *parse_value(const char *value)
{
    json_error_t err;
    json_t *v = json_loads(value, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
    return v ? v : json_string(value);
}

/* 1 when path is inside (or is) the subtree at top: "a.b.c" in "a.b". */
static int path_within(const char *path, const char *top)
{
    size_t n = strlen(top);
    return strncmp(path, top, n) == 0 && (path[n] == '\0' || path[n] == '.');
}

/* One batch of overrides (the command line) applies in order, but a value
 * one of them sets may not be dropped by a later one: then the result
 * would depend on the order, silently. Refuse, naming both keys: the same
 * key twice, a key whose subtree holds an earlier key, and two sides of an
 * exclusive group (a matrix file and a generator key). */
static ks_error batch_conflicts(const schema *sch, int n, const char *const *keys)
{
    for (int j = 1; j < n; j++) {
        int s;
        const ks_key_spec *k = find_key(sch, keys[j], &s, NULL);
        for (int i = 0; i < j; i++) {
            if (strcmp(keys[i], keys[j]) == 0)
                return ks_seterr(KS_ERR_CONFIG, "'%s' is given twice", keys[j]);
            if (path_within(keys[i], keys[j]))
                return ks_seterr(KS_ERR_CONFIG,
                                 "'%s' would replace '%s', given before it: give one of them "
                                 "(or '%s' first)",
                                 keys[j], keys[i], keys[j]);
            if (!k || k->xgroup == 0)
                continue;
            const ks_config_scope *sc = sch->sc[s];
            for (int t = 0; t < sc->nkeys; t++)
                if (sc->keys[t].xgroup == k->xgroup && sc->keys[t].xside != k->xside &&
                    path_within(keys[i], sc->keys[t].path))
                    return ks_seterr(KS_ERR_CONFIG, "'%s' and '%s' exclude each other: give one",
                                     keys[i], keys[j]);
        }
    }
    return KS_OK;
}

ks_error ks_config_set_many(ks_config *cfg, int n, const char *const *keys,
                            const char *const *values)
{
    if (!cfg || n < 0 || (n > 0 && (!keys || !values)))
        return ks_seterr(KS_ERR_ARG, "ks_config_set: NULL argument");
    for (int i = 0; i < n; i++)
        if (!keys[i] || !values[i])
            return ks_seterr(KS_ERR_ARG, "ks_config_set: NULL key or value");
    KS_TRY(batch_conflicts(&cfg->sch, n, keys));
    json_t *copy = json_deep_copy(cfg->root);
    if (!copy)
        return ks_seterr(KS_ERR_MEMORY, "out of memory copying the config");
    ks_error e = KS_OK;
    for (int i = 0; i < n && e == KS_OK; i++) {
        json_t *v = parse_value(values[i]);
        if (!v)
            e = ks_seterr(KS_ERR_CONFIG, "%s: value is not valid UTF-8 text", keys[i]);
        else
            e = tree_set(&cfg->sch, copy, keys[i], v);
    }
    void *blocks[MAX_SCOPES] = {NULL};
    json_t *warnings = NULL;
    if (e == KS_OK)
        e = validate(&cfg->sch, copy, blocks, &warnings);
    if (e != KS_OK) {
        json_decref(copy);
        return e;
    }
    json_decref(cfg->root);
    cfg->root = copy;
    replace_blocks(cfg, blocks);
    /* each key warns once: only what the set brought in is new */
    emit_warnings(warnings, cfg->warned);
    json_decref(cfg->warned);
    cfg->warned = warnings;
    return KS_OK;
}

ks_error ks_config_set(ks_config *cfg, const char *keypath, const char *value)
{
    return ks_config_set_many(cfg, 1, &keypath, &value);
}

/* ------------------------------------------------------------------ dump */
/* k's value in block as JSON; NULL leaves the key out (unset strings). */
static json_t *dump_value(const void *block, const ks_key_spec *k)
{
    const char *base = (const char *)block + k->off;
    switch (k->type) {
    case KT_INT:
        if (k->store == ST_ULL) {
            unsigned long long u;
            memcpy(&u, base, sizeof u);
            return json_integer((json_int_t)u);
        }
        if (k->store != ST_INT) /* checked only: a fixed value (config_version) */
            return k->lo == k->hi ? json_integer((json_int_t)k->lo) : NULL;
        /* fallthrough */
    case KT_BOOL: {
        int v;
        memcpy(&v, base, sizeof v);
        return json_integer(v);
    }
    case KT_NUM: {
        double v;
        memcpy(&v, base, sizeof v);
        return json_real(v);
    }
    case KT_ENUM:
        if (k->store == ST_ENUM_INT) {
            int v;
            memcpy(&v, base, sizeof v);
            for (const ks_name *c = k->choices; c->name; c++)
                if (!c->alias && c->value == v)
                    return json_string(c->name);
            return NULL;
        }
        /* fallthrough */
    case KT_STR:
    case KT_PATH:
    case KT_FORMAT:
        return base[0] ? json_string(base) : NULL; /* unset file: omitted */
    case KT_CUSTOM:
        return k->dump ? k->dump(block, k) : NULL;
    case KT_SCOPE:
    case KT_IGNORED:
        break;
    }
    return NULL;
}

char *ks_config_dump(const ks_config *cfg)
{
    if (!cfg) {
        ks_seterr(KS_ERR_ARG, "ks_config_dump: NULL config");
        return NULL;
    }
    json_t *root = json_object();
    int ok = root != NULL;
    for (int j = 0, n = key_count(&cfg->sch); j < n && ok; j++) {
        int s;
        const ks_key_spec *k = key_at(&cfg->sch, j, &s, NULL);
        const ks_config_scope *sc = cfg->sch.sc[s];
        if (sc->applies && !sc->applies(cfg->block[s], k->cond))
            continue; /* e.g. AMG settings when AMG is not selected */
        json_t *v = dump_value(cfg->block[s], k);
        if (v)
            ok = tree_set(&cfg->sch, root, k->path, v) == KS_OK;
    }
    char *text = ok ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(root);
    if (!text)
        ks_seterr(KS_ERR_MEMORY, "out of memory writing the config");
    return text;
}
