"""Solve a 2D Poisson problem assembled with SciPy by AMG-preconditioned CG,
on the cpu and (when present) on the GPU; read the statistics and plot the
residual history when matplotlib is installed. docs/python.md walks through it.

    python3 python/examples/poisson2d.py [n]
"""
import sys

import numpy as np
import scipy.sparse as sp

import ksolve

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200

# -u'' on the unit square, n x n interior points, 5-point stencil, f = 1
h = 1.0 / (n + 1)
T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
I = sp.identity(n)
A = ((sp.kron(I, T) + sp.kron(T, I)) / h**2).tocsr()
b = np.ones(A.shape[0])

backends = ["cpu"] + (["cuda"] if ksolve.backend_available("cuda") else [])
history = {}
for backend in backends:
    s = ksolve.Solver(backend=backend, solver="PCG", tolerance=1e-10, max_iters=200,
                      preconditioner={"solver": "AMG", "selector": "PMIS",
                                      "interpolator": "D2", "smoother": "CHEBYSHEV"})
    s.setup(A)
    if backend == "cuda":
        try:  # CuPy arrays stay on the device
            import cupy as cp
            x = cp.asnumpy(s.solve(cp.asarray(b)))
        except ImportError:
            x = s.solve(b)
    else:
        x = s.solve(b)
    st = s.stats
    print(f"{backend}: {st['status']} in {st['iterations']} iterations, relative residual "
          f"{st['relative_residual']:.2e} (true {st['true_relative_residual']:.2e}), "
          f"setup {st['setup_time']:.3f} s, solve {st['solve_time']:.3f} s")
    amg = st["amg"]
    print(f"  {len(amg['levels'])} levels, rows "
          + " > ".join(str(L["rows"]) for L in amg["levels"])
          + f", operator complexity {amg['operator_complexity']:.2f}")
    print(f"  max |u| = {np.abs(x).max():.6f} (continuous problem: 0.073671)")
    history[backend] = st["residual_history"]
print(s.hierarchy)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib not installed: no plot")
else:
    for backend, hist in history.items():
        plt.semilogy(hist / hist[0], marker="o", label=backend)
    plt.xlabel("iteration")
    plt.ylabel("relative residual")
    plt.title(f"AMG-PCG, 2D Poisson {n}x{n}")
    plt.legend()
    plt.savefig("residuals.png", dpi=100)
    print("residual history plotted in residuals.png")
