/* Name tables of enumerations: one table per enum, owned by the module that
 * defines the enum, read by the config parser (allowed values, "did you
 * mean"), the reports and the JSON output alike. Not installed. */
#ifndef KS_NAMES_H
#define KS_NAMES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_name {
    const char *name;
    int value;
    int alias; /* 1: an accepted spelling (another library's), never printed */
} ks_name;

/* Tables end with an entry whose name is NULL. */

/* Entry spelled exactly `name`, else NULL. */
const ks_name *ks_name_exact(const ks_name *t, const char *name);
/* Entry spelled `name` in any case, else NULL. */
const ks_name *ks_name_nocase(const ks_name *t, const char *name);
/* *value of `name` (any case); 0 when found, -1 when not. */
int ks_name_value(const ks_name *t, const char *name, int *value);
/* Canonical (non-alias) name of value, "?" when none. */
const char *ks_name_of(const ks_name *t, int value);
/* "A, B, C": the canonical names, into buf (truncated to len). */
const char *ks_name_list(const ks_name *t, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
