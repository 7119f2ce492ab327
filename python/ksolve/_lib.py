"""ctypes declarations of the C API in include/ksolve.h, and its errors.

Every function the package calls is declared here once, with the argument
and result types of its prototype in ksolve.h (python/tests/test_binding.py
reads the header and checks each declaration against it, since ctypes itself
cannot). Calls go through ``check``: a ks_error other than KS_OK becomes a
Python exception carrying ks_last_error()'s message.
"""

import ctypes
import os
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int32,
                    c_int64, c_long, c_size_t, c_void_p)

# ------------------------------------------------------------------ types
ks_int = c_int32
ks_gint = c_int64
ks_error = c_int
KS_NSTEPS = 6
KS_MAX_PHASES = 16


class ks_csr(Structure):
    _fields_ = [("nrows", ks_int), ("ncols", ks_int), ("nnz", ks_int),
                ("rowptr", POINTER(ks_int)), ("colind", POINTER(ks_int)),
                ("val", POINTER(c_double))]


class ks_solve_stats(Structure):
    _fields_ = [("status", c_int), ("iterations", c_int),
                ("initial_residual", c_double), ("final_residual", c_double),
                ("rhs_norm", c_double), ("relative_residual", c_double),
                ("true_relative_residual", c_double),
                ("setup_seconds", c_double), ("solve_seconds", c_double),
                ("breakdown", c_char * 96),
                ("history", POINTER(c_double)), ("history_len", c_int)]


class ks_hierarchy_level(Structure):
    _fields_ = [("rows", ks_int), ("nnz", c_int64), ("p_nnz", c_int64), ("r_nnz", c_int64),
                ("bytes", c_double), ("format", c_char_p),
                ("step_seconds", c_double * KS_NSTEPS), ("step_calls", c_long * KS_NSTEPS)]


class ks_hierarchy_info(Structure):
    _fields_ = [("nlevels", c_int), ("levels", POINTER(ks_hierarchy_level)),
                ("location", c_char_p), ("grid_complexity", c_double),
                ("operator_complexity", c_double), ("bytes", c_double),
                ("coarse_direct", c_int), ("setup_seconds", c_double),
                ("last_was_resetup", c_int), ("resetup_rebuilt", c_int),
                ("nphases", c_int),
                ("phase_names", c_char_p * KS_MAX_PHASES),
                ("phase_seconds", c_double * KS_MAX_PHASES),
                ("profiled_cycles", c_long), ("step_names", POINTER(c_char_p)),
                ("ranks", c_int)]


# Opaque handles: a pointer each; the destroy functions take its address.
handle = c_void_p
handle_p = POINTER(c_void_p)
dptr = POINTER(c_double)
iptr = POINTER(ks_int)

# void (*ks_print_fn)(const char *msg, int len, void *ctx)
ks_print_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, c_int, c_void_p)

# name: (result type, [argument types]) -- in the order of ksolve.h
PROTOTYPES = {
    "ks_version": (c_char_p, []),
    "ks_error_name": (c_char_p, [ks_error]),
    "ks_last_error": (c_char_p, []),
    "ks_clear_error": (None, []),
    "ks_set_print_callback": (None, [ks_print_fn, c_void_p]),
    "ks_set_log_level": (None, [c_int]),
    "ks_csr_free": (None, [POINTER(ks_csr)]),
    "ks_csr_from_coo": (ks_error, [ks_int, ks_int, c_int64, iptr, iptr, dptr,
                                   POINTER(ks_csr), POINTER(c_int64)]),
    "ks_backend_create": (ks_error, [c_char_p, handle_p]),
    "ks_backend_destroy": (None, [handle_p]),
    "ks_backend_name": (c_char_p, [handle]),
    "ks_backend_available": (c_int, [c_char_p]),
    "ks_backend_sync": (ks_error, [handle]),
    "ks_backend_description": (c_char_p, [handle]),
    "ks_backend_memory_in_use": (c_size_t, [handle]),
    "ks_backend_memory_peak": (c_size_t, [handle]),
    "ks_vec_create": (ks_error, [handle, ks_int, handle_p]),
    "ks_vec_destroy": (None, [handle_p]),
    "ks_vec_size": (ks_int, [handle]),
    "ks_vec_set_host": (ks_error, [handle, dptr]),
    "ks_vec_get_host": (ks_error, [handle, dptr]),
    "ks_vec_set_device": (ks_error, [handle, c_void_p]),
    "ks_vec_get_device": (ks_error, [handle, c_void_p]),
    "ks_vec_fill": (ks_error, [handle, c_double]),
    "ks_block_create": (ks_error, [handle, ks_int, c_int, handle_p]),
    "ks_block_destroy": (None, [handle_p]),
    "ks_block_set_host": (ks_error, [handle, dptr]),
    "ks_block_get_host": (ks_error, [handle, dptr]),
    "ks_block_fill": (ks_error, [handle, c_double]),
    "ks_matrix_create": (ks_error, [handle, POINTER(ks_csr), c_char_p, c_void_p, handle_p]),
    # device arrays: addresses (c_void_p), as for ks_vec_set_device
    "ks_matrix_create_device": (ks_error, [handle, ks_int, ks_int, ks_int, c_void_p, c_void_p,
                                           c_void_p, c_char_p, c_void_p, handle_p]),
    "ks_matrix_destroy": (None, [handle_p]),
    "ks_matrix_rows": (ks_int, [handle]),
    "ks_matrix_cols": (ks_int, [handle]),
    "ks_matrix_nnz": (ks_int, [handle]),
    "ks_matrix_format": (c_char_p, [handle]),
    "ks_matrix_format_reason": (c_char_p, [handle]),
    "ks_matrix_set_values": (ks_error, [handle, dptr]),
    "ks_matrix_set_values_device": (ks_error, [handle, c_void_p]),
    "ks_matrix_setup_seconds": (c_double, [handle]),
    "ks_config_create_from_file": (ks_error, [c_char_p, handle_p]),
    "ks_config_create_from_string": (ks_error, [c_char_p, handle_p]),
    "ks_config_create_default": (ks_error, [handle_p]),
    "ks_config_set": (ks_error, [handle, c_char_p, c_char_p]),
    "ks_config_dump": (c_void_p, [handle]),  # char *, free()d by the caller
    "ks_config_destroy": (None, [handle_p]),
    "ks_solve_status_name": (c_char_p, [c_int]),
    "ks_solver_create": (ks_error, [handle, handle, handle_p]),
    "ks_solver_setup": (ks_error, [handle, handle]),
    "ks_solver_resetup": (ks_error, [handle, handle]),
    "ks_solver_solve": (ks_error, [handle, handle, handle]),
    "ks_solver_stats": (POINTER(ks_solve_stats), [handle]),
    "ks_solver_solve_many": (ks_error, [handle, handle, handle]),
    "ks_solver_stats_count": (c_int, [handle]),
    "ks_solver_stats_column": (POINTER(ks_solve_stats), [handle, c_int]),
    "ks_solver_name": (c_char_p, [handle]),
    "ks_solver_preconditioner_name": (c_char_p, [handle]),
    "ks_solver_print_setup": (None, [handle, c_void_p]),
    "ks_solver_precondition": (ks_error, [handle, handle, handle]),
    "ks_solver_hierarchy": (ks_error, [handle, POINTER(ks_hierarchy_info)]),
    "ks_solver_destroy": (None, [handle_p]),
    "ks_wtime": (c_double, []),
}


def _find_library():
    """The shared library built with the package (beside this file), or the
    one named by $KSOLVE_LIBRARY."""
    env = os.environ.get("KSOLVE_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "_libksolve.so")


def _load():
    path = _find_library()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"ksolve: cannot load the C library {path}: {e} (build the package with "
            f"meson -Dpython=enabled or pip install ., or set KSOLVE_LIBRARY)") from e
    for name, (res, args) in PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib, path


lib, library_path = _load()
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [c_void_p]
_libc.free.restype = None

# ----------------------------------------------------------------- errors
class KsolveError(Exception):
    """A ksolve call failed. ``code`` is the ks_error name (e.g.
    "KS_ERR_CONFIG"); the message is ks_last_error()'s (it names the file and
    line, the config key path or the CUDA call)."""

    code = "KS_ERR"

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class ConfigError(KsolveError, ValueError):
    """Bad config key or value (KS_ERR_CONFIG)."""


class ArgumentError(KsolveError, ValueError):
    """Invalid argument or sizes that do not match (KS_ERR_ARG, KS_ERR_SIZE)."""


class InputFormatError(KsolveError, ValueError):
    """Malformed input file (KS_ERR_FORMAT)."""


class NumericError(KsolveError, ArithmeticError):
    """NaN/Inf in the data, a zero diagonal, ... (KS_ERR_NUMERIC)."""


class UnsupportedError(KsolveError, NotImplementedError):
    """Backend, format or feature not available (KS_ERR_UNSUPPORTED)."""


class DeviceError(KsolveError, RuntimeError):
    """A CUDA / cuSPARSE call failed (KS_ERR_DEVICE)."""


class KsolveIOError(KsolveError, OSError):
    """A file could not be opened, read or written (KS_ERR_IO)."""


class KsolveMemoryError(KsolveError, MemoryError):
    """A host or device allocation failed (KS_ERR_MEMORY)."""


class NotConvergedError(KsolveError):
    """The solve ran but did not converge (raised only with
    raise_on_failure=True); ``stats`` holds the solve's statistics."""

    code = "NOT_CONVERGED"

    def __init__(self, message, stats):
        super().__init__(message)
        self.stats = stats


_CLASSES = {
    "KS_ERR_ARG": ArgumentError, "KS_ERR_SIZE": ArgumentError,
    "KS_ERR_MEMORY": KsolveMemoryError, "KS_ERR_IO": KsolveIOError,
    "KS_ERR_FORMAT": InputFormatError, "KS_ERR_CONFIG": ConfigError,
    "KS_ERR_UNSUPPORTED": UnsupportedError, "KS_ERR_DEVICE": DeviceError,
    "KS_ERR_NUMERIC": NumericError,
}


def text(b):
    return b.decode("utf-8", "replace") if b is not None else ""


def error(code):
    """The exception for ks_error code, with this thread's last message."""
    name = text(lib.ks_error_name(code))
    msg = text(lib.ks_last_error()) or name
    lib.ks_clear_error()
    return _CLASSES.get(name, KsolveError)(msg, name)


def check(code):
    if code != 0:
        raise error(code)
