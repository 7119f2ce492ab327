"""ksolve's errors arrive as Python exceptions carrying the library's message."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

import ksolve
from conftest import poisson2d


def test_unknown_key_names_the_path():
    with pytest.raises(ksolve.ConfigError, match=r"unknown key 'solver.max_iter'.*max_iters"):
        ksolve.Solver(max_iter=10)


def test_unknown_nested_key():
    with pytest.raises(ksolve.ConfigError,
                       match=r"solver\.preconditioner\.selectr.*did you mean 'selector'"):
        ksolve.Solver(preconditioner={"solver": "AMG", "selectr": "HMIS"})


def test_wrong_type_and_range():
    with pytest.raises(ksolve.ConfigError, match=r"solver\.tolerance: expected a number"):
        ksolve.Solver(tolerance="small")
    with pytest.raises(ksolve.ConfigError, match=r"solver\.max_iters"):
        ksolve.Solver(max_iters=-3)
    with pytest.raises(ValueError):  # ConfigError is a ValueError
        ksolve.Solver(solver="NOSUCH")


def test_config_file_errors_name_file_and_line(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{\n  "config_version": 2,\n  "solver": {"max_iters": 10,}\n}\n')
    with pytest.raises(ksolve.ConfigError) as e:
        ksolve.Solver(config=str(p))
    assert "bad.json:3:" in str(e.value)  # file:line:column
    with pytest.raises(ksolve.KsolveIOError, match="nonexistent.json"):
        ksolve.Solver(config=tmp_path / "nonexistent.json")


def test_config_file_and_dict(tmp_path, rng):
    doc = {"config_version": 2,
           "solver": {"solver": "PCG", "tolerance": 1e-9, "max_iters": 300,
                      "preconditioner": {"solver": "JACOBI_L1"}}}
    p = tmp_path / "ok.json"
    p.write_text(json.dumps(doc))
    A = poisson2d(10)
    b = rng.standard_normal(A.shape[0])
    for cfg in (str(p), p, doc):
        s = ksolve.Solver(config=cfg).setup(A)
        s.solve(b)
        assert s.stats["preconditioner"] == "JACOBI_L1"
        assert s.config["solver"]["tolerance"] == 1e-9
    # options override the file's keys
    s = ksolve.Solver(config=doc, preconditioner="JACOBI").setup(A)
    assert s.stats["preconditioner"] == "JACOBI"
    with pytest.raises(ksolve.ConfigError, match="unknown key 'matrix'"):
        ksolve.Solver(config={"config_version": 2, "matrix": {"file": "A.mtx"}})
    with pytest.raises(TypeError):
        ksolve.Solver(config=42)


def test_wrong_sizes(rng):
    A = poisson2d(6)
    s = ksolve.Solver().setup(A)
    with pytest.raises(ksolve.ArgumentError, match="b has 35 entries, the matrix has 36 rows"):
        s.solve(np.ones(35))
    with pytest.raises(ksolve.ArgumentError, match="x0 has 37 entries"):
        s.solve(np.ones(36), x0=np.zeros(37))
    # a 2-D b is k right-hand sides (test_many.py): rows must be the matrix's
    with pytest.raises(ksolve.ArgumentError, match=r"b must be 36 x 6 \(or a vector of 36\)"):
        s.solve(np.ones((6, 6)))
    with pytest.raises(ksolve.ArgumentError, match="setup had 36 x 36"):
        s.resetup(poisson2d(5))


def test_nan_in_b():
    s = ksolve.Solver().setup(poisson2d(6))
    b = np.ones(36)
    b[7] = np.nan
    with pytest.raises(ksolve.NumericError, match=r"b\[7\] is nan"):
        s.solve(b)
    b[7] = np.inf
    with pytest.raises(ArithmeticError, match=r"b\[7\] is inf"):
        s.solve(b)


def test_nan_in_matrix_names_row_and_column():
    A = poisson2d(6).tolil()
    A[3, 4] = np.nan
    with pytest.raises(ksolve.NumericError, match="row 3, column 4: value nan is not finite"):
        ksolve.Solver().setup(A.tocsr())


def test_non_square():
    A = sp.random(5, 7, density=0.5, format="csr", random_state=1)
    with pytest.raises(ksolve.ArgumentError, match="matrix is 5 x 7, must be square"):
        ksolve.Solver().setup(A)


def test_zero_diagonal_for_jacobi():
    A = poisson2d(5).tolil()
    A[4, 4] = 0.0
    A = A.tocsr()
    A.eliminate_zeros()
    with pytest.raises(ksolve.NumericError, match="zero diagonal at row 4"):
        ksolve.Solver(preconditioner="JACOBI").setup(A)


def test_bad_inputs():
    with pytest.raises(TypeError, match="scipy.sparse"):
        ksolve.Solver().setup(np.eye(4))
    with pytest.raises(TypeError, match="complex"):
        ksolve.Solver().setup(sp.identity(4, dtype=complex, format="csr"))
    with pytest.raises(ksolve.ArgumentError, match="unknown backend"):
        ksolve.Solver(backend="gpu")


def test_cuda_unavailable_or_present():
    if ksolve.backend_available("cuda"):
        assert ksolve.Solver(backend="cuda").backend == "cuda"
    else:
        with pytest.raises(ksolve.UnsupportedError, match="(?i)cuda"):
            ksolve.Solver(backend="cuda")


def test_use_before_setup_and_after_close():
    s = ksolve.Solver()
    with pytest.raises(ksolve.ArgumentError, match="before a successful setup"):
        s.solve(np.ones(3))
    with pytest.raises(ksolve.ArgumentError, match="before a successful setup"):
        s.resetup(poisson2d(3))
    s.close()
    s.close()  # twice is fine
    with pytest.raises(ksolve.KsolveError, match="closed"):
        s.setup(poisson2d(3))


def test_failed_setup_refuses_to_solve():
    s = ksolve.Solver().setup(poisson2d(4))
    with pytest.raises(ksolve.ArgumentError):
        s.setup(sp.random(3, 4, density=0.5, format="csr", random_state=2))
    with pytest.raises(ksolve.ArgumentError, match="before a successful setup"):
        s.solve(np.ones(16))
    s.setup(poisson2d(4))
    assert s.solve(np.ones(16)).shape == (16,)


def test_not_converging_is_a_status_or_an_exception():
    A = poisson2d(12)
    b = np.ones(A.shape[0])
    s = ksolve.Solver(max_iters=3, preconditioner="JACOBI").setup(A)
    s.solve(b)
    st = s.stats
    assert st["status"] == "MAX_ITERS" and not st["converged"] and st["iterations"] == 3
    s.raise_on_failure = True
    with pytest.raises(ksolve.NotConvergedError, match="MAX_ITERS after 3 iterations") as e:
        s.solve(b)
    assert e.value.stats["iterations"] == 3
    with pytest.raises(ksolve.NotConvergedError):
        ksolve.solve(A, b, max_iters=2, preconditioner="JACOBI", raise_on_failure=True)


def test_indefinite_breakdown_is_reported():
    # CG on a symmetric indefinite matrix: p'Ap <= 0 is a breakdown status
    A = sp.diags([np.r_[np.ones(10), -np.ones(10)]], [0], format="csr")
    b = np.ones(20)
    s = ksolve.Solver(preconditioner="JACOBI").setup(A)
    s.solve(b)
    assert s.stats["status"] in ("BREAKDOWN", "CONVERGED")
    if s.stats["status"] == "BREAKDOWN":
        assert s.stats["breakdown"]


def test_huge_finite_b_is_not_refused():
    # the one-pass check sums b: an overflowing sum of finite values is looked at entry by entry
    from ksolve._convert import check_finite
    check_finite(np.array([1e308, 1e308, -1.0]), "b")
    with pytest.raises(ksolve.NumericError, match=r"b\[2\] is -inf"):
        check_finite(np.array([1e308, 1e308, -np.inf]), "b")


def test_malformed_scipy_csr_is_refused_not_read_past():
    B = sp.identity(5, format="csr") * 2.0
    B.indptr = B.indptr[:-1]  # one row pointer short: scipy does not check this here
    with pytest.raises(ksolve.ArgumentError, match="malformed CSR: 5 row pointers for 5 rows"):
        ksolve.Solver().setup(B)
