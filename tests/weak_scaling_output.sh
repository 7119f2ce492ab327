#!/bin/sh
# Runs examples/mpi_weak_scaling on NP ranks and checks that its report is
# whole and consistent: one bandwidth line (a figure for NP ranks, or "not
# measured" with --no-bandwidth), RUNS converged solve lines of 14 columns
# whose iter_GB is s/iter x that bandwidth (or "-"), and a peak-memory line
# with 0 < min <= max and the sum over NP ranks between NP x min and NP x max;
# with --backend cuda a GPU line a rank (index, name, PCI bus id), none on
# the cpu (skipped, exit 77, where the node has no GPU).
# The first line names the halo transport: --halo's (auto or direct: host
# on the cpu, any on cuda). With --profile: a cycle profile of one line a
# level (levels 0, 1, ... with rows, six step times >= 0 and their sum), the
# finest level's time > 0, and "all levels" the sum of the levels' sums.
# usage: weak_scaling_output.sh MPIRUN EXE NP RUNS [ARGS...]
set -u
mpirun=$1 exe=$2 np=$3 runs=$4
shift 4
bw=1 gpus=0 halo=host prev= prof=0
for a in "$@"; do
    [ "$a" = --no-bandwidth ] && bw=0
    [ "$a" = --profile ] && prof=1
    [ "$prev" = --backend ] && [ "$a" = cuda ] && gpus=$np && [ $halo = host ] && halo=any
    [ "$prev" = --halo ] && [ "$a" != auto ] && [ "$a" != direct ] && halo=$a
    prev=$a
done
out=$("$mpirun" --oversubscribe -np "$np" "$exe" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ $gpus -gt 0 ] && printf '%s\n' "$out" | grep -q "this node has no GPU"; then
    echo "SKIPPED: 1 (no GPU: the weak-scaling example on cuda)"
    exit 77
fi
[ $rc -eq 0 ] || { echo "FAIL: exit status $rc"; exit 1; }
printf '%s\n' "$out" | awk -v np="$np" -v runs="$runs" -v bw="$bw" -v gpus="$gpus" -v halo="$halo" \
    -v prof="$prof" '
function bad(why) { print "FAIL: " why ": " $0; failed = 1 }
function near(a, b) { d = a - b; if (d < 0) d = -d; return d <= 0.02 * (b < 0 ? -b : b) + 1e-12 }
/^# .*, halo transport / { if (halo != "any" && $NF != halo) bad("halo transport, want " halo); else nhalo++ }
/^# copy bandwidth per rank: / {
    nbw++
    if (!bw) {
        if (index($0, "not measured (--no-bandwidth)") == 0) bad("bandwidth measured")
    } else {
        gbs = $6 + 0
        if ($7 != "GB/s" || gbs <= 0) bad("no bandwidth figure")
        if (index($0, "(all " np " ranks copying at once") == 0) bad("rank count")
    }
}
/^# +ranks / { if ($11 != "iter_GB" || NF != 15) bad("header"); else nhead++ }
/^# cycle profile, us a cycle/ { inprof = 1; nprof++; next }
/^# all levels / {
    inprof = 0
    if (!near($4 + 0, all) || $5 != "us") bad("all levels != the sum over the levels (" all ")")
    nall++
    next
}
inprof && /^ +[0-9]/ {
    s = 0
    for (k = 3; k <= 8; k++) { if ($k < 0) bad("negative step time"); s += $k }
    if (NF != 9 || $1 != nlev || $2 <= 0 || !near($9 + 0, s) || (nlev == 0 && $9 <= 0))
        bad("profile line")
    nlev++; all += $9
    next
}
/^ +[0-9]/ {
    lines++
    if (NF != 14 || $1 != np || $5 != "CONVERGED") bad("solve line")
    else if (bw && (nbw != 1 || !near($10 + 0, ($9 + 0) * gbs))) bad("iter_GB != s/iter x GB/s")
    else if (!bw && $10 != "-") bad("iter_GB without a bandwidth")
}
/^# GPU of rank / {
    ngpu++
    if ($5 != (ngpu - 1) ":" || $8 != "GPU" || $9 !~ /^[0-9]+$/ || $0 !~ /, [0-9a-fA-F:.]+\)$/)
        bad("GPU line")
}
/^# peak memory a rank/ {
    nmem++
    max = $12 + 0; min = $15 + 0; sum = $20 + 0
    if ($11 != "max" || $14 != "min" || $18 != np) bad("peak memory line")
    else if (min <= 0 || min > max || sum < np * (min - 0.1) || sum > np * (max + 0.1))
        bad("peak memory figures")
}
END {
    if (prof && (nprof != 1 || nall != 1 || nlev < 1)) {
        printf "FAIL: %d profiles, %d totals, %d levels profiled\n", nprof, nall, nlev
        failed = 1
    }
    if (!prof && nprof > 0) { print "FAIL: a profile without --profile"; failed = 1 }
    if (nbw != 1 || nhead != 1 || lines != runs || nmem != 1 || ngpu != gpus || nhalo != 1) {
        printf "FAIL: %d bandwidth lines, %d headers, %d solve lines (want %d), %d memory " \
               "lines, %d GPU lines (want %d), %d transport lines\n", nbw, nhead, lines, runs, nmem,
               ngpu, gpus, nhalo
        failed = 1
    }
    exit failed
}'
