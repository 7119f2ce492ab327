"""CuPy arrays on the cuda backend: used in place (device-to-device copies
through ks_vec_set_device / ks_vec_get_device), the solution a CuPy array.
Skipped without CuPy, a GPU or a libksolve built with CUDA."""

import numpy as np
import pytest

import ksolve
from conftest import poisson2d, poisson3d, relres

cp = pytest.importorskip("cupy")
try:
    _gpus = cp.cuda.runtime.getDeviceCount()
except Exception:  # no driver
    _gpus = 0
if not _gpus or not ksolve.backend_available("cuda"):
    pytest.skip("no GPU, or libksolve built without CUDA", allow_module_level=True)


def test_cupy_vectors_in_and_out():
    A = poisson3d(16)
    b = np.sin(np.arange(A.shape[0]))
    s = ksolve.Solver(backend="cuda", tolerance=1e-10).setup(A)
    xd = s.solve(cp.asarray(b))
    assert isinstance(xd, cp.ndarray) and xd.dtype == cp.float64
    x = cp.asnumpy(xd)
    assert relres(A, x, b) < 1e-9
    xh = s.solve(b)  # NumPy in, NumPy out, on the same solver
    assert isinstance(xh, np.ndarray)
    assert np.allclose(x, xh, rtol=0, atol=1e-12 * np.abs(x).max())
    cpu = ksolve.Solver(backend="cpu", tolerance=1e-10).setup(A)
    assert np.allclose(x, cpu.solve(b), rtol=0, atol=1e-7 * np.abs(x).max())


def test_cupy_x0_dtypes_and_column_vector():
    A = poisson2d(30)
    b = np.ones(A.shape[0])
    s = ksolve.Solver(backend="cuda", tolerance=1e-10).setup(A)
    x = s.solve(cp.asarray(b, dtype=cp.float32).reshape(-1, 1))  # converted on the device
    assert relres(A, cp.asnumpy(x), b) < 1e-9
    s.solve(cp.asarray(b), x0=x)
    assert s.stats["iterations"] <= 1
    bs = cp.asarray(np.r_[b, b])[::2]  # strided: made contiguous first
    assert relres(A, cp.asnumpy(s.solve(bs)), b) < 1e-9


def test_cupy_precondition_matches_host():
    A = poisson2d(20)
    r = np.cos(np.arange(A.shape[0]))
    s = ksolve.Solver(backend="cuda").setup(A)
    zd = s.precondition(cp.asarray(r))
    assert isinstance(zd, cp.ndarray)
    assert np.allclose(cp.asnumpy(zd), s.precondition(r), rtol=0, atol=1e-12)


def test_cupy_errors():
    A = poisson2d(10)
    s = ksolve.Solver(backend="cuda").setup(A)
    b = cp.ones(A.shape[0])
    b[3] = cp.nan
    with pytest.raises(ksolve.NumericError, match=r"b\[3\] is nan"):
        s.solve(b)
    with pytest.raises(ksolve.ArgumentError, match="matrix has 100 rows"):
        s.solve(cp.ones(99))
    with pytest.raises(ksolve.ArgumentError, match="backend=\"cuda\""):
        ksolve.Solver(backend="cpu").setup(A).solve(cp.ones(100))


def test_cupy_solve_leaves_no_host_copy_of_b():
    """The device path never downloads b: the solve works with b's host
    image poisoned (a NumPy copy is never made from it)."""
    A = poisson2d(40)
    b = cp.asarray(np.sin(np.arange(A.shape[0])))
    s = ksolve.Solver(backend="cuda", tolerance=1e-10).setup(A)
    import ksolve._convert as conv
    orig = conv.host_vector

    def refuse(*a, **k):
        raise AssertionError("host conversion on the device path")
    conv.host_vector = refuse
    try:
        import ksolve._solver as solver_mod
        saved = solver_mod.host_vector
        solver_mod.host_vector = refuse
        x = s.solve(b)
    finally:
        conv.host_vector = orig
        solver_mod.host_vector = saved
    assert relres(A, cp.asnumpy(x), cp.asnumpy(b)) < 1e-9


def test_cupyx_matrix_in_place():
    import cupyx.scipy.sparse as cps
    A = poisson3d(14)
    b = np.sin(np.arange(A.shape[0]))
    for fmt in ("csr", "coo", "csc"):
        Ad = cps.csr_matrix(A).asformat(fmt)
        s = ksolve.Solver(backend="cuda", tolerance=1e-10).setup(Ad)
        x = s.solve(cp.asarray(b))
        assert relres(A, cp.asnumpy(x), b) < 1e-9, fmt
        assert s.stats["amg"]["levels"][0]["nnz"] == A.nnz


def test_cupyx_duplicates_and_resetup():
    import cupyx.scipy.sparse as cps
    A = poisson2d(20).tocoo()
    # every entry twice, halves: the duplicates are summed on the device
    row = np.r_[A.row, A.row]
    col = np.r_[A.col, A.col]
    val = np.r_[A.data, A.data] / 2
    D = cps.coo_matrix((cp.asarray(val), (cp.asarray(row), cp.asarray(col))), shape=A.shape)
    b = np.ones(A.shape[0])
    s = ksolve.Solver(backend="cuda", tolerance=1e-10).setup(D)
    assert relres(A.tocsr(), cp.asnumpy(s.solve(cp.asarray(b))), b) < 1e-9
    A2 = cps.csr_matrix(A.tocsr() * 3.0)
    x = s.resetup(A2).solve(cp.asarray(b))
    assert relres(A.tocsr() * 3.0, cp.asnumpy(x), b) < 1e-9
    assert s.stats["amg"]["last_was_resetup"]
    B = cps.csr_matrix((A.tocsr() + _shift(A.shape[0])).tocsr())
    with pytest.raises(ksolve.ArgumentError, match="sparsity pattern"):
        s.resetup(B)


def _shift(n):
    import scipy.sparse as sp
    return sp.diags([0.1], [5], shape=(n, n))


def test_cupyx_matrix_errors():
    import cupyx.scipy.sparse as cps
    A = poisson2d(10).tolil()
    A[2, 3] = np.nan
    with pytest.raises(ksolve.NumericError, match="row 2"):
        ksolve.Solver(backend="cuda").setup(cps.csr_matrix(A.tocsr()))
    with pytest.raises(ksolve.ArgumentError, match="backend=\"cuda\""):
        ksolve.Solver(backend="cpu").setup(cps.csr_matrix(poisson2d(4)))
