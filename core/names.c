/* Lookups in the enum name tables of names.h. */
#include "names.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

const ks_name *ks_name_exact(const ks_name *t, const char *name)
{
    for (; name && t->name; t++)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

const ks_name *ks_name_nocase(const ks_name *t, const char *name)
{
    for (; name && t->name; t++)
        if (strcasecmp(t->name, name) == 0)
            return t;
    return NULL;
}

int ks_name_value(const ks_name *t, const char *name, int *value)
{
    const ks_name *e = ks_name_nocase(t, name);
    if (!e)
        return -1;
    *value = e->value;
    return 0;
}

const char *ks_name_of(const ks_name *t, int value)
{
    for (; t->name; t++)
        if (!t->alias && t->value == value)
            return t->name;
    return "?";
}

const char *ks_name_list(const ks_name *t, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    for (; t->name; t++) {
        if (t->alias)
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", t->name);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    return buf;
}
