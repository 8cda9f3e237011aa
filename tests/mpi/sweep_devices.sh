#!/usr/bin/env bash
# --device cuda:all (every GPU of the machine; the emulator has one) and the
# devices named as a list go through the several-device executor: the same
# rows as --device cuda, bit for bit (timing columns aside); a device listed
# twice is a usage error, an absent one a device error.
# usage: sweep_devices.sh FRONTIER_BINARY DATA_DIR
source "$(cd "$(dirname "$0")" && pwd)/../sweep/lib.sh" "$1" "$2"
need_python
need_builtins
H5TOOL="$HERE/h5tool.py"
SPEC="gaussian:256x1000:bf16,student-t3:129x257:f16,outliers:1x4096:f32,laplace:512x384:bf16,gaussian:64x64*3"
# the data-free families, rht+ through two of its configurations: its
# quantize_cuda runs one configuration at a time, which the emulation makes
# slow (gpu_emu.rht and gpu_emu.sweep_rht check rht+ itself)
Q=(--quantizers int,fp8,nvfp4,mx,nf4,mse,hqq,ggml,rht+int4-g128-sym,rht+nvfp4)

"$FRONTIER" -q sweep --synthetic "$SPEC" "${Q[@]}" --bits 4 --device cuda -o one.h5 >out.txt 2>err.txt
rc=$?
if [ $rc -eq 7 ]; then echo "SKIP: no CUDA device ($(head -1 err.txt))"; exit 77; fi
[ $rc -eq 0 ] && pass "--device cuda" || { fail "--device cuda: exit $rc"; cat err.txt >&2; }

# how many devices: the message for one past the last
"$FRONTIER" -q sweep --synthetic gaussian:8x8 --device cuda:1024 -o none.h5 >/dev/null 2>err.txt
n=$(sed -n 's/.*there are only \([0-9]*\) CUDA device.*/\1/p' err.txt)
[ -n "$n" ] || n=1
list=$(seq -s, 0 $((n - 1)))
echo "devices: $n ($list)"

same() {
  if python3 "$H5TOOL" same "$1" "$2" >same.txt 2>&1; then pass "$3"; else
    fail "$3"; sed 's/^/  /' same.txt >&2; fi
}
devices_attr() {
  python3 -c 'import sys, h5py; d = h5py.File(sys.argv[1], "r").attrs["devices"]; print(d.decode() if isinstance(d, bytes) else d)' "$1"
}

expect_rc 0 "--device cuda:all" -- "$FRONTIER" -q sweep --synthetic "$SPEC" "${Q[@]}" --bits 4 --device cuda:all -o all.h5
same one.h5 all.h5 "cuda:all gives the rows of one GPU"
[ "$(devices_attr all.h5)" = "cuda:$list" ] && pass "devices attribute cuda:$list" ||
  fail "devices attribute '$(devices_attr all.h5)', expected cuda:$list"
expect_rc 0 "--device cuda:$list (the list)" -- "$FRONTIER" -q sweep --synthetic "$SPEC" "${Q[@]}" --bits 4 --device "cuda:$list" -o list.h5
same one.h5 list.h5 "the list gives the rows of one GPU"
if [ "$n" -ge 2 ]; then
  expect_rc 0 "--device cuda:1,0" -- "$FRONTIER" -q sweep --synthetic "$SPEC" "${Q[@]}" --bits 4 --device cuda:1,0 -o rev.h5
  same one.h5 rev.h5 "the list in another order"
fi

# a real checkpoint, and --resume across device sets
expect_rc 0 "stories260K, --device cuda" -- "$FRONTIER" -q sweep "$DATA/stories260K" "${Q[@]}" --bits 3..4 --device cuda -o s1.h5
expect_rc 0 "stories260K, int4 on cuda:all" -- "$FRONTIER" -q sweep "$DATA/stories260K" --quantizers 'int4*' --device cuda:all -o s2.h5
expect_rc 0 "stories260K, the rest on cuda:all" -- "$FRONTIER" -q sweep "$DATA/stories260K" "${Q[@]}" --bits 3..4 --device cuda:all --resume -o s2.h5
python3 "$H5TOOL" same-by-name s1.h5 s2.h5 >same.txt 2>&1 && pass "stories260K: cuda:all with --resume gives the rows of one GPU" ||
  { fail "stories260K differs"; sed 's/^/  /' same.txt >&2; }

expect_rc 2 "a device listed twice" -- "$FRONTIER" sweep --synthetic gaussian:8x8 --device cuda:0,0 -o twice.h5
expect_stderr "listed twice" "the message says so"
expect_rc 7 "an absent device in the list" -- "$FRONTIER" sweep --synthetic gaussian:8x8 --device "cuda:0,$n" -o absent.h5
expect_stderr "there are only $n CUDA device" "the message counts the devices"
finish
