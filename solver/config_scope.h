/* The config engine (solver/config.c) and the key tables it reads.
 *
 * PETSc/AmgX style: the library parses, validates, sets and dumps; whoever
 * owns keys describes them. A scope is a table of keys (path, type, range
 * or allowed names, where the value goes) plus the struct they fill, its
 * defaults and the rules between its keys. The library's own keys (the
 * "solver" tree, solver/config_keys.c) are one scope and always present; a
 * client such as the ksolve tool registers one more (cli/problem_keys.c:
 * matrix, rhs, backend, ...) by creating its configs with the *_scoped
 * functions below. Without one, a key outside the library's table is an
 * unknown key. Not installed. */
#ifndef KS_CONFIG_SCOPE_H
#define KS_CONFIG_SCOPE_H

#include "params.h"

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ks_key_type {
    KT_SCOPE,   /* object holding more keys */
    KT_INT,     /* integer in [lo, hi] or in int_set */
    KT_NUM,     /* finite number in the range lo..hi (open ends per flags) */
    KT_BOOL,    /* true/false or 0/1 */
    KT_ENUM,    /* one of `choices` (exact spelling) */
    KT_STR,     /* non-empty string */
    KT_PATH,    /* non-empty file path (relative to a config file's folder) */
    KT_FORMAT,  /* SpMV format name: "auto" or a registered format (spmv/registry.c) */
    KT_IGNORED, /* accepted and ignored (AmgX's "scope" labels) */
    KT_CUSTOM   /* parsed and dumped by the key's own parse and dump */
} ks_key_type;

/* How a value is stored at off in the scope's struct. KT_ENUM: the enum's
 * own value (ST_ENUM_INT, choices is the enum's name table, core/names.h)
 * or a string (ST_STRING: the value of the entry is the index of the
 * canonical name to store). ST_NONE: checked only (config_version). */
typedef enum ks_key_store { ST_NONE, ST_INT, ST_DOUBLE, ST_STRING, ST_ENUM_INT, ST_ULL } ks_key_store;

typedef struct ks_key_spec ks_key_spec;
struct ks_key_spec {
    const char *path;       /* dotted: "solver.max_iters" */
    ks_key_type type;
    double lo, hi;          /* KT_INT, KT_NUM range (ks_config_check_int/num) */
    unsigned char lo_open, hi_open;
    const int *int_set;     /* KT_INT: allowed values, terminated by -1 */
    const ks_name *choices; /* KT_ENUM: terminated by a NULL name */
    ks_key_store store;
    size_t off, size;       /* destination inside the scope's struct */
    const char *shorthand;  /* KT_SCOPE: a string value means {shorthand: value} */
    int xgroup, xside;      /* xgroup > 0: setting one side removes the other
                             * (ks_config_set: a flag overrides a file's choice) */
    int cond;               /* when the key applies, per ks_config_scope.applies */
    /* KT_CUSTOM: store v (given at path) in the scope's struct, or fail
     * naming path; and the dump's value (NULL: left out). */
    ks_error (*parse)(void *block, const ks_key_spec *k, const char *path, const json_t *v);
    json_t *(*dump)(const void *block, const ks_key_spec *k);
};

/* What the engine does with a key of AmgX's configs that is in no table
 * (the library's answer: config_amgx.h). */
typedef enum ks_foreign_kind {
    KS_FOREIGN_NONE, /* not known: an unknown key */
    KS_FOREIGN_WARN, /* accepted and ignored, with one warning saying why */
    KS_FOREIGN_MAP   /* the value goes to another key of the table (to) */
} ks_foreign_kind;

typedef struct ks_config_scope {
    const ks_key_spec *keys; /* parents precede their children; order = dump order */
    int nkeys;
    size_t size;             /* of the struct the keys fill ("block") */
    void (*defaults)(void *block);
    /* Rules between keys, after every given key is stored; given[i] says
     * whether keys[i] was in the config. May complete the block (values
     * that depend on other keys). NULL: none. */
    ks_error (*check)(void *block, const unsigned char *given);
    /* 0 when keys with this cond do not apply to the configuration in
     * block: the dump leaves them out (refusing them when given is the
     * check's job, with its own message). NULL: every key applies. */
    int (*applies)(const void *block, int cond);
} ks_config_scope;

/* given[i] of a scope's check: 1 when keys[i] was given, KS_GIVEN_DEFAULT
 * when the value given equals the key's default (so a key that does not
 * apply asks for nothing that would be lost). */
#define KS_GIVEN_DEFAULT 2

/* The library's keys: the "solver" tree and config_version
 * (solver/config_keys.c). Every config has them. */
extern const ks_config_scope ks_config_solver_scope;

/* ks_config_create_from_file / _from_string / _default with scope's keys
 * beside the library's (scope must outlive the config; NULL: none). */
ks_error ks_config_create_from_file_scoped(const char *path, const ks_config_scope *scope,
                                           ks_config **cfg);
ks_error ks_config_create_from_string_scoped(const char *json, const ks_config_scope *scope,
                                             ks_config **cfg);
ks_error ks_config_create_default_scoped(const ks_config_scope *scope, ks_config **cfg);
/* The struct scope's keys filled (scope->size bytes; for
 * &ks_config_solver_scope the ks_solver_params), NULL when cfg was not
 * created with that scope. Valid until the next set or destroy. */
const void *ks_config_scope_block(const ks_config *cfg, const ks_config_scope *scope);

/* Apply n (keypath, value) pairs like ks_config_set, then validate once, so
 * the order of command-line overrides does not matter (e.g. setting
 * "solver.solver" to CG before "solver.preconditioner" to NOSOLVER). Pairs
 * that would drop one another's value (the same key twice, a key after one
 * inside it, both sides of an exclusive group) are an error naming both;
 * a pair may still replace what the config already held. On error the
 * config is unchanged. */
ks_error ks_config_set_many(ks_config *cfg, int n, const char *const *keys,
                            const char *const *values);

/* ------------------------------------------------ for a scope's functions */
/* 1 when the key at path (in scope's table) was given. */
int ks_config_given(const ks_config_scope *scope, const unsigned char *given, const char *path);
/* The rule for keys that do not apply (docs/config.md, "Keys that do not
 * apply"), for any scope's check: every key of scope given (scopes and
 * "scope" labels aside) for which applies(block, cond) is 0 asks for
 * something the configuration would drop when its value is not the
 * default, so it is an error "path: <why>"; given with its default it is
 * accepted with one warning "ignored (its value is the default): <why>".
 * why writes the reason: the choice that rules the key out and what to
 * choose instead. */
ks_error ks_config_keys_not_applying(const ks_config_scope *scope, const void *block,
                                     const unsigned char *given,
                                     int (*applies)(const void *block, int cond),
                                     void (*why)(const void *block, const ks_key_spec *k,
                                                 char *buf, size_t len));
/* A warning about key path (a key accepted but ignored): emitted through
 * the library's log (warning level) once per key when the config is
 * created, and when a ks_config_set brings it in; never again after. */
void ks_config_warn(const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* "path: expected <expected>, got <JSON type>" as KS_ERR_CONFIG. */
ks_error ks_config_type_error(const char *path, const char *expected, const json_t *v);
/* v is an integer within k's range or int_set / a finite number within
 * k's range; else KS_ERR_CONFIG naming path and the allowed values. */
ks_error ks_config_check_int(const ks_key_spec *k, const char *path, const json_t *v,
                             json_int_t *out);
ks_error ks_config_check_num(const ks_key_spec *k, const char *path, const json_t *v,
                             double *out);

#ifdef __cplusplus
}
#endif
#endif
