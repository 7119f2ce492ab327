"""ksolve.Solver and ksolve.solve: the C solver object behind a SciPy-style
interface. Every computation is the C library's; this file converts inputs,
owns the C handles and turns results into Python objects."""

import ctypes
import json
import os
import threading

import numpy as np

from . import _lib
from ._convert import HostCSR, check_finite, host_block, host_vector
from ._lib import check, lib, text

_PATHLIKE = (str, bytes, os.PathLike)


def _is_cuda_array(a):
    return hasattr(a, "__cuda_array_interface__")


def _is_cupy_sparse(A):
    mod = type(A).__module__ or ""
    return mod.startswith("cupyx.scipy.sparse")


def _make_config(config, options):
    """A ks_config handle from config (None, a path or a dict of the whole
    document) with options (keys of the "solver" scope) set over it."""
    h = ctypes.c_void_p()
    if config is None:
        check(lib.ks_config_create_default(ctypes.byref(h)))
    elif isinstance(config, dict):
        check(lib.ks_config_create_from_string(json.dumps(config).encode(), ctypes.byref(h)))
    elif isinstance(config, _PATHLIKE):
        check(lib.ks_config_create_from_file(os.fsencode(config), ctypes.byref(h)))
    else:
        raise TypeError(f"ksolve: config must be None, a path or a dict, "
                        f"got {type(config).__name__}")
    try:
        for key, value in options.items():
            check(lib.ks_config_set(h, f"solver.{key}".encode(), json.dumps(value).encode()))
    except BaseException:
        lib.ks_config_destroy(ctypes.byref(h))
        raise
    return h


class Solver:
    """A ksolve solver on one backend.

    ``Solver(config=None, backend="cpu", raise_on_failure=False, **options)``

    config: None (the library's default: PCG + classical AMG, relative
    tolerance 1e-8), the path of a JSON config file, or a dict of the same
    document (``{"config_version": 2, "solver": {...}}``). options are keys of
    the "solver" scope set over it, e.g. ``solver="PCG", tolerance=1e-10,
    preconditioner={"solver": "AMG", "selector": "HMIS"}`` (a dict replaces
    that scope). Bad keys or values raise ksolve.ConfigError naming the key
    path.

    backend: "cpu" or "cuda". raise_on_failure: raise NotConvergedError when
    a solve does not converge (the status is in ``stats`` either way).
    """

    def __init__(self, config=None, backend="cpu", raise_on_failure=False, **options):
        self._be = ctypes.c_void_p()
        self._cfg = ctypes.c_void_p()
        self._s = ctypes.c_void_p()
        self._M = ctypes.c_void_p()
        self._vecs = {}
        self._lock = threading.RLock()
        self._pattern = None
        self._shape = None
        self._matrix_seconds = 0.0
        self._solve_call_seconds = 0.0
        self._many = False
        self._duplicates = 0
        self.raise_on_failure = bool(raise_on_failure)
        if not isinstance(backend, str):
            raise TypeError("ksolve: backend must be \"cpu\" or \"cuda\"")
        self._cfg = _make_config(config, options)
        try:
            check(lib.ks_backend_create(backend.encode(), ctypes.byref(self._be)))
            check(lib.ks_solver_create(self._be, self._cfg, ctypes.byref(self._s)))
        except BaseException:
            self.close()
            raise
        self.backend = text(lib.ks_backend_name(self._be))
        self._device = _DeviceVectors(self) if self.backend == "cuda" else None

    # ------------------------------------------------------------ handles
    def close(self):
        """Free the C objects now (also done when the Solver is collected)."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            for v in list(getattr(self, "_vecs", {}).values()):
                lib.ks_vec_destroy(ctypes.byref(v))
            self._vecs = {}
            for name, fn in (("_s", lib.ks_solver_destroy), ("_M", lib.ks_matrix_destroy),
                             ("_cfg", lib.ks_config_destroy),
                             ("_be", lib.ks_backend_destroy)):
                h = getattr(self, name, None)
                if h is not None and h.value:
                    fn(ctypes.byref(h))

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _alive(self):
        if not self._s or not self._s.value:
            raise _lib.KsolveError("ksolve: the Solver was closed", "KS_ERR_ARG")

    def _vec(self, name, n):
        v = self._vecs.get(name)
        if v is not None and lib.ks_vec_size(v) == n:
            return v
        if v is not None:
            lib.ks_vec_destroy(ctypes.byref(v))
            del self._vecs[name]
        v = ctypes.c_void_p()
        check(lib.ks_vec_create(self._be, n, ctypes.byref(v)))
        self._vecs[name] = v
        return v

    # -------------------------------------------------------------- setup
    def _matrix(self, A):
        """A new ks_matrix on the backend from A; (handle, seconds, pattern)."""
        t0 = lib.ks_wtime()
        if _is_cupy_sparse(A):
            if self._device is None:
                raise _lib.ArgumentError(
                    "ksolve: a cupyx.scipy.sparse matrix needs backend=\"cuda\"", "KS_ERR_ARG")
            return self._device.matrix(A, t0)
        host = HostCSR(A)
        try:
            M = ctypes.c_void_p()
            check(lib.ks_matrix_create(self._be, ctypes.byref(host.csr), b"auto", None,
                                       ctypes.byref(M)))
            pattern = host.pattern()
            self._duplicates = host.duplicates
        finally:
            host.close()
        return M, lib.ks_wtime() - t0, pattern

    def setup(self, A):
        """Set the solver up for A (scipy.sparse csr/csc/coo; on cuda also
        cupyx.scipy.sparse). A is converted once; unsorted and duplicate
        entries are accepted (duplicates are summed). Returns self."""
        with self._lock:
            self._alive()
            M, seconds, pattern = self._matrix(A)
            old = self._M
            try:
                check(lib.ks_solver_setup(self._s, M))
            except BaseException:
                lib.ks_matrix_destroy(ctypes.byref(M))
                if old.value:  # the solver refuses to solve until a setup succeeds
                    lib.ks_matrix_destroy(ctypes.byref(old))
                self._M = ctypes.c_void_p()
                self._shape = self._pattern = None
                raise
            if old.value:
                lib.ks_matrix_destroy(ctypes.byref(old))
            self._M = M
            self._shape = tuple(A.shape)
            self._pattern = pattern
            self._matrix_seconds = seconds
        return self

    def resetup(self, A):
        """Set up again for A with new values on the pattern of the matrix
        given to setup (AMG keeps its coarsening and interpolation pattern:
        much cheaper than setup). Returns self."""
        with self._lock:
            self._alive()
            if self._pattern is None:
                raise _lib.ArgumentError("ksolve: resetup before a successful setup",
                                         "KS_ERR_ARG")
            if tuple(A.shape) != self._shape:
                raise _lib.ArgumentError(
                    f"ksolve: resetup with a {A.shape[0]} x {A.shape[1]} matrix, setup had "
                    f"{self._shape[0]} x {self._shape[1]} (use setup for a new matrix)",
                    "KS_ERR_SIZE")
            if _is_cupy_sparse(A):
                self._device.set_values(A, self._pattern)
            else:
                host = HostCSR(A)
                try:
                    if not _same_pattern(self._pattern, host.indptr, host.indices):
                        raise _lib.ArgumentError(
                            "ksolve: resetup needs the sparsity pattern of the matrix given to "
                            "setup (after summing duplicates); this one differs (use setup)",
                            "KS_ERR_ARG")
                    check(lib.ks_matrix_set_values(
                        self._M, host.data.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))
                finally:
                    host.close()
            check(lib.ks_solver_resetup(self._s, self._M))
        return self

    # -------------------------------------------------------------- solve
    def _rows(self):
        if self._shape is None:
            raise _lib.ArgumentError("ksolve: solve before a successful setup", "KS_ERR_ARG")
        return self._shape[0]

    def solve(self, b, x0=None):
        """x with A x = b, from x0 (zero when None). On the cpu backend b is a
        NumPy array (any real dtype; float64 is used); on cuda a NumPy or a
        CuPy array, and x is then of the same kind (CuPy arrays stay on the
        device). Not converging is a status in ``stats``, or
        NotConvergedError with raise_on_failure. A 2-D b of n x k (k >= 2)
        solves the k systems together (ks_solver_solve_many) and gives x of
        n x k; x0 is then n x k or one vector for every column, and
        ``stats["columns"]`` holds each column's statistics."""
        with self._lock:
            self._alive()
            n = self._rows()
            if np.ndim(b) == 2 and np.shape(b)[1] > 1:
                return self._solve_many(b, x0, n)
            vb, vx = self._vec("b", n), self._vec("x", n)
            on_device = _is_cuda_array(b)
            if on_device or (x0 is not None and _is_cuda_array(x0)):
                if self._device is None:
                    raise _lib.ArgumentError(
                        "ksolve: CUDA arrays need backend=\"cuda\" (this solver is on "
                        f"{self.backend})", "KS_ERR_ARG")
                self._device.upload(vb, b, n, "b")
                if x0 is None:
                    check(lib.ks_vec_fill(vx, 0.0))
                else:
                    self._device.upload(vx, x0, n, "x0")
            else:
                self._upload(vb, b, n, "b")
                if x0 is None:
                    check(lib.ks_vec_fill(vx, 0.0))
                else:
                    self._upload(vx, x0, n, "x0")
            t0 = lib.ks_wtime()
            self._many = False
            check(lib.ks_solver_solve(self._s, vb, vx))
            self._solve_call_seconds = lib.ks_wtime() - t0
            x = self._device.download(vx, n) if on_device else self._download(vx, n)
            self._raise_unless_converged()
        return x

    def _raise_unless_converged(self):
        if not self.raise_on_failure:
            return
        st = self.stats
        if st["status"] != "CONVERGED":
            raise _lib.NotConvergedError(
                f"ksolve: {st['solver']} did not converge: {st['status']} after "
                f"{st['iterations']} iterations, relative residual "
                f"{st['relative_residual']:.3e}"
                + (f" ({st['breakdown']})" if st["breakdown"] else ""), st)

    def _solve_many(self, b, x0, n):
        """The k columns of b together, through host arrays in the blocks'
        row-interleaved layout (a C-ordered n x k array is that layout).
        CuPy arrays go through the host and come back as CuPy."""
        cp = None
        if _is_cuda_array(b) or (x0 is not None and _is_cuda_array(x0)):
            if self._device is None:
                raise _lib.ArgumentError(
                    "ksolve: CUDA arrays need backend=\"cuda\" (this solver is on "
                    f"{self.backend})", "KS_ERR_ARG")
            cp = self._device._cupy()
            b = cp.asnumpy(b)
            x0 = cp.asnumpy(x0) if x0 is not None else None
        k = np.shape(b)[1]
        bh = host_block(b, n, k, "b")
        xh = np.zeros((n, k)) if x0 is None else np.array(host_block(x0, n, k, "x0"))
        dp = ctypes.POINTER(ctypes.c_double)
        B, X = ctypes.c_void_p(), ctypes.c_void_p()
        try:
            check(lib.ks_block_create(self._be, n, k, ctypes.byref(B)))
            check(lib.ks_block_create(self._be, n, k, ctypes.byref(X)))
            check(lib.ks_block_set_host(B, bh.ctypes.data_as(dp)))
            check(lib.ks_block_set_host(X, xh.ctypes.data_as(dp)))
            t0 = lib.ks_wtime()
            self._many = True
            check(lib.ks_solver_solve_many(self._s, B, X))
            self._solve_call_seconds = lib.ks_wtime() - t0
            check(lib.ks_block_get_host(X, xh.ctypes.data_as(dp)))
        finally:
            lib.ks_block_destroy(ctypes.byref(B))
            lib.ks_block_destroy(ctypes.byref(X))
        self._raise_unless_converged()
        return cp.asarray(xh) if cp is not None else xh

    @staticmethod
    def _upload(v, a, n, what):
        a = host_vector(a, n, what)
        check(lib.ks_vec_set_host(v, a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))

    @staticmethod
    def _download(v, n):
        x = np.empty(n, dtype=np.float64)
        check(lib.ks_vec_get_host(v, x.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))
        return x

    def precondition(self, r):
        """z = M^-1 r: the preconditioner applied once (for AMG one cycle
        from zero), through ks_solver_precondition."""
        with self._lock:
            self._alive()
            n = self._rows()
            vr, vz = self._vec("r", n), self._vec("z", n)
            if _is_cuda_array(r) and self._device is not None:
                self._device.upload(vr, r, n, "r")
                check(lib.ks_solver_precondition(self._s, vr, vz))
                return self._device.download(vz, n)
            self._upload(vr, r, n, "r")
            check(lib.ks_solver_precondition(self._s, vr, vz))
            return self._download(vz, n)

    def aspreconditioner(self):
        """A scipy.sparse.linalg.LinearOperator applying the preconditioner
        once (one AMG cycle), for scipy's cg, gmres, minres, ..."""
        from scipy.sparse.linalg import LinearOperator
        n = self._rows()

        def apply(r):
            z = self.precondition(np.ravel(r))
            return z.reshape(np.shape(r))

        return LinearOperator((n, n), matvec=apply, dtype=np.float64)

    # -------------------------------------------------------------- stats
    @property
    def stats(self):
        """The last solve's statistics, a dict: status ("CONVERGED",
        "MAX_ITERS", "BREAKDOWN", "DIVERGED", "NAN", "NOT_RUN"), converged,
        iterations, residual_history (NumPy array, iterations + 1 entries when
        store_res_history is on), initial/final/relative/true relative
        residual, rhs_norm, setup_time, solve_time, matrix_time (conversion
        and upload of A), solve_call_time (the whole ks_solver_solve call:
        solve_time plus the true residual's recomputation), solver and
        preconditioner names, spmv_format, and
        "amg" (the grid table as a dict, see hierarchy_info) when AMG is used.
        After a solve of a 2-D b, "columns": one dict of the fields above
        (status .. solve_time) per column; the top-level fields then
        summarise them (ks_solver_solve_many)."""
        with self._lock:
            self._alive()
            p = lib.ks_solver_stats(self._s)
            if not p:
                raise _lib.KsolveError("ksolve: the solver has no statistics", "KS_ERR_ARG")
            d = _stats_of(p.contents)
            d.update({
                "matrix_time": self._matrix_seconds,
                "solve_call_time": self._solve_call_seconds,
                "duplicates_summed": self._duplicates,
                "solver": text(lib.ks_solver_name(self._s)),
                "preconditioner": text(lib.ks_solver_preconditioner_name(self._s)),
                "backend": self.backend,
                "spmv_format": text(lib.ks_matrix_format(self._M)) if self._M.value else "",
            })
            if self._many:
                d["columns"] = [_stats_of(lib.ks_solver_stats_column(self._s, j).contents)
                                for j in range(lib.ks_solver_stats_count(self._s))]
            amg = self.hierarchy_info
            if amg is not None:
                d["amg"] = amg
            return d

    @property
    def hierarchy_info(self):
        """What the AMG setup built, as a dict (None without AMG): levels (a
        list of dicts: rows, nnz, p_nnz, r_nnz, bytes, format), location,
        grid_complexity, operator_complexity, bytes, coarse_direct,
        setup_time, last_was_resetup, resetup_rebuilt, phases (name -> seconds)."""
        with self._lock:
            self._alive()
            info = _lib.ks_hierarchy_info()
            check(lib.ks_solver_hierarchy(self._s, ctypes.byref(info)))
            if info.nlevels <= 0:
                return None
            levels = []
            for i in range(info.nlevels):
                L = info.levels[i]
                levels.append({"rows": L.rows, "nnz": L.nnz, "p_nnz": L.p_nnz,
                               "r_nnz": L.r_nnz, "bytes": L.bytes, "format": text(L.format)})
            return {
                "levels": levels,
                "location": text(info.location),
                "grid_complexity": info.grid_complexity,
                "operator_complexity": info.operator_complexity,
                "bytes": info.bytes,
                "coarse_direct": bool(info.coarse_direct),
                "setup_time": info.setup_seconds,
                "last_was_resetup": bool(info.last_was_resetup),
                "resetup_rebuilt": bool(info.resetup_rebuilt),
                "phases": {text(info.phase_names[i]): info.phase_seconds[i]
                           for i in range(info.nphases)},
            }

    @property
    def hierarchy(self):
        """The setup summary as ksolve prints it (for AMG the grid table,
        complexities and setup time per phase; "" for simple
        preconditioners)."""
        with self._lock:
            self._alive()
            return _print_to_string(lambda f: lib.ks_solver_print_setup(self._s, f))

    @property
    def config(self):
        """The full configuration with every default filled in, as a dict."""
        p = lib.ks_config_dump(self._cfg)
        if not p:
            raise _lib.error(2)  # KS_ERR_MEMORY: ks_config_dump set the message
        try:
            return json.loads(ctypes.string_at(p).decode())
        finally:
            _lib._libc.free(p)

    def __repr__(self):
        if not self._s or not self._s.value:
            return "<ksolve.Solver (closed)>"
        return (f"<ksolve.Solver {text(lib.ks_solver_name(self._s))} + "
                f"{text(lib.ks_solver_preconditioner_name(self._s))} on {self.backend}"
                + (f", {self._shape[0]} x {self._shape[1]}>" if self._shape else ">"))


def _stats_of(st):
    """A ks_solve_stats as the dict fields of Solver.stats."""
    status = text(lib.ks_solve_status_name(st.status))
    hist = (np.ctypeslib.as_array(st.history, shape=(st.history_len,)).copy()
            if st.history and st.history_len > 0 else np.zeros(0))
    return {
        "status": status,
        "converged": status == "CONVERGED",
        "iterations": st.iterations,
        "residual_history": hist,
        "initial_residual": st.initial_residual,
        "final_residual": st.final_residual,
        "relative_residual": st.relative_residual,
        "true_relative_residual": st.true_relative_residual,
        "rhs_norm": st.rhs_norm,
        "breakdown": text(st.breakdown),
        "setup_time": st.setup_seconds,
        "solve_time": st.solve_seconds,
    }


def _print_to_string(write):
    """What write(FILE *) prints, through a C tmpfile."""
    libc = _lib._libc
    libc.tmpfile.restype = ctypes.c_void_p
    libc.fflush.argtypes = [ctypes.c_void_p]
    libc.rewind.argtypes = [ctypes.c_void_p]
    libc.fread.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
    libc.fread.restype = ctypes.c_size_t
    libc.fclose.argtypes = [ctypes.c_void_p]
    f = libc.tmpfile()
    if not f:
        raise OSError("ksolve: tmpfile() failed")
    try:
        write(f)
        libc.fflush(f)
        libc.rewind(f)
        chunks = []
        buf = ctypes.create_string_buffer(65536)
        while True:
            k = libc.fread(buf, 1, len(buf), f)
            if k == 0:
                break
            chunks.append(buf.raw[:k])
        return b"".join(chunks).decode("utf-8", "replace")
    finally:
        libc.fclose(f)


class _DeviceVectors:
    """CuPy arrays and cupyx.scipy.sparse matrices on the cuda backend."""

    def __init__(self, solver):
        self.s = solver

    @staticmethod
    def _cupy():
        try:
            import cupy
        except ImportError as e:
            raise ImportError("ksolve: CUDA arrays need CuPy") from e
        return cupy

    def upload(self, v, a, n, what):
        cp = self._cupy()
        if not _is_cuda_array(a):
            return Solver._upload(v, a, n, what)
        a = cp.asarray(a)
        if a.ndim == 2 and 1 in a.shape:
            a = a.reshape(-1)
        if a.ndim != 1 or a.shape[0] != n:
            raise _lib.ArgumentError(
                f"ksolve: {what} has shape {a.shape}, the matrix has {n} rows", "KS_ERR_SIZE")
        if a.dtype.kind == "c":
            raise TypeError(f"ksolve: {what} is complex; ksolve solves real systems")
        a = cp.ascontiguousarray(a, dtype=cp.float64)
        check_finite(a, what, cp)
        cp.cuda.get_current_stream().synchronize()  # a's producers done
        check(lib.ks_vec_set_device(v, ctypes.c_void_p(a.data.ptr)))

    def download(self, v, n):
        cp = self._cupy()
        x = cp.empty(n, dtype=cp.float64)
        check(lib.ks_vec_get_device(v, ctypes.c_void_p(x.data.ptr)))
        return x

    def _canonical(self, A):
        """A as a canonical cupyx CSR with int32 indices and float64 values
        (CuPy's own operations on the device where a conversion is needed)."""
        cp = self._cupy()
        if A.format != "csr":
            A = A.tocsr()
        if not A.has_canonical_format:
            A = A.copy()
            A.sum_duplicates()
        if A.data.dtype.kind == "c":
            raise TypeError("ksolve: the matrix is complex; ksolve solves real systems")
        return (cp.ascontiguousarray(A.indptr, dtype=cp.int32),
                cp.ascontiguousarray(A.indices, dtype=cp.int32),
                cp.ascontiguousarray(A.data, dtype=cp.float64))

    def matrix(self, A, t0):
        """A ks_matrix from a cupyx.scipy.sparse matrix, its arrays copied
        device to device (ks_matrix_create_device): no host round trip."""
        cp = self._cupy()
        indptr, indices, data = self._canonical(A)
        cp.cuda.get_current_stream().synchronize()
        M = ctypes.c_void_p()
        check(lib.ks_matrix_create_device(
            self.s._be, A.shape[0], A.shape[1], data.size, ctypes.c_void_p(indptr.data.ptr),
            ctypes.c_void_p(indices.data.ptr), ctypes.c_void_p(data.data.ptr), b"auto", None,
            ctypes.byref(M)))
        return M, lib.ks_wtime() - t0, (indptr, indices)  # kept, not copied

    def set_values(self, A, pattern):
        """New values of a cupyx matrix on the setup's pattern. The pattern
        is compared on the device, and the values copied device to device
        (ks_matrix_set_values_device): no host round trip."""
        cp = self._cupy()
        indptr, indices, data = self._canonical(A)
        if not _same_pattern(pattern, indptr, indices, cp):
            raise _lib.ArgumentError(
                "ksolve: resetup needs the sparsity pattern of the matrix given to setup "
                "(after summing duplicates); this one differs (use setup)", "KS_ERR_ARG")
        cp.cuda.get_current_stream().synchronize()  # data's producers done
        check(lib.ks_matrix_set_values_device(self.s._M, ctypes.c_void_p(data.data.ptr)))


def _same_pattern(pattern, indptr, indices, xp=np):
    """Whether (indptr, indices) is the stored pattern (NumPy or CuPy arrays
    on either side)."""
    p_ptr, p_ind = pattern
    if xp is np:
        p_ptr = p_ptr.get() if hasattr(p_ptr, "get") else p_ptr
        p_ind = p_ind.get() if hasattr(p_ind, "get") else p_ind
    else:
        p_ptr, p_ind = xp.asarray(p_ptr), xp.asarray(p_ind)
    return (p_ptr.shape == indptr.shape and p_ind.shape == indices.shape
            and bool((p_ptr == indptr).all()) and bool((p_ind == indices).all()))


def solve(A, b, x0=None, *, config=None, backend="cpu", raise_on_failure=False,
          return_stats=False, **options):
    """Solve A x = b once: ``Solver(config, backend, raise_on_failure,
    **options).setup(A).solve(b, x0)``. Returns x, or (x, stats) with
    return_stats=True."""
    with Solver(config, backend=backend, raise_on_failure=raise_on_failure, **options) as s:
        x = s.setup(A).solve(b, x0)
        return (x, s.stats) if return_stats else x
