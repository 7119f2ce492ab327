#!/bin/sh
# Compare ksolve's AMG (bench_amg) with hypre's BoomerAMG (bench/hypre_driver.c)
# on the 3D 7-point Laplacian: PCG + classical AMG with the same settings
# (the --selector, extended+i interpolation, at most 4 weights per row,
# theta 0.25, max_row_sum 0.9, --aggressive levels of aggressive coarsening,
# V(1,1) with the --smoother, dense solve at or below 300 rows), b = A x with
# x_i = sin(i), x0 = 0, ||r||_2 < 1e-8 ||b||_2.
#
#   bench/hypre_compare.sh [--build DIR] [--np P] [--sizes "64 128"] [--repeat R]
#                          [--smoother CHEBYSHEV|JACOBI_L1] [--selector PMIS|HMIS]
#                          [--aggressive L] [--install] [--hypre-prefix DIR]
#
# --smoother: CHEBYSHEV (degree 2 on [0.3 lmax, lmax]; hypre relax type 16)
# or JACOBI_L1 (hypre relax type 18), set explicitly on both sides.
# --selector: C/F splitting, PMIS (default; ksolve's default and hypre's on
# GPUs: hypre coarsen type 8) or HMIS (type 10).
# --aggressive L (default 0): the first L levels coarsen twice; ksolve's
# solver.preconditioner.aggressive_levels, hypre's agg_num_levels with
# agg_interp_type 1 (2-stage extended+i), num_paths 1, P1 and P2 each
# truncated to 4 weights per row (agg_P12_max_elmts) and P = P1 P2 to 4
# (agg_P_max_elmts). That is the closest of hypre's aggressive
# interpolations to ksolve's scheme (a second PMIS/HMIS stage on the first
# stage's C points, extended+i in both stages, each stage's P truncated to
# 4, P = P1 P2 truncated to 4). It is not identical: hypre's second stage
# splits the graph of distance-two strong paths between C points (S*S,
# num_paths 1) and builds P2 on the fine matrix (partial extended+i from the
# final to the first-stage C points), ksolve's splits and interpolates the
# Galerkin operator P1^T A P1 of the first stage, with the same theta. The
# other candidates fit less: multipass (4, hypre's default) is one-stage
# long-range interpolation, matrix-matrix extended+i (6) builds P1 with the
# other extended+i formula, not the one ksolve's extended+i follows (hypre's
# BuildExtPIInterp), and extended (5) / extended+e (7), the ones hypre runs
# on GPUs, are other interpolations. Type 1 runs on the cpu only, as here.
# examples/configs/pcg_amg_gpu.json is PMIS, --aggressive 1 and CHEBYSHEV,
# but with coarse_max_rows 1000 and a float32 hierarchy, which this script
# does not set (300 rows, float64 on both sides).
#
# hypre is never a dependency of ksolve: the driver is built here with mpicc
# against Debian's libhypre-dev when it is installed. --install installs it
# with apt-get (root only). --hypre-prefix DIR takes hypre from DIR/include/hypre
# and DIR/lib/x86_64-linux-gnu instead (Debian's packages unpacked with dpkg -x
# where nothing can be installed, e.g. the GPU machine: docs/performance.md).
# ksolve runs on P OpenMP threads, hypre on P MPI ranks (Debian's hypre has no
# OpenMP), both on the cpu.
set -eu

build=build
np=2
sizes="64 128"
repeat=3
smoother=CHEBYSHEV
selector=PMIS
aggressive=0
install=0
prefix=
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --smoother) smoother=$2; shift 2 ;;
    --selector) selector=$2; shift 2 ;;
    --aggressive) aggressive=$2; shift 2 ;;
    --install) install=1; shift ;;
    --hypre-prefix) prefix=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "hypre_compare: unknown option $1" >&2; exit 2 ;;
    esac
done

case "$smoother" in
CHEBYSHEV) relax=CHEBYSHEV ;;
JACOBI_L1) relax=L1JACOBI ;;
*) echo "hypre_compare: --smoother must be CHEBYSHEV or JACOBI_L1" >&2; exit 2 ;;
esac
case "$selector" in
PMIS|HMIS) ;;
*) echo "hypre_compare: --selector must be PMIS or HMIS" >&2; exit 2 ;;
esac
case "$aggressive" in
''|*[!0-9]*) echo "hypre_compare: --aggressive must be a number of levels (0 to 100)" >&2; exit 2 ;;
esac
[ "$aggressive" -le 100 ] || { echo "hypre_compare: --aggressive must be at most 100" >&2; exit 2; }

src=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build=$src/$build ;; esac

if [ -n "$prefix" ]; then
    [ -f "$prefix/include/hypre/HYPRE.h" ] || { echo "hypre_compare: no $prefix/include/hypre/HYPRE.h" >&2; exit 2; }
elif ! dpkg -s libhypre-dev >/dev/null 2>&1; then
    if [ "$install" = 1 ] && [ "$(id -u)" = 0 ]; then
        echo "hypre_compare: installing libhypre-dev" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y libhypre-dev >&2
    else
        echo "hypre_compare: libhypre-dev is not installed. Install it (as root) with" >&2
        echo "  apt-get install libhypre-dev   or   $0 --install" >&2
        apt-cache policy libhypre-dev >&2 2>/dev/null || true
        exit 2
    fi
fi
command -v mpicc >/dev/null || { echo "hypre_compare: mpicc not found (apt-get install mpi-default-dev)" >&2; exit 2; }
bench_amg=$build/bench/bench_amg
[ -x "$bench_amg" ] || {
    echo "hypre_compare: $bench_amg not found: run 'meson setup $build && ninja -C $build bench/bench_amg'" >&2
    exit 2
}

driver=$build/bench/hypre_driver
mkdir -p "$build/bench"
if [ -n "$prefix" ]; then
    lib=$prefix/lib/x86_64-linux-gnu
    export LD_LIBRARY_PATH="$lib:$lib/blas:$lib/lapack${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # unused solvers' dependencies (SuperLU_DIST's) may be missing there
    mpicc -O2 -I"$prefix/include/hypre" "$src/bench/hypre_driver.c" -o "$driver" -L"$lib" \
        -Wl,-rpath-link="$lib" -Wl,--allow-shlib-undefined -lHYPRE -lm
else
    inc=/usr/include/hypre
    [ -f "$inc/HYPRE.h" ] || inc=$(dirname "$(dpkg -L libhypre-dev | grep '/HYPRE.h$' | head -1)")
    mpicc -O2 -I"$inc" "$src/bench/hypre_driver.c" -o "$driver" -lHYPRE -lm
fi
mpirun_flags=""
if mpirun --version 2>/dev/null | grep -q "Open MPI"; then
    mpirun_flags="--oversubscribe --bind-to none"
    [ "$(id -u)" = 0 ] && mpirun_flags="$mpirun_flags --allow-run-as-root"
fi

# The number after `key` on a line of text, e.g. field "$out" "operator complexity".
field() { printf '%s\n' "$1" | sed -n "s/.*$2 \([0-9.e+-]*\).*/\1/p" | head -1; }

printf '\n%-6s %-7s %-4s %3s %6s %5s %8s %8s %9s %9s %10s\n' n impl sel agg levels iters "op.cx" "grid.cx" \
    "setup s" "solve s" "ms/iter"
for n in $sizes; do
    h=$(OMP_NUM_THREADS=1 mpirun $mpirun_flags -np "$np" "$driver" --n "$n" --repeat "$repeat" \
        --relax "$relax" --coarsen "$selector" --interp EXTI --pmax 4 --theta 0.25 --max-row-sum 0.9 \
        --max-coarse 300 --agg-levels "$aggressive" --agg-interp EXTI --agg-pmax 4 --agg-p12-max 4 \
        --num-paths 1 | grep '^RESULT')
    k=$(OMP_NUM_THREADS=$np "$bench_amg" --n "$n" --repeat "$repeat" --backend cpu \
        -p solver.preconditioner.smoother="$smoother" -p solver.preconditioner.presweeps=1 \
        -p solver.preconditioner.postsweeps=1 -p solver.preconditioner.coarse_max_rows=300 \
        -p solver.preconditioner.selector="$selector" -p solver.preconditioner.interpolator=D2 \
        -p solver.preconditioner.interp_max_elements=4 -p solver.preconditioner.strength_threshold=0.25 \
        -p solver.preconditioner.max_row_sum=0.9 -p solver.preconditioner.aggressive_levels="$aggressive")
    hv() { printf '%s\n' "$h" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
    printf '%-6s %-7s %-4s %3s %6s %5s %8.3f %8.3f %9.4f %9.4f %10.3f\n' "$n" hypre "$(hv coarsen)" \
        "$(hv agg_levels)" "$(hv levels)" "$(hv iters)" "$(hv opc)" "$(hv gridc)" "$(hv setup)" "$(hv solve)" \
        "$(hv per_iter_ms)"
    setup=$(printf '%s\n' "$k" | sed -n 's/.*setup \([0-9.]*\) s, solve.*/\1/p')
    solve=$(printf '%s\n' "$k" | sed -n 's/.*, solve \([0-9.]*\) s, .*/\1/p')
    # the selector ksolve reports in its hierarchy line: "CLASSICAL (PMIS, D2, ..."
    ksel=$(printf '%s\n' "$k" | sed -n 's/.*CLASSICAL (\([A-Z]*\),.*/\1/p' | head -1)
    printf '%-6s %-7s %-4s %3s %6s %5s %8.3f %8.3f %9.4f %9.4f %10.3f\n' "$n" ksolve "$ksel" "$aggressive" \
        "$(field "$k" levels)" "$(field "$k" iterations)" "$(field "$k" "operator complexity")" \
        "$(field "$k" "grid complexity")" "$setup" "$solve" \
        "$(printf '%s\n' "$k" | sed -n 's/.* \([0-9.]*\) ms\/iteration.*/\1/p')"
done
if [ "$aggressive" -gt 0 ]; then
    agg="aggressive coarsening on $aggressive level(s): hypre agg_interp_type 1, 2-stage extended+i"
else
    agg="no aggressive coarsening"
fi
echo "(selector $selector, $agg;"
echo " smoother $smoother; hypre: $np MPI ranks; ksolve: $np OpenMP threads; medians of $repeat setups and solves)"
