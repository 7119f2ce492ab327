/* AmgX's config keys that are not the library's own: which are accepted
 * (with a warning saying why they change nothing here), which are another
 * name of one of ours, and which AmgX values are accepted with a warning.
 * The library's scope (config_keys.c) hands these to the config engine;
 * docs/config.md lists the same keys. Not installed. */
#ifndef KS_CONFIG_AMGX_H
#define KS_CONFIG_AMGX_H

#include "config_scope.h"

#include <stddef.h>

/* For a key path the library's table lacks (ks_config_scope.foreign_key). */
ks_foreign_kind ks_config_amgx_key(const char *path, char *to, size_t tolen, const char **why);
/* For a choice key's value not among its choices (ks_config_scope.foreign_value). */
const char *ks_config_amgx_value(const char *path, const char *value);

#endif
