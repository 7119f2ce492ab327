"""A 2-D b (n x k) solves the k systems together (ks_solver_solve_many):
x is n x k, each column equal to its own solve (same iterations), with
per-column statistics; x0 per column or one for all; the errors."""

import numpy as np
import pytest

import ksolve
from conftest import poisson2d, relres


@pytest.mark.parametrize("solver,pc", [("PCG", "AMG"), ("PCG", "JACOBI"),
                                       ("PBICGSTAB", "JACOBI"), ("GMRES", "AMG")])
def test_columns_as_single_solves(solver, pc, rng):
    A = poisson2d(16)
    n = A.shape[0]
    B = rng.standard_normal((n, 3))
    B[:, 1] = 0.0  # converges at once: x = 0
    s = ksolve.Solver(solver=solver, preconditioner=pc, tolerance=1e-10).setup(A)
    X = s.solve(B)
    assert X.shape == (n, 3)
    st = s.stats
    cols = st["columns"]
    assert len(cols) == 3
    assert cols[1]["iterations"] == 0 and not X[:, 1].any()
    assert st["iterations"] == max(c["iterations"] for c in cols)
    for j in range(3):
        x = s.solve(B[:, j])
        assert "columns" not in s.stats
        assert s.stats["iterations"] == cols[j]["iterations"]
        assert s.stats["status"] == cols[j]["status"] == "CONVERGED"
        assert np.allclose(X[:, j], x, rtol=0, atol=1e-10 * max(1.0, np.abs(x).max()))
        if j != 1:
            assert relres(A, X[:, j], B[:, j]) < 1e-9


def test_x0_and_function_form(rng):
    A = poisson2d(10)
    n = A.shape[0]
    B = rng.standard_normal((n, 2))
    X, st = ksolve.solve(A, B, tolerance=1e-10, return_stats=True)
    assert X.shape == (n, 2) and len(st["columns"]) == 2
    s = ksolve.Solver(tolerance=1e-10).setup(A)
    s.solve(B, x0=X)  # from the answer: nothing to do
    assert all(c["iterations"] == 0 for c in s.stats["columns"])
    s.solve(B, x0=np.zeros(n))  # one x0 for every column
    assert all(c["iterations"] > 0 for c in s.stats["columns"])
    # an n x 1 array stays a vector
    x = s.solve(B[:, :1])
    assert x.shape == (n,)


def test_errors(rng):
    A = poisson2d(8)
    n = A.shape[0]
    s = ksolve.Solver().setup(A)
    with pytest.raises(ksolve.ArgumentError, match="must be"):
        s.solve(np.ones((n, 2)), x0=np.ones((n, 3)))
    with pytest.raises(ksolve.ArgumentError, match="must be"):
        s.solve(np.ones((n + 1, 2)))
    with pytest.raises(ksolve.KsolveError, match="columns"):
        s.solve(np.ones((n, 65)))
    with pytest.raises(ksolve.NumericError):
        s.solve(np.full((n, 2), np.nan))
