"""Iteration counts side by side with pyamg's Ruge-Stueben AMG + CG (classical
serial coarsening, direct interpolation, symmetric Gauss-Seidel) on the same
problems, as a quality reference. Skipped when pyamg is not importable."""

import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import ksolve
from conftest import poisson2d, poisson3d, shared_matrices_dir

pyamg = pytest.importorskip("pyamg")


def aniso2d(n, eps):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    I = sp.identity(n)
    return (sp.kron(I, T) + eps * sp.kron(T, I)).tocsr()


PROBLEMS = {
    "poisson2d_5 100^2": lambda: poisson2d(100),
    "poisson2d_9 60^2": lambda: pyamg.gallery.stencil_grid(
        [[-1.0, -1.0, -1.0], [-1.0, 8.0, -1.0], [-1.0, -1.0, -1.0]], (60, 60), format="csr"),
    "poisson3d_7 24^3": lambda: poisson3d(24),
    "aniso2d eps=0.01 80^2": lambda: aniso2d(80, 0.01),
    "fv1": "fv1", "ani4": "ani4", "ani5_crop": "ani5_crop",
}

# ksolve's configurations: the default (PMIS, extended+i, Chebyshev: built for
# the GPU) and HMIS (a Ruge-Stueben pass first, as pyamg's coarsening)
CONFIGS = {
    "default": {},
    "HMIS": {"preconditioner": {"solver": "AMG", "selector": "HMIS"}},
}
RATIO = {"HMIS": 1.5, "default": 2.0}

def problem(name):
    make = PROBLEMS[name]
    if isinstance(make, str):
        path = os.path.join(shared_matrices_dir(), make + ".mtx.gz")
        if not os.path.exists(path):
            pytest.skip(f"{path} absent")
        return scipy.io.mmread(path).tocsr()
    return make()


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_iterations_against_pyamg(name):
    A = problem(name)
    b = A @ np.sin(np.arange(A.shape[0]))
    ml = pyamg.ruge_stuben_solver(A)
    res = []
    ml.solve(b, tol=1e-8, accel="cg", residuals=res, maxiter=500)
    it_pyamg = len(res) - 1
    assert res[-1] <= 1e-8 * np.linalg.norm(b) * 1.0001
    row = [name, A.shape[0], it_pyamg]
    for cname, options in CONFIGS.items():
        s = ksolve.Solver(tolerance=1e-8, max_iters=500, **options).setup(A)
        s.solve(b)
        st = s.stats
        assert st["status"] == "CONVERGED"
        row.append(st["iterations"])
        assert st["iterations"] <= RATIO[cname] * it_pyamg, (
            f"{name}: ksolve {cname} {st['iterations']} iterations, pyamg {it_pyamg}")
    print(f"\n{name}: pyamg RS+CG {it_pyamg}, ksolve default {row[3]}, HMIS {row[4]}")
