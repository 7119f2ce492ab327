"""Re-setup with new values, the preconditioner alone (aspreconditioner in
scipy's Krylov methods), statistics and the hierarchy summary."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import ksolve
from conftest import poisson2d, poisson3d, relres


def test_resetup_new_values(rng):
    A = poisson2d(20)
    b = rng.standard_normal(A.shape[0])
    s = ksolve.Solver(tolerance=1e-10).setup(A)
    x1 = s.solve(b)
    assert relres(A, x1, b) < 1e-9
    assert s.stats["amg"]["last_was_resetup"] is False
    levels = [L["rows"] for L in s.stats["amg"]["levels"]]
    # new values, same pattern, still SPD: S A S + 0.1 I, S diagonal > 0
    S = sp.diags(rng.uniform(0.5, 2.0, A.shape[0]))
    A2 = (S @ A @ S + sp.diags(np.full(A.shape[0], 0.1))).tocsr()
    A2.sort_indices()
    assert np.array_equal(A2.indptr, A.indptr) and np.array_equal(A2.indices, A.indices)
    s.resetup(A2)
    x2 = s.solve(b)
    assert relres(A2, x2, b) < 1e-9
    assert relres(A, x2, b) > 1e-3  # really solved the new system
    amg = s.stats["amg"]
    assert amg["last_was_resetup"] is True
    assert amg["resetup_rebuilt"] is False  # values only
    assert [L["rows"] for L in amg["levels"]] == levels  # coarsening kept
    ref = spla.spsolve(A2.tocsc(), b)
    assert np.allclose(x2, ref, atol=1e-7 * np.abs(ref).max(), rtol=0)


def test_resetup_in_place_and_as_coo(rng):
    A = poisson2d(10)
    b = rng.standard_normal(A.shape[0])
    s = ksolve.Solver(tolerance=1e-10).setup(A)
    A.data *= 2.0  # time stepping: the values change in place
    x = s.resetup(A).solve(b)
    assert relres(A, x, b) < 1e-9
    C = A.tocoo()
    C.data *= 0.5
    x = s.resetup(C).solve(b)  # another format, same pattern after conversion
    assert relres(C.tocsr(), x, b) < 1e-9


def test_resetup_refuses_another_pattern():
    A = poisson2d(8)
    s = ksolve.Solver().setup(A)
    B = (A + sp.diags([0.1], [3], shape=A.shape)).tocsr()
    with pytest.raises(ksolve.ArgumentError, match="sparsity pattern"):
        s.resetup(B)
    assert s.solve(np.ones(A.shape[0])).shape == (A.shape[0],)  # still set up for A


def test_aspreconditioner_in_scipy_cg(rng):
    A = poisson2d(40)
    b = rng.standard_normal(A.shape[0])
    s = ksolve.Solver(solver="AMG").setup(A)
    M = s.aspreconditioner()
    assert M.shape == A.shape
    counts = {}
    for name, prec in (("none", None), ("amg", M)):
        it = [0]

        def cb(xk, it=it):
            it[0] += 1
        try:
            x, info = spla.cg(A, b, M=prec, rtol=1e-8, atol=0.0, maxiter=2000, callback=cb)
        except TypeError:  # scipy < 1.12: tol
            x, info = spla.cg(A, b, M=prec, tol=1e-8, atol=0.0, maxiter=2000, callback=cb)
        assert info == 0
        assert relres(A, x, b) < 1e-7
        counts[name] = it[0]
    assert counts["amg"] <= 20 < counts["none"]


def test_preconditioner_is_one_cycle(rng):
    """Two applications of the same r give the same z, z is linear in r, and
    a stationary AMG solve with max_iters=1 from zero gives the same z."""
    A = poisson2d(16)
    r = rng.standard_normal(A.shape[0])
    s = ksolve.Solver(solver="PCG").setup(A)
    z1, z2 = s.precondition(r), s.precondition(r)
    assert np.array_equal(z1, z2)
    assert np.allclose(s.precondition(3 * r), 3 * z1, rtol=1e-12, atol=1e-12 * np.abs(z1).max())
    st = ksolve.Solver(solver="AMG", max_iters=1, tolerance=1e-30).setup(A)
    z = st.solve(r)
    assert np.allclose(z, z1, rtol=1e-10, atol=1e-12 * np.abs(z1).max())
    # a cycle reduces the error of A z = r
    assert relres(A, z1, r) < 0.5


def test_aspreconditioner_in_gmres_with_jacobi(rng):
    n = 25
    A = (poisson2d(n) + sp.diags([0.2], [1], shape=(n * n, n * n))).tocsr()
    b = rng.standard_normal(n * n)
    s = ksolve.Solver(solver="PBICGSTAB", preconditioner="JACOBI").setup(A)
    M = s.aspreconditioner()
    z = M @ b
    assert np.allclose(z, b / A.diagonal())
    x, info = spla.gmres(A, b, M=s.aspreconditioner(), restart=50, maxiter=50, atol=0.0)
    assert info == 0


def test_stats_and_hierarchy():
    A = poisson3d(12)
    b = A @ np.ones(A.shape[0])
    s = ksolve.Solver().setup(A)
    x = s.solve(b)
    st = s.stats
    assert st["status"] == "CONVERGED" and st["converged"]
    assert st["solver"] == "PCG" and st["preconditioner"] == "AMG"
    h = st["residual_history"]
    assert len(h) == st["iterations"] + 1 and h[0] == pytest.approx(np.linalg.norm(b))
    assert h[-1] / h[0] == pytest.approx(st["relative_residual"])
    assert st["relative_residual"] < 1e-8
    assert st["true_relative_residual"] == pytest.approx(relres(A, x, b), rel=1e-6, abs=1e-14)
    assert st["setup_time"] > 0 and st["solve_time"] > 0 and st["matrix_time"] > 0
    assert st["solve_call_time"] >= st["solve_time"]
    amg = st["amg"]
    assert amg["levels"][0]["rows"] == A.shape[0] and amg["levels"][0]["nnz"] == A.nnz
    assert len(amg["levels"]) >= 2
    assert amg["levels"][-1]["rows"] < A.shape[0]
    rows = sum(L["rows"] for L in amg["levels"])
    assert amg["grid_complexity"] == pytest.approx(rows / A.shape[0])
    assert "RAP" in amg["phases"] and amg["location"] == "host"
    text = s.hierarchy
    assert "grid complexity" in text and str(A.shape[0]) in text
    # no AMG: no table
    s2 = ksolve.Solver(preconditioner="JACOBI").setup(A)
    s2.solve(b)
    assert "amg" not in s2.stats and s2.hierarchy_info is None


def test_one_shot_with_stats(rng):
    A = poisson2d(10)
    b = rng.standard_normal(A.shape[0])
    x, st = ksolve.solve(A, b, return_stats=True, tolerance=1e-9)
    assert st["converged"] and relres(A, x, b) < 1e-8
    assert "grid complexity" not in repr(st)


def test_solver_reuse_many_rhs(rng):
    A = poisson2d(12)
    with ksolve.Solver(tolerance=1e-10) as s:
        s.setup(A)
        for _ in range(3):
            b = rng.standard_normal(A.shape[0])
            assert relres(A, s.solve(b), b) < 1e-9
        assert "PCG + AMG on cpu, 144 x 144" in repr(s)
    assert "closed" in repr(s)


def test_messages_to_a_python_function():
    lines = []
    ksolve.set_print_function(lines.append)
    try:
        A = poisson2d(10)
        s = ksolve.Solver(monitor_residual=1, print_solve_stats=1, preconditioner="JACOBI")
        s.setup(A).solve(np.ones(A.shape[0]))
        it = s.stats["iterations"]
    finally:
        ksolve.set_print_function(None)
    assert any("residual" in l for l in lines)
    # one monitor line per iteration (and the initial residual)
    rows = [l for l in lines if l.strip()[:1].isdigit()]
    assert len(rows) >= it + 1
    n = len(lines)
    ksolve.Solver(monitor_residual=1, preconditioner="JACOBI").setup(A).solve(np.ones(100))
    assert len(lines) == n  # restored: nothing more arrives here
