/* Sparse matrices on a backend (sparse/sparse.h): copies between host and
 * backends, and every operation of the table, on the cpu against dense
 * references and on cuda against the cpu (patterns identical, values equal
 * to rounding); an operation the cuda table lacks must say so
 * (KS_ERR_UNSUPPORTED naming it). */
#include "ks_test.h"
#include "sparse/sparse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Random nrows x ncols CSR, about per_row entries a row (duplicates
 * summed), values +-[0.5, 1.5); every 5th row empty when holes. */
static void random_csr(ks_csr *A, ks_int nrows, ks_int ncols, int per_row, int holes,
                       uint64_t seed)
{
    ks_test_rng_seed(seed);
    int64_t cap = (int64_t)nrows * per_row + 1, ne = 0;
    ks_int *r = malloc(sizeof *r * (size_t)cap), *c = malloc(sizeof *c * (size_t)cap);
    double *v = malloc(sizeof *v * (size_t)cap);
    ck_assert(r && c && v);
    for (ks_int i = 0; i < nrows && ncols > 0; i++) {
        if (holes && i % 5 == 3)
            continue;
        for (int e = 0; e < per_row; e++) {
            r[ne] = i;
            c[ne] = (ks_int)(ks_test_rng_next() % (uint64_t)ncols);
            double mag = 0.5 + ks_test_urand();
            v[ne++] = ks_test_rng_next() & 1 ? mag : -mag;
        }
    }
    KS_CHECK(ks_csr_from_coo(nrows, ncols, ne, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

/* Dense row-major copy (n x m doubles). */
static double *dense(const ks_csr *A)
{
    double *D = calloc((size_t)A->nrows * (size_t)A->ncols + 1, sizeof *D);
    ck_assert(D);
    for (ks_int i = 0; i < A->nrows; i++)
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            D[(size_t)i * A->ncols + A->colind[k]] = A->val ? A->val[k] : 1.0;
    return D;
}

/* The matrix of S on the host (downloaded when S lives elsewhere). */
static void host_of(const ks_sparse *S, ks_csr *H) { KS_CHECK(ks_sparse_to_csr(S, H)); }

static void assert_same_pattern(const ks_csr *X, const ks_csr *Y, const char *what)
{
    ck_assert_msg(X->nrows == Y->nrows && X->ncols == Y->ncols && X->nnz == Y->nnz,
                  "%s: shapes %dx%d/%d vs %dx%d/%d", what, X->nrows, X->ncols, X->nnz,
                  Y->nrows, Y->ncols, Y->nnz);
    ck_assert_msg(!memcmp(X->rowptr, Y->rowptr, sizeof(ks_int) * ((size_t)X->nrows + 1)),
                  "%s: row pointers differ", what);
    ck_assert_msg(!X->nnz || !memcmp(X->colind, Y->colind, sizeof(ks_int) * (size_t)X->nnz),
                  "%s: columns differ", what);
}

static void assert_close(const ks_csr *X, const ks_csr *Y, double tol, const char *what)
{
    assert_same_pattern(X, Y, what);
    if (!X->val || !Y->val) {
        ck_assert_msg(!X->val && !Y->val, "%s: one is a pattern", what);
        return;
    }
    double err = ks_test_max_relerr(X->val, Y->val, X->nnz);
    ck_assert_msg(err <= tol, "%s: values differ by %g", what, err);
}

/* Dense D (n x m) equals the CSR X entry by entry, and X's columns are
 * sorted: the structural pattern may hold zeros. */
static void assert_dense_eq(const ks_csr *X, const double *D, double tol, const char *what)
{
    double *E = dense(X);
    for (size_t k = 0; k < (size_t)X->nrows * X->ncols; k++)
        ck_assert_msg(fabs(E[k] - D[k]) <= tol * (1.0 + fabs(D[k])), "%s: entry %zu: %g vs %g",
                      what, k, E[k], D[k]);
    for (ks_int i = 0; i < X->nrows; i++)
        for (ks_int k = X->rowptr[i] + 1; k < X->rowptr[i + 1]; k++)
            ck_assert_msg(X->colind[k - 1] < X->colind[k], "%s: row %d unsorted", what, i);
    free(E);
}

/* ------------------------------------------------------------- copies */
START_TEST(copies_roundtrip)
{
    ks_backend *cpu, *cpu2;
    KS_CHECK(ks_backend_create("cpu", &cpu));
    KS_CHECK(ks_backend_create("cpu", &cpu2));
    ks_csr H, B;
    random_csr(&H, 40, 30, 4, 1, 11);
    ks_sparse A, C, P;
    KS_CHECK(ks_sparse_from_csr(cpu, &H, 0, &A));
    ck_assert(A.be == cpu && A.val != NULL && A.val != H.val);
    ck_assert(ks_sparse_bytes(&A) == 41.0 * 4 + H.nnz * 12.0);
    KS_CHECK(ks_sparse_copy(&A, cpu2, &C));
    ck_assert(C.be == cpu2);
    host_of(&C, &B);
    assert_close(&B, &H, 0.0, "copy");
    ks_csr_free(&B);
    KS_CHECK(ks_sparse_move(&C, cpu));
    ck_assert(C.be == cpu);
    host_of(&C, &B);
    assert_close(&B, &H, 0.0, "move");
    ks_csr_free(&B);
    /* a pattern: no values travel */
    KS_CHECK(ks_sparse_from_csr(cpu, &H, 1, &P));
    ck_assert_ptr_null(P.val);
    ck_assert(ks_sparse_bytes(&P) == 41.0 * 4 + H.nnz * 4.0);
    host_of(&P, &B);
    ck_assert_ptr_null(B.val);
    ks_csr_free(&B);
    /* views and adoption on a host-memory backend */
    ks_sparse V = ks_sparse_view_csr(cpu, &H);
    ck_assert(V.colind == H.colind);
    ks_csr W = ks_sparse_as_csr(&V);
    ck_assert(W.val == H.val && W.nnz == H.nnz);
    ks_csr Hc;
    KS_CHECK(ks_csr_copy(&H, &Hc));
    ks_int *ci = Hc.colind;
    ks_sparse D;
    KS_CHECK(ks_sparse_adopt_csr(cpu, &Hc, &D));
    ck_assert(D.colind == ci && Hc.colind == NULL);
    ks_sparse_free(&D);
    ks_sparse_free(&A);
    ks_sparse_free(&C);
    ks_sparse_free(&P);
    ks_sparse_free(&P); /* a freed matrix frees nothing twice */
    ks_csr_free(&H);
    ks_backend_destroy(cpu);
    ks_backend_destroy(cpu2);
}
END_TEST

/* ---------------------------------------------- operations on one backend */
/* Every operation on backend `name`: on the cpu against dense references,
 * elsewhere against the cpu. */
static void check_ops(const char *name)
{
    ks_backend *be, *cpu;
    KS_CHECK(ks_backend_create(name, &be));
    KS_CHECK(ks_backend_create("cpu", &cpu));
    const ks_sparse_ops *ops = ks_sparse_ops_of(be);
    ck_assert_ptr_nonnull(ops);
    const int ref = ops == ks_sparse_ops_of(cpu); /* the cpu checks against dense loops */
    ks_csr Ah, Bh, Ph, Xh, Yh;
    random_csr(&Ah, 60, 60, 5, 1, 21);
    random_csr(&Bh, 60, 35, 3, 1, 22);
    random_csr(&Ph, 60, 20, 2, 0, 23);
    ks_sparse A, B, P, R, T, C, Ac, X, Y;
    KS_CHECK(ks_sparse_from_csr(be, &Ah, 0, &A));
    KS_CHECK(ks_sparse_from_csr(be, &Bh, 0, &B));
    KS_CHECK(ks_sparse_from_csr(be, &Ph, 0, &P));
    /* the cpu results, to compare other backends with */
    ks_sparse Ac_cpu, B_cpu, P_cpu, T_cpu, C_cpu, R_cpu, Ac2_cpu;
    KS_CHECK(ks_sparse_from_csr(cpu, &Ah, 0, &Ac_cpu));
    KS_CHECK(ks_sparse_from_csr(cpu, &Bh, 0, &B_cpu));
    KS_CHECK(ks_sparse_from_csr(cpu, &Ph, 0, &P_cpu));
    KS_CHECK(ks_sparse_transpose(&Ac_cpu, &T_cpu));
    KS_CHECK(ks_sparse_spgemm(&Ac_cpu, &B_cpu, &C_cpu));
    KS_CHECK(ks_sparse_transpose(&P_cpu, &R_cpu));
    KS_CHECK(ks_sparse_rap(&R_cpu, &Ac_cpu, &P_cpu, &Ac2_cpu));
    double *Ad = dense(&Ah), *Bd = dense(&Bh), *Pd = dense(&Ph);

    /* transpose */
    ks_error e = ks_sparse_transpose(&A, &T);
    if (!ops->transpose) {
        ck_assert_int_eq(e, KS_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "transpose"));
    } else {
        KS_CHECK(e);
        host_of(&T, &Xh);
        if (ref) {
            double *Td = calloc(60 * 60, sizeof *Td);
            for (int i = 0; i < 60; i++)
                for (int j = 0; j < 60; j++)
                    Td[j * 60 + i] = Ad[i * 60 + j];
            assert_dense_eq(&Xh, Td, 0.0, "transpose");
            free(Td);
        } else {
            host_of(&T_cpu, &Yh);
            assert_close(&Xh, &Yh, 0.0, "transpose vs cpu");
            ks_csr_free(&Yh);
        }
        ks_csr_free(&Xh);
        ks_sparse_free(&T);
        /* of a pattern */
        ks_sparse Sp;
        KS_CHECK(ks_sparse_from_csr(be, &Ah, 1, &Sp));
        KS_CHECK(ks_sparse_transpose(&Sp, &T));
        ck_assert_ptr_null(T.val);
        host_of(&T, &Xh);
        host_of(&T_cpu, &Yh);
        assert_same_pattern(&Xh, &Yh, "pattern transpose");
        ks_csr_free(&Xh);
        ks_csr_free(&Yh);
        ks_sparse_free(&T);
        ks_sparse_free(&Sp);
    }

    /* product, numeric product into the pattern */
    e = ks_sparse_spgemm(&A, &B, &C);
    if (!ops->spgemm) {
        ck_assert_int_eq(e, KS_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), name));
    } else {
        KS_CHECK(e);
        host_of(&C, &Xh);
        if (ref) {
            double *Cd = calloc(60 * 35, sizeof *Cd);
            for (int i = 0; i < 60; i++)
                for (int k = 0; k < 60; k++)
                    for (int j = 0; j < 35; j++)
                        Cd[i * 35 + j] += Ad[i * 60 + k] * Bd[k * 35 + j];
            assert_dense_eq(&Xh, Cd, 1e-14, "product");
            free(Cd);
        } else {
            host_of(&C_cpu, &Yh);
            assert_close(&Xh, &Yh, 1e-14, "product vs cpu");
            ks_csr_free(&Yh);
        }
        if (ops->spgemm_numeric) {
            /* scale A by 2: the numeric pass into C's pattern gives 2 C */
            double two[60];
            for (int i = 0; i < 60; i++)
                two[i] = 2.0;
            double *d2;
            KS_CHECK(ks_be_upload_new(be, two, sizeof two, (void **)&d2, "test scale"));
            KS_CHECK(ks_sparse_scale_rows(&A, d2));
            KS_CHECK(ks_sparse_spgemm_numeric(&A, &B, &C));
            host_of(&C, &Yh);
            for (ks_int k = 0; k < Xh.nnz; k++)
                ck_assert(Yh.val[k] == 2.0 * Xh.val[k]);
            ks_csr_free(&Yh);
            double half[60];
            for (int i = 0; i < 60; i++)
                half[i] = 0.5;
            KS_CHECK(be->ops->upload(be, d2, half, sizeof half));
            KS_CHECK(ks_sparse_scale_rows(&A, d2));
            be->ops->free(be, d2);
            /* a pattern missing an entry of the product: an error */
            ks_sparse Cs;
            ks_csr Ch;
            KS_CHECK(ks_csr_copy(&Xh, &Ch));
            ks_int row = 0;
            while (Ch.rowptr[row + 1] == Ch.rowptr[row])
                row++;
            /* drop row `row`'s first entry from the pattern */
            for (ks_int k = Ch.rowptr[row]; k < Ch.nnz - 1; k++) {
                Ch.colind[k] = Ch.colind[k + 1];
                Ch.val[k] = Ch.val[k + 1];
            }
            for (ks_int i = row + 1; i <= Ch.nrows; i++)
                Ch.rowptr[i]--;
            Ch.nnz--;
            KS_CHECK(ks_sparse_from_csr(be, &Ch, 0, &Cs));
            ck_assert_int_eq(ks_sparse_spgemm_numeric(&A, &B, &Cs), KS_ERR_ARG);
            ks_sparse_free(&Cs);
            ks_csr_free(&Ch);
        } else {
            ck_assert_int_eq(ks_sparse_spgemm_numeric(&A, &B, &C), KS_ERR_UNSUPPORTED);
        }
        ks_csr_free(&Xh);
        ks_sparse_free(&C);
    }

    /* Galerkin product R A P with R = P^T, and its numeric pass */
    e = ops->transpose ? ks_sparse_transpose(&P, &R) : KS_ERR_UNSUPPORTED;
    if (e == KS_OK) {
        e = ks_sparse_rap(&R, &A, &P, &Ac);
        if (!ops->rap) {
            ck_assert_int_eq(e, KS_ERR_UNSUPPORTED);
        } else {
            KS_CHECK(e);
            host_of(&Ac, &Xh);
            if (ref) {
                double *AP = calloc(60 * 20, sizeof *AP), *G = calloc(20 * 20, sizeof *G);
                for (int i = 0; i < 60; i++)
                    for (int k = 0; k < 60; k++)
                        for (int j = 0; j < 20; j++)
                            AP[i * 20 + j] += Ad[i * 60 + k] * Pd[k * 20 + j];
                for (int i = 0; i < 20; i++)
                    for (int k = 0; k < 60; k++)
                        for (int j = 0; j < 20; j++)
                            G[i * 20 + j] += Pd[k * 20 + i] * AP[k * 20 + j];
                assert_dense_eq(&Xh, G, 1e-13, "Galerkin product");
                free(AP);
                free(G);
            } else {
                host_of(&Ac2_cpu, &Yh);
                assert_close(&Xh, &Yh, 1e-13, "Galerkin product vs cpu");
                ks_csr_free(&Yh);
            }
            int outside = -1;
            if (ops->rap_numeric) {
                KS_CHECK(ks_sparse_rap_numeric(&R, &A, &P, &Ac, &outside));
                ck_assert_int_eq(outside, 0);
                host_of(&Ac, &Yh);
                assert_close(&Yh, &Xh, 1e-13, "numeric Galerkin product");
                ks_csr_free(&Yh);
            } else {
                ck_assert_int_eq(ks_sparse_rap_numeric(&R, &A, &P, &Ac, &outside),
                                 KS_ERR_UNSUPPORTED);
            }
            ks_csr_free(&Xh);
            ks_sparse_free(&Ac);
        }
        ks_sparse_free(&R);
    } else {
        ck_assert_int_eq(e, KS_ERR_UNSUPPORTED);
    }

    /* diagonal, l1 sums, row scaling */
    double *dd, *ss, dh[60], sh[60];
    KS_CHECK(ks_be_alloc(be, sizeof dh, (void **)&dd, "test diagonal"));
    KS_CHECK(ks_be_alloc(be, sizeof sh, (void **)&ss, "test l1 sums"));
    KS_CHECK(ks_sparse_diagonal(&A, dd));
    KS_CHECK(ks_sparse_offdiag_abs_sums(&A, ss));
    KS_CHECK(be->ops->download(be, dh, dd, sizeof dh));
    KS_CHECK(be->ops->download(be, sh, ss, sizeof sh));
    for (int i = 0; i < 60; i++) {
        double off = 0.0;
        for (int j = 0; j < 60; j++)
            off += j == i ? 0.0 : fabs(Ad[i * 60 + j]);
        ck_assert(dh[i] == Ad[i * 60 + i]);
        ck_assert(fabs(sh[i] - off) <= 1e-15 * off);
    }
    KS_CHECK(ks_sparse_scale_rows(&A, dd));
    host_of(&A, &Xh);
    for (ks_int i = 0; i < Xh.nrows; i++)
        for (ks_int k = Xh.rowptr[i]; k < Xh.rowptr[i + 1]; k++)
            ck_assert(Xh.val[k] == Ah.val[k] * dh[i]);
    ks_csr_free(&Xh);
    be->ops->free(be, dd);
    be->ops->free(be, ss);

    /* patterns: same, different */
    int same = -1;
    KS_CHECK(ks_sparse_same_pattern(&A, &A, &same));
    ck_assert_int_eq(same, 1);
    ks_sparse A2;
    KS_CHECK(ks_sparse_from_csr(be, &Ah, 1, &A2));
    KS_CHECK(ks_sparse_same_pattern(&A, &A2, &same));
    ck_assert_int_eq(same, 1);
    ks_sparse_free(&A2);
    random_csr(&Yh, 60, 60, 5, 1, 99);
    KS_CHECK(ks_sparse_from_csr(be, &Yh, 0, &A2));
    KS_CHECK(ks_sparse_same_pattern(&A, &A2, &same));
    ck_assert_int_eq(same, 0);
    ks_sparse_free(&A2);
    ks_csr_free(&Yh);

    /* validation and row sorting */
    e = ks_sparse_validate(&A);
    if (!ops->validate) {
        ck_assert_int_eq(e, KS_ERR_UNSUPPORTED);
    } else {
        KS_CHECK(e);
        ks_csr Bad;
        KS_CHECK(ks_csr_copy(&Ah, &Bad));
        ks_int row = 7;
        while (Bad.rowptr[row + 1] - Bad.rowptr[row] < 2)
            row++;
        ks_int k0 = Bad.rowptr[row];
        ks_int t = Bad.colind[k0];
        Bad.colind[k0] = Bad.colind[k0 + 1];
        Bad.colind[k0 + 1] = t;
        double tv = Bad.val[k0];
        Bad.val[k0] = Bad.val[k0 + 1];
        Bad.val[k0 + 1] = tv;
        KS_CHECK(ks_sparse_from_csr(be, &Bad, 0, &X));
        ck_assert_int_eq(ks_sparse_validate(&X), KS_ERR_ARG);
        char want[32];
        snprintf(want, sizeof want, "row %d", (int)row);
        ck_assert_msg(strstr(ks_last_error(), want), "%s", ks_last_error());
        e = ks_sparse_sort_rows(&X);
        if (ops->sort_rows) {
            KS_CHECK(e);
            KS_CHECK(ks_sparse_validate(&X));
            host_of(&X, &Yh);
            assert_close(&Yh, &Ah, 0.0, "sorted rows");
            ks_csr_free(&Yh);
        } else {
            ck_assert_int_eq(e, KS_ERR_UNSUPPORTED);
        }
        ks_sparse_free(&X);
        ks_csr_free(&Bad);
    }

    /* operands on different backend objects, shapes that do not fit */
    ks_backend *other;
    KS_CHECK(ks_backend_create(name, &other));
    KS_CHECK(ks_sparse_from_csr(other, &Bh, 0, &Y));
    ck_assert_int_eq(ks_sparse_spgemm(&A, &Y, &C), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "different backend"));
    ks_sparse_free(&Y);
    ks_backend_destroy(other);
    ck_assert_int_eq(ks_sparse_spgemm(&B, &A, &C), KS_ERR_SIZE);
    ck_assert_int_eq(ks_sparse_spgemm(&A, &B, &A), KS_ERR_ARG);

    free(Ad);
    free(Bd);
    free(Pd);
    ks_sparse_free(&A);
    ks_sparse_free(&B);
    ks_sparse_free(&P);
    ks_sparse_free(&Ac_cpu);
    ks_sparse_free(&B_cpu);
    ks_sparse_free(&P_cpu);
    ks_sparse_free(&T_cpu);
    ks_sparse_free(&C_cpu);
    ks_sparse_free(&R_cpu);
    ks_sparse_free(&Ac2_cpu);
    ks_csr_free(&Ah);
    ks_csr_free(&Bh);
    ks_csr_free(&Ph);
    ks_backend_destroy(be);
    ks_backend_destroy(cpu);
}

START_TEST(ops_cpu) { check_ops("cpu"); }
END_TEST

START_TEST(ops_cuda) { check_ops("cuda"); }
END_TEST

/* A cuda copy comes back bit for bit. */
START_TEST(copies_cuda)
{
    ks_backend *cu, *cpu;
    KS_CHECK(ks_backend_create("cuda", &cu));
    KS_CHECK(ks_backend_create("cpu", &cpu));
    ks_csr H, B;
    random_csr(&H, 300, 200, 6, 1, 5);
    ks_sparse D, C;
    KS_CHECK(ks_sparse_from_csr(cu, &H, 0, &D));
    ck_assert(D.be == cu);
    KS_CHECK(ks_sparse_copy(&D, cpu, &C));
    host_of(&C, &B);
    assert_close(&B, &H, 0.0, "cuda -> cpu");
    ks_csr_free(&B);
    KS_CHECK(ks_sparse_move(&C, cu));
    ck_assert(C.be == cu);
    host_of(&C, &B);
    assert_close(&B, &H, 0.0, "cpu -> cuda");
    ks_csr_free(&B);
    ks_sparse E;
    ck_assert_int_eq(ks_sparse_adopt_csr(cu, &H, &E), KS_ERR_ARG); /* device memory */
    ks_sparse_free(&D);
    ks_sparse_free(&C);
    ks_csr_free(&H);
    ks_backend_destroy(cu);
    ks_backend_destroy(cpu);
}
END_TEST

#ifdef KS_HAVE_CUDA
ks_error ks_cu_scan(ks_backend *be, const ks_int *in, ks_int n, ks_int *out, ks_int *total,
                    const char *what);
ks_error ks_cu_count_eq(ks_backend *be, const int *x, ks_int n, int value, ks_int *count);

/* The device scan (row counts -> row pointers) and count, against the
 * host, at sizes around the 1024-entry tiles, in place and out of place;
 * a total past 32 bits is refused. */
START_TEST(scan_cuda)
{
    ks_backend *cu;
    KS_CHECK(ks_backend_create("cuda", &cu));
    const ks_int sizes[] = {0, 1, 5, 1023, 1024, 1025, 4097, 300001};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        ks_int n = sizes[t];
        ks_int *h = malloc(sizeof *h * ((size_t)n + 1)), *want = malloc(sizeof *want * ((size_t)n + 1));
        ks_int *got = malloc(sizeof *got * ((size_t)n + 1));
        int *f = malloc(sizeof *f * ((size_t)n + 1));
        ck_assert(h && want && got && f);
        ks_test_rng_seed((uint64_t)n + 7);
        want[0] = 0;
        ks_int ones = 0;
        for (ks_int i = 0; i < n; i++) {
            h[i] = (ks_int)(ks_test_rng_next() % 50);
            want[i + 1] = want[i] + h[i];
            f[i] = (int)(h[i] % 3) - 1;
            ones += f[i] == 1;
        }
        ks_int *d = NULL, *o = NULL, tot = -1;
        int *fd = NULL;
        KS_CHECK(ks_be_upload_new(cu, h, sizeof *h * ((size_t)n + 1), (void **)&d, "in"));
        KS_CHECK(ks_be_alloc(cu, sizeof *o * ((size_t)n + 1), (void **)&o, "out"));
        KS_CHECK(ks_cu_scan(cu, d, n, o, &tot, "test"));
        KS_CHECK(cu->ops->download(cu, got, o, sizeof *got * ((size_t)n + 1)));
        ck_assert_int_eq(tot, want[n]);
        ck_assert(memcmp(got, want, sizeof *got * ((size_t)n + 1)) == 0);
        KS_CHECK(ks_cu_scan(cu, d, n, d, NULL, "test in place"));
        KS_CHECK(cu->ops->download(cu, got, d, sizeof *got * ((size_t)n + 1)));
        ck_assert(memcmp(got, want, sizeof *got * ((size_t)n + 1)) == 0);
        KS_CHECK(ks_be_upload_new(cu, f, sizeof *f * ((size_t)n + 1), (void **)&fd, "flags"));
        ks_int c = -1;
        KS_CHECK(ks_cu_count_eq(cu, fd, n, 1, &c));
        ck_assert_int_eq(c, ones);
        cu->ops->free(cu, d);
        cu->ops->free(cu, o);
        cu->ops->free(cu, fd);
        free(h);
        free(want);
        free(got);
        free(f);
    }
    /* 3 x 1e9 does not fit */
    ks_int big[3] = {1000000000, 1000000000, 1000000000}, *d = NULL, *o = NULL, tot;
    KS_CHECK(ks_be_upload_new(cu, big, sizeof big, (void **)&d, "big"));
    KS_CHECK(ks_be_alloc(cu, sizeof(ks_int) * 4, (void **)&o, "out"));
    ck_assert_int_eq(ks_cu_scan(cu, d, 3, o, &tot, "huge product"), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "huge product"));
    cu->ops->free(cu, d);
    cu->ops->free(cu, o);
    ks_backend_destroy(cu);
}
END_TEST
#endif

int main(void)
{
    Suite *s = suite_create("sparse");
    TCase *tc = tcase_create("cpu");
    tcase_add_test(tc, copies_roundtrip);
    tcase_add_test(tc, ops_cpu);
    suite_add_tcase(s, tc);
    if (ks_test_have_cuda()) {
        TCase *tg = tcase_create("cuda");
        tcase_add_test(tg, ops_cuda);
        tcase_add_test(tg, copies_cuda);
#ifdef KS_HAVE_CUDA
        tcase_add_test(tg, scan_cuda);
#endif
        suite_add_tcase(s, tg);
    } else {
        ks_test_skip(3, "no CUDA device: sparse operations, copies and scans on cuda");
    }
    return ks_test_run(s);
}
