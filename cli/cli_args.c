/* Command-line parsing for ksolve. Every option that changes what is solved
 * becomes a config override (key path + value), applied after the config
 * file, so the command line always wins and there is one validation path. */
#include "cli.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void ks_cli_usage(FILE *out)
{
    fprintf(out,
            "Usage: ksolve [CONFIG.json] [options]\n"
            "\n"
            "Solve A x = b with a preconditioned Krylov method on the CPU and/or a GPU.\n"
            "With no arguments, solves the built-in problem (3D Poisson, 7-point, 64^3)\n"
            "with PCG + classical AMG and prints a report.\n"
            "\n"
            "Options (they override CONFIG.json):\n"
            "  -A, --matrix FILE        matrix in Matrix Market format (.mtx or .mtx.gz)\n"
            "  -b, --rhs FILE           right-hand side vector (Matrix Market); default b = A*1;\n"
            "                           an n x k array solves k systems at once\n"
            "      --nrhs K             K right-hand sides, solved together (generated b:\n"
            "                           column j > 0 is A x_j, x_j[i] = sin(j (i+1)))\n"
            "  -x, --solution FILE      write the solution x (Matrix Market array)\n"
            "      --x0 FILE            initial guess x0 (Matrix Market vector); default x0 = 0\n"
            "      --backend NAME       cpu, cuda, or cpu,cuda (both, compared side by side)\n"
            "  -p, --param KEY=VALUE    set any config key, e.g. -p solver.max_iters=200\n"
            "                           -p solver.preconditioner=JACOBI_L1 -p matrix.n=[30,30]\n"
            "                           (VALUE is JSON when it parses as JSON, else a string)\n"
            "      --threads N          OpenMP threads (0: OMP_NUM_THREADS, else all cores; under\n"
            "                           mpirun each rank its share of them)\n"
            "      --halo NAME          under mpirun: how halo values travel between GPUs:\n"
            "                           auto, staged, direct (CUDA-aware MPI), nccl or ipc\n"
            "                           (CUDA IPC between the GPUs of one host)\n"
            "      --json FILE          write all statistics and the residual history as JSON\n"
            "                           (FILE '-': standard output)\n"
            "  -q, --quiet              no report or monitor output, only errors and warnings\n"
            "                           (on stderr); the exit status says how the solve went\n"
            "      --print-config       print the full config with defaults filled in, and exit\n"
            "  -h, --help               show this help and exit\n"
            "  -V, --version            show the version and exit\n"
            "\n"
            "Exit status: 0 converged, 1 not converged (max iterations, breakdown,\n"
            "divergence, NaN), 2 usage, input or runtime error.\n"
            "Config keys: docs/config.md. Report fields: docs/cli.md.\n");
}

void ks_cli_args_free(ks_cli_args *a)
{
    for (int i = 0; i < a->nsets; i++) {
        free(a->set_key[i]);
        free(a->set_value[i]);
    }
    memset(a, 0, sizeof *a);
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Record an override. A file path or backend name is stored as a JSON
 * string so that a name that happens to be valid JSON ("123") stays a
 * string; -p values and numbers (--threads) are stored as given. */
static ks_error add_set(ks_cli_args *a, const char *key, size_t keylen, const char *value,
                        int as_string)
{
    if (a->nsets >= KS_CLI_MAX_SETS)
        return ks_seterr(KS_ERR_ARG, "too many overrides (at most %d)", KS_CLI_MAX_SETS);
    char *k = dup_n(key, keylen), *v = NULL;
    if (k && as_string) {
        json_t *js = json_string(value);
        v = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
        json_decref(js);
        if (!js) {
            ks_error e = ks_seterr(KS_ERR_ARG, "%s: '%s' is not valid UTF-8", k, value);
            free(k);
            return e;
        }
    } else if (k) {
        v = dup_n(value, strlen(value));
    }
    if (!k || !v) {
        free(k);
        free(v);
        return ks_seterr(KS_ERR_MEMORY, "out of memory parsing the command line");
    }
    a->set_key[a->nsets] = k;
    a->set_value[a->nsets] = v;
    a->nsets++;
    return KS_OK;
}

typedef struct opt_def {
    const char *shortname; /* "-A" or NULL */
    const char *longname;  /* "--matrix" */
    const char *key;       /* config key the value goes to, or NULL */
    int id;
} opt_def;

/* O_SET: a file or backend name for key; O_SET_NUM: a number (JSON) for key. */
enum { O_SET, O_SET_NUM, O_PARAM, O_JSON, O_HELP, O_VERSION, O_PRINT, O_QUIET };

static const opt_def opts[] = {
    {"-A", "--matrix", "matrix.file", O_SET},
    {"-b", "--rhs", "rhs.file", O_SET},
    {"-x", "--solution", "solution.file", O_SET},
    {NULL, "--x0", "x0.file", O_SET},
    {NULL, "--backend", "backend", O_SET},
    {NULL, "--threads", "threads", O_SET_NUM},
    {NULL, "--halo", "mpi.halo", O_SET},
    {NULL, "--nrhs", "rhs.count", O_SET_NUM},
    {"-p", "--param", NULL, O_PARAM},
    {NULL, "--json", NULL, O_JSON},
    {"-h", "--help", NULL, O_HELP},
    {"-V", "--version", NULL, O_VERSION},
    {NULL, "--print-config", NULL, O_PRINT},
    {"-q", "--quiet", NULL, O_QUIET},
};

static int takes_value(int id)
{
    return id == O_SET || id == O_SET_NUM || id == O_PARAM || id == O_JSON;
}

ks_error ks_cli_parse(int argc, char **argv, ks_cli_args *a)
{
    memset(a, 0, sizeof *a);
    int only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (only_positional || arg[0] != '-') {
            if (a->config_file)
                return ks_seterr(KS_ERR_ARG,
                                 "more than one config file given ('%s' and '%s')",
                                 a->config_file, arg);
            a->config_file = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            only_positional = 1;
            continue;
        }
        /* Match "--long", "--long=VALUE", "-X", "-XVALUE". */
        const opt_def *o = NULL;
        const char *value = NULL;
        for (size_t k = 0; k < sizeof opts / sizeof opts[0] && !o; k++) {
            size_t ll = strlen(opts[k].longname);
            if (strncmp(arg, opts[k].longname, ll) == 0 && (arg[ll] == '\0' || arg[ll] == '=')) {
                o = &opts[k];
                if (arg[ll] == '=') {
                    if (!takes_value(o->id))
                        return ks_seterr(KS_ERR_ARG, "option '%s' takes no value",
                                         opts[k].longname);
                    value = arg + ll + 1;
                }
            } else if (opts[k].shortname && strncmp(arg, opts[k].shortname, 2) == 0 &&
                       arg[1] != '-') {
                o = &opts[k];
                if (arg[2] != '\0') {
                    if (!takes_value(o->id))
                        return ks_seterr(KS_ERR_ARG, "unknown option '%s'", arg);
                    value = arg + 2;
                }
            }
        }
        if (!o)
            return ks_seterr(KS_ERR_ARG, "unknown option '%s'", arg);
        if (takes_value(o->id) && !value) {
            if (i + 1 >= argc)
                return ks_seterr(KS_ERR_ARG, "option '%s' needs a value", arg);
            value = argv[++i];
        }
        switch (o->id) {
        case O_SET:
        case O_SET_NUM:
            if (!value[0])
                return ks_seterr(KS_ERR_ARG, "option '%s' needs a non-empty value", arg);
            KS_TRY(add_set(a, o->key, strlen(o->key), value, o->id == O_SET));
            break;
        case O_PARAM: {
            const char *eq = strchr(value, '=');
            if (!eq || eq == value)
                return ks_seterr(KS_ERR_ARG, "-p expects KEY=VALUE (e.g. solver.max_iters=200), "
                                             "got '%s'",
                                 value);
            KS_TRY(add_set(a, value, (size_t)(eq - value), eq + 1, 0));
            break;
        }
        case O_JSON:
            a->json_file = value;
            break;
        case O_HELP: a->help = 1; break;
        case O_VERSION: a->version = 1; break;
        case O_PRINT: a->print_config = 1; break;
        case O_QUIET: a->quiet = 1; break;
        }
    }
    return KS_OK;
}
