#!/usr/bin/env python3
"""ksolve from Python against the C program and against pyamg (issue 16).

The 7-point 3D Laplacian on an n^3 grid, b = A x with x_i = sin(i) (as
bench_amg), relative residual 1e-8, the same configuration everywhere:

  python   SciPy CSR matrix assembled in Python; timed: Solver.setup(A)
           (conversion, ks_matrix_create, AMG setup) + Solver.solve(b)
           (vector in, solve, vector out), wall clock around the calls,
           median of --repeat runs after a warm-up;
  C        bench/bench_amg on the same problem and config (the medians of
           the library's own setup and solve timers: its ks_matrix_create is
           done once, untimed, and the true residual that ks_solver_solve
           recomputes after its timer is not counted; the Python column
           counts both, and the script prints them apart);
  pyamg    pyamg.ruge_stuben_solver(A) + ml.solve(b, accel="cg") (one run:
           pyamg runs in Python/C++ on one core).

On --backend cuda the vectors are CuPy arrays (when CuPy is importable):
the Python layer's cost per solve (wall time minus the library's solve time)
and the process's host memory around the solve are printed.

    PYTHONPATH=build/python python3 bench/python_bench.py --n 128 [--backend cuda]
        [--config examples/configs/pcg_amg_gpu.json]
"""

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

import ksolve


def poisson3d_7(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    I = sp.identity(n, format="csr")
    A = sp.kron(sp.kron(I, I), T) + sp.kron(sp.kron(I, T), I) + sp.kron(sp.kron(T, I), I)
    A = A.tocsr()
    A.sum_duplicates()
    A.indices = A.indices.astype(np.int32)
    A.indptr = A.indptr.astype(np.int32)
    return A


def rss_mb():
    """Current resident set size of this process (MB), from /proc."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return float("nan")


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_python(A, b, backend, options, repeat, use_cupy):
    s = ksolve.Solver(backend=backend, **options)
    bb = b
    if use_cupy:
        import cupy as cp
        bb = cp.asarray(b)
        cp.cuda.Device().synchronize()
    totals, setups, solves, overheads, mats, outside = [], [], [], [], [], []
    for k in range(repeat + 1):  # the first is a warm-up
        t0 = time.perf_counter()
        s.setup(A)
        t1 = time.perf_counter()
        x = s.solve(bb)
        t2 = time.perf_counter()
        st = s.stats
        if k == 0:
            continue
        totals.append(t2 - t0)
        setups.append(t1 - t0)
        solves.append(t2 - t1)
        mats.append(st["matrix_time"])
        overheads.append((t2 - t1) - st["solve_call_time"])
        outside.append(st["solve_call_time"] - st["solve_time"])
    # host memory around one more solve with device vectors
    rss0 = rss_mb()
    x = s.solve(bb)
    rss1 = rss_mb()
    xh = x.get() if use_cupy else x
    res = np.linalg.norm(b - A @ xh) / np.linalg.norm(b)
    st = s.stats
    out = {
        "total_s": statistics.median(totals), "setup_s": statistics.median(setups),
        "solve_s": statistics.median(solves), "matrix_s": statistics.median(mats),
        "library_setup_s": st["setup_time"], "library_solve_s": st["solve_time"],
        "python_solve_overhead_ms": 1e3 * statistics.median(overheads),
        "library_outside_solve_timer_ms": 1e3 * statistics.median(outside),
        "iterations": st["iterations"], "status": st["status"], "true_relres": res,
        "rss_before_solve_mb": rss0, "rss_after_solve_mb": rss1, "peak_rss_mb": peak_rss_mb(),
        "vectors": "cupy" if use_cupy else "numpy",
        "operator_complexity": st.get("amg", {}).get("operator_complexity"),
    }
    s.close()
    return out


def run_c(bench_amg, n, backend, config, repeat):
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "config.json")
        with open(cfg, "w") as f:
            json.dump(config, f)
        out = os.path.join(d, "out.json")
        cmd = [bench_amg, "--gen", "poisson3d_7", "--n", str(n), "--backend", backend,
               "--config", cfg, "--repeat", str(repeat), "--json", out]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        r = json.load(open(out))["runs"][0]
    return {"total_s": r["time_to_solution_seconds"], "setup_s": r["setup_seconds"],
            "solve_s": r["solve_seconds"], "iterations": r["iterations"],
            "status": r["status"], "device": r["device"]}


def run_pyamg(A, b):
    import pyamg
    t0 = time.perf_counter()
    ml = pyamg.ruge_stuben_solver(A)
    t1 = time.perf_counter()
    res = []
    x = ml.solve(b, tol=1e-8, accel="cg", residuals=res, maxiter=500)
    t2 = time.perf_counter()
    return {"total_s": t2 - t0, "setup_s": t1 - t0, "solve_s": t2 - t1,
            "iterations": len(res) - 1,
            "true_relres": float(np.linalg.norm(b - A @ x) / np.linalg.norm(b)),
            "version": pyamg.__version__}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=128, help="grid points per axis [128]")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs, medians [3]")
    ap.add_argument("--config", help="JSON config (default: the library's default PCG + AMG)")
    ap.add_argument("--bench-amg", default=os.path.join(here, "..", "build", "bench", "bench_amg"),
                    help="the C program [build/bench/bench_amg]")
    ap.add_argument("--no-c", action="store_true", help="skip the C program")
    ap.add_argument("--no-pyamg", action="store_true", help="skip pyamg")
    ap.add_argument("--numpy", action="store_true", help="NumPy vectors on cuda, not CuPy")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()

    config = json.load(open(a.config)) if a.config else {"config_version": 2,
                                                        "solver": {"tolerance": 1e-8}}
    config.setdefault("config_version", 2)
    # the library's scope only (a config of the ksolve tool, such as
    # examples/configs/pcg_amg_gpu.json, also names its backend and problem;
    # bench_amg likewise reads only its "solver" scope)
    config = {"config_version": config["config_version"], "solver": config.get("solver", {})}
    use_cupy = False
    if a.backend == "cuda" and not a.numpy:
        try:
            import cupy  # noqa: F401
            use_cupy = True
        except ImportError:
            print("CuPy not importable: NumPy vectors on cuda")

    t0 = time.perf_counter()
    A = poisson3d_7(a.n)
    x_true = np.sin(np.arange(A.shape[0], dtype=np.float64))
    b = A @ x_true
    print(f"7-point {a.n}^3: {A.shape[0]} rows, {A.nnz} nonzeros, assembled with SciPy in "
          f"{time.perf_counter() - t0:.2f} s; {platform.node()}, {os.cpu_count()} CPUs, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    results = {"n": a.n, "backend": a.backend, "rows": A.shape[0], "nnz": int(A.nnz),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "host": platform.node(), "cpus": os.cpu_count()}

    results["python"] = run_python(A, b, a.backend, dict(config=config), a.repeat, use_cupy)
    r = results["python"]
    print(f"python ({r['vectors']} vectors): setup(A) {r['setup_s']:.4f} s (conversion + "
          f"ks_matrix_create {r['matrix_s']:.4f} s), solve(b) {r['solve_s']:.4f} s, total "
          f"{r['total_s']:.4f} s; {r['iterations']} iterations, {r['status']}, true relative "
          f"residual {r['true_relres']:.2e}")
    print(f"  Python layer per solve: {r['python_solve_overhead_ms']:.3f} ms around the "
          f"ks_solver_solve call (which spends {r['library_outside_solve_timer_ms']:.3f} ms "
          f"beyond its solve timer: the true residual); host RSS {r['rss_before_solve_mb']:.1f} MB before a solve, "
          f"{r['rss_after_solve_mb']:.1f} MB after, peak {r['peak_rss_mb']:.1f} MB "
          f"(b and x are {A.shape[0] * 8 / 2**20:.1f} MB each)")
    if not a.no_c:
        if not os.path.exists(a.bench_amg):
            print(f"C: {a.bench_amg} not built (ninja -C build); skipped")
        else:
            results["c"] = c = run_c(a.bench_amg, a.n, a.backend, config, a.repeat)
            print(f"C bench_amg: setup {c['setup_s']:.4f} s, solve {c['solve_s']:.4f} s, total "
                  f"{c['total_s']:.4f} s; {c['iterations']} iterations ({c['device']})")
            print(f"  python / C: {r['total_s'] / c['total_s']:.3f}x")
    if not a.no_pyamg:
        try:
            results["pyamg"] = p = run_pyamg(A, b)
        except ImportError:
            print("pyamg not importable; skipped")
        else:
            print(f"pyamg {p['version']} RS + CG (one core): setup {p['setup_s']:.3f} s, solve "
                  f"{p['solve_s']:.3f} s, total {p['total_s']:.3f} s; {p['iterations']} "
                  f"iterations, true relative residual {p['true_relres']:.2e}")
            print(f"  pyamg / ksolve from python: {p['total_s'] / r['total_s']:.1f}x")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
