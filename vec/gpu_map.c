/* The GPU map (vec/gpu.h): which device the k-th process of a node takes.
 * Pure: the GPU count is a parameter, so tests fake any node. */
#include "gpu.h"

#include <stdlib.h>
#include <string.h>

const char *ks_gpu_map_resolve(const char *map, const char **what)
{
    const char *env = getenv("KS_GPU_MAP");
    *what = "GPU map";
    if (map)
        return map;
    if (env && env[0]) {
        *what = "KS_GPU_MAP";
        return env;
    }
    return "local";
}

/* A map's list: its entries (decimal) and how many. */
static ks_error parse_list(const char *map, const char *what, int *list, int max, int *n)
{
    *n = 0;
    for (const char *s = map;; s++) {
        long v = 0;
        const char *d = s;
        while (*s >= '0' && *s <= '9' && v <= 1000000)
            v = v * 10 + (*s++ - '0');
        if (s == d || (*s != ',' && *s != '\0') || v > 1000000)
            return ks_seterr(KS_ERR_ARG,
                             "%s \"%s\": expected local, none, a GPU index or a list of them "
                             "(e.g. 0,2,1,3)", what, map);
        if (*n == max)
            return ks_seterr(KS_ERR_ARG, "%s \"%s\": more than %d entries", what, map, max);
        list[(*n)++] = (int)v;
        if (*s == '\0')
            return KS_OK;
    }
}

ks_error ks_gpu_map_pick(const char *map, const char *what, int local_rank, int ngpus,
                         int *device)
{
    *device = -1;
    if (!map || local_rank < 0)
        return ks_seterr(KS_ERR_ARG, "%s: no map, or a negative local rank", what);
    if (!strcmp(map, "none"))
        return KS_OK;
    /* The syntax first, so a typo reads the same on every node. */
    int list[256], n = 0;
    const int local = !strcmp(map, "local");
    if (!local)
        KS_TRY(parse_list(map, what, list, 256, &n));
    if (ngpus < 1)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "%s \"%s\": this node has no GPU (none that CUDA sees, or ksolve was "
                         "built without CUDA)",
                         what, map);
    for (int i = 0; i < n; i++)
        if (list[i] >= ngpus)
            return ks_seterr(KS_ERR_ARG, "%s \"%s\": GPU %d, but this node has %d (0 to %d)",
                             what, map, list[i], ngpus, ngpus - 1);
    *device = local ? local_rank % ngpus : list[local_rank % n];
    return KS_OK;
}
