/* Sparse matrices on a backend (sparse/sparse.h): copies between host and
 * backends, and every operation of the table, on the cpu against dense
 * references and on cuda against the cpu (patterns identical, values equal
 * to rounding); an operation the cuda table lacks must say so
 * (KS_ERR_UNSUPPORTED naming it). Then the cuda kernels against the cpu
 * bit for bit on matrices reaching each of their paths (real matrices,
 * every row bin, long rows, empty shapes), validation messages word for
 * word, memory limits (error paths free everything), 32-bit overflow, and
 * cuSPARSE's products (KS_SPGEMM=cusparse) against ours. Also the threaded
 * row-pointer scan of core/scan.c against the serial loop. */
#include "ks_test.h"
#include "core/ks_internal.h"
#include "sparse/sparse.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

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
    ks_backend_destroy(&cpu);
    ks_backend_destroy(&cpu2);
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
    ks_backend_destroy(&other);
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
    ks_backend_destroy(&be);
    ks_backend_destroy(&cpu);
}

/* ks_sparse_stack_rows against a host stacking: F's first nb rows, M's
 * rows through a monotone table, F's others; bit for bit, sorted rows kept
 * sorted; nb at either end, empty operands; the argument errors. */
static void stack_ref(const ks_csr *M, const ks_int *tab, const ks_csr *F, ks_int nb, ks_csr *B)
{
    KS_CHECK(ks_csr_alloc(B, M->nrows + F->nrows, 70, M->nnz + F->nnz));
    ks_int k = 0, r = 0;
    B->rowptr[0] = 0;
    for (ks_int i = 0; i < F->nrows + M->nrows; i++) {
        const int own = i >= nb && i < nb + M->nrows;
        const ks_csr *X = own ? M : F;
        const ks_int xi = own ? i - nb : i < nb ? i : i - M->nrows;
        for (ks_int q = X->rowptr[xi]; q < X->rowptr[xi + 1]; q++, k++) {
            B->colind[k] = own ? tab[X->colind[q]] : X->colind[q];
            B->val[k] = X->val[q];
        }
        B->rowptr[++r] = k;
    }
}

static void check_stack(const char *name)
{
    ks_backend *be, *other;
    KS_CHECK(ks_backend_create(name, &be));
    KS_CHECK(ks_backend_create(name, &other));
    ks_int tab[40];
    for (ks_int c = 0; c < 40; c++) /* monotone, with gaps: [0, 70) */
        tab[c] = c + (c > 10) * 9 + (c > 30) * 20;
    ks_int *dtab;
    KS_CHECK(ks_be_alloc(be, sizeof tab, (void **)&dtab, "test table"));
    KS_CHECK(be->ops->upload(be, dtab, tab, sizeof tab));
    const ks_int msizes[2] = {50, 0}, fsizes[2] = {20, 0};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            ks_csr Mh, Fh;
            random_csr(&Mh, msizes[a], 40, 4, 1, 11 + (uint64_t)a);
            random_csr(&Fh, fsizes[b], 70, 6, 1, 21 + (uint64_t)b);
            ks_sparse M, F;
            KS_CHECK(ks_sparse_from_csr(be, &Mh, 0, &M));
            KS_CHECK(ks_sparse_from_csr(be, &Fh, 0, &F));
            const ks_int nbs[3] = {0, Fh.nrows / 3, Fh.nrows};
            for (int t = 0; t < 3; t++) {
                ks_sparse B;
                ks_csr Bh, Ref;
                KS_CHECK(ks_sparse_stack_rows(&M, dtab, &F, nbs[t], 70, &B));
                KS_CHECK(ks_sparse_validate(&B));
                host_of(&B, &Bh);
                stack_ref(&Mh, tab, &Fh, nbs[t], &Ref);
                ck_assert_int_eq(Bh.ncols, 70);
                assert_close(&Bh, &Ref, 0.0, "stacked rows");
                ks_csr_free(&Bh);
                ks_csr_free(&Ref);
                ks_sparse_free(&B);
            }
            ks_sparse_free(&M);
            ks_sparse_free(&F);
            ks_csr_free(&Mh);
            ks_csr_free(&Fh);
        }
    /* errors: nb outside F's rows, too few columns, values in one only,
     * another backend object, no table */
    ks_csr Mh, Fh;
    random_csr(&Mh, 30, 40, 3, 0, 5);
    random_csr(&Fh, 10, 70, 3, 0, 6);
    ks_sparse M, F, Fp, Fo, B;
    KS_CHECK(ks_sparse_from_csr(be, &Mh, 0, &M));
    KS_CHECK(ks_sparse_from_csr(be, &Fh, 0, &F));
    KS_CHECK(ks_sparse_from_csr(be, &Fh, 1, &Fp));
    KS_CHECK(ks_sparse_from_csr(other, &Fh, 0, &Fo));
    ck_assert_int_eq(ks_sparse_stack_rows(&M, dtab, &F, 11, 70, &B), KS_ERR_ARG);
    ck_assert_int_eq(ks_sparse_stack_rows(&M, dtab, &F, -1, 70, &B), KS_ERR_ARG);
    ck_assert_int_eq(ks_sparse_stack_rows(&M, dtab, &F, 2, 69, &B), KS_ERR_ARG);
    ck_assert_int_eq(ks_sparse_stack_rows(&M, dtab, &Fp, 2, 70, &B), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "values in one operand only"));
    ck_assert_int_eq(ks_sparse_stack_rows(&M, dtab, &Fo, 2, 70, &B), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "different backend"));
    ck_assert_int_eq(ks_sparse_stack_rows(&M, NULL, &F, 2, 70, &B), KS_ERR_ARG);
    ck_assert_ptr_null(B.rowptr);
    if (strcmp(name, "cpu") == 0) { /* a table entry outside the columns: checked on the host */
        ks_int bad[40];
        memcpy(bad, tab, sizeof bad);
        bad[Mh.colind[Mh.nnz - 1]] = 70;
        ck_assert_int_eq(ks_sparse_stack_rows(&M, bad, &F, 2, 70, &B), KS_ERR_ARG);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "outside 0 .. 69"));
        ck_assert_ptr_null(B.rowptr);
    }
    ks_sparse_free(&M);
    ks_sparse_free(&F);
    ks_sparse_free(&Fp);
    ks_sparse_free(&Fo);
    ks_csr_free(&Mh);
    ks_csr_free(&Fh);
    be->ops->free(be, dtab);
    ks_backend_destroy(&other);
    ks_backend_destroy(&be);
}

/* ks_sparse_extract_rows against the host rows: any order, repeats, an
 * empty row, none at all; a row outside A refused on the cpu. */
static void check_extract(const char *name)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create(name, &be));
    ks_csr Ah;
    random_csr(&Ah, 60, 50, 5, 1, 31);
    ks_sparse A, P, B;
    KS_CHECK(ks_sparse_from_csr(be, &Ah, 0, &A));
    KS_CHECK(ks_sparse_from_csr(be, &Ah, 1, &P));
    const ks_int idx[7] = {5, 0, 59, 5, 3, 58, 17}; /* row 3: empty (holes) */
    ks_int *didx;
    KS_CHECK(ks_be_alloc(be, sizeof idx, (void **)&didx, "test rows"));
    KS_CHECK(be->ops->upload(be, didx, idx, sizeof idx));
    for (int pat = 0; pat < 2; pat++)
        for (ks_int n = 0; n <= 7; n += 7) {
            KS_CHECK(ks_sparse_extract_rows(pat ? &P : &A, didx, n, &B));
            ks_csr Bh;
            host_of(&B, &Bh);
            ck_assert_int_eq(Bh.nrows, n);
            ck_assert_int_eq(Bh.ncols, 50);
            ck_assert((Bh.val == NULL) == pat);
            for (ks_int q = 0; q < n; q++) {
                const ks_int a = Ah.rowptr[idx[q]], len = Ah.rowptr[idx[q] + 1] - a;
                ck_assert_int_eq(Bh.rowptr[q + 1] - Bh.rowptr[q], len);
                for (ks_int k = 0; k < len; k++) {
                    ck_assert_int_eq(Bh.colind[Bh.rowptr[q] + k], Ah.colind[a + k]);
                    ck_assert(pat || Bh.val[Bh.rowptr[q] + k] == Ah.val[a + k]);
                }
            }
            ks_csr_free(&Bh);
            ks_sparse_free(&B);
        }
    ck_assert_int_eq(ks_sparse_extract_rows(&A, NULL, 3, &B), KS_ERR_ARG);
    ck_assert_int_eq(ks_sparse_extract_rows(&A, didx, -1, &B), KS_ERR_ARG);
    if (strcmp(name, "cpu") == 0) {
        const ks_int bad[2] = {4, 60};
        ck_assert_int_eq(ks_sparse_extract_rows(&A, bad, 2, &B), KS_ERR_ARG);
        ck_assert_ptr_nonnull(strstr(ks_last_error(), "row 60 of 60"));
        ck_assert_ptr_null(B.rowptr);
    }
    be->ops->free(be, didx);
    ks_sparse_free(&A);
    ks_sparse_free(&P);
    ks_csr_free(&Ah);
    ks_backend_destroy(&be);
}

/* ks_sparse_mark_cols and ks_sparse_split_cols against a host reference:
 * 60 compact columns, the owned ones nb .. nb + nown - 1, the others
 * numbered through a monotone table of the used ones; values and
 * patterns, empty rows, every column owned or none; an unsorted row and a
 * non-finite value reported; the argument errors. */
static void check_split(const char *name)
{
    ks_backend *be;
    KS_CHECK(ks_backend_create(name, &be));
    ks_csr Th;
    random_csr(&Th, 40, 60, 6, 1, 41);
    const ks_int cases[3][2] = {{25, 20}, {0, 60}, {0, 0}}; /* nb, nown */
    for (int pat = 0; pat < 2; pat++)
        for (int t = 0; t < 3; t++) {
            const ks_int nb = cases[t][0], nown = cases[t][1], next = 60 - nown;
            ks_sparse T, L, G;
            KS_CHECK(ks_sparse_from_csr(be, &Th, pat, &T));
            unsigned char used[60], *dused;
            KS_CHECK(ks_be_alloc(be, 60, (void **)&dused, "test flags"));
            int unsorted = 1;
            KS_CHECK(ks_sparse_mark_cols(&T, dused, &unsorted));
            KS_CHECK(be->ops->download(be, used, dused, 60));
            ck_assert_int_eq(unsorted, 0);
            for (ks_int c = 0; c < 60; c++) {
                int u = 0;
                for (ks_int k = 0; k < Th.nnz; k++)
                    u |= Th.colind[k] == c;
                ck_assert_int_eq(used[c], u);
            }
            ks_int gnum[60], ng = 0, *dgnum;
            for (ks_int k = 0; k < next; k++)
                gnum[k] = used[k < nb ? k : k + nown] ? ng++ : -1;
            KS_CHECK(ks_be_alloc(be, sizeof gnum, (void **)&dgnum, "test table"));
            KS_CHECK(be->ops->upload(be, dgnum, gnum, sizeof gnum));
            ks_int nonfinite = -1;
            KS_CHECK(ks_sparse_split_cols(&T, nb, nown, dgnum, ng, &L, &G, &nonfinite));
            ck_assert_int_eq(nonfinite, 0);
            KS_CHECK(ks_sparse_validate(&L));
            KS_CHECK(ks_sparse_validate(&G));
            ks_csr Lh, Gh;
            host_of(&L, &Lh);
            host_of(&G, &Gh);
            ck_assert_int_eq(Lh.ncols, nown);
            ck_assert_int_eq(Gh.ncols, ng);
            ck_assert((Lh.val == NULL) == pat && (Gh.val == NULL) == pat);
            ck_assert_int_eq(Lh.nnz + Gh.nnz, Th.nnz);
            for (ks_int i = 0; i < Th.nrows; i++) {
                ks_int ql = Lh.rowptr[i], qg = Gh.rowptr[i];
                for (ks_int k = Th.rowptr[i]; k < Th.rowptr[i + 1]; k++) {
                    const ks_int c = Th.colind[k];
                    const int own = c >= nb && c < nb + nown;
                    const ks_csr *X = own ? &Lh : &Gh;
                    const ks_int q = own ? ql++ : qg++;
                    ck_assert_int_eq(X->colind[q], own ? c - nb : gnum[c < nb ? c : c - nown]);
                    ck_assert(pat || X->val[q] == Th.val[k]);
                }
                ck_assert_int_eq(ql, Lh.rowptr[i + 1]);
                ck_assert_int_eq(qg, Gh.rowptr[i + 1]);
            }
            ks_csr_free(&Lh);
            ks_csr_free(&Gh);
            ks_sparse_free(&L);
            ks_sparse_free(&G);
            be->ops->free(be, dgnum);
            be->ops->free(be, dused);
            ks_sparse_free(&T);
        }
    /* a row that descends, a value that is not finite */
    ks_csr Bad;
    KS_CHECK(ks_csr_copy(&Th, &Bad));
    ks_int *row = Bad.colind + Bad.rowptr[1];
    const ks_int tmp = row[0];
    row[0] = row[1];
    row[1] = tmp;
    Bad.val[Bad.nnz - 1] = NAN;
    ks_sparse B, L, G;
    KS_CHECK(ks_sparse_from_csr(be, &Bad, 0, &B)); /* not checked: a split input */
    unsigned char *dused;
    KS_CHECK(ks_be_alloc(be, 60, (void **)&dused, "test flags"));
    int unsorted = 0;
    KS_CHECK(ks_sparse_mark_cols(&B, dused, &unsorted));
    ck_assert_int_eq(unsorted, 1);
    ks_int zero[60] = {0}, *dz, nonfinite = 0;
    KS_CHECK(ks_be_alloc(be, sizeof zero, (void **)&dz, "test table"));
    KS_CHECK(be->ops->upload(be, dz, zero, sizeof zero));
    KS_CHECK(ks_sparse_split_cols(&B, 10, 20, dz, 1, &L, &G, &nonfinite));
    ck_assert_int_eq(nonfinite, 1);
    ks_sparse_free(&L);
    ks_sparse_free(&G);
    /* errors: the owned range beyond the columns, no table, aliased outputs */
    ck_assert_int_eq(ks_sparse_split_cols(&B, 50, 20, dz, 1, &L, &G, &nonfinite), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "owned columns 50 .. 69 of 60"));
    ck_assert_int_eq(ks_sparse_split_cols(&B, 10, 20, NULL, 1, &L, &G, &nonfinite), KS_ERR_ARG);
    ck_assert_int_eq(ks_sparse_split_cols(&B, 10, 20, dz, 1, &L, &L, &nonfinite), KS_ERR_ARG);
    ck_assert_int_eq(ks_sparse_mark_cols(&B, NULL, &unsorted), KS_ERR_ARG);
    ck_assert_ptr_null(L.rowptr);
    be->ops->free(be, dz);
    be->ops->free(be, dused);
    ks_sparse_free(&B);
    ks_csr_free(&Bad);
    ks_csr_free(&Th);
    ks_backend_destroy(&be);
}

START_TEST(split_cpu) { check_split("cpu"); }
END_TEST

START_TEST(split_cuda) { check_split("cuda"); }
/* ks_sparse_merge_blocks against a host merge (G's entries below nb
 * picked by value, not by place): rows empty in one block or both, nb at
 * either end (every ghost above, every ghost below) and between, no ghost
 * block, no rows, patterns; bit for bit, sorted, valid where both blocks
 * are. Then the wrapper's argument errors. */
static void merge_ref(const ks_csr *L, const ks_csr *G, ks_int nb, ks_csr *M)
{
    const ks_int gn = G ? G->nnz : 0;
    KS_CHECK(ks_csr_alloc(M, L->nrows, L->ncols + (G ? G->ncols : 0), L->nnz + gn));
    if (!L->val) {
        free(M->val);
        M->val = NULL;
    }
    ks_int m = 0;
    M->rowptr[0] = 0;
    for (ks_int i = 0; i < L->nrows; i++) {
        for (int part = 0; part < 3; part++) {
            const ks_csr *X = part == 1 ? L : G;
            for (ks_int k = X ? X->rowptr[i] : 0; X && k < X->rowptr[i + 1]; k++) {
                const ks_int c = X->colind[k];
                if ((part == 0 && c >= nb) || (part == 2 && c < nb))
                    continue;
                M->colind[m] = part == 0 ? c : part == 1 ? c + nb : c + L->ncols;
                if (M->val)
                    M->val[m] = X->val[k];
                m++;
            }
        }
        M->rowptr[i + 1] = m;
    }
    ck_assert_int_eq(m, M->nnz);
}

/* A ghost block's shape: entries (1 to 3, sorted columns) in rows
 * i % 4 == 1 only. */
static void sparse_rows(ks_csr *A, ks_int nrows, ks_int ncols, uint64_t seed)
{
    ks_test_rng_seed(seed);
    const size_t cap = 3 * ((size_t)nrows + 1);
    ks_int *r = malloc(sizeof *r * cap), *c = malloc(sizeof *c * cap);
    double *v = malloc(sizeof *v * cap);
    ck_assert(r && c && v);
    ks_int ne = 0;
    for (ks_int i = 1; i < nrows; i += 4)
        for (int e = 0; e <= (int)(ks_test_rng_next() % 3); e++) {
            r[ne] = i;
            c[ne] = (ks_int)(ks_test_rng_next() % (uint64_t)ncols);
            v[ne++] = ks_test_urand() - 0.5;
        }
    KS_CHECK(ks_csr_from_coo(nrows, ncols, ne, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

static void check_merge(const char *name)
{
    ks_backend *be, *other;
    KS_CHECK(ks_backend_create(name, &be));
    KS_CHECK(ks_backend_create(name, &other));
    const ks_int rows[2] = {70, 0};
    for (int r = 0; r < 2; r++)
        for (int gh = 0; gh < 3; gh++) /* G: none, a ghost block's, no row empty */
            for (int pat = 0; pat < 2; pat++) {
                ks_csr Lh, Gh; /* L: every 5th row empty */
                random_csr(&Lh, rows[r], 40, 5, 1, 41 + (uint64_t)r);
                if (gh == 1)
                    sparse_rows(&Gh, rows[r], 30, 51);
                else
                    random_csr(&Gh, rows[r], 30, 2, 0, 52);
                ks_sparse L, G;
                KS_CHECK(ks_sparse_from_csr(be, &Lh, pat, &L));
                KS_CHECK(ks_sparse_from_csr(be, &Gh, pat, &G));
                if (pat) {
                    free(Lh.val);
                    free(Gh.val);
                    Lh.val = Gh.val = NULL;
                }
                L.valid = G.valid = gh != 2; /* M valid only where both are */
                const ks_int nbs[4] = {0, 1, 13, 30};
                for (int t = 0; t < (gh ? 4 : 1); t++) {
                    ks_sparse M;
                    ks_csr Mh, Ref;
                    KS_CHECK(ks_sparse_merge_blocks(&L, gh ? &G : NULL, nbs[t], &M));
                    ck_assert_ptr_eq(M.be, be);
                    ck_assert_int_eq(M.valid, gh != 2);
                    KS_CHECK(ks_sparse_validate(&M)); /* sorted, in range */
                    host_of(&M, &Mh);
                    merge_ref(&Lh, gh ? &Gh : NULL, nbs[t], &Ref);
                    ck_assert_int_eq(Mh.ncols, gh ? 70 : 40);
                    assert_close(&Mh, &Ref, 0.0, "merged blocks");
                    ck_assert(!Mh.val || !Mh.nnz ||
                              !memcmp(Mh.val, Ref.val, sizeof(double) * (size_t)Mh.nnz));
                    ks_csr_free(&Mh);
                    ks_csr_free(&Ref);
                    ks_sparse_free(&M);
                }
                ks_sparse_free(&L);
                ks_sparse_free(&G);
                ks_csr_free(&Lh);
                ks_csr_free(&Gh);
            }
    /* errors: NULL or aliased operands, rows apart, nb outside G's columns
     * (or not 0 without G), values in one only, another backend object,
     * more than 2^31 entries or columns; M left empty */
    ks_csr Lh, Gh, Gs;
    random_csr(&Lh, 30, 40, 3, 0, 5);
    random_csr(&Gh, 30, 20, 2, 0, 6);
    random_csr(&Gs, 29, 20, 2, 0, 7);
    ks_sparse L, G, Gp, Go, Gr, M;
    KS_CHECK(ks_sparse_from_csr(be, &Lh, 0, &L));
    KS_CHECK(ks_sparse_from_csr(be, &Gh, 0, &G));
    KS_CHECK(ks_sparse_from_csr(be, &Gh, 1, &Gp));
    KS_CHECK(ks_sparse_from_csr(other, &Gh, 0, &Go));
    KS_CHECK(ks_sparse_from_csr(be, &Gs, 0, &Gr));
    ck_assert_int_eq(ks_sparse_merge_blocks(NULL, &G, 0, &M), KS_ERR_ARG);
    ck_assert_ptr_null(M.rowptr);
    ck_assert_int_eq(ks_sparse_merge_blocks(&L, &G, 0, NULL), KS_ERR_ARG);
    ck_assert_int_eq(ks_sparse_merge_blocks(&L, &G, 0, &L), KS_ERR_ARG);
    ck_assert_ptr_nonnull(L.rowptr); /* an aliased output is not touched */
    ck_assert_int_eq(ks_sparse_merge_blocks(&L, &Gr, 0, &M), KS_ERR_ARG);
    ck_assert_int_eq(ks_sparse_merge_blocks(&L, &G, -1, &M), KS_ERR_ARG);
    ck_assert_int_eq(ks_sparse_merge_blocks(&L, &G, 21, &M), KS_ERR_ARG);
    ck_assert_int_eq(ks_sparse_merge_blocks(&L, NULL, 1, &M), KS_ERR_ARG);
    ck_assert_int_eq(ks_sparse_merge_blocks(&L, &Gp, 2, &M), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "values in one operand only"));
    ck_assert_int_eq(ks_sparse_merge_blocks(&L, &Go, 2, &M), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "different backend"));
    ck_assert_ptr_null(M.rowptr);
    ks_sparse big = L, wide = G; /* sizes only: the check comes before any array is read */
    big.nnz = INT32_MAX - 1;
    ck_assert_int_eq(ks_sparse_merge_blocks(&big, &G, 2, &M), KS_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "more than 2^31"));
    wide.ncols = INT32_MAX - 10;
    ck_assert_int_eq(ks_sparse_merge_blocks(&L, &wide, 2, &M), KS_ERR_SIZE);
    ck_assert_ptr_null(M.rowptr);
    ks_sparse_free(&L);
    ks_sparse_free(&G);
    ks_sparse_free(&Gp);
    ks_sparse_free(&Go);
    ks_sparse_free(&Gr);
    ks_csr_free(&Lh);
    ks_csr_free(&Gh);
    ks_csr_free(&Gs);
    ks_backend_destroy(&other);
    ks_backend_destroy(&be);
}

START_TEST(merge_cpu) { check_merge("cpu"); }
END_TEST

START_TEST(merge_cuda) { check_merge("cuda"); }
END_TEST

START_TEST(extract_cpu) { check_extract("cpu"); }
END_TEST

START_TEST(extract_cuda) { check_extract("cuda"); }
END_TEST

START_TEST(stack_cpu) { check_stack("cpu"); }
END_TEST

START_TEST(stack_cuda) { check_stack("cuda"); }
END_TEST

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
    ks_backend_destroy(&cu);
    ks_backend_destroy(&cpu);
}
END_TEST

/* ------------------------------------ products and rows against the cpu */
/* The operations of backend `name` against the cpu's on matrices that
 * reach every path of the device kernels: real matrices, each row bin of
 * the products (one thread, a warp, a block with a shared table, a block
 * with a global table), rows longer than the sort's shared-memory tile,
 * empty shapes. Patterns must be identical and values equal bit for bit
 * (the cuda kernels sum in the cpu's order). On the cpu the same code
 * compares the cpu with itself, which keeps the tests' own code honest on
 * machines without a GPU. */

/* X and Y hold the same pattern and the same value bits. */
static void assert_bitwise(const ks_csr *X, const ks_csr *Y, const char *what)
{
    assert_same_pattern(X, Y, what);
    if (!X->val || !Y->val) {
        ck_assert_msg(!X->val && !Y->val, "%s: one is a pattern", what);
        return;
    }
    if (X->nnz == 0 || memcmp(X->val, Y->val, sizeof(double) * (size_t)X->nnz) == 0)
        return;
    long differ = 0, first = -1;
    for (ks_int k = 0; k < X->nnz; k++)
        if (memcmp(&X->val[k], &Y->val[k], sizeof(double)) != 0) {
            differ++;
            first = first < 0 ? k : first;
        }
    ck_assert_msg(0, "%s: %ld of %d values differ in their bits (first: entry %ld, %.17g vs %.17g;"
                  " max relative difference %g)", what, differ, (int)X->nnz, first,
                  X->val[first], Y->val[first], ks_test_max_relerr(X->val, Y->val, X->nnz));
}

/* The same for two matrices on any backends. */
static void same_bits(const ks_sparse *X, const ks_sparse *Y, const char *what)
{
    ks_csr Xh, Yh;
    host_of(X, &Xh);
    host_of(Y, &Yh);
    assert_bitwise(&Xh, &Yh, what);
    ks_csr_free(&Xh);
    ks_csr_free(&Yh);
}

/* Random CSR whose row i has about lens[i % nlens] entries (duplicates
 * summed, so a few less), values +-[0.5, 1.5). */
static void random_lens(ks_csr *A, ks_int nrows, ks_int ncols, const int *lens, int nlens,
                        uint64_t seed)
{
    ks_test_rng_seed(seed);
    int64_t cap = 1, ne = 0;
    for (ks_int i = 0; i < nrows; i++)
        cap += lens[i % nlens];
    ks_int *r = malloc(sizeof *r * (size_t)cap), *c = malloc(sizeof *c * (size_t)cap);
    double *v = malloc(sizeof *v * (size_t)cap);
    ck_assert(r && c && v);
    for (ks_int i = 0; i < nrows && ncols > 0; i++)
        for (int e = 0; e < lens[i % nlens]; e++) {
            r[ne] = i;
            c[ne] = (ks_int)(ks_test_rng_next() % (uint64_t)ncols);
            double mag = 0.5 + ks_test_urand();
            v[ne++] = ks_test_rng_next() & 1 ? mag : -mag;
        }
    KS_CHECK(ks_csr_from_coo(nrows, ncols, ne, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

/* An aggregation-like prolongator: P(i, i / agg), values 0.5 .. 1.25. */
static void aggregation_p(ks_int n, int agg, ks_csr *P)
{
    KS_CHECK(ks_csr_alloc(P, n, (n + agg - 1) / agg, n));
    for (ks_int i = 0; i < n; i++) {
        P->rowptr[i] = i;
        P->colind[i] = i / agg;
        P->val[i] = 0.5 + (i % 7) / 8.0;
    }
    P->rowptr[n] = n;
}

/* H with each row's entries in a random order (values following). */
static void shuffle_rows(const ks_csr *H, ks_csr *S, uint64_t seed)
{
    KS_CHECK(ks_csr_copy(H, S));
    ks_test_rng_seed(seed);
    for (ks_int i = 0; i < S->nrows; i++)
        for (ks_int k = S->rowptr[i + 1] - 1; k > S->rowptr[i]; k--) {
            ks_int t = S->rowptr[i] + (ks_int)(ks_test_rng_next() % (uint64_t)(k - S->rowptr[i] + 1));
            ks_int c = S->colind[k];
            double v = S->val[k];
            S->colind[k] = S->colind[t];
            S->val[k] = S->val[t];
            S->colind[t] = c;
            S->val[t] = v;
        }
}

/* Row i of A scaled by 1 + (i % 5) / 4 (a re-setup's new values). */
static void scale_some(ks_sparse *A)
{
    double *d = malloc(sizeof *d * ((size_t)A->nrows + 1)), *dd;
    ck_assert(d);
    for (ks_int i = 0; i < A->nrows; i++)
        d[i] = 1.0 + (i % 5) / 4.0;
    KS_CHECK(ks_be_upload_new(A->be, d, sizeof *d * ((size_t)A->nrows + 1), (void **)&dd,
                              "test scales"));
    KS_CHECK(ks_sparse_scale_rows(A, dd));
    A->be->ops->free(A->be, dd);
    free(d);
}

/* Device backends count every allocation: nothing may stay behind. */
static void assert_no_leak(ks_backend *be, size_t before, const char *what)
{
    if (ks_backend_host_memory(be))
        return; /* the cpu ops return malloc'ed arrays, not counted */
    size_t now = ks_backend_memory_in_use(be);
    ck_assert_msg(now == before, "%s: %zu bytes in use on %s, %zu before", what, now,
                  be->ops->name, before);
}

/* C = A B on both backends (bitwise), twice on be (the same bits), then
 * the numeric pass after new values in A, against the cpu's and against
 * a fresh product. Returns nnz(C). */
static ks_int compare_product(ks_backend *be, ks_backend *cpu, const ks_csr *Ah, const ks_csr *Bh,
                              const char *label)
{
    char what[200];
    ks_sparse A, B, Ac, Bc, C, C2, Cc;
    KS_CHECK(ks_sparse_from_csr(be, Ah, 0, &A));
    KS_CHECK(ks_sparse_from_csr(be, Bh, 0, &B));
    KS_CHECK(ks_sparse_from_csr(cpu, Ah, 0, &Ac));
    KS_CHECK(ks_sparse_from_csr(cpu, Bh, 0, &Bc));
    KS_CHECK(ks_sparse_spgemm(&A, &B, &C));
    KS_CHECK(ks_sparse_spgemm(&Ac, &Bc, &Cc));
    snprintf(what, sizeof what, "%s: product vs cpu", label);
    same_bits(&C, &Cc, what);
    KS_CHECK(ks_sparse_validate(&C));
    KS_CHECK(ks_sparse_spgemm(&A, &B, &C2));
    snprintf(what, sizeof what, "%s: product run twice", label);
    same_bits(&C, &C2, what);
    ks_sparse_free(&C2);
    scale_some(&A);
    scale_some(&Ac);
    KS_CHECK(ks_sparse_spgemm_numeric(&A, &B, &C));
    KS_CHECK(ks_sparse_spgemm_numeric(&Ac, &Bc, &Cc));
    snprintf(what, sizeof what, "%s: numeric product vs cpu", label);
    same_bits(&C, &Cc, what);
    KS_CHECK(ks_sparse_spgemm(&A, &B, &C2));
    snprintf(what, sizeof what, "%s: numeric product vs a fresh product", label);
    same_bits(&C, &C2, what);
    ks_int nnz = C.nnz;
    ks_sparse_free(&C2);
    ks_sparse_free(&C);
    ks_sparse_free(&Cc);
    ks_sparse_free(&A);
    ks_sparse_free(&B);
    ks_sparse_free(&Ac);
    ks_sparse_free(&Bc);
    return nnz;
}

/* Transpose (of values and of the pattern), products, Galerkin product
 * with an aggregation-like P and its numeric pass, row sorting of a
 * row-shuffled copy, validation: backend be against the cpu on Ah. */
static void compare_ops(ks_backend *be, ks_backend *cpu, const ks_csr *Ah, const char *label)
{
    char what[200];
    const size_t mem0 = ks_backend_memory_in_use(be);
    const double t0 = ks_wtime();
    ks_sparse A, Ac, T, Tc, S, Sc;
    KS_CHECK(ks_sparse_from_csr(be, Ah, 0, &A));
    KS_CHECK(ks_sparse_from_csr(cpu, Ah, 0, &Ac));
    KS_CHECK(ks_sparse_validate(&A));

    KS_CHECK(ks_sparse_transpose(&A, &T));
    KS_CHECK(ks_sparse_transpose(&Ac, &Tc));
    snprintf(what, sizeof what, "%s: transpose vs cpu", label);
    same_bits(&T, &Tc, what);
    KS_CHECK(ks_sparse_validate(&T));
    ks_sparse_free(&T);
    ks_sparse_free(&Tc);
    KS_CHECK(ks_sparse_from_csr(be, Ah, 1, &S));
    KS_CHECK(ks_sparse_from_csr(cpu, Ah, 1, &Sc));
    KS_CHECK(ks_sparse_transpose(&S, &T));
    KS_CHECK(ks_sparse_transpose(&Sc, &Tc));
    ck_assert_ptr_null(T.val);
    snprintf(what, sizeof what, "%s: pattern transpose vs cpu", label);
    same_bits(&T, &Tc, what);
    KS_CHECK(ks_sparse_validate(&T));
    ks_sparse_free(&T);
    ks_sparse_free(&Tc);
    ks_sparse_free(&S);
    ks_sparse_free(&Sc);

    ks_int nnz_aa = -1, nnz_rap = -1;
    if (Ah->nrows == Ah->ncols) {
        snprintf(what, sizeof what, "%s: A*A", label);
        nnz_aa = compare_product(be, cpu, Ah, Ah, what);
    }

    /* P aggregates 4 rows; R = P^T by each backend's transpose */
    ks_csr Ph;
    aggregation_p(Ah->ncols, 4, &Ph);
    snprintf(what, sizeof what, "%s: A*P", label);
    compare_product(be, cpu, Ah, &Ph, what);
    if (Ah->nrows == Ah->ncols) {
        ks_sparse P, Pc, R, Rc, G, Gc, G2;
        KS_CHECK(ks_sparse_from_csr(be, &Ph, 0, &P));
        KS_CHECK(ks_sparse_from_csr(cpu, &Ph, 0, &Pc));
        KS_CHECK(ks_sparse_transpose(&P, &R));
        KS_CHECK(ks_sparse_transpose(&Pc, &Rc));
        KS_CHECK(ks_sparse_rap(&R, &A, &P, &G));
        KS_CHECK(ks_sparse_rap(&Rc, &Ac, &Pc, &Gc));
        snprintf(what, sizeof what, "%s: R A P vs cpu", label);
        same_bits(&G, &Gc, what);
        KS_CHECK(ks_sparse_validate(&G));
        nnz_rap = G.nnz;
        KS_CHECK(ks_sparse_rap(&R, &A, &P, &G2));
        snprintf(what, sizeof what, "%s: R A P run twice", label);
        same_bits(&G, &G2, what);
        /* the numeric pass with new values: the cpu's bits, and the
         * product's values to rounding (its order of sums differs) */
        scale_some(&A);
        scale_some(&Ac);
        int out = -1, outc = -1;
        KS_CHECK(ks_sparse_rap_numeric(&R, &A, &P, &G, &out));
        KS_CHECK(ks_sparse_rap_numeric(&Rc, &Ac, &Pc, &Gc, &outc));
        ck_assert_int_eq(out, 0);
        ck_assert_int_eq(outc, 0);
        snprintf(what, sizeof what, "%s: numeric R A P vs cpu", label);
        same_bits(&G, &Gc, what);
        ks_sparse_free(&G2);
        KS_CHECK(ks_sparse_rap(&R, &A, &P, &G2));
        ks_csr Xh, Yh;
        host_of(&G, &Xh);
        host_of(&G2, &Yh);
        snprintf(what, sizeof what, "%s: numeric R A P vs a fresh one", label);
        assert_close(&Xh, &Yh, 1e-12, what);
        ks_csr_free(&Xh);
        ks_csr_free(&Yh);
        ks_sparse_free(&G2);
        ks_sparse_free(&G);
        ks_sparse_free(&Gc);
        ks_sparse_free(&R);
        ks_sparse_free(&Rc);
        ks_sparse_free(&P);
        ks_sparse_free(&Pc);
    }
    ks_csr_free(&Ph);

    /* rows in a random order come back sorted: exactly Ah (values follow) */
    ks_csr Sh, Xh;
    shuffle_rows(Ah, &Sh, 77);
    KS_CHECK(ks_sparse_from_csr(be, &Sh, 0, &S));
    KS_CHECK(ks_sparse_sort_rows(&S));
    KS_CHECK(ks_sparse_validate(&S));
    host_of(&S, &Xh);
    snprintf(what, sizeof what, "%s: sorted rows", label);
    assert_bitwise(&Xh, Ah, what);
    ks_csr_free(&Xh);
    ks_sparse_free(&S);
    KS_CHECK(ks_sparse_from_csr(be, &Sh, 1, &S));
    KS_CHECK(ks_sparse_sort_rows(&S));
    host_of(&S, &Xh);
    snprintf(what, sizeof what, "%s: sorted pattern rows", label);
    assert_same_pattern(&Xh, Ah, what);
    ks_csr_free(&Xh);
    ks_sparse_free(&S);
    ks_csr_free(&Sh);

    ks_sparse_free(&A);
    ks_sparse_free(&Ac);
    assert_no_leak(be, mem0, label);
    printf("sparse ops on %s vs cpu: %s: %d x %d, nnz %d, nnz(A*A) %d, nnz(RAP) %d: identical "
           "(%.2f s)\n", be->ops->name, label, (int)Ah->nrows, (int)Ah->ncols, (int)Ah->nnz,
           (int)nnz_aa, (int)nnz_rap, ks_wtime() - t0);
}

/* n x n: tridiagonal, row 0 full, column 1 full (A^T's row 1 and A*A's
 * rows 0 and 1 are long: the largest bins and the long-row sort). */
static void arrow_matrix(ks_int n, ks_csr *A)
{
    int64_t cap = 5 * (int64_t)n, ne = 0;
    ks_int *r = malloc(sizeof *r * (size_t)cap), *c = malloc(sizeof *c * (size_t)cap);
    double *v = malloc(sizeof *v * (size_t)cap);
    ck_assert(r && c && v);
    for (ks_int i = 0; i < n; i++)
        for (ks_int j = i - 1; j <= i + 1; j++)
            if (i > 0 && j >= 0 && j < n && j != 1) { /* row 0 and column 1 below */
                r[ne] = i;
                c[ne] = j;
                v[ne++] = 1.0 + ((i * 7 + j * 3) % 11) / 4.0;
            }
    for (ks_int j = 0; j < n; j++) { /* row 0 */
        r[ne] = 0;
        c[ne] = j;
        v[ne++] = 0.5 + (j % 13) / 8.0;
    }
    for (ks_int i = 1; i < n; i++) { /* column 1 */
        r[ne] = i;
        c[ne] = 1;
        v[ne++] = -0.25 - (i % 9) / 16.0;
    }
    KS_CHECK(ks_csr_from_coo(n, n, ne, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

/* The numeric pass of A*B into its pattern less the second entry of row
 * `row`: KS_ERR_ARG on be naming the same first entry outside it as the
 * cpu (the row's bin decides which kernel finds it). */
static void check_outside(ks_backend *be, ks_backend *cpu, const ks_csr *A, const ks_csr *B,
                          ks_int row)
{
    ks_sparse Ad, Bd, Ac, Bc, Cc, Cs, Css;
    KS_CHECK(ks_sparse_from_csr(be, A, 0, &Ad));
    KS_CHECK(ks_sparse_from_csr(be, B, 0, &Bd));
    KS_CHECK(ks_sparse_from_csr(cpu, A, 0, &Ac));
    KS_CHECK(ks_sparse_from_csr(cpu, B, 0, &Bc));
    KS_CHECK(ks_sparse_spgemm(&Ac, &Bc, &Cc));
    ks_csr Ch;
    host_of(&Cc, &Ch);
    ck_assert_msg(Ch.rowptr[row + 1] - Ch.rowptr[row] >= 2, "row %d: too short", (int)row);
    /* drop the row's second entry */
    ks_int k = Ch.rowptr[row] + 1;
    memmove(Ch.colind + k, Ch.colind + k + 1, sizeof(ks_int) * (size_t)(Ch.nnz - k - 1));
    memmove(Ch.val + k, Ch.val + k + 1, sizeof(double) * (size_t)(Ch.nnz - k - 1));
    for (ks_int i = row + 1; i <= Ch.nrows; i++)
        Ch.rowptr[i]--;
    Ch.nnz--;
    KS_CHECK(ks_sparse_from_csr(be, &Ch, 0, &Cs));
    KS_CHECK(ks_sparse_from_csr(cpu, &Ch, 0, &Css));
    ck_assert_int_eq(ks_sparse_spgemm_numeric(&Ac, &Bc, &Css), KS_ERR_ARG);
    char want[256];
    const char *m = strstr(ks_last_error(), "entry (");
    ck_assert_ptr_nonnull(m);
    snprintf(want, sizeof want, "%.*s", (int)(strchr(m, ')') - m + 1), m);
    ck_assert_int_eq(ks_sparse_spgemm_numeric(&Ad, &Bd, &Cs), KS_ERR_ARG);
    ck_assert_msg(strstr(ks_last_error(), want), "numeric product outside the pattern in "
                  "row %d: \"%s\", the cpu names %s", (int)row, ks_last_error(), want);
    ks_sparse_free(&Cs);
    ks_sparse_free(&Css);
    ks_csr_free(&Ch);
    ks_sparse_free(&Cc);
    ks_sparse_free(&Ad);
    ks_sparse_free(&Bd);
    ks_sparse_free(&Ac);
    ks_sparse_free(&Bc);
}

/* Row lengths at the edges of the products' bins: products per row around
 * 32 (one thread or a warp), entries per row around 32, 128 and 512 (the
 * value pass's warp tables, then the long rows), bounds around 512 and
 * 4096 (the count pass's warp, block and global tables). */
static const int edge_lens[] = {0,   1,   2,   5,   15,  16,   17,   31,   32,   33,   63,  64,
                                65,  100, 127, 128, 129, 255,  256,  257,  511,  512,  513, 600,
                                1023, 1024, 2047, 2048, 2049, 4095, 4096, 4097, 5000};
#define N_EDGE_LENS ((ks_int)(sizeof edge_lens / sizeof edge_lens[0]))

/* 3 * N_EDGE_LENS x m: row i has edge_lens[i % N_EDGE_LENS] entries at
 * distinct columns (a random start, then every 7th column; m = 6000). */
static void edge_rows(ks_csr *A, ks_int m, uint64_t seed)
{
    ks_test_rng_seed(seed);
    int64_t cap = 1, ne = 0;
    for (ks_int i = 0; i < 3 * N_EDGE_LENS; i++)
        cap += edge_lens[i % N_EDGE_LENS];
    ks_int *r = malloc(sizeof *r * (size_t)cap), *c = malloc(sizeof *c * (size_t)cap);
    double *v = malloc(sizeof *v * (size_t)cap);
    ck_assert(r && c && v);
    for (ks_int i = 0; i < 3 * N_EDGE_LENS; i++) {
        const ks_int base = (ks_int)(ks_test_rng_next() % (uint64_t)m);
        for (int e = 0; e < edge_lens[i % N_EDGE_LENS]; e++) {
            r[ne] = i;
            c[ne] = (ks_int)((base + 7 * (int64_t)e) % m);
            v[ne++] = (ks_test_rng_next() & 1 ? 1.0 : -1.0) * (0.5 + ks_test_urand());
        }
    }
    KS_CHECK(ks_csr_from_coo(3 * N_EDGE_LENS, m, ne, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

/* m x m with `diags` diagonals (columns i, i + 1, ... mod m), random
 * values. */
static void band(ks_csr *B, ks_int m, int diags, uint64_t seed)
{
    ks_test_rng_seed(seed);
    KS_CHECK(ks_csr_alloc(B, m, m, m * diags));
    for (ks_int i = 0; i < m; i++) {
        ks_int *c = B->colind + (size_t)i * diags;
        B->rowptr[i] = i * diags;
        for (int d = 0; d < diags; d++) { /* sorted: wrapped columns first */
            c[d] = (i + d) % m;
            for (int a = d; a > 0 && c[a - 1] > c[a]; a--) {
                const ks_int x = c[a];
                c[a] = c[a - 1];
                c[a - 1] = x;
            }
        }
        for (int d = 0; d < diags; d++)
            B->val[i * diags + d] = (ks_test_rng_next() & 1 ? 1.0 : -1.0) * (0.5 + ks_test_urand());
    }
    B->rowptr[m] = m * diags;
}

/* n x m whose rows take their columns from `few` columns (spread over m):
 * a row's products hit the same columns over and over, so the warp's
 * batches hold large groups of lanes adding into one sum. Row i has
 * 1 + i % 25 draws (duplicates summed). */
static void few_columns(ks_csr *B, ks_int n, ks_int m, int few, uint64_t seed)
{
    ks_test_rng_seed(seed);
    int64_t cap = 25 * (int64_t)n + 1, ne = 0;
    ks_int *r = malloc(sizeof *r * (size_t)cap), *c = malloc(sizeof *c * (size_t)cap);
    double *v = malloc(sizeof *v * (size_t)cap);
    ck_assert(r && c && v);
    for (ks_int i = 0; i < n; i++)
        for (int e = 0; e < 1 + i % 25; e++) {
            r[ne] = i;
            c[ne] = (ks_int)((ks_test_rng_next() % (uint64_t)few) * (m / few));
            v[ne++] = (ks_test_rng_next() & 1 ? 1.0 : -1.0) * (0.5 + ks_test_urand());
        }
    KS_CHECK(ks_csr_from_coo(n, m, ne, r, c, v, B, NULL));
    free(r);
    free(c);
    free(v);
}

/* ks_last_error() from "row " on (the part naming the bad entry). */
static void row_part(char *buf, size_t size)
{
    const char *m = strstr(ks_last_error(), "row ");
    ck_assert_msg(m, "no row named: \"%s\"", ks_last_error());
    snprintf(buf, size, "%s", m);
}

/* H with a column out of range in row 3/8 n (kind 0) or rowptr decreasing
 * at row n/4 (kind 1). */
static void malformed(const ks_csr *H, int kind, ks_csr *Bad)
{
    const ks_int r = kind ? H->nrows / 4 : H->nrows * 3 / 8;
    KS_CHECK(ks_csr_copy(H, Bad));
    ck_assert(Bad->rowptr[r + 1] > Bad->rowptr[r]);
    if (kind == 0)
        Bad->colind[Bad->rowptr[r]] = Bad->ncols;
    else
        Bad->rowptr[r + 1] = Bad->rowptr[r] - 1;
}

/* Every product with malformed inputs (one, or two: the first in order
 * is reported): KS_ERR_ARG naming the same row as the cpu. The checks run
 * without their own syncs now; what they report must not change. */
static void check_bad_inputs(ks_backend *be, ks_backend *cpu)
{
    ks_csr Ah, Ph, Gh, Bad[2][3];
    random_csr(&Ah, 200, 200, 6, 0, 71);
    aggregation_p(200, 4, &Ph);
    ks_sparse A, P, R, G, Ac, Pc, Rc, Gc, X, Y, Z, Xc, Yc, Zc, out;
    KS_CHECK(ks_sparse_from_csr(be, &Ah, 0, &A));
    KS_CHECK(ks_sparse_from_csr(be, &Ph, 0, &P));
    KS_CHECK(ks_sparse_transpose(&P, &R));
    KS_CHECK(ks_sparse_rap(&R, &A, &P, &G));
    KS_CHECK(ks_sparse_from_csr(cpu, &Ah, 0, &Ac));
    KS_CHECK(ks_sparse_from_csr(cpu, &Ph, 0, &Pc));
    KS_CHECK(ks_sparse_transpose(&Pc, &Rc));
    KS_CHECK(ks_sparse_spgemm(&Ac, &Ac, &Gc)); /* a pattern for the numeric pass */
    host_of(&Gc, &Gh);
    ks_sparse_free(&Gc);
    ks_csr Rh;
    host_of(&Rc, &Rh);
    const ks_csr *good[3] = {&Ah, &Rh, &Gh};
    for (int kind = 0; kind < 2; kind++)
        for (int t = 0; t < 3; t++)
            malformed(good[t], kind, &Bad[kind][t]);
    char want[256], what[300];
    for (int kind = 0; kind < 2; kind++) {
        const char *how = kind ? "rowptr decreasing" : "column out of range";
        /* products: A bad, B bad, both (A's reported) */
        for (int which = 1; which <= 3; which++) {
            KS_CHECK(ks_sparse_from_csr(be, which & 1 ? &Bad[kind][0] : &Ah, 0, &X));
            KS_CHECK(ks_sparse_from_csr(be, which & 2 ? &Bad[kind][0] : &Ah, 0, &Y));
            KS_CHECK(ks_sparse_from_csr(cpu, which & 1 ? &Bad[kind][0] : &Ah, 0, &Xc));
            KS_CHECK(ks_sparse_from_csr(cpu, which & 2 ? &Bad[kind][0] : &Ah, 0, &Yc));
            ck_assert_int_eq(ks_sparse_spgemm(&Xc, &Yc, &out), KS_ERR_ARG);
            row_part(want, sizeof want);
            ck_assert_int_eq(ks_sparse_spgemm(&X, &Y, &out), KS_ERR_ARG);
            snprintf(what, sizeof what, "%s: ", which & 1 ? "A" : "B");
            ck_assert_msg(strstr(ks_last_error(), want) && (ks_backend_host_memory(be) ||
                                                           strstr(ks_last_error(), what)),
                          "product, %s (%d): \"%s\", the cpu says \"%s\"", how, which,
                          ks_last_error(), want);
            /* numeric passes: also C bad */
            KS_CHECK(ks_sparse_from_csr(be, &Gh, 0, &Z));
            KS_CHECK(ks_sparse_from_csr(cpu, &Gh, 0, &Zc));
            ck_assert_int_eq(ks_sparse_spgemm_numeric(&Xc, &Yc, &Zc), KS_ERR_ARG);
            row_part(want, sizeof want);
            ck_assert_int_eq(ks_sparse_spgemm_numeric(&X, &Y, &Z), KS_ERR_ARG);
            ck_assert_msg(strstr(ks_last_error(), want), "numeric product, %s (%d): \"%s\", "
                          "the cpu says \"%s\"", how, which, ks_last_error(), want);
            ks_sparse_free(&Z);
            ks_sparse_free(&Zc);
            ks_sparse_free(&X);
            ks_sparse_free(&Y);
            ks_sparse_free(&Xc);
            ks_sparse_free(&Yc);
        }
        KS_CHECK(ks_sparse_from_csr(be, &Ah, 0, &X));
        KS_CHECK(ks_sparse_from_csr(be, &Bad[kind][2], 0, &Z));
        KS_CHECK(ks_sparse_from_csr(cpu, &Bad[kind][2], 0, &Zc));
        ck_assert_int_eq(ks_sparse_spgemm_numeric(&Ac, &Ac, &Zc), KS_ERR_ARG);
        row_part(want, sizeof want);
        ck_assert_int_eq(ks_sparse_spgemm_numeric(&X, &X, &Z), KS_ERR_ARG);
        ck_assert_msg(strstr(ks_last_error(), want), "numeric product, %s in C: \"%s\", the "
                      "cpu says \"%s\"", how, ks_last_error(), want);
        ks_sparse_free(&X);
        ks_sparse_free(&Z);
        ks_sparse_free(&Zc);
        /* Galerkin products: R bad, A bad */
        for (int t = 0; t < 2; t++) {
            const ks_csr *rh = t == 0 ? &Bad[kind][1] : &Rh, *ah = t == 1 ? &Bad[kind][0] : &Ah;
            KS_CHECK(ks_sparse_from_csr(be, rh, 0, &X));
            KS_CHECK(ks_sparse_from_csr(be, ah, 0, &Y));
            KS_CHECK(ks_sparse_from_csr(cpu, rh, 0, &Xc));
            KS_CHECK(ks_sparse_from_csr(cpu, ah, 0, &Yc));
            ck_assert_int_eq(ks_sparse_rap(&Xc, &Yc, &Pc, &out), KS_ERR_ARG);
            row_part(want, sizeof want);
            ck_assert_int_eq(ks_sparse_rap(&X, &Y, &P, &out), KS_ERR_ARG);
            ck_assert_msg(strstr(ks_last_error(), want), "R A P, %s in %s: \"%s\", the cpu "
                          "says \"%s\"", how, t ? "A" : "R", ks_last_error(), want);
            if (!ks_backend_host_memory(be)) {
                /* the cpu's numeric R A P does not check its inputs */
                int outside = -1;
                snprintf(what, sizeof what, "%s: %s", t ? "A" : "R", want);
                ck_assert_int_eq(ks_sparse_rap_numeric(&X, &Y, &P, &G, &outside), KS_ERR_ARG);
                ck_assert_msg(strstr(ks_last_error(), what), "numeric R A P, %s: \"%s\", "
                              "expected \"%s\"", how, ks_last_error(), what);
            }
            ks_sparse_free(&X);
            ks_sparse_free(&Y);
            ks_sparse_free(&Xc);
            ks_sparse_free(&Yc);
        }
    }
    for (int kind = 0; kind < 2; kind++)
        for (int t = 0; t < 3; t++)
            ks_csr_free(&Bad[kind][t]);
    ks_csr_free(&Ah);
    ks_csr_free(&Ph);
    ks_csr_free(&Gh);
    ks_csr_free(&Rh);
    ks_sparse_free(&A);
    ks_sparse_free(&P);
    ks_sparse_free(&R);
    ks_sparse_free(&G);
    ks_sparse_free(&Ac);
    ks_sparse_free(&Pc);
    ks_sparse_free(&Rc);
}

static void check_products(const char *name)
{
    ks_backend *be, *cpu;
    KS_CHECK(ks_backend_create(name, &be));
    KS_CHECK(ks_backend_create("cpu", &cpu));
    ks_csr A, B;

    /* rows with no entries, short rows */
    random_csr(&A, 200, 200, 6, 1, 31);
    compare_ops(be, cpu, &A, "random 200 (empty rows)");
    ks_csr_free(&A);

    /* 7-point 32^3: every row of R A P's first product A*P has at most 7
     * products, so the device makes it in one pass, its 256 blocks finding
     * their offsets by look-back (sparse/cuda/spgemm.cu) */
    {
        ks_gen_params g;
        ks_gen_params_default(&g);
        g.nx = g.ny = g.nz = 32;
        KS_CHECK(ks_generate(&g, &A));
        compare_ops(be, cpu, &A, "7-point 32^3");
        ks_csr_free(&A);
    }

    /* one row of 6000 entries and one column of 6000 */
    arrow_matrix(6000, &A);
    compare_ops(be, cpu, &A, "arrow 6000 (long row and column)");
    ks_csr_free(&A);

    /* a rectangular product with rows in every bin: products per row from
     * 0 to about 10^4, distinct columns up to about 6000 of 9000 */
    static const int alens[] = {0, 1, 2, 8, 40, 120, 400}, blens[] = {1, 3, 40, 0, 80};
    random_lens(&A, 256, 8000, alens, 7, 41);
    random_lens(&B, 8000, 9000, blens, 5, 42);
    ks_int nnz = compare_product(be, cpu, &A, &B, "bins 256 x 8000 x 9000");
    printf("sparse ops on %s vs cpu: bins: nnz(A) %d, nnz(B) %d, nnz(A*B) %d: identical\n",
           be->ops->name, (int)A.nnz, (int)B.nnz, (int)nnz);
    compare_ops(be, cpu, &A, "bins A (rows of 0 to 400)");

    /* rows on the bins' edges times the identity (L products, L entries)
     * and times 2 diagonals (2 L products, 2 L entries up to L = 857) */
    {
        ks_csr E, I, D;
        edge_rows(&E, 6000, 51);
        band(&I, 6000, 1, 52);
        band(&D, 6000, 2, 53);
        compare_product(be, cpu, &E, &I, "bin edges x identity");
        compare_product(be, cpu, &E, &D, "bin edges x 2 diagonals");
        /* entries outside the pattern in rows of each value bin: 2 L = 10
         * (thread), 34, 200 (warp tables), 1200 (long) */
        static const int lens[] = {5, 17, 100, 600};
        for (int t = 0; t < 4; t++) {
            ks_int row = 0;
            while (edge_lens[row] != lens[t])
                row++;
            check_outside(be, cpu, &E, &D, row);
        }
        ks_csr_free(&E);
        ks_csr_free(&I);
        ks_csr_free(&D);
        printf("sparse ops on %s vs cpu: bin edges: identical\n", be->ops->name);
    }

    /* many products into few columns (lanes of a batch grouped by column),
     * with rows of up to 600 x 25 products: bounds of the count pass's
     * warp, block and global tables, rows of the value pass's smallest
     * table */
    {
        static const int flens[] = {3, 10, 40, 100, 300, 600, 2, 7};
        static const int fews[] = {1, 3, 40};
        ks_csr F, G;
        random_lens(&F, 200, 1000, flens, 8, 61);
        for (int t = 0; t < 3; t++) {
            char what[64];
            few_columns(&G, 1000, 9000, fews[t], 62 + (uint64_t)t);
            snprintf(what, sizeof what, "products into %d columns", fews[t]);
            compare_product(be, cpu, &F, &G, what);
            if (fews[t] == 40)
                check_outside(be, cpu, &F, &G, 2); /* 40 x 13 products, <= 40 entries */
            ks_csr_free(&G);
        }
        ks_csr_free(&F);
        printf("sparse ops on %s vs cpu: products into few columns: identical\n",
               be->ops->name);
    }

    /* numeric pass into a pattern missing entries of rows in different
     * bins (the rows of A with 400, 40, 2 and 8 entries): KS_ERR_ARG
     * naming the same first entry as the cpu */
    ks_sparse Ad, Bd, Ac, Bc, C;
    KS_CHECK(ks_sparse_from_csr(be, &A, 0, &Ad));
    KS_CHECK(ks_sparse_from_csr(be, &B, 0, &Bd));
    KS_CHECK(ks_sparse_from_csr(cpu, &A, 0, &Ac));
    KS_CHECK(ks_sparse_from_csr(cpu, &B, 0, &Bc));
    static const int residues[] = {6, 4, 2, 3};
    for (int t = 0; t < 4; t++)
        check_outside(be, cpu, &A, &B, residues[t]);

    /* an input with a column out of range: KS_ERR_ARG naming the same
     * entry as the cpu, not a fault */
    ks_csr Bad;
    KS_CHECK(ks_csr_copy(&B, &Bad));
    Bad.colind[Bad.rowptr[77]] = Bad.ncols;
    ks_sparse Xd, Xc;
    KS_CHECK(ks_sparse_from_csr(be, &Bad, 0, &Xd));
    KS_CHECK(ks_sparse_from_csr(cpu, &Bad, 0, &Xc));
    ck_assert_int_eq(ks_sparse_spgemm(&Ac, &Xc, &C), KS_ERR_ARG);
    char want[256];
    snprintf(want, sizeof want, "%s", strstr(ks_last_error(), "row "));
    ck_assert_int_eq(ks_sparse_spgemm(&Ad, &Xd, &C), KS_ERR_ARG);
    ck_assert_msg(strstr(ks_last_error(), want), "bad input: \"%s\", the cpu says \"%s\"",
                  ks_last_error(), want);
    ks_sparse_free(&Xd);
    ks_sparse_free(&Xc);
    ks_csr_free(&Bad);

    check_bad_inputs(be, cpu);
    printf("sparse ops on %s vs cpu: malformed inputs: the same errors\n", be->ops->name);

    /* a Galerkin product whose numeric pass meets a pattern with an entry
     * less, and shapes that do not fit: outside = 1 */
    ks_csr Ph;
    aggregation_p(200, 4, &Ph);
    random_csr(&Bad, 200, 200, 5, 0, 43);
    ks_sparse P, R, G, Sq;
    ks_csr Ch;
    KS_CHECK(ks_sparse_from_csr(be, &Ph, 0, &P));
    KS_CHECK(ks_sparse_from_csr(be, &Bad, 0, &Sq));
    KS_CHECK(ks_sparse_transpose(&P, &R));
    KS_CHECK(ks_sparse_rap(&R, &Sq, &P, &G));
    host_of(&G, &Ch);
    ck_assert(Ch.rowptr[1] >= 1);
    memmove(Ch.colind, Ch.colind + 1, sizeof(ks_int) * (size_t)(Ch.nnz - 1));
    memmove(Ch.val, Ch.val + 1, sizeof(double) * (size_t)(Ch.nnz - 1));
    for (ks_int i = 1; i <= Ch.nrows; i++)
        Ch.rowptr[i]--;
    Ch.nnz--;
    ks_sparse Gs;
    KS_CHECK(ks_sparse_from_csr(be, &Ch, 0, &Gs));
    int out = -1;
    KS_CHECK(ks_sparse_rap_numeric(&R, &Sq, &P, &Gs, &out));
    ck_assert_int_eq(out, 1);
    out = -1;
    KS_CHECK(ks_sparse_rap_numeric(&R, &Sq, &P, &G, &out));
    ck_assert_int_eq(out, 0);
    out = -1;
    KS_CHECK(ks_sparse_rap_numeric(&P, &Sq, &P, &G, &out)); /* R has the wrong shape */
    ck_assert_int_eq(out, 1);
    ks_sparse_free(&Gs);
    ks_sparse_free(&G);
    ks_sparse_free(&R);
    ks_sparse_free(&P);
    ks_sparse_free(&Sq);
    ks_csr_free(&Ch);
    ks_csr_free(&Ph);
    ks_csr_free(&Bad);

    ks_sparse_free(&Ad);
    ks_sparse_free(&Bd);
    ks_sparse_free(&Ac);
    ks_sparse_free(&Bc);
    ks_csr_free(&A);
    ks_csr_free(&B);
    ks_backend_destroy(&be);
    ks_backend_destroy(&cpu);
}

/* Empty and tiny shapes: 0 x 0, no rows, no columns, an empty inner
 * dimension, no entries at all, 1 x 1. */
static void check_shapes(const char *name)
{
    ks_backend *be, *cpu;
    KS_CHECK(ks_backend_create(name, &be));
    KS_CHECK(ks_backend_create("cpu", &cpu));
    const size_t mem0 = ks_backend_memory_in_use(be);
    static const struct {
        ks_int m, k, n; /* (m x k) times (k x n) */
        int per_row;
    } cases[] = {{0, 0, 0, 0}, {0, 5, 3, 2}, {4, 0, 3, 2}, {3, 5, 2, 0}, {1, 1, 1, 1}, {5, 4, 0, 2},
                 {7, 7, 7, 0}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        char what[96];
        ks_csr Ah, Bh;
        random_csr(&Ah, cases[t].m, cases[t].k, cases[t].per_row, 0, 50 + t);
        random_csr(&Bh, cases[t].k, cases[t].n, cases[t].per_row, 0, 60 + t);
        snprintf(what, sizeof what, "%d x %d times %d x %d", (int)cases[t].m, (int)cases[t].k,
                 (int)cases[t].k, (int)cases[t].n);
        compare_product(be, cpu, &Ah, &Bh, what);
        ks_sparse A, Ac, T, Tc;
        KS_CHECK(ks_sparse_from_csr(be, &Ah, 0, &A));
        KS_CHECK(ks_sparse_from_csr(cpu, &Ah, 0, &Ac));
        KS_CHECK(ks_sparse_validate(&A));
        KS_CHECK(ks_sparse_sort_rows(&A));
        KS_CHECK(ks_sparse_transpose(&A, &T));
        KS_CHECK(ks_sparse_transpose(&Ac, &Tc));
        same_bits(&T, &Tc, what);
        if (cases[t].m == cases[t].k) { /* Galerkin product with P = B, R = B^T */
            ks_sparse B, Bc, R, Rc, G, Gc;
            KS_CHECK(ks_sparse_from_csr(be, &Bh, 0, &B));
            KS_CHECK(ks_sparse_from_csr(cpu, &Bh, 0, &Bc));
            KS_CHECK(ks_sparse_transpose(&B, &R));
            KS_CHECK(ks_sparse_transpose(&Bc, &Rc));
            KS_CHECK(ks_sparse_rap(&R, &A, &B, &G));
            KS_CHECK(ks_sparse_rap(&Rc, &Ac, &Bc, &Gc));
            same_bits(&G, &Gc, what);
            int out = -1;
            KS_CHECK(ks_sparse_rap_numeric(&R, &A, &B, &G, &out));
            ck_assert_int_eq(out, 0);
            same_bits(&G, &Gc, what);
            ks_sparse_free(&B);
            ks_sparse_free(&Bc);
            ks_sparse_free(&R);
            ks_sparse_free(&Rc);
            ks_sparse_free(&G);
            ks_sparse_free(&Gc);
        }
        ks_sparse_free(&A);
        ks_sparse_free(&Ac);
        ks_sparse_free(&T);
        ks_sparse_free(&Tc);
        ks_csr_free(&Ah);
        ks_csr_free(&Bh);
    }
    assert_no_leak(be, mem0, "shapes");
    ks_backend_destroy(&be);
    ks_backend_destroy(&cpu);
}

/* Validation of broken matrices: the same code and the same message as
 * the cpu, word for word. */
static void compare_validate(ks_backend *be, ks_backend *cpu, const ks_csr *Bad, int pattern,
                             const char *what)
{
    ks_sparse X, Y;
    KS_CHECK(ks_sparse_from_csr(be, Bad, pattern, &X));
    KS_CHECK(ks_sparse_from_csr(cpu, Bad, pattern, &Y));
    char want[512];
    ks_error ec = ks_sparse_validate(&Y);
    snprintf(want, sizeof want, "%s", ec == KS_OK ? "" : ks_last_error());
    ks_error eb = ks_sparse_validate(&X);
    ck_assert_msg(eb == ec, "%s: %s, the cpu %s", what, ks_error_name(eb), ks_error_name(ec));
    ck_assert_msg(ec == KS_OK || strcmp(ks_last_error(), want) == 0, "%s: \"%s\", the cpu \"%s\"",
                  what, ks_last_error(), want);
    ks_sparse_free(&X);
    ks_sparse_free(&Y);
}

/* First row from `from` with at least len entries. */
static ks_int row_with(const ks_csr *H, ks_int from, ks_int len)
{
    ks_int i = from;
    while (i < H->nrows && H->rowptr[i + 1] - H->rowptr[i] < len)
        i++;
    ck_assert(i < H->nrows);
    return i;
}

static void check_validate(const char *name)
{
    ks_backend *be, *cpu;
    KS_CHECK(ks_backend_create(name, &be));
    KS_CHECK(ks_backend_create("cpu", &cpu));
    ks_csr H, Bad;
    random_csr(&H, 60, 40, 4, 1, 71);
    compare_validate(be, cpu, &H, 0, "valid");
    compare_validate(be, cpu, &H, 1, "valid pattern");
    for (int kind = 0; kind < 11; kind++) {
        KS_CHECK(ks_csr_copy(&H, &Bad));
        ks_int *rp = Bad.rowptr, *ci = Bad.colind;
        ks_int r = row_with(&Bad, 7 + kind, 2), k = rp[r];
        const char *what = "";
        switch (kind) {
        case 0: /* unsorted */
            ci[k] = ci[k + 1] + (ci[k + 1] + 1 < Bad.ncols ? 1 : 0);
            what = "unsorted columns";
            break;
        case 1:
            ci[k + 1] = ci[k];
            what = "a repeated column";
            break;
        case 2:
            ci[k + 1] = Bad.ncols;
            what = "a column past the end";
            break;
        case 3:
            ci[k] = -1;
            what = "a negative column";
            break;
        case 4:
            Bad.val[k + 1] = NAN;
            what = "a NaN";
            break;
        case 5:
            Bad.val[k] = -INFINITY;
            what = "an infinity";
            break;
        case 6:
            rp[r + 1] = rp[r] - 1;
            what = "decreasing rowptr";
            break;
        case 7:
            rp[r + 1] = Bad.nnz + 3;
            what = "rowptr past nnz";
            break;
        case 8:
            rp[0] = 1;
            what = "rowptr[0] = 1";
            break;
        case 9:
            rp[Bad.nrows] = Bad.nnz - 1;
            what = "rowptr[nrows] != nnz";
            break;
        default: /* two bad rows: the first is named */
            ci[k] = Bad.ncols + 5;
            ci[rp[row_with(&Bad, r + 3, 2)] + 1] = -7;
            what = "two bad rows";
            break;
        }
        compare_validate(be, cpu, &Bad, 0, what);
        compare_validate(be, cpu, &Bad, 1, what); /* patterns: structure only */
        ks_csr_free(&Bad);
    }
    ks_csr_free(&H);
    ks_backend_destroy(&be);
    ks_backend_destroy(&cpu);
}

/* The matrices of ../shared/matrices, each on be against the cpu. */
static void check_real(const char *name)
{
    static const char *const files[] = {
        "ani4.mtx.gz",     "ani5_crop.mtx.gz", "bcsstk13.mtx.gz", "bcsstk14.mtx.gz",
        "cage11.mtx.gz",   "cavity26.mtx.gz",  "fv1.mtx.gz",      "hangGlider_2.mtx.gz",
        "memplus.mtx.gz",  "poisson3Da.mtx.gz", "raefsky2.mtx.gz", "rajat01.mtx.gz",
        "watt_2.mtx.gz"};
    ks_backend *be, *cpu;
    KS_CHECK(ks_backend_create(name, &be));
    KS_CHECK(ks_backend_create("cpu", &cpu));
    int found = 0;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        const char *path = ks_test_shared_matrix(files[f]);
        if (!path) {
            printf("sparse ops on %s: %s: not in ../shared/matrices, skipped\n", name, files[f]);
            continue;
        }
        ks_csr A;
        KS_CHECK(ks_mm_read_csr(path, &A, NULL));
        compare_ops(be, cpu, &A, files[f]);
        ks_csr_free(&A);
        found++;
    }
    printf("sparse ops on %s: %d real matrices compared\n", name, found);
    ks_backend_destroy(&be);
    ks_backend_destroy(&cpu);
}

START_TEST(products_cpu) { check_products("cpu"); }
END_TEST
START_TEST(products_cuda) { check_products("cuda"); }
END_TEST
START_TEST(shapes_cpu) { check_shapes("cpu"); }
END_TEST
START_TEST(shapes_cuda) { check_shapes("cuda"); }
END_TEST
START_TEST(validate_cpu) { check_validate("cpu"); }
END_TEST
START_TEST(validate_cuda) { check_validate("cuda"); }
END_TEST
START_TEST(real_cpu) { check_real("cpu"); }
END_TEST
START_TEST(real_cuda) { check_real("cuda"); }
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
    ks_backend_destroy(&cu);
}
END_TEST

ks_error ks_cu_spgemm_cusparse(const ks_sparse *A, const ks_sparse *B, ks_sparse *C,
                               int *was_sorted);

/* One operation of the memory sweep below on A (with P, R = P^T, the
 * Galerkin pattern G, a row-shuffled S); *out gets the result to free. */
static ks_error memory_op(int op, ks_sparse *A, ks_sparse *P, ks_sparse *R, ks_sparse *G,
                          ks_sparse *C, ks_sparse *S, ks_sparse *out, const char **name)
{
    static const char *const names[] = {"transpose",   "product",  "numeric product",
                                        "R A P",       "numeric R A P", "row sort",
                                        "validation",  "cuSPARSE product"};
    int outside = 0;
    memset(out, 0, sizeof *out);
    *name = names[op];
    switch (op) {
    case 0:
        return ks_sparse_transpose(A, out);
    case 1:
        return ks_sparse_spgemm(A, A, out);
    case 2:
        return ks_sparse_spgemm_numeric(A, A, C);
    case 3:
        return ks_sparse_rap(R, A, P, out);
    case 4:
        return ks_sparse_rap_numeric(R, A, P, G, &outside);
    case 5:
        return ks_sparse_sort_rows(S);
    case 6:
        return ks_sparse_validate(A);
    default:
        return ks_cu_spgemm_cusparse(A, A, out, NULL);
    }
}

/* Every operation under memory limits from nothing up to what it needs:
 * each call succeeds or fails with KS_ERR_MEMORY, and nothing stays
 * allocated either way (each error path frees its temporaries). */
START_TEST(memory_cuda)
{
    ks_backend *cu;
    KS_CHECK(ks_backend_create("cuda", &cu));
    ks_csr Ah, Ph, Sh;
    arrow_matrix(6000, &Ah); /* long rows: the global tables, the long-row sort */
    aggregation_p(6000, 4, &Ph);
    shuffle_rows(&Ah, &Sh, 9);
    ks_sparse A, P, R, G, C, S, out;
    KS_CHECK(ks_sparse_from_csr(cu, &Ah, 0, &A));
    KS_CHECK(ks_sparse_from_csr(cu, &Ph, 0, &P));
    KS_CHECK(ks_sparse_from_csr(cu, &Sh, 0, &S));
    KS_CHECK(ks_sparse_transpose(&P, &R));
    KS_CHECK(ks_sparse_rap(&R, &A, &P, &G));
    KS_CHECK(ks_sparse_spgemm(&A, &A, &C));
    for (int op = 0; op < 8; op++) {
        const char *name;
        const size_t base = ks_backend_memory_in_use(cu);
        ks_backend_memory_reset_peak(cu);
        KS_CHECK(memory_op(op, &A, &P, &R, &G, &C, &S, &out, &name));
        const size_t need = ks_backend_memory_peak(cu) - base;
        ks_sparse_free(&out);
        int failed = 0;
        for (int step = 0; step <= 32; step++) {
            const size_t limit = base + need * (size_t)step / 32;
            KS_CHECK(ks_backend_set_memory_limit(cu, limit > 0 ? limit : 1));
            ks_error e = memory_op(op, &A, &P, &R, &G, &C, &S, &out, &name);
            KS_CHECK(ks_backend_set_memory_limit(cu, 0));
            ck_assert_msg(e == KS_OK || e == KS_ERR_MEMORY, "%s with %zu of %zu bytes: %s: %s",
                          name, limit - base, need, ks_error_name(e), ks_last_error());
            ck_assert_msg(step < 32 || e == KS_OK, "%s: fails with the %zu bytes it used: %s",
                          name, need, ks_last_error());
            failed += e != KS_OK;
            ks_sparse_free(&out);
            KS_CHECK(ks_backend_sync(cu));
            ck_assert_msg(ks_backend_memory_in_use(cu) == base,
                          "%s with %zu of %zu bytes (%s): %zu bytes left allocated", name,
                          limit - base, need, ks_error_name(e),
                          ks_backend_memory_in_use(cu) - base);
        }
        ck_assert_msg(failed > 0, "%s never ran out of memory", name);
        printf("sparse ops on cuda: %s: needs %zu temporary bytes; %d limits below that fail "
               "cleanly\n", name, need, failed);
    }
    /* the results of the sweep are still right */
    ks_sparse Ac, Gc;
    ks_backend *cpu;
    KS_CHECK(ks_backend_create("cpu", &cpu));
    KS_CHECK(ks_sparse_from_csr(cpu, &Ah, 0, &Ac));
    KS_CHECK(ks_sparse_spgemm(&Ac, &Ac, &Gc));
    same_bits(&C, &Gc, "numeric product after the sweep");
    ks_sparse_free(&Gc);
    ks_sparse_free(&Ac);
    ks_csr Xh;
    host_of(&S, &Xh);
    assert_bitwise(&Xh, &Ah, "row sort after the sweep");
    ks_csr_free(&Xh);
    ks_backend_destroy(&cpu);
    ks_sparse_free(&A);
    ks_sparse_free(&P);
    ks_sparse_free(&R);
    ks_sparse_free(&G);
    ks_sparse_free(&C);
    ks_sparse_free(&S);
    ks_csr_free(&Ah);
    ks_csr_free(&Ph);
    ks_csr_free(&Sh);
    ks_backend_destroy(&cu);
}
END_TEST

/* A product of 2^31 + 512 entries: KS_ERR_SIZE (the 32-bit row pointers
 * cannot hold it), nothing left allocated. (2^22 + 1) x 1 times 1 x 512:
 * cheap rows (a warp's shared table each), about 2 * 10^9 insertions. */
START_TEST(overflow_cuda)
{
    ks_backend *cu;
    KS_CHECK(ks_backend_create("cuda", &cu));
    const ks_int n = (1 << 22) + 1, m = 512;
    ks_csr Ah, Bh;
    KS_CHECK(ks_csr_alloc(&Ah, n, 1, n));
    for (ks_int i = 0; i < n; i++) {
        Ah.rowptr[i] = i;
        Ah.colind[i] = 0;
        Ah.val[i] = 1.0;
    }
    Ah.rowptr[n] = n;
    KS_CHECK(ks_csr_alloc(&Bh, 1, m, m));
    for (ks_int j = 0; j < m; j++) {
        Bh.colind[j] = j;
        Bh.val[j] = 2.0;
    }
    Bh.rowptr[1] = m;
    ks_sparse A, B, C;
    KS_CHECK(ks_sparse_from_csr(cu, &Ah, 0, &A));
    KS_CHECK(ks_sparse_from_csr(cu, &Bh, 0, &B));
    const size_t base = ks_backend_memory_in_use(cu);
    const double t0 = ks_wtime();
    ck_assert_int_eq(ks_sparse_spgemm(&A, &B, &C), KS_ERR_SIZE);
    ck_assert_msg(strstr(ks_last_error(), "32-bit"), "%s", ks_last_error());
    printf("sparse ops on cuda: a product of %lld entries: KS_ERR_SIZE in %.2f s: %s\n",
           (long long)n * m, ks_wtime() - t0, ks_last_error());
    KS_CHECK(ks_backend_sync(cu));
    ck_assert_int_eq(ks_backend_memory_in_use(cu), base);
    ks_sparse_free(&A);
    ks_sparse_free(&B);
    ks_csr_free(&Ah);
    ks_csr_free(&Bh);
    ks_backend_destroy(&cu);
}
END_TEST

/* KS_SPGEMM=cusparse: the same patterns as ours, values to rounding;
 * whether cuSPARSE's rows came sorted and whether two of its runs agree
 * bit for bit is printed (for the choice of default, not asserted). */
static void compare_cusparse(ks_backend *cu, const ks_csr *Ah, const ks_csr *Bh, const char *label)
{
    char what[200];
    ks_sparse A, B, C1, C2, C3, C4;
    KS_CHECK(ks_sparse_from_csr(cu, Ah, 0, &A));
    KS_CHECK(ks_sparse_from_csr(cu, Bh, 0, &B));
    unsetenv("KS_SPGEMM");
    KS_CHECK(ks_sparse_spgemm(&A, &B, &C1));
    setenv("KS_SPGEMM", "cusparse", 1);
    KS_CHECK(ks_sparse_spgemm(&A, &B, &C2));
    ks_csr X, Y;
    host_of(&C1, &X);
    host_of(&C2, &Y);
    snprintf(what, sizeof what, "%s: cuSPARSE product vs ours", label);
    assert_close(&Y, &X, 1e-12, what);
    double err = X.nnz ? ks_test_max_relerr(Y.val, X.val, X.nnz) : 0.0;
    ks_csr_free(&X);
    ks_csr_free(&Y);
    int sorted3 = -1, sorted4 = -1;
    KS_CHECK(ks_cu_spgemm_cusparse(&A, &B, &C3, &sorted3));
    KS_CHECK(ks_cu_spgemm_cusparse(&A, &B, &C4, &sorted4));
    host_of(&C3, &X);
    host_of(&C4, &Y);
    assert_same_pattern(&X, &Y, what);
    const int same = X.nnz == 0 || memcmp(X.val, Y.val, sizeof(double) * (size_t)X.nnz) == 0;
    printf("sparse ops on cuda: %s: cuSPARSE vs ours: same pattern (nnz %d), values within %.2g; "
           "cuSPARSE rows came %s; two cuSPARSE runs %s\n", label, (int)X.nnz, err,
           sorted3 && sorted4 ? "sorted" : "UNSORTED (sorted by us)",
           same ? "bitwise equal" : "DIFFER in their bits");
    ks_csr_free(&X);
    ks_csr_free(&Y);
    unsetenv("KS_SPGEMM");
    ks_sparse_free(&A);
    ks_sparse_free(&B);
    ks_sparse_free(&C1);
    ks_sparse_free(&C2);
    ks_sparse_free(&C3);
    ks_sparse_free(&C4);
}

START_TEST(cusparse_cuda)
{
    ks_backend *cu;
    KS_CHECK(ks_backend_create("cuda", &cu));
    const size_t mem0 = ks_backend_memory_in_use(cu);
    ks_csr A, B, Ph;
    random_csr(&A, 200, 200, 6, 1, 31);
    compare_cusparse(cu, &A, &A, "random 200");
    ks_csr_free(&A);
    arrow_matrix(6000, &A);
    compare_cusparse(cu, &A, &A, "arrow 6000");
    ks_csr_free(&A);
    static const int alens[] = {0, 1, 2, 8, 40, 120, 400}, blens[] = {1, 3, 40, 0, 80};
    random_lens(&A, 256, 8000, alens, 7, 41);
    random_lens(&B, 8000, 9000, blens, 5, 42);
    compare_cusparse(cu, &A, &B, "bins");
    ks_csr_free(&A);
    ks_csr_free(&B);
    random_csr(&A, 0, 5, 2, 0, 3);
    random_csr(&B, 5, 3, 2, 0, 4);
    compare_cusparse(cu, &A, &B, "0 x 5 times 5 x 3");
    ks_csr_free(&A);
    ks_csr_free(&B);
    const char *path = ks_test_shared_matrix("poisson3Da.mtx.gz");
    if (path) {
        KS_CHECK(ks_mm_read_csr(path, &A, NULL));
        compare_cusparse(cu, &A, &A, "poisson3Da");
        /* R A P through cuSPARSE: ours to rounding */
        aggregation_p(A.nrows, 4, &Ph);
        ks_sparse Ad, P, R, G1, G2;
        KS_CHECK(ks_sparse_from_csr(cu, &A, 0, &Ad));
        KS_CHECK(ks_sparse_from_csr(cu, &Ph, 0, &P));
        KS_CHECK(ks_sparse_transpose(&P, &R));
        KS_CHECK(ks_sparse_rap(&R, &Ad, &P, &G1));
        setenv("KS_SPGEMM", "cusparse", 1);
        KS_CHECK(ks_sparse_rap(&R, &Ad, &P, &G2));
        unsetenv("KS_SPGEMM");
        ks_csr X, Y;
        host_of(&G1, &X);
        host_of(&G2, &Y);
        assert_close(&Y, &X, 1e-12, "poisson3Da: cuSPARSE R A P vs ours");
        ks_csr_free(&X);
        ks_csr_free(&Y);
        ks_sparse_free(&Ad);
        ks_sparse_free(&P);
        ks_sparse_free(&R);
        ks_sparse_free(&G1);
        ks_sparse_free(&G2);
        ks_csr_free(&Ph);
        ks_csr_free(&A);
    } else {
        printf("sparse ops on cuda: poisson3Da not in ../shared/matrices: cuSPARSE R A P skipped\n");
    }
    /* anything else is refused, naming the variable */
    random_csr(&A, 20, 20, 3, 0, 5);
    ks_sparse Ad, C;
    KS_CHECK(ks_sparse_from_csr(cu, &A, 0, &Ad));
    setenv("KS_SPGEMM", "fastest", 1);
    ck_assert_int_eq(ks_sparse_spgemm(&Ad, &Ad, &C), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "KS_SPGEMM=fastest"));
    setenv("KS_SPGEMM", "ours", 1);
    KS_CHECK(ks_sparse_spgemm(&Ad, &Ad, &C));
    unsetenv("KS_SPGEMM");
    ks_sparse_free(&C);
    ks_sparse_free(&Ad);
    ks_csr_free(&A);
    KS_CHECK(ks_backend_sync(cu));
    ck_assert_int_eq(ks_backend_memory_in_use(cu), mem0);
    ks_backend_destroy(&cu);
}
END_TEST
#endif

/* ks_rowptr_scan (core/scan.c) against the serial loop: sizes around its
 * serial cut-off, thread counts that do and do not divide them, arrays
 * starting off a cache line (its chunks align to lines), and a total past
 * 2^31, which must leave the counts as they were. */
START_TEST(rowptr_scan)
{
    const ks_int sizes[] = {0, 1, 2, 17, 1000, 32767, 32768, 32769, 100003, (1 << 20) + 5};
    const int threads[] = {1, 2, 3, 4, 7};
    const ks_int big = (1 << 20) + 5;
    ks_int *buf = malloc(((size_t)big + 8) * sizeof *buf);
    ks_int *ref = malloc(((size_t)big + 1) * sizeof *ref);
    ck_assert(buf && ref);
    ks_test_rng_seed(11);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        const ks_int n = sizes[s];
        for (int shift = 0; shift < 4; shift++) {
            for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
                ks_int *rp = buf + shift;
                int64_t want = 0;
                ref[0] = 0;
                rp[0] = -7; /* ignored */
                for (ks_int i = 0; i < n; i++) {
                    rp[i + 1] = (ks_int)(ks_test_rng_next() % 10);
                    want += rp[i + 1];
                    ref[i + 1] = (ks_int)want;
                }
                ks_test_set_threads(threads[t]);
                ck_assert_int_eq(ks_rowptr_scan(rp, n), want);
                ck_assert_int_eq(memcmp(rp, ref, ((size_t)n + 1) * sizeof *rp), 0);
            }
        }
    }
    /* past 2^31: the total comes back, the counts stay */
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        const ks_int n = 100003;
        for (ks_int i = 0; i < n; i++)
            buf[i + 1] = i % 3 == 0 ? 1 << 16 : 5;
        int64_t want = 0;
        for (ks_int i = 0; i < n; i++)
            want += buf[i + 1];
        ck_assert(want > INT32_MAX);
        ks_test_set_threads(threads[t]);
        ck_assert_int_eq(ks_rowptr_scan(buf, n), want);
        for (ks_int i = 0; i < n; i++)
            ck_assert_int_eq(buf[i + 1], i % 3 == 0 ? 1 << 16 : 5);
    }
    ks_test_set_threads(2);
    free(buf);
    free(ref);
}
END_TEST

/* The VmFlags of the mapping of /proc/self/smaps that holds address a
 * (into flags, "" when none); 0 when smaps cannot be read. */
static int vm_flags_of(uintptr_t a, char *flags, size_t len)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return 0;
    char line[512];
    int inside = 0;
    flags[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = a >= lo && a < hi;
        else if (inside && !strncmp(line, "VmFlags:", 8)) {
            size_t n = strlen(line + 8);
            n = n < len ? n : len - 1;
            memcpy(flags, line + 8, n);
            flags[n] = '\0';
            break;
        }
    }
    fclose(f);
    return 1;
}

/* Whether the kernel takes huge page advice and smaps shows it (probed on
 * a mapping of the test's own), and KS_HOST_HUGEPAGES leaves it on. */
static int hugepage_advice_visible(void)
{
    const char *off = getenv("KS_HOST_HUGEPAGES");
    int can = 0;
#if defined(MADV_HUGEPAGE)
    char flags[256];
    const size_t probe = (size_t)4 << 20;
    void *m = mmap(NULL, probe, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
        can = madvise(m, probe, MADV_HUGEPAGE) == 0 &&
              vm_flags_of((uintptr_t)m, flags, sizeof flags) && strstr(flags, " hg");
        munmap(m, probe);
    }
#endif
    return can && !(off && !strcmp(off, "0"));
}

/* Large host arrays ask for transparent huge pages (core/alloc.c): the
 * whole 2 MiB pages inside a 16 MiB ks_malloc or ks_calloc carry the
 * advice ("hg" in their mapping's VmFlags), whatever the kernel then
 * gives. Not run, saying why, where hugepage_advice_visible says no. */
START_TEST(host_hugepages)
{
    char flags[256];
    const size_t bytes = (size_t)16 << 20, huge = (size_t)2 << 20;
    for (int c = 0; c < 2; c++) {
        char *p = c ? ks_calloc(bytes / 8, 8, "test") : ks_malloc(bytes, "test");
        ck_assert_ptr_nonnull(p);
        p[0] = p[bytes - 1] = 1;
        const uintptr_t inner = ((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1);
        ck_assert(vm_flags_of(inner + huge / 2, flags, sizeof flags));
        ck_assert_msg(strstr(flags, " hg"), "%s of 16 MiB: its mapping's VmFlags (%s) lack hg",
                      c ? "ks_calloc" : "ks_malloc", flags);
        free(p);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sparse");
    TCase *tc = tcase_create("cpu");
    tcase_add_test(tc, copies_roundtrip);
    tcase_add_test(tc, ops_cpu);
    tcase_add_test(tc, stack_cpu);
    tcase_add_test(tc, extract_cpu);
    tcase_add_test(tc, split_cpu);
    tcase_add_test(tc, merge_cpu);
    tcase_add_test(tc, products_cpu);
    tcase_add_test(tc, shapes_cpu);
    tcase_add_test(tc, validate_cpu);
    tcase_add_test(tc, real_cpu);
    tcase_add_test(tc, rowptr_scan);
    if (hugepage_advice_visible())
        tcase_add_test(tc, host_hugepages);
    else
        ks_test_skip(1, "the kernel takes no huge page advice, /proc/self/smaps does not show "
                        "it, or KS_HOST_HUGEPAGES=0: host_hugepages");
    suite_add_tcase(s, tc);
    if (ks_test_have_cuda()) {
        TCase *tg = tcase_create("cuda");
        tcase_add_test(tg, ops_cuda);
        tcase_add_test(tg, stack_cuda);
        tcase_add_test(tg, extract_cuda);
        tcase_add_test(tg, split_cuda);
        tcase_add_test(tg, merge_cuda);
        tcase_add_test(tg, copies_cuda);
        tcase_add_test(tg, products_cuda);
        tcase_add_test(tg, shapes_cuda);
        tcase_add_test(tg, validate_cuda);
        tcase_add_test(tg, real_cuda);
#ifdef KS_HAVE_CUDA
        tcase_add_test(tg, scan_cuda);
        tcase_add_test(tg, memory_cuda);
        tcase_add_test(tg, overflow_cuda);
        tcase_add_test(tg, cusparse_cuda);
#endif
        suite_add_tcase(s, tg);
    } else {
        ks_test_skip(14, "no CUDA device: sparse operations, row stacking, extraction, column "
                         "split and block merging, products against the cpu, copies, scans, "
                         "memory limits, overflow and cuSPARSE on cuda");
    }
    return ks_test_run(s);
}
