"""Every input form of the matrix and the vectors reaches the library as the
same CSR, and the solution matches scipy.sparse.linalg.spsolve."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import ksolve
from conftest import poisson2d, relres

TOL = 1e-10


def reference(A, b):
    return spla.spsolve(sp.csc_matrix(A, dtype=np.float64), b)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_formats_match_spsolve(fmt, rng):
    A = poisson2d(12, fmt)
    b = rng.standard_normal(A.shape[0])
    x = ksolve.solve(A, b, tolerance=TOL)
    assert np.allclose(x, reference(A, b), rtol=0, atol=1e-7 * np.abs(x).max())
    assert relres(A, x, b) < 1e-9


def unsorted_csr(A, rng):
    """A's CSR with the column indices of every row in a random order."""
    A = A.tocsr()
    indices, data = A.indices.copy(), A.data.copy()
    for i in range(A.shape[0]):
        lo, hi = A.indptr[i], A.indptr[i + 1]
        p = rng.permutation(hi - lo) + lo
        indices[lo:hi], data[lo:hi] = indices[p], data[p]
    U = sp.csr_matrix((data, indices, A.indptr.copy()), shape=A.shape)
    U.has_sorted_indices = False
    return U


def test_unsorted_csr(rng):
    A = poisson2d(10)
    U = unsorted_csr(A, rng)
    assert not U.has_sorted_indices and not np.array_equal(U.indices, A.indices)
    b = rng.standard_normal(A.shape[0])
    s = ksolve.Solver(tolerance=TOL).setup(U)
    x = s.solve(b)
    assert np.allclose(x, reference(A, b), atol=1e-7 * np.abs(x).max(), rtol=0)
    assert s.stats["duplicates_summed"] == 0


def split_duplicates(A, rng):
    """COO triplets of A with every entry split into two random halves, shuffled."""
    C = A.tocoo()
    w = rng.uniform(0.2, 0.8, C.nnz)
    row = np.concatenate([C.row, C.row])
    col = np.concatenate([C.col, C.col])
    val = np.concatenate([C.data * w, C.data * (1 - w)])
    p = rng.permutation(row.size)
    return row[p], col[p], val[p]


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_duplicates_are_summed(fmt, rng):
    A = poisson2d(9)
    row, col, val = split_duplicates(A, rng)
    D = sp.coo_matrix((val, (row, col)), shape=A.shape)
    if fmt != "coo":  # scipy sums the duplicates converting to csr/csc
        D = D.asformat(fmt)
    b = rng.standard_normal(A.shape[0])
    s = ksolve.Solver(tolerance=TOL).setup(D)
    x = s.solve(b)
    assert np.allclose(x, reference(A, b), atol=1e-7 * np.abs(x).max(), rtol=0)
    if fmt == "coo":
        assert s.stats["duplicates_summed"] == A.nnz


def test_csr_with_duplicates_not_summed_by_scipy(rng):
    """A CSR whose rows repeat column indices (scipy allows it until
    sum_duplicates): the library sums them."""
    A = poisson2d(8).tocsr()
    n = A.shape[0]
    # every row stored twice with half the values each, rows unsorted
    indptr = 2 * A.indptr
    indices = np.empty(2 * A.nnz, dtype=np.int32)
    data = np.empty(2 * A.nnz)
    for i in range(n):
        lo, hi = A.indptr[i], A.indptr[i + 1]
        cols, vals = A.indices[lo:hi], A.data[lo:hi]
        indices[2 * lo:2 * hi] = np.concatenate([cols[::-1], cols])
        data[2 * lo:2 * hi] = np.concatenate([vals[::-1] / 2, vals / 2])
    D = sp.csr_matrix((data, indices, indptr), shape=A.shape)
    assert not D.has_canonical_format
    b = rng.standard_normal(n)
    s = ksolve.Solver(tolerance=TOL).setup(D)
    assert s.stats["duplicates_summed"] == A.nnz
    x = s.solve(b)
    assert relres(A, x, b) < 1e-9


@pytest.mark.parametrize("itype", [np.int32, np.int64])
@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_index_types(itype, fmt, rng):
    A = poisson2d(10, fmt)
    # scipy narrows indices that fit to int32 on construction: set them after
    if fmt == "csr":
        A.indices, A.indptr = A.indices.astype(itype), A.indptr.astype(itype)
        assert A.indices.dtype == itype
    else:
        A.row, A.col = A.row.astype(itype), A.col.astype(itype)
        if A.row.dtype != itype and hasattr(A, "coords"):
            # newer SciPy narrows through the row/col setters, not through coords
            A.coords = (A.coords[0].astype(itype), A.coords[1].astype(itype))
        if A.row.dtype != itype:
            pytest.skip(f"this SciPy keeps COO indices as {A.row.dtype}, not {np.dtype(itype)}")
    b = rng.standard_normal(A.shape[0])
    x = ksolve.solve(A, b, tolerance=TOL)
    assert np.allclose(x, reference(A, b), atol=1e-7 * np.abs(x).max(), rtol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_value_types_converted(dtype, rng):
    A64 = poisson2d(10)
    A = A64.astype(dtype)
    assert A.dtype == dtype
    b = rng.standard_normal(A.shape[0]).astype(np.float32)
    x = ksolve.solve(A, b, tolerance=TOL)
    assert x.dtype == np.float64
    assert relres(A64, x, b.astype(np.float64)) < 1e-9


def test_sparse_array_and_column_vector(rng):
    if not hasattr(sp, "csr_array"):
        pytest.skip("scipy without sparse arrays")
    A = sp.csr_array(poisson2d(8))
    b = rng.standard_normal((A.shape[0], 1))
    x = ksolve.solve(A, b, tolerance=TOL)
    assert x.shape == (A.shape[0],)
    assert relres(A, x, b.ravel()) < 1e-9


def test_explicit_zeros_and_x0(rng):
    A = poisson2d(8).tolil()
    A[0, 5] = 0.0  # becomes an explicit zero below
    A = A.tocsr()
    A.data[A.data == 0] = 0.0
    b = rng.standard_normal(A.shape[0])
    xr = reference(A, b)
    s = ksolve.Solver(tolerance=TOL).setup(A)
    x = s.solve(b, x0=xr)  # starting at the answer: (almost) no iterations
    assert s.stats["iterations"] <= 1
    assert np.allclose(x, xr, atol=1e-8 * np.abs(xr).max(), rtol=0)


def test_input_not_modified(rng):
    A = poisson2d(8, "coo")
    row, col, val = A.row.copy(), A.col.copy(), A.data.copy()
    b = rng.standard_normal(A.shape[0])
    bc = b.copy()
    ksolve.solve(A, b)
    assert np.array_equal(A.row, row) and np.array_equal(A.col, col)
    assert np.array_equal(A.data, val) and np.array_equal(b, bc)


@pytest.mark.parametrize("config", [
    dict(solver="PCG", preconditioner="JACOBI"),
    dict(solver="PBICGSTAB", preconditioner={"solver": "AMG", "selector": "HMIS"}),
    dict(solver="AMG"),
])
def test_methods_match_spsolve(config, rng):
    A = poisson2d(15)
    b = rng.standard_normal(A.shape[0])
    s = ksolve.Solver(tolerance=TOL, max_iters=2000, **config)
    x = s.setup(A).solve(b)
    assert s.stats["status"] == "CONVERGED"
    assert np.allclose(x, reference(A, b), atol=1e-6 * np.abs(x).max(), rtol=0)


def test_nonsymmetric_bicgstab(rng):
    n = 20
    A = poisson2d(n) + sp.diags([0.3], [1], shape=(n * n, n * n))
    b = rng.standard_normal(n * n)
    x = ksolve.solve(A.tocsr(), b, solver="PBICGSTAB", tolerance=TOL)
    assert np.allclose(x, reference(A, b), atol=1e-6 * np.abs(x).max(), rtol=0)
