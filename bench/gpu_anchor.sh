#!/bin/sh
# The GPU figures the AMG-setup and many-right-hand-side targets are read
# from (docs/performance.md), with hypre's GPU BoomerAMG measured on the same
# GPU in the same run, so that their ratios come from one machine:
#
#   bench/gpu_anchor.sh --anchor DIR [--build DIR] [--out DIR]
#
# --anchor DIR: a hypre GPU anchor folder (its run.sh builds hypre for the
# GPU, about 3 minutes on 16 cores, and prints its setup, solve and
# iterations on 7-point n^3; the workplace keeps one). On a remote GPU
# machine that sees only the working tree, copy it into a git-ignored
# folder of the tree first and send that along.
# --build DIR: a release build of ksolve with cuda (default build-gpu).
# --out DIR: where the full logs go (default: a new temporary folder).
#
# In order: ksolve's bench_amg on 7-point 256^3 with
# examples/configs/pcg_amg_gpu.json (9 setups and solves, medians) and with
# the defaults, 7-point and 27-point 128^3 with pcg_amg_gpu.json, dia's SpMM
# at k = 8 against cuSPARSE's (bench_spmm), eight right-hand sides with the
# defaults; then hypre (its build, if not built yet, then its 256^3 runs);
# then the first bench_amg again, so that a drift of the machine over the
# run shows. The summary at the end is what docs/performance.md records.
set -u
build=build-gpu anchor= out=
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --anchor) anchor=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "gpu_anchor.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ -z "$anchor" ] || [ ! -f "$anchor/run.sh" ]; then
    echo "gpu_anchor.sh: --anchor DIR must name a folder with hypre's run.sh" >&2
    exit 2
fi
for b in bench_amg bench_spmm; do
    if [ ! -x "$build/bench/$b" ]; then
        echo "gpu_anchor.sh: $build/bench/$b not found: build ksolve with cuda first" >&2
        exit 2
    fi
done
[ -n "$out" ] || out=$(mktemp -d)
mkdir -p "$out"
gpu=examples/configs/pcg_amg_gpu.json
amg() { # log-name, then bench_amg's arguments
    name=$1
    shift
    "$build/bench/bench_amg" --backend cuda "$@" >"$out/$name.log" 2>&1 ||
        echo "gpu_anchor.sh: bench_amg $* failed (see $out/$name.log)" >&2
}
amg gpu256 --n 256 --config $gpu --repeat 9
amg default256 --n 256 --repeat 5
amg gpu128 --n 128 --config $gpu --repeat 9
amg gpu128_27 --gen poisson3d_27 --n 128 --config $gpu --repeat 9
"$build/bench/bench_spmm" --n 256 --k 8 --formats dia >"$out/spmm.log" 2>&1 ||
    echo "gpu_anchor.sh: bench_spmm failed (see $out/spmm.log)" >&2
amg nrhs256 --n 256 --nrhs 8 --repeat 3
HYPRE_N=256 bash "$anchor/run.sh" >"$out/hypre.log" 2>&1 ||
    echo "gpu_anchor.sh: hypre's run failed (see $out/hypre.log)" >&2
amg gpu256_again --n 256 --config $gpu --repeat 9

for f in gpu256 default256 gpu128 gpu128_27 gpu256_again nrhs256; do
    echo "== ksolve $f"
    grep -E "^  (setup [0-9]|iterations|time to solution|hierarchy memory|host memory|8 right)" \
        "$out/$f.log"
done
echo "== dia SpMM, 7-point 256^3, k = 8"
grep -E "copy bandwidth|^format|^cusparse|^dia" "$out/spmm.log"
echo "== hypre"
grep -v '^$' "$out/hypre.log" | tail -16
echo "logs: $out"
