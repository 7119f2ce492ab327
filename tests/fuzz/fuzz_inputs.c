/* Deterministic mutation fuzzer for the two readers of user input: the
 * Matrix Market reader (matrices and vectors) and the config loader.
 *
 * Seeds come from tests/fuzz/corpus (KS_FUZZ_CORPUS); each iteration takes
 * a seed, applies a few random edits (bit flips, bytes, tokens that probe
 * number parsing and JSON structure, cuts, splices with another seed) from
 * a fixed-seed generator, and feeds the result to the reader. The same
 * seed and iteration count give the same inputs on every machine, so a
 * failure reproduces; scripts/test runs it in a sanitizer build
 * (ASan + UBSan halting on the first report), where a crash, undefined
 * behaviour or leak fails the test case.
 *
 * What is asserted beyond "no crash": a read either succeeds with a valid
 * CSR (or a vector of the length it reports) or fails with a message; a
 * config either fails with KS_ERR_CONFIG/KS_ERR_IO and a message, or loads,
 * and then its dump loads again to the same dump. */
#include "ks_test.h"
#include "spmv/other_formats.h"

#include <dirent.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SEEDS = 64, FUZZ_MAX_LEN = 1 << 14 };

typedef struct seed {
    unsigned char *data;
    size_t len;
} seed;

static seed seeds[MAX_SEEDS];
static int nseeds;

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* Load the corpus files whose names start with prefix, in name order. */
static void load_corpus(const char *prefix)
{
    const char *dir = getenv("KS_FUZZ_CORPUS");
    ck_assert_msg(dir != NULL, "KS_FUZZ_CORPUS is not set");
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    ck_assert_msg(n >= 0, "cannot read the corpus folder %s", dir);
    nseeds = 0;
    for (int i = 0; i < n; i++) {
        if (has_prefix(list[i]->d_name, prefix) && nseeds < MAX_SEEDS) {
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
            FILE *f = fopen(path, "rb");
            ck_assert_msg(f != NULL, "cannot open %s", path);
            seed *s = &seeds[nseeds++];
            s->data = malloc(FUZZ_MAX_LEN);
            ck_assert_ptr_nonnull(s->data);
            s->len = fread(s->data, 1, FUZZ_MAX_LEN, f);
            fclose(f);
        }
        free(list[i]);
    }
    free(list);
    ck_assert_msg(nseeds > 0, "no corpus files %s* in %s", prefix, dir);
}

static void free_corpus(void)
{
    for (int i = 0; i < nseeds; i++)
        free(seeds[i].data);
    nseeds = 0;
}

static size_t pick(size_t n) { return n ? (size_t)(ks_test_rng_next() % n) : 0; }

/* Tokens that probe the parsers' edges: signs, huge and tiny numbers,
 * non-numbers, overflowing integers, JSON punctuation, header words. */
static const char *const tokens[] = {
    "-1", "0", "1", "-0", "2147483647", "2147483648", "-2147483649", "4294967296",
    "9223372036854775807", "99999999999999999999", "1e308", "1e309", "-1e309", "1e-320",
    "nan", "inf", "-inf", "0x10", "1.", ".", "e5", "+", "--1", " ", "\t", "\n", "\r\n",
    "%", "%%MatrixMarket", "matrix", "coordinate", "array", "real", "integer", "pattern",
    "complex", "general", "symmetric", "skew-symmetric", "hermitian", "{", "}", "[", "]",
    "\"", ",", ":", "null", "true", "false", "\"solver\"", "\"AMG\"", "\"preconditioner\"",
    "\"smoother\"", "{\"solver\": \"GS\"}", "\"scope\"", "\\u0000", "\xff", "\xc3\xa9",
};
#define NTOKENS ((int)(sizeof tokens / sizeof tokens[0]))

/* One random edit of buf (length *len, capacity FUZZ_MAX_LEN). */
static void mutate_once(unsigned char *buf, size_t *len)
{
    size_t n = *len;
    switch (pick(7)) {
    case 0: /* flip a bit */
        if (n)
            buf[pick(n)] ^= (unsigned char)(1u << pick(8));
        break;
    case 1: /* overwrite a byte */
        if (n)
            buf[pick(n)] = (unsigned char)pick(256);
        break;
    case 2: { /* insert a token */
        const char *t = tokens[pick(NTOKENS)];
        size_t tl = strlen(t), at = pick(n + 1);
        if (n + tl < FUZZ_MAX_LEN) {
            memmove(buf + at + tl, buf + at, n - at);
            memcpy(buf + at, t, tl);
            *len = n + tl;
        }
        break;
    }
    case 3: { /* replace a run of digits or letters by a token */
        if (!n)
            break;
        size_t a = pick(n), b = a;
        while (b < n && buf[b] != ' ' && buf[b] != '\n' && buf[b] != ',' && buf[b] != ':')
            b++;
        const char *t = tokens[pick(NTOKENS)];
        size_t tl = strlen(t);
        if (n - (b - a) + tl < FUZZ_MAX_LEN) {
            memmove(buf + a + tl, buf + b, n - b);
            memcpy(buf + a, t, tl);
            *len = n - (b - a) + tl;
        }
        break;
    }
    case 4: { /* delete a range */
        if (!n)
            break;
        size_t a = pick(n), k = 1 + pick(n - a < 16 ? n - a : 16);
        memmove(buf + a, buf + a + k, n - a - k);
        *len = n - k;
        break;
    }
    case 5: { /* duplicate a range */
        if (!n)
            break;
        size_t a = pick(n), k = 1 + pick(n - a < 32 ? n - a : 32);
        if (n + k < FUZZ_MAX_LEN) {
            memmove(buf + a + k, buf + a, n - a);
            *len = n + k;
        }
        break;
    }
    default: { /* splice: cut here, continue with another seed's tail */
        const seed *o = &seeds[pick((size_t)nseeds)];
        size_t at = pick(n + 1), from = pick(o->len + 1), k = o->len - from;
        if (at + k < FUZZ_MAX_LEN) {
            memcpy(buf + at, o->data + from, k);
            *len = at + k;
        }
        break;
    }
    }
}

/* The next input: a seed with one edit (three times in four), else 2 to 8;
 * NUL-terminated for the string API. Single edits keep many inputs valid,
 * so the code behind the header and the JSON syntax is reached too. */
static size_t next_input(unsigned char *buf)
{
    const seed *s = &seeds[pick((size_t)nseeds)];
    size_t len = s->len;
    memcpy(buf, s->data, len);
    for (size_t k = pick(4) ? 1 : 2 + pick(7); k > 0; k--)
        mutate_once(buf, &len);
    buf[len] = '\0';
    return len;
}

static const char *write_input(const unsigned char *buf, size_t len)
{
    const char *path = ks_test_tmpfile(".mtx");
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_int_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
    return path;
}

static long iterations(void)
{
    const char *s = getenv("KS_FUZZ_ITERS");
    long n = s ? strtol(s, NULL, 10) : 0;
    return n > 0 ? n : 2000;
}

/* A failed call must leave a message naming what went wrong. */
static void expect_message(ks_error e)
{
    ck_assert_msg(e != KS_ERR_ARG, "argument error on a file's content: %s", ks_last_error());
    ck_assert_msg(ks_last_error()[0] != '\0', "error %s without a message", ks_error_name(e));
}

/* The host layouts of the diagonal formats (dia, bdia) of a matrix that
 * was read: built, they multiply like the CSR (or refuse with a message).
 * Empty rows and blocks, which mutated files have, are where undefined
 * behaviour hid. */
typedef struct layout_ops {
    const char *name;
    ks_error (*build)(const ks_csr *, const ks_spmv_params *, void **);
    void (*apply)(const void *, double, const double *, double, double *);
    void (*release)(void *);
} layout_ops;

static const layout_ops layouts[] = {
    {"dia", ks_dia_layout_build, ks_dia_layout_apply, ks_dia_layout_free},
    {"bdia", ks_bdia_layout_build, ks_bdia_layout_apply, ks_bdia_layout_free},
};

static void check_layouts(const ks_csr *A, long it)
{
    if ((int64_t)A->nrows * A->ncols > 1 << 16)
        return; /* a dense-ish layout of a huge, sparse, mutated matrix: not the point */
    double *x = malloc(sizeof(double) * (size_t)(A->ncols + 1));
    double *y0 = malloc(sizeof(double) * (size_t)(A->nrows + 1));
    double *y1 = malloc(sizeof(double) * (size_t)(A->nrows + 1));
    ck_assert(x && y0 && y1);
    for (ks_int j = 0; j < A->ncols; j++)
        x[j] = 1.0 + (double)(j % 7);
    ks_csr_spmv_ref(A, 1.0, x, 0.0, y0);
    for (size_t f = 0; f < sizeof layouts / sizeof layouts[0]; f++) {
        void *L = NULL;
        ks_clear_error();
        ks_error e = layouts[f].build(A, NULL, &L);
        if (e != KS_OK) {
            expect_message(e);
            continue;
        }
        layouts[f].apply(L, 1.0, x, 0.0, y1);
        for (ks_int i = 0; i < A->nrows; i++) {
            double scale = 0.0; /* the sum's own size: the layouts add in another order */
            for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
                scale += fabs(A->val[k] * x[A->colind[k]]);
            ck_assert_msg(y1[i] == y0[i] || fabs(y1[i] - y0[i]) <= 1e-12 * scale ||
                              (!isfinite(y0[i]) && !isfinite(y1[i])),
                          "iteration %ld: %s row %lld: %g, csr %g", it, layouts[f].name,
                          (long long)i, y1[i], y0[i]);
        }
        layouts[f].release(L);
    }
    free(x);
    free(y0);
    free(y1);
}

START_TEST(fuzz_matrix_reader)
{
    load_corpus("mm_");
    ks_test_rng_seed_with(0x6d6d, 11);
    unsigned char *buf = malloc(FUZZ_MAX_LEN + 1);
    ck_assert_ptr_nonnull(buf);
    long ok = 0, n = iterations();
    for (long it = 0; it < n; it++) {
        size_t len = next_input(buf);
        const char *path = write_input(buf, len);
        ks_csr A;
        memset(&A, 0, sizeof A);
        ks_mm_info info;
        ks_clear_error();
        ks_error e = ks_mm_read_csr(path, &A, &info);
        if (e == KS_OK) {
            ck_assert_msg(ks_csr_validate(&A) == KS_OK, "iteration %ld: read an invalid CSR: %s",
                          it, ks_last_error());
            check_layouts(&A, it);
            ok++;
            ks_csr_free(&A);
        } else {
            expect_message(e);
        }
        remove(path);
    }
    /* The mutations must keep some inputs readable, or the fuzzer tests
     * only the header check. */
    ck_assert_msg(ok > n / 50, "only %ld of %ld inputs read", ok, n);
    free(buf);
    free_corpus();
}
END_TEST

START_TEST(fuzz_vector_reader)
{
    load_corpus("vec_");
    ks_test_rng_seed_with(0x7665, 13);
    unsigned char *buf = malloc(FUZZ_MAX_LEN + 1);
    ck_assert_ptr_nonnull(buf);
    long ok = 0, n = iterations();
    for (long it = 0; it < n; it++) {
        size_t len = next_input(buf);
        const char *path = write_input(buf, len);
        double *v = NULL;
        ks_int m = -1;
        ks_clear_error();
        ks_error e = ks_mm_read_vector(path, &v, &m);
        if (e == KS_OK) {
            ck_assert_msg(m >= 0 && (m == 0 || v != NULL), "iteration %ld: length %lld", it,
                          (long long)m);
            double sum = 0.0; /* touch every entry: ASan checks the length */
            for (ks_int i = 0; i < m; i++)
                sum += v[i];
            (void)sum;
            ok++;
        } else {
            expect_message(e);
        }
        free(v);
        remove(path);
    }
    ck_assert_msg(ok > n / 50, "only %ld of %ld inputs read", ok, n);
    free(buf);
    free_corpus();
}
END_TEST

/* Paths and values for ks_config_set on configs that loaded. */
static const char *const set_keys[] = {
    "solver.solver", "solver.preconditioner", "solver.preconditioner.solver",
    "solver.preconditioner.smoother", "solver.preconditioner.smoother.chebyshev_degree",
    "solver.preconditioner.algorithm", "solver.max_iters", "solver.smoother.relaxation_factor",
    "solver.preconditioner.selector", "solver.x.y", "solver..a", "config_version",
};

/* Key names and values for structural edits of a config: the library's
 * and AmgX's names, the choices of the choice keys, numbers at the edges
 * of the ranges, and values of the wrong type. */
static const char *const key_names[] = {
    "solver", "preconditioner", "smoother", "scope", "max_iters", "tolerance", "convergence",
    "norm", "algorithm", "selector", "interpolator", "strength_threshold", "max_row_sum",
    "interp_max_elements", "interp_truncation_factor", "aggressive_levels",
    "aggressive_interpolator", "relaxation_factor", "chebyshev_degree", "chebyshev_lower",
    "presweeps", "postsweeps", "cycle", "max_levels", "coarse_max_rows", "coarse_solver",
    "hmis_block_rows", "seed", "spmv_format", "hierarchy_precision", "config_version",
    "print_grid_stats", "obtain_timings", "determinism_flag", "chebyshev_polynomial_order",
    "coarsest_sweeps", "matrix_coloring_scheme", "gmres_n_restart", "bogus_key", "monitor_residual",
};
static const char *const json_values[] = {
    "\"PCG\"", "\"AMG\"", "\"JACOBI\"", "\"JACOBI_L1\"", "\"CHEBYSHEV\"", "\"GS\"",
    "\"AGGREGATION\"", "\"CLASSICAL\"", "\"HMIS\"", "\"PMIS\"", "\"SIZE_2\"", "\"D1\"",
    "\"NOSOLVER\"", "\"FGMRES\"", "\"W\"", "\"csr\"", "\"FLOAT\"", "\"\"", "0", "1", "-1",
    "2", "3", "11", "100000", "2147483648", "0.5", "1.0", "2.0", "-0.0", "1e300", "1e-300",
    "true", "false", "null", "[]", "[1, 2]", "{}", "{\"solver\": \"GS\"}",
    "{\"solver\": \"AMG\", \"algorithm\": \"AGGREGATION\"}",
};
#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* An object of the tree at random (the root or one nested in it). */
static json_t *random_object(json_t *root)
{
    json_t *obj = root;
    for (int depth = 0; depth < 4 && pick(3); depth++) {
        size_t n = json_object_size(obj), k = pick(n), i = 0;
        const char *key;
        json_t *v, *next = NULL;
        json_object_foreach(obj, key, v) {
            if (i++ == k && json_is_object(v))
                next = v;
        }
        if (!next)
            break;
        obj = next;
    }
    return obj;
}

/* A seed config with 1 to 3 edits of its tree: set a key (known or not) to
 * a value, or delete one. Reaches the rules between keys, which byte edits
 * seldom get past the JSON syntax to. The text in buf. */
static void next_config_tree(unsigned char *buf)
{
    const seed *s = &seeds[pick((size_t)nseeds)];
    memcpy(buf, s->data, s->len);
    buf[s->len] = '\0';
    json_t *root = json_loads((const char *)buf, 0, NULL);
    ck_assert_msg(root != NULL, "a config seed is not JSON");
    for (size_t k = 1 + pick(3); k > 0; k--) {
        json_t *obj = random_object(root);
        const char *name = key_names[pick(NELEMS(key_names))];
        if (pick(4) == 0) {
            json_object_del(obj, name);
        } else {
            json_t *v = json_loads(json_values[pick(NELEMS(json_values))], JSON_DECODE_ANY, NULL);
            ck_assert_ptr_nonnull(v);
            json_object_set_new(obj, name, v);
        }
    }
    char *text = json_dumps(root, JSON_COMPACT);
    ck_assert_ptr_nonnull(text);
    snprintf((char *)buf, FUZZ_MAX_LEN, "%s", text);
    free(text);
    json_decref(root);
}

START_TEST(fuzz_config_loader)
{
    load_corpus("cfg_");
    ks_set_log_level(KS_LOG_ERROR); /* AmgX keys warn; keep the output short */
    ks_test_rng_seed_with(0x6366, 17);
    unsigned char *buf = malloc(FUZZ_MAX_LEN + 1);
    ck_assert_ptr_nonnull(buf);
    long ok = 0, n = iterations();
    for (long it = 0; it < n; it++) {
        if (it % 2)
            next_input(buf); /* bytes: the parser */
        else
            next_config_tree(buf); /* keys and values: the rules */
        ks_config *cfg = NULL;
        ks_clear_error();
        ks_error e = ks_config_create_from_string((const char *)buf, &cfg);
        if (e != KS_OK) {
            ck_assert_msg(e == KS_ERR_CONFIG, "iteration %ld: %s: %s", it, ks_error_name(e),
                          ks_last_error());
            ck_assert_ptr_null(cfg);
            expect_message(e);
            continue;
        }
        ok++;
        /* The dump is a config that loads and dumps the same. */
        char *d = ks_config_dump(cfg);
        ck_assert_ptr_nonnull(d);
        ks_config *again = NULL;
        ck_assert_msg(ks_config_create_from_string(d, &again) == KS_OK,
                      "iteration %ld: the dump does not load: %s\n%s", it, ks_last_error(), d);
        char *d2 = ks_config_dump(again);
        ck_assert_str_eq(d, d2);
        free(d2);
        free(d);
        ks_config_destroy(&again);
        /* A set either applies or leaves the config as it was. */
        char value[64];
        snprintf(value, sizeof value, "%s", tokens[pick(NTOKENS)]);
        char *before = ks_config_dump(cfg);
        e = ks_config_set(cfg, set_keys[pick(sizeof set_keys / sizeof set_keys[0])], value);
        if (e != KS_OK) {
            expect_message(e);
            char *after = ks_config_dump(cfg);
            ck_assert_str_eq(before, after);
            free(after);
        }
        free(before);
        ks_config_destroy(&cfg);
    }
    ck_assert_msg(ok > n / 50, "only %ld of %ld configs loaded", ok, n);
    free(buf);
    free_corpus();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("inputs");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, fuzz_matrix_reader);
    tcase_add_test(tc, fuzz_vector_reader);
    tcase_add_test(tc, fuzz_config_loader);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
