/* Sparse matrix-matrix product C = A * B on host CSR (Gustavson, row by row).
 *
 * Two passes over the rows of A, row-parallel with dynamic chunks (AMG rows
 * vary a lot in cost). (A one-pass variant into per-thread buffers, copied
 * into C afterwards, measured 1.6x slower on large products: the buffers
 * and C both take fresh pages, and the copy outweighs the symbolic pass.)
 *   symbolic: distinct columns of each row of C, counted with a per-thread
 *             marker -> exclusive scan -> exact allocation of C;
 *   numeric:  per-thread accumulator, each row's columns sorted at the end.
 * Accumulator: a dense array of B.ncols per thread when that is affordable
 * next to the size of the inputs, else a per-row open-addressing hash table
 * sized from the row's product count (wide B, many threads).
 *
 * Determinism: every C(i,j) starts at 0.0 and adds A(i,k)*B(k,j) in the
 * order of A's row i then B's row k, whichever thread, accumulator kind or
 * thread count; ks_csr_spgemm_numeric adds in the same order, so re-setup
 * reproduces a fresh product bit for bit. */
#include "csr_kernels.h"
#include "../../matrices/csr_check.h"
#include "../../core/row_sort.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#define KS_SPGEMM_CHUNK 64     /* rows per dynamic chunk */
#define KS_SPGEMM_PAR_ROWS 256 /* fewer rows: one thread */

static int max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* Structure check of an input (matrices/csr_check.h); a bad index would
 * otherwise read or write out of bounds. */
static ks_error check_csr(const ks_csr *M, const char *fn, const char *name)
{
    char who[64];
    snprintf(who, sizeof who, "%s: %s", fn, name);
    if (M && M->nnz > 0 && !M->val)
        return ks_seterr(KS_ERR_ARG, "%s: no values", who);
    return ks_csr_check(M, who, 0);
}

static ks_error check_pair(const ks_csr *A, const ks_csr *B, const char *fn)
{
    KS_TRY(check_csr(A, fn, "A"));
    KS_TRY(check_csr(B, fn, "B"));
    if (A->ncols != B->nrows)
        return ks_seterr(KS_ERR_SIZE, "%s: A is %" PRId32 " x %" PRId32 " but B is %" PRId32
                         " x %" PRId32 " (A.ncols != B.nrows)",
                         fn, A->nrows, A->ncols, B->nrows, B->ncols);
    return KS_OK;
}

/* Dense per-thread arrays cost nthreads * B.ncols * 12 bytes: use them when
 * that stays within a small multiple of the inputs (or a few MB). */
static int use_dense(const ks_csr *A, const ks_csr *B)
{
    size_t need = (size_t)max_threads() * (size_t)B->ncols;
    size_t budget = 2 * ((size_t)A->nnz + (size_t)B->nnz + (size_t)A->nrows);
    if (budget < ((size_t)1 << 20))
        budget = (size_t)1 << 20;
    return need <= budget;
}

/* Ascending sort of a row's columns (distinct values; coarse rows of RAP
 * run to hundreds of entries): core/row_sort.h. */
KS_ROW_SORT_DEFINE(sort_cols_, ks_int, KS_ROW_SORT_SELF)
#define sort_cols(c, n) sort_cols_((c), (size_t)(n))

/* ---------------------------------------------------------------- hash */
/* Open addressing with linear probing; key -1 = empty. A row's table has a
 * power-of-two size >= 2 * min(products of the row, B.ncols), so it is at
 * most half full. */
typedef struct hash_ws {
    ks_int *key;
    double *val;
    size_t cap;
    int lg; /* log2 of the current row's table size */
} hash_ws;

/* Size the table for row i and clear it; 0 on allocation failure. */
static int hash_begin_row(hash_ws *h, const ks_csr *A, const ks_csr *B, ks_int i)
{
    int64_t ub = 0;
    for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
        ks_int a = A->colind[k];
        ub += B->rowptr[a + 1] - B->rowptr[a];
    }
    if (ub > B->ncols)
        ub = B->ncols;
    size_t size = 8;
    int lg = 3;
    while (size < 2 * (size_t)ub) {
        size <<= 1;
        lg++;
    }
    if (size > h->cap) {
        free(h->key);
        free(h->val);
        h->key = malloc(size * sizeof *h->key);
        h->val = malloc(size * sizeof *h->val);
        h->cap = h->key && h->val ? size : 0;
        if (!h->cap)
            return 0;
    }
    h->lg = lg;
    for (size_t s = 0; s < size; s++)
        h->key[s] = -1;
    return 1;
}

/* Slot of key j (inserting it if absent; *isnew says which). */
static size_t hash_slot(hash_ws *h, ks_int j, int *isnew)
{
    size_t mask = ((size_t)1 << h->lg) - 1;
    size_t s = (size_t)(((uint64_t)(uint32_t)j * 0x9E3779B97F4A7C15ull) >> (64 - h->lg));
    for (;; s = (s + 1) & mask) {
        if (h->key[s] == j) {
            *isnew = 0;
            return s;
        }
        if (h->key[s] < 0) {
            h->key[s] = j;
            *isnew = 1;
            return s;
        }
    }
}

/* ------------------------------------------------------------ row kernels */
/* Distinct columns of row i of A*B, dense marker (tag = i). The row
 * kernels copy bounds and pointers to locals: the stores into the
 * workspace could otherwise alias them and force reloads in the inner
 * loops. */
static ks_int sym_row_dense(const ks_csr *A, const ks_csr *B, ks_int i, ks_int *restrict mark)
{
    const ks_int *restrict brp = B->rowptr, *restrict bci = B->colind;
    const ks_int *restrict aci = A->colind;
    const ks_int k1 = A->rowptr[i + 1];
    ks_int cnt = 0;
    for (ks_int k = A->rowptr[i]; k < k1; k++) {
        const ks_int a = aci[k], q1 = brp[a + 1];
        for (ks_int q = brp[a]; q < q1; q++) {
            const ks_int j = bci[q];
            if (mark[j] != i) {
                mark[j] = i;
                cnt++;
            }
        }
    }
    return cnt;
}

static ks_int sym_row_hash(const ks_csr *A, const ks_csr *B, ks_int i, hash_ws *h)
{
    if (!hash_begin_row(h, A, B, i))
        return -1;
    ks_int cnt = 0;
    for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
        ks_int a = A->colind[k];
        for (ks_int q = B->rowptr[a]; q < B->rowptr[a + 1]; q++) {
            int isnew;
            hash_slot(h, B->colind[q], &isnew);
            cnt += isnew;
        }
    }
    return cnt;
}

/* Numeric row i into cc/cv (room for exactly the symbolic count). The tag
 * -2 - i differs from every symbolic tag and from the initial -1, so the
 * marker needs no reset between the passes. */
static void num_row_dense(const ks_csr *A, const ks_csr *B, ks_int i, ks_int *restrict mark,
                          double *restrict acc, ks_int *restrict cc, double *restrict cv)
{
    const ks_int *restrict brp = B->rowptr, *restrict bci = B->colind;
    const ks_int *restrict aci = A->colind;
    const double *restrict ava = A->val, *restrict bva = B->val;
    const ks_int tag = -2 - i, k1 = A->rowptr[i + 1];
    ks_int len = 0;
    for (ks_int k = A->rowptr[i]; k < k1; k++) {
        const ks_int a = aci[k], q1 = brp[a + 1];
        const double av = ava[k];
        for (ks_int q = brp[a]; q < q1; q++) {
            const ks_int j = bci[q];
            if (mark[j] != tag) {
                mark[j] = tag;
                acc[j] = 0.0;
                cc[len++] = j;
            }
            acc[j] += av * bva[q];
        }
    }
    sort_cols(cc, len);
    for (ks_int t = 0; t < len; t++)
        cv[t] = acc[cc[t]];
}

static int num_row_hash(const ks_csr *A, const ks_csr *B, ks_int i, hash_ws *h, ks_int *cc,
                        double *cv)
{
    if (!hash_begin_row(h, A, B, i))
        return 0;
    ks_int len = 0;
    for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
        ks_int a = A->colind[k];
        double av = A->val[k];
        for (ks_int q = B->rowptr[a]; q < B->rowptr[a + 1]; q++) {
            int isnew;
            ks_int j = B->colind[q];
            size_t s = hash_slot(h, j, &isnew);
            if (isnew) {
                h->val[s] = 0.0;
                cc[len++] = j;
            }
            h->val[s] += av * B->val[q];
        }
    }
    sort_cols(cc, len);
    for (ks_int t = 0; t < len; t++) {
        int isnew;
        cv[t] = h->val[hash_slot(h, cc[t], &isnew)];
    }
    return 1;
}

/* ---------------------------------------------------------------- spgemm */
ks_error ks_csr_spgemm(const ks_csr *A, const ks_csr *B, ks_csr *C)
{
    static const char fn[] = "ks_csr_spgemm";
    KS_TRY(check_pair(A, B, fn));
    if (!C || C == A || C == B)
        return ks_seterr(KS_ERR_ARG, "%s: %s", fn, C ? "output aliases an input" : "NULL output");
    const ks_int n = A->nrows, m = B->ncols;
    const int dense = use_dense(A, B);

    ks_int *crp = ks_malloc(((size_t)n + 1) * sizeof *crp, "spgemm row pointers");
    if (!crp)
        return KS_ERR_MEMORY;
    ks_int *cci = NULL;
    double *cva = NULL;
    int memfail = 0, overflow = 0, go = 0;
    int64_t total = 0;

#pragma omp parallel if (n >= KS_SPGEMM_PAR_ROWS)
    {
        ks_int *mark = NULL;
        double *acc = NULL;
        hash_ws h = {NULL, NULL, 0, 0};
        int ok = 1;
        if (dense) {
            mark = malloc(((size_t)m + 1) * sizeof *mark);
            acc = malloc(((size_t)m + 1) * sizeof *acc);
            ok = mark && acc;
            if (ok)
                for (ks_int j = 0; j < m; j++)
                    mark[j] = -1;
        }
        if (!ok) {
#pragma omp atomic write
            memfail = 1;
        }

#pragma omp for schedule(dynamic, KS_SPGEMM_CHUNK)
        for (ks_int i = 0; i < n; i++) {
            if (!ok)
                continue;
            ks_int c = dense ? sym_row_dense(A, B, i, mark) : sym_row_hash(A, B, i, &h);
            if (c < 0) {
                ok = 0;
#pragma omp atomic write
                memfail = 1;
                c = 0;
            }
            crp[i + 1] = c;
        }

#pragma omp single
        {
            if (!memfail) {
                /* Exclusive scan in 64 bits: nnz(C) must fit ks_int. */
                int64_t run = 0;
                crp[0] = 0;
                for (ks_int i = 0; i < n; i++) {
                    run += crp[i + 1];
                    crp[i + 1] = run <= INT32_MAX ? (ks_int)run : 0;
                }
                total = run;
                if (run > INT32_MAX) {
                    overflow = 1;
                } else {
                    cci = malloc((size_t)(run ? run : 1) * sizeof *cci);
                    cva = malloc((size_t)(run ? run : 1) * sizeof *cva);
                    if (!cci || !cva)
                        memfail = 1;
                }
            }
            /* Written once here, read by all after the barrier: a failure
             * flagged during the numeric pass must not change which
             * threads enter its worksharing loop. */
            go = !memfail && !overflow;
        }

        if (go) {
#pragma omp for schedule(dynamic, KS_SPGEMM_CHUNK)
            for (ks_int i = 0; i < n; i++) {
                if (!ok)
                    continue;
                ks_int *cc = cci + crp[i];
                double *cv = cva + crp[i];
                if (dense) {
                    num_row_dense(A, B, i, mark, acc, cc, cv);
                } else if (!num_row_hash(A, B, i, &h, cc, cv)) {
                    ok = 0;
#pragma omp atomic write
                    memfail = 1;
                }
            }
        }
        free(mark);
        free(acc);
        free(h.key);
        free(h.val);
    }

    if (memfail || overflow) {
        free(crp);
        free(cci);
        free(cva);
        if (overflow)
            return ks_seterr(KS_ERR_SIZE, "%s: nnz(C) = %" PRId64 " for a %" PRId32 " x %" PRId32
                             " product exceeds the 32-bit index range", fn, total, n, m);
        return ks_seterr(KS_ERR_MEMORY, "%s: out of host memory (%s workspace or C with %" PRId64
                         " entries)", fn, dense ? "dense" : "hash", total);
    }
    C->nrows = n;
    C->ncols = m;
    C->nnz = (ks_int)total;
    C->rowptr = crp;
    C->colind = cci;
    C->val = cva;
    return KS_OK;
}

/* ------------------------------------------------------- numeric re-pass */
/* Position of column j in the sorted row cc[0..len), or -1. */
static ks_int find_col(const ks_int *cc, ks_int len, ks_int j)
{
    ks_int lo = 0, hi = len;
    while (lo < hi) {
        ks_int mid = lo + (hi - lo) / 2;
        if (cc[mid] < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < len && cc[lo] == j ? lo : -1;
}

ks_error ks_csr_spgemm_numeric(const ks_csr *A, const ks_csr *B, ks_csr *C)
{
    static const char fn[] = "ks_csr_spgemm_numeric";
    KS_TRY(check_pair(A, B, fn));
    KS_TRY(check_csr(C, fn, "C"));
    if (C == A || C == B)
        return ks_seterr(KS_ERR_ARG, "%s: output aliases an input", fn);
    if (C->nrows != A->nrows || C->ncols != B->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: C is %" PRId32 " x %" PRId32 " but A * B is %" PRId32
                         " x %" PRId32, fn, C->nrows, C->ncols, A->nrows, B->ncols);
    const ks_int n = A->nrows, m = B->ncols;
    const int dense = use_dense(A, B); /* else binary search in C's sorted rows */
    const ks_int *crp = C->rowptr, *cci = C->colind;
    double *cva = C->val;
    ks_int err_row = n, err_col = -1;
    int memfail = 0;

#pragma omp parallel if (n >= KS_SPGEMM_PAR_ROWS)
    {
        ks_int *pos = NULL;
        int ok = 1;
        if (dense) {
            pos = malloc(((size_t)m + 1) * sizeof *pos);
            ok = pos != NULL;
            if (ok)
                for (ks_int j = 0; j < m; j++)
                    pos[j] = -1;
            else {
#pragma omp atomic write
                memfail = 1;
            }
        }
#pragma omp for schedule(dynamic, KS_SPGEMM_CHUNK)
        for (ks_int i = 0; i < n; i++) {
            if (!ok)
                continue;
            const ks_int c0 = crp[i], len = crp[i + 1] - c0;
            ks_int bad = -1;
            for (ks_int t = 0; t < len; t++) {
                cva[c0 + t] = 0.0;
                if (dense)
                    pos[cci[c0 + t]] = c0 + t;
            }
            for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1] && bad < 0; k++) {
                ks_int a = A->colind[k];
                double av = A->val[k];
                for (ks_int q = B->rowptr[a]; q < B->rowptr[a + 1]; q++) {
                    ks_int j = B->colind[q];
                    ks_int p;
                    if (dense) {
                        p = pos[j];
                    } else {
                        p = find_col(cci + c0, len, j);
                        p = p < 0 ? -1 : c0 + p;
                    }
                    if (p < 0) {
                        bad = j;
                        break;
                    }
                    cva[p] += av * B->val[q];
                }
            }
            if (dense)
                for (ks_int t = 0; t < len; t++)
                    pos[cci[c0 + t]] = -1;
            if (bad >= 0) {
#pragma omp critical(ks_spgemm_numeric_err)
                if (i < err_row) {
                    err_row = i;
                    err_col = bad;
                }
            }
        }
        free(pos);
    }
    if (memfail)
        return ks_seterr(KS_ERR_MEMORY, "%s: out of host memory for %" PRId32
                         " column positions per thread", fn, m);
    if (err_row < n)
        return ks_seterr(KS_ERR_ARG, "%s: A * B has entry (%" PRId32 ", %" PRId32 ") outside "
                         "the pattern of C (C's values are now unspecified)",
                         fn, err_row, err_col);
    return KS_OK;
}
