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
from . import _lib as _lib_module
import ctypes as _ctypes

__version__ = _text(_clib.ks_version())


def backend_available(name):
    """True when Solver(backend=name) can be created ("cpu"; "cuda" when the
    library was built with CUDA and a device is present)."""
    return bool(_clib.ks_backend_available(str(name).encode()))


_print_callback = None  # the ctypes callback, kept alive while the library holds it


def set_print_function(fn):
    """Send the library's own messages (residual monitor, solve summaries,
    setup progress, warnings) to fn(text), e.g. ``print`` or a logger's
    method, instead of the process's stdout/stderr (which Jupyter does not
    show); None restores those. Process-wide (ks_set_print_callback): set it
    before solving from several threads."""
    global _print_callback
    if fn is None:
        _clib.ks_set_print_callback(_lib_module.ks_print_fn(), None)
        _print_callback = None
        return

    def call(msg, length, ctx):
        try:
            fn(_ctypes.string_at(msg, length).decode("utf-8", "replace").rstrip("\n"))
        except Exception:  # never unwind into C
            pass
    cb = _lib_module.ks_print_fn(call)
    _clib.ks_set_print_callback(cb, None)
    _print_callback = cb


def set_log_level(level):
    """The library's messages shown: 0 errors .. 3 debug (default 2)."""
    _clib.ks_set_log_level(int(level))


__all__ = ["Solver", "solve", "backend_available", "set_log_level", "set_print_function",
           "KsolveError",
           "ConfigError", "ArgumentError", "InputFormatError", "NumericError",
           "UnsupportedError", "DeviceError", "KsolveIOError", "KsolveMemoryError",
           "NotConvergedError", "library_path", "__version__"]
