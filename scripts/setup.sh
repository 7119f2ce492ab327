# Sourced by scripts/demo and scripts/test: install what is missing, configure, build.
# KS_BUILD_DIR: the build folder (default build/); KS_PYTHON: the Python that
# runs the Python package's tests (default /usr/bin/python3).
# Debian packages the build needs (the CUDA toolkit is expected where a GPU build is wanted;
# without nvcc the cpu backend alone is built).
KS_PACKAGES="gcc pkg-config meson ninja-build check libsubunit-dev libjansson-dev zlib1g-dev libopenmpi-dev openmpi-bin"
# The Python package's tests (python/, scripts/test): NumPy, SciPy, pytest from Debian;
# pip only for pyamg (not packaged in Debian 12), whose comparison is skipped without it.
KS_PY_PACKAGES="python3-numpy python3-scipy python3-pytest python3-pip"

ks_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ks_build=${KS_BUILD_DIR:-$ks_root/build}

ks_install_missing() {
    local missing=()
    for p in $KS_PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    # Another apt-get or unattended-upgrades may hold the dpkg lock: wait for it
    # (up to 10 minutes) instead of failing at once.
    local wait_lock=(-o DPkg::Lock::Timeout=600)
    if [ "$(id -u)" -eq 0 ]; then
        echo "ksolve: installing ${missing[*]}"
        apt-get "${wait_lock[@]}" update -qq && DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" install -y -qq "${missing[@]}" >/dev/null
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo apt-get "${wait_lock[@]}" update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" install -y -qq "${missing[@]}" >/dev/null
    else
        echo "ksolve: missing packages: ${missing[*]}" >&2
        echo "ksolve: install them with:  sudo apt-get install ${missing[*]}" >&2
        return 1
    fi
}

ks_configure_and_build() {
    # nvcc lives outside PATH on some installs
    if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
        export PATH=/usr/local/cuda/bin:$PATH
    fi
    if [ ! -f "$ks_build/build.ninja" ]; then
        meson setup "$ks_build" "$ks_root" "$@" || return 1
    fi
    ninja -C "$ks_build" || return 1
}

# The sanitizer build ($ks_build-san): the library with ASan + UBSan (every
# UBSan report fatal), cpu only, and only the test programs of KS_SAN_TESTS
# (scripts/test runs them): the fuzzer of the readers and the tests of the
# config loader and the Matrix Market reader.
ks_san=${ks_build}-san
KS_SAN_TESTS="fuzz_inputs test_config test_config_rules test_config_amgx test_mmio"
ks_build_sanitized() {
    if [ ! -f "$ks_san/build.ninja" ]; then
        meson setup "$ks_san" "$ks_root" -Dcuda=disabled -Dmpi=disabled \
            -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=1 \
            -Dc_args=-fno-sanitize-recover=all >/dev/null || return 1
    fi
    local targets=()
    for t in $KS_SAN_TESTS; do targets+=("tests/$t"); done
    ninja -C "$ks_san" "${targets[@]}" >/dev/null || return 1
}

# Python with Debian's NumPy/SciPy/pytest (a python3 earlier in PATH may lack them).
KS_PYTHON=${KS_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}

# pyamg for the iteration-count comparison of python/tests/test_pyamg.py: 5.0.1
# is the last release that takes Debian 12's SciPy 1.10 (later ones need 1.15);
# --no-deps leaves Debian's NumPy and SciPy alone. Optional: on failure the
# comparison is skipped (pytest says so).
ks_install_pyamg() {
    "$KS_PYTHON" -c "import pyamg" 2>/dev/null && return 0
    [ "$(id -u)" -eq 0 ] || { echo "ksolve: pyamg missing (pip install pyamg==5.0.1); its comparison is skipped" >&2; return 0; }
    "$KS_PYTHON" -m pip install -q --no-deps --break-system-packages --root-user-action=ignore \
        "pyamg==5.0.1" >/dev/null 2>&1 \
        || echo "ksolve: pip could not install pyamg; its comparison is skipped" >&2
}
