#!/bin/bash
# Static SASS instruction counts of one (unit, configuration) evaluation
# per variant (probe.cu): fast path only (fallbacks trapped) and in full.
# Needs nvcc, cuobjdump and nvdisasm (pip: nvidia-cuda-cuobjdump
# nvidia-cuda-nvdisasm when the toolkit lacks them).
#   bash bench/sass/count.sh [extra nvcc flags]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-O2 -arch=sm_90 -fmad=false --std=c++17 -DFRONTIER_HAVE_CUDA=1 -D_GNU_SOURCE
       -I"$root" -I"$root/core" -I"$root/include" "$@")
names=(int_sym_group int_sym_row int_sym_tensor int_asym_group int_asym_row int_asym_tensor
       fp8_tensor fp8_row fp8_tile nvfp4 mx mxint8 nf4 nf4_dq)
for mode in fast full; do
    extra=()
    [ "$mode" = fast ] && extra=(-DFR_PROBE_FALLBACK_TRAP)
    nvcc "${flags[@]}" "${extra[@]}" -cubin -o "$tmp/p.cubin" "$here/probe.cu"
    # instructions up to the function's first EXIT: the out-of-line slow
    # paths (IEEE division subroutines, traps) come after it
    cuobjdump -sass "$tmp/p.cubin" | awk '
        /Function :/ { f = $3; done = 0 }
        /^ *\/\*[0-9a-f]+\*\/ / && f != "" && !done && $0 !~ / NOP / { n[f]++ }
        / EXIT / { done = 1 }
        END { for (k in n) print k, n[k] }' > "$tmp/$mode.txt"
done
# "scale+apply": a lane computes its group's scale and applies it (the
# streaming kernel); "apply": the scale comes from the table in shared
# memory (the fused kernel, which computes each group's scale once)
printf "%-16s %12s %12s %12s   (instructions per lane per unit of 8 elements; /8 per element)\n" \
    variant "scale+apply" full "apply"
for v in $(seq 0 13); do
    get() { awk -v p="_Z8fr_probeILi${v}ELi$2ELb$3E" 'index($1, p) == 1 { print $2 }' "$tmp/$1.txt"; }
    f1=$(get fast 1 0); f2=$(get fast 2 0); a1=$(get full 1 0); a2=$(get full 2 0)
    p1=$(get fast 1 1); p2=$(get fast 2 1)
    [ -z "$f1" ] && continue
    printf "%-16s %6d %5.1f %6d %5.1f %6d %5.1f\n" "${names[$v]}" $((f2 - f1)) "$(echo "($f2 - $f1) / 8" | bc -l)" \
        $((a2 - a1)) "$(echo "($a2 - $a1) / 8" | bc -l)" $((p2 - p1)) "$(echo "($p2 - $p1) / 8" | bc -l)"
done
