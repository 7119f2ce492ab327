"""SciPy / NumPy inputs to the C library's host CSR (ks_csr).

A CSR matrix in canonical form (sorted, no duplicates) with int32 indices and
float64 values is handed to the library as it is: ks_csr points at SciPy's
arrays and ks_matrix_create makes the only copy. Anything else (CSC, COO,
unsorted or duplicate entries, int64 indices, float32 or integer values) is
turned into coordinate triplets and built by the library's ks_csr_from_coo,
which sorts the rows and sums duplicates.
"""

import ctypes
import math

import numpy as np

from . import _lib
from ._lib import check, lib

_INT32_MAX = np.iinfo(np.int32).max


def _ptr(a, ctype):
    return a.ctypes.data_as(ctypes.POINTER(ctype))


def _index32(a, what):
    """a as a C-contiguous int32 array, refusing values int32 cannot hold."""
    a = np.asarray(a)
    if a.dtype == np.int32:
        return np.ascontiguousarray(a)
    if a.dtype.kind not in "iu":
        raise TypeError(f"ksolve: {what} must be integers, got {a.dtype}")
    if a.size and (a.max() > _INT32_MAX or a.min() < 0):
        raise _lib.ArgumentError(
            f"ksolve: {what} holds {int(a.max())}, beyond the 32-bit indices of ksolve "
            f"(ks_int; largest {_INT32_MAX})", "KS_ERR_SIZE")
    return a.astype(np.int32)


def _values64(a, what="matrix values"):
    a = np.asarray(a)
    if a.dtype.kind == "c":
        raise TypeError(f"ksolve: {what} are complex ({a.dtype}); ksolve solves real systems")
    if a.dtype.kind not in "fiub":
        raise TypeError(f"ksolve: {what} must be real numbers, got {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float64)


class HostCSR:
    """A matrix as the library's ks_csr, with the arrays it points to kept
    alive. ``duplicates`` counts the (i, j) entries summed on conversion."""

    _owned = False

    def __init__(self, A):
        import scipy.sparse as sp
        if not sp.issparse(A):
            raise TypeError(
                f"ksolve: the matrix must be a scipy.sparse matrix or array (csr, csc or coo), "
                f"got {type(A).__name__}")
        nrows, ncols = A.shape
        for d in (nrows, ncols):
            if d > _INT32_MAX:
                raise _lib.ArgumentError(
                    f"ksolve: a {nrows} x {ncols} matrix is beyond ksolve's 32-bit indices",
                    "KS_ERR_SIZE")
        if A.nnz > _INT32_MAX:
            raise _lib.ArgumentError(
                f"ksolve: {A.nnz} stored entries are beyond ksolve's 32-bit indices",
                "KS_ERR_SIZE")
        self.shape = (nrows, ncols)
        self.duplicates = 0
        self.csr = _lib.ks_csr()
        self._owned = False
        if A.format == "csr" and A.has_canonical_format:
            self.indptr = _index32(A.indptr, "indptr")
            self.indices = _index32(A.indices, "column indices")
            self.data = _values64(A.data)
            nnz = int(self.indptr[-1]) if self.indptr.size else 0
            if self.indptr.size != nrows + 1 or min(self.indices.size, self.data.size) < nnz:
                raise _lib.ArgumentError(
                    f"ksolve: malformed CSR: {self.indptr.size} row pointers for {nrows} rows, "
                    f"{self.indices.size} indices and {self.data.size} values for {nnz} "
                    f"entries", "KS_ERR_ARG")
            self.csr.nrows, self.csr.ncols, self.csr.nnz = nrows, ncols, nnz
            self.csr.rowptr = _ptr(self.indptr, _lib.ks_int)
            self.csr.colind = _ptr(self.indices, _lib.ks_int)
            self.csr.val = _ptr(self.data, ctypes.c_double)
            return
        if A.format == "csr":  # unsorted or duplicates: rows from indptr
            row = np.repeat(np.arange(nrows, dtype=np.int32), np.diff(A.indptr))
            col, val = A.indices, A.data
        else:
            C = A.tocoo() if A.format != "coo" else A
            row, col, val = C.row, C.col, C.data
        row = _index32(row, "row indices")
        col = _index32(col, "column indices")
        val = _values64(val)
        ndup = ctypes.c_int64(0)
        check(lib.ks_csr_from_coo(nrows, ncols, val.size, _ptr(row, _lib.ks_int),
                                  _ptr(col, _lib.ks_int), _ptr(val, ctypes.c_double),
                                  ctypes.byref(self.csr), ctypes.byref(ndup)))
        self._owned = True
        self.duplicates = int(ndup.value)
        nnz = self.csr.nnz
        # views of the library's arrays (freed by close())
        self.indptr = np.ctypeslib.as_array(self.csr.rowptr, shape=(nrows + 1,))
        self.indices = (np.ctypeslib.as_array(self.csr.colind, shape=(nnz,))
                        if nnz else np.zeros(0, np.int32))
        self.data = (np.ctypeslib.as_array(self.csr.val, shape=(nnz,))
                     if nnz else np.zeros(0, np.float64))

    def pattern(self):
        """(indptr, indices) kept to check a re-setup's pattern: the caller's
        own arrays when they were handed over as they are (no copy: a
        time-stepping code changes A.data, not the pattern), else copies of
        the library's, which close() frees."""
        if self._owned:
            return self.indptr.copy(), self.indices.copy()
        return self.indptr, self.indices

    def close(self):
        if self._owned:
            self.indptr = self.indices = self.data = None
            lib.ks_csr_free(ctypes.byref(self.csr))
            self._owned = False

    def __del__(self):
        self.close()


def host_vector(v, n, what):
    """v as a C-contiguous float64 vector of n entries (a copy only when the
    dtype or layout needs one)."""
    a = np.asarray(v)
    if a.ndim == 2 and 1 in a.shape:
        a = a.reshape(-1)
    if a.ndim != 1:
        raise _lib.ArgumentError(
            f"ksolve: {what} must be a vector, got an array of shape {a.shape}", "KS_ERR_SIZE")
    if a.shape[0] != n:
        raise _lib.ArgumentError(
            f"ksolve: {what} has {a.shape[0]} entries, the matrix has {n} rows", "KS_ERR_SIZE")
    a = _values64(a, what)
    check_finite(a, what)
    return a


def host_block(v, n, k, what):
    """v as a C-contiguous float64 n x k array: the row-interleaved layout
    of a ks_block (entry (i, j) at i*k + j). A vector (n entries) is
    repeated in every column (one x0 for all)."""
    a = np.asarray(v)
    if a.ndim == 1 or (a.ndim == 2 and a.shape[1] == 1 and k != 1):
        a = np.repeat(host_vector(a, n, what).reshape(n, 1), k, axis=1)
    if a.ndim != 2 or a.shape != (n, k):
        raise _lib.ArgumentError(
            f"ksolve: {what} must be {n} x {k} (or a vector of {n}), got shape {a.shape}",
            "KS_ERR_SIZE")
    a = np.ascontiguousarray(_values64(a, what))
    if not np.isfinite(a).all():
        i, j = (int(t) for t in np.argwhere(~np.isfinite(a))[0])
        raise _lib.NumericError(
            f"ksolve: {what}[{i}, {j}] is {float(a[i, j])}: {what} must be finite",
            "KS_ERR_NUMERIC")
    return a


def check_finite(a, what, xp=np):
    """Refuse NaN or Inf in a right-hand side or initial guess (the solve
    would only end with status NAN): NumericError naming the first entry.
    One pass, no temporary: the sum of finite values is finite (NaN and Inf
    propagate); only when it is not (or overflows) are the entries looked at."""
    if a.size == 0:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        if math.isfinite(float(a.sum())):
            return
    if not bool(xp.isfinite(a).all()):
        i = int(xp.flatnonzero(~xp.isfinite(a))[0])
        raise _lib.NumericError(
            f"ksolve: {what}[{i}] is {float(a[i])}: {what} must be finite", "KS_ERR_NUMERIC")
