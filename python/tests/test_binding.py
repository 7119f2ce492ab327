"""ctypes cannot see include/ksolve.h: check every declaration the package
makes (functions and structs) against the header, so that a prototype
changed in C fails here instead of corrupting memory."""

import ctypes
import os
import re

import pytest

from ksolve import _lib

HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "include", "ksolve.h")
HANDLES = {"ks_backend", "ks_vec", "ks_block", "ks_matrix", "ks_config", "ks_solver"}
STRUCTS = {"ks_csr": _lib.ks_csr, "ks_solve_stats": _lib.ks_solve_stats,
           "ks_hierarchy_level": _lib.ks_hierarchy_level,
           "ks_hierarchy_info": _lib.ks_hierarchy_info}
SCALARS = {"int": ctypes.c_int, "double": ctypes.c_double, "size_t": ctypes.c_size_t,
           "ks_int": ctypes.c_int32, "ks_gint": ctypes.c_int64, "int64_t": ctypes.c_int64,
           "int32_t": ctypes.c_int32, "long": ctypes.c_long, "ks_error": ctypes.c_int,
           "ks_solve_status": ctypes.c_int, "char": ctypes.c_char}


def header_text():
    if not os.path.exists(HEADER):
        pytest.skip("include/ksolve.h not beside the tests (installed package)")
    src = open(HEADER).read()
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    return re.sub(r"//[^\n]*", " ", src)


def ctype_of(decl):
    """The ctypes type a C parameter/result declaration (name removed) maps to."""
    t = re.sub(r"\bconst\b", "", decl).strip()
    stars = t.count("*")
    base = t.replace("*", "").strip()
    if stars == 0 and base == "ks_print_fn":
        return _lib.ks_print_fn
    if stars == 0:
        return None if base == "void" else SCALARS[base]
    if base in HANDLES:
        return ctypes.c_void_p if stars == 1 else ctypes.POINTER(ctypes.c_void_p)
    if stars == 1 and base == "char":
        return ctypes.c_char_p
    if stars == 1 and base in ("void", "FILE"):
        return ctypes.c_void_p
    if stars == 1 and base in STRUCTS:
        return ctypes.POINTER(STRUCTS[base])
    if stars == 1 and base in SCALARS:
        return ctypes.POINTER(SCALARS[base])
    if stars == 1 and base == "ks_spmv_params":
        return ctypes.c_void_p  # passed as NULL
    raise AssertionError(f"no ctypes mapping for '{decl}'")


def split_param(p):
    """'const ks_csr *A' -> 'const ks_csr *'; 'int64_t nent' -> 'int64_t'."""
    p = p.strip()
    m = re.match(r"^(.*?[\s*])([A-Za-z_]\w*)$", p)
    return m.group(1).strip() if m and m.group(1).strip() not in ("", "const") else p


def declarations():
    src = header_text()
    out = {}
    for m in re.finditer(r"([A-Za-z_][\w\s\*]*?)\b(ks_\w+)\s*\(([^;{}]*?)\)\s*;", src):
        ret, name, params = m.group(1), m.group(2), m.group(3)
        ret = ret.split(";")[-1].split("}")[-1]
        ret = re.sub(r"\b(extern|typedef)\b", "", ret).strip()
        if "(" in ret or not ret:
            continue
        ps = [] if params.strip() in ("", "void") else [split_param(p) for p in params.split(",")]
        out[name] = (ret, ps)
    return out


def same(a, b):
    if a is None or b is None:
        return a is b
    if a == b:
        return True
    # POINTER(x) types are cached per x: compare what they point to
    return (hasattr(a, "_type_") and hasattr(b, "_type_") and issubclass(a, ctypes._Pointer)
            and issubclass(b, ctypes._Pointer) and a._type_ == b._type_)


def test_every_bound_function_matches_the_header():
    decls = declarations()
    assert "ks_solver_solve" in decls and len(decls) > 50
    for name, (res, args) in _lib.PROTOTYPES.items():
        assert name in decls, f"{name} is bound but not declared in ksolve.h"
        cret, cparams = decls[name]
        want_res = ctype_of(cret)
        if name == "ks_config_dump":  # char * to free(): kept as a raw pointer
            assert cret.replace(" ", "") == "char*" and res is ctypes.c_void_p
        else:
            assert same(res, want_res), f"{name}: result {res}, header says '{cret}'"
        assert len(args) == len(cparams), f"{name}: {len(args)} arguments, header {cparams}"
        for i, (a, c) in enumerate(zip(args, cparams)):
            w = ctype_of(c)
            # an address (c_void_p) is passed where the header has any data
            # pointer: device arrays, whose memory Python cannot type
            ok = same(a, w) or (a is ctypes.c_void_p and "*" in c and "**" not in c)
            assert ok, f"{name} argument {i}: {a}, header says '{c}'"


def struct_fields(src, name):
    m = re.search(r"typedef\s+struct\s+" + name + r"\s*\{(.*?)\}\s*" + name + r"\s*;", src, re.S)
    assert m, f"struct {name} not found in ksolve.h"
    fields = []
    for decl in m.group(1).split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        arr = re.search(r"\[(\w+)\]$", decl)
        if arr:
            decl = decl[:arr.start()].strip()
        typ, names = re.match(r"^(.*?[\s*])(\w+(?:\s*,\s*\w+)*)$", decl).groups()
        for n in names.split(","):
            fields.append((n.strip(), typ.strip(), arr.group(1) if arr else None))
    return fields


@pytest.mark.parametrize("name", list(STRUCTS))
def test_structs_match_the_header(name):
    src = header_text()
    fields = struct_fields(src, name)
    ours = STRUCTS[name]._fields_
    assert [f[0] for f in fields] == [f[0] for f in ours], name
    consts = {"KS_NSTEPS": _lib.KS_NSTEPS, "KS_MAX_PHASES": _lib.KS_MAX_PHASES}
    for (fname, ctyp, arr), (_, ours_t) in zip(fields, ours):
        base = ctyp.replace("const", "").replace("*", "").strip()
        if arr:
            n = int(arr) if arr.isdigit() else consts[arr]
            assert ours_t._length_ == n, f"{name}.{fname}: length {ours_t._length_}, header {arr}"
            elem = ours_t._type_
            if base == "char" and "*" in ctyp:
                assert elem is ctypes.c_char_p, f"{name}.{fname}"
            else:
                assert elem == SCALARS[base], f"{name}.{fname}"
        elif "*" in ctyp and base in ("char",) and ctyp.count("*") == 1:
            assert ours_t is ctypes.c_char_p, f"{name}.{fname}"
        elif "*" in ctyp:
            assert issubclass(ours_t, ctypes._Pointer), f"{name}.{fname}: {ours_t} for '{ctyp}'"
            if base in STRUCTS:
                assert ours_t._type_ is STRUCTS[base], f"{name}.{fname}"
            elif base in SCALARS and ctyp.count("*") == 1:
                assert ours_t._type_ == SCALARS[base], f"{name}.{fname}"
        else:
            want = ctypes.c_int if base.startswith("ks_") and base not in SCALARS else SCALARS[base]
            assert ours_t == want, f"{name}.{fname}: {ours_t} for '{ctyp}'"
    for k, v in consts.items():
        assert re.search(rf"#define\s+{k}\s+\(?{v}\b", src) or k == "KS_NSTEPS", k
    if name == "ks_hierarchy_level":  # KS_NSTEPS is the last member of ks_cycle_step
        steps = re.search(r"typedef enum ks_cycle_step \{(.*?)\}", src, re.S).group(1)
        names = re.findall(r"\b(KS_\w+)\b", steps)
        assert names.index("KS_NSTEPS") == _lib.KS_NSTEPS


def test_error_codes_map_to_classes():
    src = header_text()
    codes = re.findall(r"\b(KS_ERR_\w+)\b", re.search(r"typedef enum ks_error \{(.*?)\}", src,
                                                        re.S).group(1))
    for i, c in enumerate(codes, start=1):
        assert _lib.text(_lib.lib.ks_error_name(i)) == c
        e = _lib.error(i)
        assert isinstance(e, _lib.KsolveError) and e.code == c
        assert (type(e) is not _lib.KsolveError) or c == "KS_ERR_MPI"


def test_device_entry_points_through_ctypes_on_cpu_memory():
    """The calls the CuPy paths make (ks_matrix_create_device,
    ks_vec_set_device/get_device) through their ctypes declarations, with
    host addresses on the cpu backend (whose memory is the host's)."""
    import numpy as np
    import scipy.sparse as sp

    lib, check = _lib.lib, _lib.check
    A = sp.random(50, 50, density=0.1, format="csr", random_state=3) + sp.identity(50)
    A = A.tocsr()
    A.sort_indices()
    indptr, indices = A.indptr.astype(np.int32), A.indices.astype(np.int32)
    be, M, v, w = (ctypes.c_void_p() for _ in range(4))
    check(lib.ks_backend_create(b"cpu", ctypes.byref(be)))
    try:
        check(lib.ks_matrix_create_device(be, 50, 50, A.nnz, indptr.ctypes.data,
                                          indices.ctypes.data, A.data.ctypes.data, b"auto",
                                          None, ctypes.byref(M)))
        assert lib.ks_matrix_nnz(M) == A.nnz and lib.ks_matrix_rows(M) == 50
        x = np.arange(50.0)
        y = np.full(50, np.nan)
        check(lib.ks_vec_create(be, 50, ctypes.byref(v)))
        check(lib.ks_vec_create(be, 50, ctypes.byref(w)))
        check(lib.ks_vec_set_device(v, x.ctypes.data))
        check(lib.ks_vec_get_device(v, y.ctypes.data))
        assert np.array_equal(x, y)
        bad = indices.copy()
        r = next(i for i in range(50) if indptr[i + 1] - indptr[i] >= 2)
        bad[indptr[r]], bad[indptr[r] + 1] = bad[indptr[r] + 1], bad[indptr[r]]
        M2 = ctypes.c_void_p()
        with pytest.raises(_lib.KsolveError, match=f"row {r}") as e:
            check(lib.ks_matrix_create_device(be, 50, 50, A.nnz, indptr.ctypes.data,
                                              bad.ctypes.data, A.data.ctypes.data, b"auto",
                                              None, ctypes.byref(M2)))
        assert "ks_matrix_create_device" in str(e.value)
        assert not M2.value
    finally:
        lib.ks_vec_destroy(ctypes.byref(v))
        lib.ks_vec_destroy(ctypes.byref(w))
        lib.ks_matrix_destroy(ctypes.byref(M))
        lib.ks_backend_destroy(ctypes.byref(be))


def test_print_callback_type_matches_the_header():
    src = header_text()
    m = re.search(r"typedef\s+void\s*\(\*ks_print_fn\)\s*\(([^)]*)\)", src)
    params = [split_param(p) for p in m.group(1).split(",")]
    assert params == ["const char *", "int", "void *"]
    argtypes = _lib.ks_print_fn._argtypes_
    assert argtypes == (ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)  # msg read with its length
    assert _lib.ks_print_fn._restype_ is None
