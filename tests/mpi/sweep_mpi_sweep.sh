#!/usr/bin/env bash
# mpirun -n 2 and -n 3 sweeps of data/stories260K, of a synthetic source and
# of the expert stacks of data/tiny-moe and data/tiny-moe.gguf (each expert a
# task of its own)
# against one process: the same rows (the same file, timing columns aside);
# one summary, one log; a rank with nothing to do; --resume of an MPI run;
# errors before the work reported once, the output untouched.
source "$(cd "$(dirname "$0")" && pwd)/mpi_lib.sh"
MODEL="$DATA/stories260K"
SPEC="gaussian:256x1000:bf16,student-t3:129x257:f16,outliers:1x4096:f32,laplace:512x384:bf16,gaussian:64x64*5"
# every family's 4-bit configurations: the rows of each kind of quantizer,
# in a few seconds
BITS=(--bits 4)

# ---- stories260K ----
expect_rc 0 "one process, stories260K" -- "$FRONTIER" sweep "$MODEL" "${BITS[@]}" -o ref.h5 --threads 2
for n in 2 3; do
  expect_rc 0 "$n ranks, stories260K" -- mpi "$n" sweep "$MODEL" "${BITS[@]}" -o "mpi$n.h5"
  same ref.h5 "mpi$n.h5" "$n ranks give the rows of one process (stories260K)"
  [ "$(count "rows in 'mpi$n.h5'" out.txt)" = 1 ] && pass "$n ranks: one summary" ||
    fail "$n ranks: the summary is printed $(count "rows in" out.txt) times"
  [ "$(count "measuring" err.txt)" = 1 ] && pass "$n ranks: one log" ||
    fail "$n ranks: 'measuring' logged $(count measuring err.txt) times"
  expect_stderr "on mpi $n ranks" "$n ranks: the log names the ranks"
  python3 - "mpi$n.h5" "$n" <<'PY' && pass "$n ranks: devices attribute" || fail "$n ranks: devices attribute"
import sys, h5py
d = h5py.File(sys.argv[1], "r").attrs["devices"]
d = d.decode() if isinstance(d, bytes) else str(d)
sys.exit(0 if d.startswith(f"mpi {sys.argv[2]} ranks") else 1)
PY
done

# ---- a synthetic source: small and odd shapes, three dtypes ----
expect_rc 0 "one process, synthetic" -- "$FRONTIER" -q sweep --synthetic "$SPEC" "${BITS[@]}" -o syn.h5
for n in 2 3; do
  expect_rc 0 "$n ranks, synthetic" -- mpi "$n" -q sweep --synthetic "$SPEC" "${BITS[@]}" -o "syn$n.h5"
  same syn.h5 "syn$n.h5" "$n ranks give the rows of one process (synthetic)"
done

# ---- expert stacks (data/tiny-moe, data/tiny-moe.gguf): tasks name an expert of a stack ----
MOE_Q=nvfp4,int4-tensor-sym,fp8-e4m3-tensor,int4-g32-asym,int3-gC-sym
for moe in "$DATA/tiny-moe" "$DATA/tiny-moe.gguf"; do
  tag=$(basename "$moe" | tr -c 'a-z0-9\n' '_')
  expect_rc 0 "one process, $tag" -- "$FRONTIER" -q sweep "$moe" --quantizers "$MOE_Q" --split-experts -o "moe_$tag.h5"
  for n in 2 3; do
    expect_rc 0 "$n ranks, $tag" -- mpi "$n" -q sweep "$moe" --quantizers "$MOE_Q" --split-experts -o "moe_$tag$n.h5"
    same "moe_$tag.h5" "moe_$tag$n.h5" "$n ranks give the rows of one process ($tag, /expert_results too)"
  done
done

# more ranks than tensors: a rank with an empty share
expect_rc 0 "one process, two tensors" -- "$FRONTIER" -q sweep --synthetic gaussian:64x128,laplace:32x64 --bits 4 -o two.h5
expect_rc 0 "3 ranks, two tensors" -- mpi 3 -q sweep --synthetic gaussian:64x128,laplace:32x64 --bits 4 -o two3.h5
same two.h5 two3.h5 "a rank without tensors changes nothing"

# with calibration statistics: every rank finds its tensors' Hessians
if [ -f "$MODEL/calib.safetensors" ]; then
  expect_rc 0 "one process, --calib" -- "$FRONTIER" -q sweep "$MODEL" --calib "$MODEL/calib.safetensors" --bits 4 -o cal.h5
  expect_rc 0 "3 ranks, --calib" -- mpi 3 -q sweep "$MODEL" --calib "$MODEL/calib.safetensors" --bits 4 -o cal3.h5
  same cal.h5 cal3.h5 "3 ranks give the rows of one process (--calib, out_rel_err)"
  # the diagonal alone with --diagonal-output-error: the option reaches every
  # rank with the executor settings
  python3 "$HERE/../calib/safetensors_filter.py" "$MODEL/calib.safetensors" diag.safetensors \
    --keep '\.act_sq_mean$' || fail "the diagonal-only statistics"
  D=(--calib diag.safetensors --diagonal-output-error --bits 4)
  expect_rc 0 "one process, --diagonal-output-error" -- "$FRONTIER" -q sweep "$MODEL" "${D[@]}" -o dcal.h5
  expect_rc 0 "3 ranks, --diagonal-output-error" -- mpi 3 -q sweep "$MODEL" "${D[@]}" -o dcal3.h5
  same dcal.h5 dcal3.h5 "3 ranks give the rows of one process (the diagonal's out_rel_err)"
  python3 -c "import h5py, numpy as np, sys; r = h5py.File(sys.argv[1])['results'][...]; sys.exit(not (len(r) and np.isfinite(r['out_rel_err']).all()))" dcal3.h5 &&
    pass "every row of the 3-rank run has the diagonal's out_rel_err" || fail "rows without out_rel_err under mpirun"
fi
# per-expert statistics of expert stacks ([E, in, in]): each rank takes its
# expert's slice, as rank 0 planned it
if [ -f "$DATA/tiny-moe/calib.safetensors" ]; then
  MOE_C=(--calib "$DATA/tiny-moe/calib.safetensors" --quantizers int4-g32-sym,gptq-int4-g32-sym,awq-int4-g32-sym
         --exclude embed_tokens --split-experts)
  expect_rc 0 "one process, tiny-moe --calib" -- "$FRONTIER" -q sweep "$DATA/tiny-moe" "${MOE_C[@]}" -o moecal.h5
  expect_rc 0 "3 ranks, tiny-moe --calib" -- mpi 3 -q sweep "$DATA/tiny-moe" "${MOE_C[@]}" -o moecal3.h5
  same moecal.h5 moecal3.h5 "3 ranks give the rows of one process (per-expert statistics, gptq on stacks)"
fi

# ---- --resume of an MPI run ----
expect_rc 0 "2 ranks, int4 configurations only" -- mpi 2 -q sweep "$MODEL" --quantizers 'int4*' -o part.h5
part=$(rows part.h5)
expect_rc 0 "3 ranks resume with every 4-bit configuration" -- mpi 3 sweep "$MODEL" "${BITS[@]}" --resume -o part.h5
expect_stderr "resuming 'part.h5': $part rows present" "the resumed run keeps the $part rows there"
python3 "$H5TOOL" same-by-name ref.h5 part.h5 >same.txt 2>&1 &&
  pass "the resumed MPI run has the rows of one process" ||
  { fail "resumed MPI run differs"; sed 's/^/  /' same.txt >&2; }
cp mpi2.h5 done.h5
expect_rc 0 "2 ranks resume a complete run" -- mpi 2 sweep "$MODEL" "${BITS[@]}" --resume -o done.h5
expect_stderr "0 tensors with work left" "nothing left to do"
same mpi2.h5 done.h5 "a complete run stays as it was"

# ---- errors before any work: reported once, by rank 0 ----
expect_rc 3 "a missing model" -- mpi 2 sweep no-such-model.safetensors -o missing.h5
[ "$(count "no-such-model" err.txt)" = 1 ] && pass "the missing model is reported once" ||
  fail "the missing model is reported $(count no-such-model err.txt) times"
[ ! -e missing.h5 ] && pass "no output written" || fail "missing.h5 written"
expect_rc 2 "a usage error" -- mpi 3 sweep "$MODEL" --bits 8..2 -o usage.h5
[ "$(count "8\.\.2" err.txt)" = 1 ] && pass "the usage error is reported once" ||
  fail "the usage error is reported $(count '8\.\.2' err.txt) times"
cp mpi2.h5 keep.h5
expect_rc 5 "an existing output without --resume" -- mpi 2 sweep "$MODEL" "${BITS[@]}" -o keep.h5
cmp -s mpi2.h5 keep.h5 && pass "the existing output is untouched" || fail "keep.h5 changed"
[ "$(count "already exists" err.txt)" = 1 ] && pass "reported once" ||
  fail "'already exists' reported $(count 'already exists' err.txt) times"
expect_rc 9 "--resume on another model" -- mpi 2 sweep --synthetic gaussian:8x8 --resume -o keep.h5
cmp -s mpi2.h5 keep.h5 && pass "the refused resume leaves the output untouched" || fail "keep.h5 changed"

finish
