#!/bin/sh
# The installed CMake package works: install the build into a staging
# folder (DESTDIR), build tests/cmake against it with find_package(ksolve),
# run the program. Skipped (exit 77) when cmake is not installed.
# Arguments: build root, tests/cmake source folder, scratch folder, version.
set -eu
build=$1 src=$2 tmp=$3 version=$4
if ! command -v cmake >/dev/null 2>&1; then
    echo "SKIPPED: 1 (cmake not found: the CMake package is not tested)"
    exit 77
fi
rm -rf "$tmp"
mkdir -p "$tmp"
meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/stage" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; exit 1; }
cfg=$(find "$tmp/stage" -name ksolveConfig.cmake)
[ -n "$cfg" ] || { echo "ksolveConfig.cmake was not installed"; exit 1; }
[ -f "$(dirname "$cfg")/ksolveConfigVersion.cmake" ] ||
    { echo "ksolveConfigVersion.cmake was not installed beside $cfg"; exit 1; }
# Found where it was staged, so its paths (relative to its own folder) are
# what is checked, not those of the build tree.
pkgdir=$(dirname "$cfg")
cmake -S "$src" -B "$tmp/build" -Dksolve_DIR="$pkgdir" \
      -DKS_EXPECT_VERSION="$version" >"$tmp/cmake.log" 2>&1 ||
    { cat "$tmp/cmake.log"; exit 1; }
cmake --build "$tmp/build" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
# Without the test runner's LD_LIBRARY_PATH (the build tree): the program
# finds the staged library the imported target pointed it to.
out=$(env -u LD_LIBRARY_PATH "$tmp/build/version_check")
echo "$out"
[ "$out" = "ksolve $version" ] || { echo "expected: ksolve $version"; exit 1; }
# A version the package must refuse (the next major) is refused.
next=$(( ${version%%.*} + 1 )).0
if cmake -S "$src" -B "$tmp/build2" -Dksolve_DIR="$pkgdir" \
         -DKS_EXPECT_VERSION="$next" >"$tmp/cmake2.log" 2>&1; then
    echo "find_package(ksolve $next EXACT) succeeded against $version"
    exit 1
fi
grep -q "requested version" "$tmp/cmake2.log" || { cat "$tmp/cmake2.log"; exit 1; }
rm -rf "$tmp"
