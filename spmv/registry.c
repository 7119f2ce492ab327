/* Table of SpMV formats, lookup, the names per backend ("auto" is chosen
 * in auto.c). A new format is one file with a ks_spmv_format_ops plus one
 * line here (and in the names list of its backend). */
#include "csr_layout.h"
#include "csr_family.h"
#include "ell_family.h"
#include "other_formats.h"
#include "codsell.h"

#include <stdio.h>
#include <string.h>
#include <threads.h>

static const ks_spmv_format_ops *const formats[] = {
    &ks_format_csr_cpu,
#ifdef KS_HAVE_CUDA
    &ks_format_csr_vector_cuda,
    &ks_format_cusparse_csr,
    /* CSR family (issue 4) */
    &ks_format_csr_scalar_cuda,
    &ks_format_csr_adaptive_cuda,
    /* ELL family (issue 4) */
    &ks_format_ell_cuda,
    &ks_format_ellr_cuda,
    &ks_format_sliced_ell_cuda,
    &ks_format_sell_cuda,
    /* other formats (issue 4) */
    &ks_format_jds_cuda,
    &ks_format_coo_cuda,
    &ks_format_hyb_cuda,
    &ks_format_dia_cuda,
    &ks_format_bdia_cuda,
    &ks_format_codsell_cuda,
#endif
    NULL,
};

/* Public names per backend (ks_spmv_format_names), derived from the table
 * once, so a new format is one line above. */
#define KS_MAX_FORMATS 64
static const char *cpu_names[KS_MAX_FORMATS + 1];
static const char *cuda_names[KS_MAX_FORMATS + 1];
static const char *const no_names[] = {NULL};
static once_flag names_once = ONCE_FLAG_INIT;

static void names_init(void)
{
    int nc = 0, ng = 0;
    for (int i = 0; formats[i]; i++) {
        if (formats[i]->backend == KS_BACKEND_CPU && nc < KS_MAX_FORMATS)
            cpu_names[nc++] = formats[i]->name;
        else if (formats[i]->backend == KS_BACKEND_CUDA && ng < KS_MAX_FORMATS)
            cuda_names[ng++] = formats[i]->name;
    }
}

/* Formats of optional backends, so a build without them can tell "not
 * compiled in" from "unknown name". */
static const struct {
    const char *name;
    ks_backend_kind backend;
} optional_formats[] = {
    {"csr_vector", KS_BACKEND_CUDA},
    {"cusparse", KS_BACKEND_CUDA},
    /* CSR family (issue 4) */
    {"csr_scalar", KS_BACKEND_CUDA},
    {"csr_adaptive", KS_BACKEND_CUDA},
    /* ELL family (issue 4) */
    {"ell", KS_BACKEND_CUDA},
    {"ellr", KS_BACKEND_CUDA},
    {"sliced_ell", KS_BACKEND_CUDA},
    {"sell", KS_BACKEND_CUDA},
    /* other formats (issue 4) */
    {"jds", KS_BACKEND_CUDA},
    {"coo", KS_BACKEND_CUDA},
    {"hyb", KS_BACKEND_CUDA},
    {"dia", KS_BACKEND_CUDA},
    {"bdia", KS_BACKEND_CUDA},
    {"codsell", KS_BACKEND_CUDA},
};

const ks_spmv_format_ops *const *ks_spmv_format_all(void)
{
    return formats;
}

const ks_spmv_format_ops *ks_spmv_format_find(const char *name, ks_backend_kind backend)
{
    if (!name)
        return NULL;
    for (int i = 0; formats[i]; i++)
        if (formats[i]->backend == backend && strcmp(formats[i]->name, name) == 0)
            return formats[i];
    return NULL;
}

ks_backend_kind ks_spmv_format_missing_backend(const char *name)
{
    if (!name)
        return (ks_backend_kind)0;
    for (int i = 0; formats[i]; i++)
        if (strcmp(formats[i]->name, name) == 0)
            return (ks_backend_kind)0; /* compiled in */
    for (size_t i = 0; i < sizeof optional_formats / sizeof optional_formats[0]; i++)
        if (strcmp(optional_formats[i].name, name) == 0)
            return optional_formats[i].backend;
    return (ks_backend_kind)0;
}

int ks_spmv_format_name_known(const char *name, char *list, size_t len)
{
    if (name && (strcmp(name, "auto") == 0 || ks_spmv_format_missing_backend(name) != 0))
        return 1;
    for (int i = 0; name && formats[i]; i++)
        if (strcmp(formats[i]->name, name) == 0)
            return 1;
    /* "auto", the compiled-in formats, then the optional ones this build lacks */
    const size_t nopt = sizeof optional_formats / sizeof optional_formats[0];
    const size_t nfmt = sizeof formats / sizeof formats[0] - 1;
    size_t used = 0;
    for (size_t i = 0; list && len > 0 && i < 1 + nfmt + nopt; i++) {
        const char *nm = i == 0 ? "auto" : i <= nfmt ? formats[i - 1]->name
                                                      : optional_formats[i - 1 - nfmt].name;
        if (i > nfmt && ks_spmv_format_missing_backend(nm) == 0)
            continue; /* compiled in: listed already */
        int w = snprintf(list + used, len - used, "%s%s", used ? ", " : "", nm);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    return 0;
}

const char *const *ks_spmv_format_names(const char *backend)
{
    call_once(&names_once, names_init);
    if (!backend)
        return no_names;
    if (strcmp(backend, "cpu") == 0)
        return (const char *const *)cpu_names;
    if (strcmp(backend, "cuda") == 0)
        return (const char *const *)cuda_names;
    return no_names;
}

const ks_spmv_format_ops *ks_spmv_format_float(ks_backend_kind k, const char *prefer)
{
    const ks_spmv_format_ops *p = prefer ? ks_spmv_format_find(prefer, k) : NULL;
    if (p && p->float_values)
        return p;
    for (int i = 0; formats[i]; i++)
        if (formats[i]->backend == k && formats[i]->float_values)
            return formats[i];
    return NULL;
}

const char *ks_spmv_gs_where(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; formats[i]; i++) {
        if (!formats[i]->gs_sweep)
            continue;
        const char *be = ks_backend_kind_name(formats[i]->backend);
        int w = snprintf(buf + used, len - used, "%s%s on the %s backend", used ? ", " : "",
                         formats[i]->name, be);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    return buf;
}

/* The first format of backend kind k that has the op `has` tests for. */
static const char *format_with(ks_backend_kind k, int (*has)(const ks_spmv_format_ops *))
{
    const ks_spmv_format_ops *const *all = ks_spmv_format_all();
    for (int i = 0; all[i]; i++)
        if (all[i]->backend == k && has(all[i]))
            return all[i]->name;
    return NULL;
}

static int has_gs(const ks_spmv_format_ops *o) { return o->gs_sweep != NULL; }
static int has_fused_block(const ks_spmv_format_ops *o) { return o->fused_block != NULL; }

const char *ks_spmv_format_with_gs(ks_backend_kind k) { return format_with(k, has_gs); }

const char *ks_spmv_format_with_fused_block(ks_backend_kind k)
{
    return format_with(k, has_fused_block);
}
