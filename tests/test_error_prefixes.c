/* Error messages name each context once: an invalid CSR handed to
 * ks_matrix_create gives exactly "ks_matrix_create: invalid CSR: <what>"
 * (it once read "invalid CSR: invalid CSR: ..."), and the same defect
 * through the other paths that check a host CSR (every format's host
 * layout, the sparse validation, the cpu AMG kernels, the sparse products)
 * carries no prefix twice. The cuda paths (sparse/cuda/rows.cu's
 * ks_cu_check, amg/cuda/spectral.cu, smooth_prolongator.cu) build their
 * messages the same way, once each: they run with the GPU tests. */
#include "amg/cpu/amg_cpu.h"
#include "ks_test.h"
#include "sparse/cpu/csr_kernels.h"
#include "sparse/sparse.h"
#include "spmv/other_formats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* 1 when some ": "-separated context of msg (all but the last part, the
 * cause) appears twice. */
static int repeats_a_prefix(const char *msg)
{
    char part[16][160];
    int n = 0;
    const char *p = msg;
    for (const char *q; n < 16 && (q = strstr(p, ": ")) != NULL; p = q + 2)
        snprintf(part[n++], sizeof part[0], "%.*s", (int)(q - p), p);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(part[i], part[j]) == 0)
                return 1;
    return 0;
}

/* A 3 x 3 CSR with one defect (kind 0..4), in static storage. */
static ks_csr bad_csr(int kind)
{
    static ks_int rp[4], ci[6];
    static double v[6];
    const ks_int rp0[4] = {0, 2, 4, 6}, ci0[6] = {0, 1, 0, 1, 1, 2};
    memcpy(rp, rp0, sizeof rp);
    memcpy(ci, ci0, sizeof ci);
    for (int k = 0; k < 6; k++)
        v[k] = 1.0 + k;
    switch (kind) {
    case 0: ci[3] = 0; break;  /* row 1: column 0 after column 0 */
    case 1: ci[5] = 7; break;  /* row 2: column 7 out of range */
    case 2: v[4] = NAN; break; /* row 2: not finite */
    case 3: rp[0] = 1; break;  /* rowptr[0] */
    case 4: rp[2] = 1; break;  /* rowptr decreases */
    }
    ks_csr A = {3, 3, 6, rp, ci, v};
    return A;
}

static const char *const what[] = {
    "row 1: column 0 after column 0 (columns must be sorted and unique)",
    "row 2: column index 7 out of range [0, 3)",
    "row 2, column 1: value nan is not finite",
    "row 0: rowptr[0] = 1 (expected 0)",
    "row 1: rowptr decreases from 2 to 1",
};
#define NKIND ((int)(sizeof what / sizeof what[0]))

START_TEST(matrix_create_names_invalid_csr_once)
{
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cpu", &be));
    const char *fmts[] = {"auto", "csr"};
    for (int f = 0; f < 2; f++)
        for (int k = 0; k < NKIND; k++) {
            ks_csr A = bad_csr(k);
            ks_matrix *M = NULL;
            ks_error e = ks_matrix_create(be, &A, fmts[f], NULL, &M);
            ck_assert_int_eq(e, k == 2 ? KS_ERR_NUMERIC : KS_ERR_ARG);
            ck_assert_ptr_null(M);
            char want[256];
            snprintf(want, sizeof want, "ks_matrix_create: invalid CSR: %s", what[k]);
            ck_assert_str_eq(ks_last_error(), want);
        }
    ks_backend_destroy(&be);
}
END_TEST

typedef ks_error (*layout_fn)(const ks_csr *, const ks_spmv_params *, void **);

/* Every host layout, the sparse validation, the cpu AMG kernels and the
 * sparse products: the defect named, no context twice. */
START_TEST(other_paths_name_each_context_once)
{
    static const struct {
        const char *name;
        layout_fn build;
    } layouts[] = {
        /* the layouts that validate the CSR themselves (ks_ofmt_check_csr;
         * the CSR and ELL families check less: ks_matrix_create validates
         * before any layout is built) */
        {"coo", ks_coo_layout_build}, {"jds", ks_jds_layout_build},
        {"hyb", ks_hyb_layout_build}, {"dia", ks_dia_layout_build},
        {"bdia", ks_bdia_layout_build},
    };
    ks_backend *be = NULL;
    KS_CHECK(ks_backend_create("cpu", &be));
    for (int k = 0; k < NKIND; k++) {
        char msg[8][1024];
        int n = 0;
        for (size_t f = 0; f < sizeof layouts / sizeof layouts[0]; f++) {
            ks_csr A = bad_csr(k);
            void *L = NULL;
            ck_assert_msg(layouts[f].build(&A, NULL, &L) != KS_OK, "%s took defect %d", layouts[f].name, k);
            ck_assert_ptr_null(L);
            ck_assert_msg(!repeats_a_prefix(ks_last_error()), "%s layout: %s", layouts[f].name,
                          ks_last_error());
        }
        ks_csr A = bad_csr(k), C;
        ks_sparse S;
        S = ks_sparse_view_csr(be, &A);
        ck_assert_int_ne(ks_sparse_validate(&S), KS_OK);
        snprintf(msg[n++], sizeof msg[0], "%s", ks_last_error());
        double rho;
        ck_assert_int_ne(ks_amg_spectral_radius_dinv_a(&A, 5, &rho), KS_OK);
        snprintf(msg[n++], sizeof msg[0], "%s", ks_last_error());
        ks_csr P;
        ck_assert_int_ne(ks_amg_smooth_prolongator(&A, &A, 1.0, &P), KS_OK);
        snprintf(msg[n++], sizeof msg[0], "%s", ks_last_error());
        if (k != 0 && k != 2) { /* the products check structure, not order or values */
            ck_assert_int_ne(ks_csr_transpose(&A, &C), KS_OK);
            snprintf(msg[n++], sizeof msg[0], "%s", ks_last_error());
            ck_assert_int_ne(ks_csr_spgemm(&A, &A, &C), KS_OK);
            snprintf(msg[n++], sizeof msg[0], "%s", ks_last_error());
            ck_assert_int_ne(ks_csr_rap(&A, &A, &A, &C), KS_OK);
            snprintf(msg[n++], sizeof msg[0], "%s", ks_last_error());
        }
        for (int i = 0; i < n; i++) {
            ck_assert_msg(strstr(msg[i], what[k]), "'%s' lacks '%s'", msg[i], what[k]);
            ck_assert_msg(!repeats_a_prefix(msg[i]), "a context twice: %s", msg[i]);
        }
    }
    ks_backend_destroy(&be);
}
END_TEST

/* The checker itself finds the old message's repetition. */
START_TEST(checker_finds_repetition)
{
    ck_assert(repeats_a_prefix("ks_matrix_create: invalid CSR: invalid CSR: row 1: x"));
    ck_assert(repeats_a_prefix("a.mtx: a.mtx: out of host memory"));
    ck_assert(!repeats_a_prefix("ks_matrix_create: invalid CSR: row 1: column 0 after column 0"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("error_prefixes");
    TCase *tc = tcase_create("error_prefixes");
    tcase_add_test(tc, matrix_create_names_invalid_csr_once);
    tcase_add_test(tc, other_paths_name_each_context_once);
    tcase_add_test(tc, checker_finds_repetition);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
