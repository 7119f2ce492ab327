"""Run test files of this folder where pytest is not installed (a machine with
no package index, such as the GPU machine):

    PYTHONPATH=build/python python3 python/tests/run_without_pytest.py [test_cupy.py ...]

With pytest importable it just runs pytest on the files. Otherwise it stands
in for the small part of pytest these tests use (raises, skip, importorskip,
mark.parametrize, fixture, approx; the fixtures rng and tmp_path), runs every
test function, and ends with "N passed, M failed, K skipped"; exit status 1
when a test failed.
"""

import inspect
import math
import os
import re
import sys
import tempfile
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))


class Skipped(Exception):
    pass


class _Raises:
    def __init__(self, exc, match=None):
        self.exc, self.match, self.value = exc, match, None

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            raise AssertionError(f"DID NOT RAISE {self.exc}")
        if not issubclass(et, self.exc):
            return False
        if self.match and not re.search(self.match, str(ev)):
            raise AssertionError(f"{str(ev)!r} does not match {self.match!r}")
        self.value = ev
        return True


def _skip(msg="", allow_module_level=False):
    raise Skipped(msg)


def _importorskip(name):
    try:
        return __import__(name)
    except ImportError as e:
        raise Skipped(f"{name}: {e}")


class _Approx:
    def __init__(self, v, rel=1e-6, abs=1e-12):
        self.v, self.rel, self.abs = v, rel, abs

    def __eq__(self, other):
        return math.isclose(other, self.v, rel_tol=self.rel, abs_tol=self.abs)


def _parametrize(names, values, ids=None):
    names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)

    def deco(fn):
        cases = getattr(fn, "_cases", [{}])
        new = []
        for v in values:
            v = v if len(names) > 1 else (v,)
            for c in cases:
                new.append({**c, **dict(zip(names, v))})
        fn._cases = new
        return fn
    return deco


def _fake_pytest():
    m = types.ModuleType("pytest")
    m.raises = _Raises
    m.skip = _skip
    m.importorskip = _importorskip
    m.approx = _Approx
    m.fixture = lambda fn=None, **k: fn if fn else (lambda f: f)
    m.mark = types.SimpleNamespace(parametrize=_parametrize)
    return m


def run(files):
    import numpy as np
    sys.modules["pytest"] = _fake_pytest()
    sys.path.insert(0, HERE)
    passed = failed = skipped = 0
    for f in files:
        name = os.path.splitext(os.path.basename(f))[0]
        try:
            mod = __import__(name)
        except Skipped as e:
            print(f"{name}: skipped ({e})")
            skipped += 1
            continue
        for tname, fn in sorted(vars(mod).items()):
            if not tname.startswith("test_") or not callable(fn):
                continue
            for case in getattr(fn, "_cases", [{}]):
                kw = dict(case)
                with tempfile.TemporaryDirectory() as tmp:
                    import pathlib
                    for p in inspect.signature(fn).parameters:
                        if p == "rng":
                            kw[p] = np.random.default_rng(20261127)
                        elif p == "tmp_path":
                            kw[p] = pathlib.Path(tmp)
                    label = f"{name}::{tname}" + (f"[{case}]" if case else "")
                    try:
                        fn(**kw)
                    except Skipped as e:
                        skipped += 1
                        print(f"SKIP {label}: {e}")
                    except Exception:
                        failed += 1
                        print(f"FAIL {label}")
                        traceback.print_exc()
                    else:
                        passed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


def main():
    files = sys.argv[1:] or ["test_cupy.py"]
    files = [f if os.path.exists(f) else os.path.join(HERE, f) for f in files]
    try:
        import pytest  # noqa: F401
    except ImportError:
        return run(files)
    return pytest.main(["-q", "-p", "no:cacheprovider", *files])


if __name__ == "__main__":
    sys.exit(main())
