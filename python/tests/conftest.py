"""Shared helpers of the ksolve Python tests (run by scripts/test, or by hand:
PYTHONPATH=<build>/python python3 -m pytest python/tests)."""

import os

import numpy as np
import pytest
import scipy.sparse as sp


def poisson2d(n, fmt="csr"):
    """The 5-point Laplacian on an n x n grid (Dirichlet), assembled with SciPy."""
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    I = sp.identity(n)
    return (sp.kron(I, T) + sp.kron(T, I)).asformat(fmt)


def poisson3d(n, fmt="csr"):
    """The 7-point Laplacian on an n^3 grid."""
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    I = sp.identity(n)
    return (sp.kron(sp.kron(I, I), T) + sp.kron(sp.kron(I, T), I)
            + sp.kron(sp.kron(T, I), I)).asformat(fmt)


def shared_matrices_dir():
    d = os.environ.get("KS_SHARED_MATRICES")
    if d:
        return d
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "..", "shared", "matrices"))


@pytest.fixture
def rng():
    return np.random.default_rng(20261127)


def relres(A, x, b):
    return np.linalg.norm(b - A @ x) / np.linalg.norm(b)
