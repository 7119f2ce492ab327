"""ksolve: preconditioned Krylov and AMG solvers for sparse A x = b on CPUs and
NVIDIA GPUs, from SciPy and CuPy. See docs/python.md.

    import ksolve
    x = ksolve.solve(A, b)                          # PCG + classical AMG on the cpu
    s = ksolve.Solver(backend="cuda", tolerance=1e-10,
                      preconditioner={"solver": "AMG", "selector": "HMIS"})
    x = s.setup(A).solve(b); print(s.stats["iterations"], s.hierarchy)

The package binds libksolve's C API (include/ksolve.h) with ctypes; every
computation is the C library's.
"""

from ._lib import (ArgumentError, ConfigError, DeviceError, InputFormatError, KsolveError,
                   KsolveIOError, KsolveMemoryError, NotConvergedError, NumericError,
                   UnsupportedError, library_path, lib as _clib, text as _text)
from ._solver import Solver, solve

__version__ = _text(_clib.ks_version())


def backend_available(name):
    """True when Solver(backend=name) can be created ("cpu"; "cuda" when the
    library was built with CUDA and a device is present)."""
    return bool(_clib.ks_backend_available(str(name).encode()))


def set_log_level(level):
    """The library's messages shown: 0 errors .. 3 debug (default 2)."""
    _clib.ks_set_log_level(int(level))


__all__ = ["Solver", "solve", "backend_available", "set_log_level", "KsolveError",
           "ConfigError", "ArgumentError", "InputFormatError", "NumericError",
           "UnsupportedError", "DeviceError", "KsolveIOError", "KsolveMemoryError",
           "NotConvergedError", "library_path", "__version__"]
