/* C = A B through cuSPARSE's generic SpGEMM (CUDA 12/13), the alternative
 * to our kernels (spgemm.cu) selected by KS_SPGEMM=cusparse, so both can
 * be measured in one build. Ours stays the default: it reproduces the cpu
 * bit for bit; cuSPARSE's summation order is its own (equal to rounding).
 *
 * CUSPARSE_SPGEMM_DEFAULT, the algorithm of NVIDIA's sample; whether two
 * of its runs agree bit for bit is printed by tests/test_sparse (not
 * relied on). Neither is the order of C's columns: rows are checked on the
 * device and sorted with our segmented sort when cuSPARSE returns any
 * unsorted (the test prints which happened). C's row pointers are handed
 * over when its descriptor is made (as the sample does), its columns and
 * values once their count is known. Products with no entries at all skip
 * cuSPARSE (an empty operand is not something every version accepts). */
#include "sparse_cuda.cuh"

#include <inttypes.h>
#include <string.h>

namespace {

__global__ void rows_unsorted(ks_int n, const ks_int *__restrict__ rp,
                              const ks_int *__restrict__ ci, int *flag)
{
    KS_CU_FOR(i, n)
    {
        for (ks_int k = rp[i] + 1; k < rp[i + 1]; k++)
            if (ci[k] <= ci[k - 1]) {
                *flag = 1; /* every writer writes the same value */
                break;
            }
    }
}

/* Everything cuSPARSE hands out for one product, released together. */
typedef struct cs_state {
    cusparseConstSpMatDescr_t a, b;
    cusparseSpMatDescr_t c;
    cusparseSpGEMMDescr_t d;
} cs_state;

void cs_release(cs_state *s)
{
    if (s->a)
        (void)cusparseDestroySpMat(s->a);
    if (s->b)
        (void)cusparseDestroySpMat(s->b);
    if (s->c)
        (void)cusparseDestroySpMat(s->c);
    if (s->d)
        (void)cusparseSpGEMM_destroyDescr(s->d);
    memset(s, 0, sizeof *s);
}

#define CS(call)                                                                             \
    do {                                                                                     \
        cusparseStatus_t cs_ = (call);                                                       \
        if (cs_ != CUSPARSE_STATUS_SUCCESS)                                                  \
            return ks_seterr(KS_ERR_DEVICE, "%s failed: %s", #call,                          \
                             cusparseGetErrorString(cs_));                                   \
    } while (0)

/* The cuSPARSE calls, C's arrays allocated here (C starts zeroed). The
 * caller releases s and the temporaries, and frees C on failure. */
ks_error cs_multiply(const ks_sparse *A, const ks_sparse *B, ks_sparse *C, cs_state *s,
                     ks_cu_tmp *tmp)
{
    ks_backend *be = A->be;
    cusparseHandle_t h = (cusparseHandle_t)ks_cuda_cusparse(be);
    /* the handle is the backend's: set what we rely on before each use */
    CS(cusparseSetStream(h, ks_cu_stream(be)));
    CS(cusparseSetPointerMode(h, CUSPARSE_POINTER_MODE_HOST));
    const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
    const cusparseSpGEMMAlg_t alg = CUSPARSE_SPGEMM_DEFAULT;
    const double one = 1.0, zero = 0.0;
    CS(cusparseCreateConstCsr(&s->a, A->nrows, A->ncols, A->nnz, A->rowptr, A->colind, A->val,
                              CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                              CUDA_R_64F));
    CS(cusparseCreateConstCsr(&s->b, B->nrows, B->ncols, B->nnz, B->rowptr, B->colind, B->val,
                              CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                              CUDA_R_64F));
    C->be = be;
    C->nrows = A->nrows;
    C->ncols = B->ncols;
    KS_TRY(ks_be_alloc(be, sizeof(ks_int) * ((size_t)A->nrows + 1), (void **)&C->rowptr,
                       "sparse row pointers"));
    CS(cusparseCreateCsr(&s->c, A->nrows, B->ncols, 0, C->rowptr, NULL, NULL,
                         CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                         CUDA_R_64F));
    CS(cusparseSpGEMM_createDescr(&s->d));
    size_t bytes1 = 0, bytes2 = 0;
    void *buf1 = NULL, *buf2 = NULL;
    CS(cusparseSpGEMM_workEstimation(h, op, op, &one, s->a, s->b, &zero, s->c, CUDA_R_64F, alg,
                                     s->d, &bytes1, NULL));
    KS_TRY(ks_cu_tmp_alloc(tmp, bytes1, &buf1, "cuSPARSE SpGEMM buffer 1"));
    CS(cusparseSpGEMM_workEstimation(h, op, op, &one, s->a, s->b, &zero, s->c, CUDA_R_64F, alg,
                                     s->d, &bytes1, buf1));
    CS(cusparseSpGEMM_compute(h, op, op, &one, s->a, s->b, &zero, s->c, CUDA_R_64F, alg, s->d,
                              &bytes2, NULL));
    KS_TRY(ks_cu_tmp_alloc(tmp, bytes2, &buf2, "cuSPARSE SpGEMM buffer 2"));
    CS(cusparseSpGEMM_compute(h, op, op, &one, s->a, s->b, &zero, s->c, CUDA_R_64F, alg, s->d,
                              &bytes2, buf2));
    int64_t rows = 0, cols = 0, nnz = 0;
    CS(cusparseSpMatGetSize(s->c, &rows, &cols, &nnz));
    if (nnz > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "sparse product (cuSPARSE): nnz(C) = %" PRId64
                         " exceeds the 32-bit index range", nnz);
    C->nnz = (ks_int)nnz;
    KS_TRY(ks_be_alloc(be, sizeof(ks_int) * (size_t)nnz + 1, (void **)&C->colind,
                       "sparse column indices"));
    KS_TRY(ks_be_alloc(be, sizeof(double) * (size_t)nnz + 1, (void **)&C->val,
                       "sparse values"));
    CS(cusparseCsrSetPointers(s->c, C->rowptr, C->colind, C->val));
    CS(cusparseSpGEMM_copy(h, op, op, &one, s->a, s->b, &zero, s->c, CUDA_R_64F, alg, s->d));
    return KS_OK;
}

} // namespace

extern "C" ks_error ks_cu_spgemm_cusparse(const ks_sparse *A, const ks_sparse *B, ks_sparse *C,
                                          int *was_sorted)
{
    ks_backend *be = A->be;
    memset(C, 0, sizeof *C);
    if (was_sorted)
        *was_sorted = 1;
    if (A->nrows == 0 || B->ncols == 0 || A->nnz == 0 || B->nnz == 0) {
        /* no products: an empty C, rows of zero length */
        KS_TRY(ks_sparse_alloc(be, A->nrows, B->ncols, 0, 0, C));
        ks_error e = ks_cu_memset(be, C->rowptr, 0, sizeof(ks_int) * ((size_t)A->nrows + 1),
                                  "empty product");
        if (e != KS_OK)
            ks_sparse_free(C);
        return e;
    }
    cs_state s;
    memset(&s, 0, sizeof s);
    ks_cu_tmp tmp;
    ks_cu_tmp_init(&tmp, be);
    ks_error e = cs_multiply(A, B, C, &s, &tmp);
    cs_release(&s);
    /* sorted rows, whatever cuSPARSE returned */
    int *flag = NULL, unsorted = 0;
    if (e == KS_OK)
        e = ks_cu_tmp_alloc(&tmp, sizeof(int), (void **)&flag, "row order flag");
    if (e == KS_OK)
        e = ks_cu_memset(be, flag, 0, sizeof(int), "row order flag");
    if (e == KS_OK) {
        rows_unsorted<<<ks_cu_blocks(C->nrows), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(
            C->nrows, C->rowptr, C->colind, flag);
        e = ks_cu_launched("rows_unsorted");
    }
    if (e == KS_OK)
        e = be->ops->download(be, &unsorted, flag, sizeof unsorted);
    if (e == KS_OK && unsorted)
        e = ks_cu_seg_sort(be, C->nrows, C->rowptr, C->colind, C->val);
    if (was_sorted)
        *was_sorted = !unsorted;
    ks_cu_tmp_free(&tmp);
    if (e != KS_OK)
        ks_sparse_free(C);
    return e;
}
