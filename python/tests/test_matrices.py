"""The real matrices of ../shared/matrices (or $KS_SHARED_MATRICES), read with
scipy.io.mmread (COO, symmetric files expanded, explicit zeros kept); skipped
when the folder is absent."""

import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse.linalg as spla

import ksolve
from conftest import relres, shared_matrices_dir

# name, options, reference iterations bound (hypre BoomerAMG's count from
# the folder's README, times 2, where it gives one)
CASES = [
    ("fv1", {}, 10),
    ("ani4", {}, 28),
    ("ani5_crop", {}, 32),
    ("watt_2", {"solver": "PBICGSTAB"}, None),
    ("memplus", {"solver": "PBICGSTAB"}, 6),
]


def read(name):
    path = os.path.join(shared_matrices_dir(), name + ".mtx.gz")
    if not os.path.exists(path):
        pytest.skip(f"{path} absent (the shared matrices live beside the project)")
    return scipy.io.mmread(path)


@pytest.mark.parametrize("name,options,bound", CASES, ids=[c[0] for c in CASES])
def test_shared_matrix(name, options, bound):
    A = read(name)  # COO, as mmread returns it: converted by ksolve
    n = A.shape[0]
    b = A @ np.sin(np.arange(n))  # the README's right-hand side
    s = ksolve.Solver(max_iters=1000, tolerance=1e-8, **options).setup(A)
    x = s.solve(b)
    st = s.stats
    assert st["status"] == "CONVERGED", st
    assert relres(A.tocsr(), x, b) < 1e-7
    if bound is not None:
        assert st["iterations"] <= bound
    assert st["amg"]["levels"][0]["nnz"] == A.tocsr().nnz  # explicit zeros kept
    if n <= 5000:  # against a direct solve
        ref = spla.spsolve(A.tocsc(), b)
        assert np.linalg.norm(x - ref) <= 1e-5 * np.linalg.norm(ref)
