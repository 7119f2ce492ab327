/* "cusparse" on the cuda backend: cuSPARSE's generic SpMV on the same CSR
 * arrays, the reference the hand-written formats are measured against. The
 * descriptors, the work buffer and the preprocessing are made once in setup;
 * apply only re-points the cached dense-vector descriptors. */
#include "csr_layout.h"
#include "format_cuda.h"
#include "../vec/cuda_check.h"

namespace {

struct cusparse_state {
    ks_int nrows, ncols, nnz;
    ks_int *rowptr;
    ks_int *colind;
    double *val;
    cusparseSpMatDescr_t A;
    cusparseDnVecDescr_t x, y;
    void *buffer;
    size_t buffer_bytes;
    void *mm_buffer; /* cusparseSpMM's, grown to the largest k seen */
    size_t mm_buffer_bytes;
    int mm_default; /* cuSPARSE refused CSR_ALG2 here: CUSPARSE_SPMM_ALG_DEFAULT */
};

const cusparseSpMVAlg_t kAlg = CUSPARSE_SPMV_CSR_ALG1;

void cusparse_destroy(ks_backend *be, void *state)
{
    cusparse_state *s = (cusparse_state *)state;
    if (!s)
        return;
    /* Destroy calls cannot fail in a way we could act on here. */
    if (s->A)
        cusparseDestroySpMat(s->A);
    if (s->x)
        cusparseDestroyDnVec(s->x);
    if (s->y)
        cusparseDestroyDnVec(s->y);
    void *p[] = {s->rowptr, s->colind, s->val, s->buffer, s->mm_buffer};
    ks_cufmt_free(be, p, KS_CUFMT_COUNT(p));
    free(s);
}

/* The handle is shared with the rest of the backend: set what this format
 * relies on (host scalars, the backend's stream) before each use. */
ks_error bind_handle(ks_backend *be, cusparseHandle_t h)
{
    KS_CUSPARSE_CHECK(cusparseSetStream(h, ks_cufmt_stream(be)));
    KS_CUSPARSE_CHECK(cusparseSetPointerMode(h, CUSPARSE_POINTER_MODE_HOST));
    return KS_OK;
}

/* Fills s (already holding sizes); cusparse_destroy releases whatever was
 * made if this fails part way. */
ks_error build(ks_backend *be, const ks_csr *A, cusparse_state *s)
{
    /* No entries: no column or value arrays (0 bytes stay NULL). */
    const ks_cufmt_array a[] = {
        {(void **)&s->rowptr, A->rowptr, sizeof(ks_int) * ((size_t)A->nrows + 1),
         "cusparse row pointers"},
        {(void **)&s->colind, A->colind, sizeof(ks_int) * (size_t)A->nnz,
         "cusparse column indices"},
        {(void **)&s->val, A->val, sizeof(double) * (size_t)A->nnz, "cusparse values"},
    };
    KS_TRY(ks_cufmt_upload(be, a, KS_CUFMT_COUNT(a), KS_CUFMT_EMPTY_NULL));
    if (A->nnz == 0)
        return KS_OK; /* apply scales y; cuSPARSE gets no empty descriptor */
    KS_CUSPARSE_CHECK(cusparseCreateCsr(&s->A, A->nrows, A->ncols, A->nnz, s->rowptr, s->colind,
                                      s->val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                      CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));

    /* bufferSize and preprocess want vector descriptors; point them at
     * zeroed scratch vectors that live only during setup (apply re-points
     * them before every use). */
    cusparseHandle_t h = (cusparseHandle_t)ks_cuda_cusparse(be);
    KS_TRY(bind_handle(be, h));
    void *sx = NULL, *sy = NULL;
    ks_error e = ks_be_alloc(be, sizeof(double) * (size_t)(A->ncols > 0 ? A->ncols : 1), &sx,
                             "cusparse setup scratch x");
    if (e == KS_OK)
        e = ks_be_alloc(be, sizeof(double) * (size_t)A->nrows, &sy, "cusparse setup scratch y");
    if (e == KS_OK)
        e = be->ops->fill(be, A->ncols, 0.0, (double *)sx);
    if (e == KS_OK)
        e = be->ops->fill(be, A->nrows, 0.0, (double *)sy);
    cusparseStatus_t st = CUSPARSE_STATUS_SUCCESS;
    const char *call = "";
    if (e == KS_OK) {
        const double one = 1.0, zero = 0.0;
        call = "cusparseCreateDnVec(x)";
        st = cusparseCreateDnVec(&s->x, A->ncols, sx, CUDA_R_64F);
        if (st == CUSPARSE_STATUS_SUCCESS) {
            call = "cusparseCreateDnVec(y)";
            st = cusparseCreateDnVec(&s->y, A->nrows, sy, CUDA_R_64F);
        }
        if (st == CUSPARSE_STATUS_SUCCESS) {
            call = "cusparseSpMV_bufferSize";
            st = cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, s->A, s->x,
                                         &zero, s->y, CUDA_R_64F, kAlg, &s->buffer_bytes);
        }
        if (st == CUSPARSE_STATUS_SUCCESS && s->buffer_bytes > 0)
            e = ks_be_alloc(be, s->buffer_bytes, &s->buffer, "cuSPARSE SpMV buffer");
#if defined(CUSPARSE_VERSION) && CUSPARSE_VERSION >= 12300
        /* cusparseSpMV_preprocess exists from cuSPARSE 12.3 (CUDA 12.4). */
        if (st == CUSPARSE_STATUS_SUCCESS && e == KS_OK) {
            call = "cusparseSpMV_preprocess";
            st = cusparseSpMV_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, s->A, s->x,
                                         &zero, s->y, CUDA_R_64F, kAlg, s->buffer);
        }
#endif
        if (st != CUSPARSE_STATUS_SUCCESS && e == KS_OK)
            e = ks_seterr(KS_ERR_DEVICE, "%s:%d: %s failed: %s", __FILE__, __LINE__, call,
                          cusparseGetErrorString(st));
    }
    /* The scratch may still be read by queued work: finish it before freeing. */
    ks_error es = be->ops->sync(be);
    if (e == KS_OK)
        e = es;
    if (sx)
        be->ops->free(be, sx);
    if (sy)
        be->ops->free(be, sy);
    return e;
}

ks_error cusparse_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_csr *A = &((const ks_csr_layout *)layout)->A;
    *state = NULL;
    cusparse_state *s = (cusparse_state *)ks_calloc(1, sizeof *s, "cusparse state");
    if (!s)
        return KS_ERR_MEMORY;
    s->nrows = A->nrows;
    s->ncols = A->ncols;
    s->nnz = A->nnz;
    ks_error e = build(be, A, s);
    return ks_cufmt_done(be, e, s, cusparse_destroy, state);
}

ks_error cusparse_apply(ks_backend *be, void *state, double alpha, const double *x,
                        double beta, double *y)
{
    cusparse_state *s = (cusparse_state *)state;
    if (s->nrows == 0)
        return KS_OK;
    if (s->nnz == 0) /* y = beta y, without reading y when beta == 0 */
        return beta == 0.0 ? be->ops->fill(be, s->nrows, 0.0, y)
                           : be->ops->scale(be, s->nrows, beta, y);
    cusparseHandle_t h = (cusparseHandle_t)ks_cuda_cusparse(be);
    KS_TRY(bind_handle(be, h));
    KS_CUSPARSE_CHECK(cusparseDnVecSetValues(s->x, (void *)x));
    KS_CUSPARSE_CHECK(cusparseDnVecSetValues(s->y, y));
    KS_CUSPARSE_CHECK(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, s->A, s->x, &beta,
                                 s->y, CUDA_R_64F, kAlg, s->buffer));
    return KS_OK;
}

/* SpMM with row-major dense X and Y (leading dimension k: the block
 * layout as it is), CUSPARSE_SPMM_CSR_ALG2, cuSPARSE's algorithm for
 * row-major operands (its default where a version refuses that one, kept
 * from then on). The dense descriptors are made per call (k varies; they
 * hold no device memory). */
ks_error spmm_run(ks_backend *be, cusparse_state *s, cusparseHandle_t h, cusparseDnMatDescr_t dx,
                  cusparseDnMatDescr_t dy, double alpha, double beta)
{
    size_t need = 0;
    const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
    cusparseSpMMAlg_t alg = s->mm_default ? CUSPARSE_SPMM_ALG_DEFAULT : CUSPARSE_SPMM_CSR_ALG2;
    cusparseStatus_t st = cusparseSpMM_bufferSize(h, op, op, &alpha, s->A, dx, &beta, dy,
                                                  CUDA_R_64F, alg, &need);
    if (st == CUSPARSE_STATUS_NOT_SUPPORTED && !s->mm_default) {
        s->mm_default = 1;
        alg = CUSPARSE_SPMM_ALG_DEFAULT;
        st = cusparseSpMM_bufferSize(h, op, op, &alpha, s->A, dx, &beta, dy, CUDA_R_64F, alg,
                                     &need);
    }
    if (st != CUSPARSE_STATUS_SUCCESS)
        return ks_seterr(KS_ERR_DEVICE, "cusparseSpMM_bufferSize failed: %s (%s:%d)",
                         cusparseGetErrorString(st), __FILE__, __LINE__);
    if (need > s->mm_buffer_bytes) {
        if (s->mm_buffer)
            be->ops->free(be, s->mm_buffer);
        s->mm_buffer = NULL;
        s->mm_buffer_bytes = 0;
        KS_TRY(ks_be_alloc(be, need, &s->mm_buffer, "cuSPARSE SpMM buffer"));
        s->mm_buffer_bytes = need;
    }
    KS_CUSPARSE_CHECK(cusparseSpMM(h, op, op, &alpha, s->A, dx, &beta, dy, CUDA_R_64F, alg,
                                   s->mm_buffer));
    return KS_OK;
}

ks_error cusparse_spmm(ks_backend *be, void *state, int k, double alpha, const double *X,
                       double beta, double *Y)
{
    cusparse_state *s = (cusparse_state *)state;
    if (s->nrows == 0)
        return KS_OK;
    const ks_int total = s->nrows * k;
    if (s->nnz == 0) /* Y = beta Y, without reading Y when beta == 0 */
        return beta == 0.0 ? be->ops->fill(be, total, 0.0, Y) : be->ops->scale(be, total, beta, Y);
    cusparseHandle_t h = (cusparseHandle_t)ks_cuda_cusparse(be);
    KS_TRY(bind_handle(be, h));
    cusparseDnMatDescr_t dx = NULL, dy = NULL;
    KS_CUSPARSE_CHECK(cusparseCreateDnMat(&dx, s->ncols, k, k, (void *)X, CUDA_R_64F,
                                          CUSPARSE_ORDER_ROW));
    cusparseStatus_t st = cusparseCreateDnMat(&dy, s->nrows, k, k, Y, CUDA_R_64F,
                                              CUSPARSE_ORDER_ROW);
    ks_error e = st == CUSPARSE_STATUS_SUCCESS
                     ? spmm_run(be, s, h, dx, dy, alpha, beta)
                     : ks_seterr(KS_ERR_DEVICE, "cusparseCreateDnMat(Y) failed: %s",
                                 cusparseGetErrorString(st));
    cusparseDestroyDnMat(dx);
    if (dy)
        cusparseDestroyDnMat(dy);
    return e;
}

} // namespace

extern "C" const ks_spmv_format_ops ks_format_cusparse_csr = {
    "cusparse",
    KS_BACKEND_CUDA,
    "cuSPARSE generic SpMV on CSR (CUSPARSE_SPMV_CSR_ALG1), the reference",
    ks_csr_layout_build,
    ks_csr_layout_apply,
    ks_csr_layout_bytes,
    ks_csr_layout_free,
    cusparse_setup,
    cusparse_apply,
    cusparse_destroy,
    NULL, /* gs_sweep */
    ks_csr_layout_to_csr,
    NULL, /* fused_step */
    0, /* float_values */
    NULL, /* setup_sparse */
    NULL, /* state_bytes */
    NULL, /* reads_values */
    cusparse_spmm,
    NULL, /* fused_block */
    NULL, /* spmm_dot */
    NULL, /* fused_block_dot */
    NULL, /* fused_ghost */
};
