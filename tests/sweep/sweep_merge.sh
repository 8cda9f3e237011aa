#!/usr/bin/env bash
# frontier merge: two partial runs of stories260K (overlapping on layer 2)
# merge into exactly the full run; overlapping rows that disagree are
# refused; existing outputs are never overwritten.
source "$(dirname "$0")/lib.sh"
need_python
need_builtins
M="$DATA/stories260K"
Q=(--quantizers 'int4*,nvfp4,mxfp4,fp8-e4m3-tensor' --quiet)
expect_rc 0 "full run" -- "$FRONTIER" sweep "$M" -o full.h5 "${Q[@]}"
expect_rc 0 "part A: layers 0-2 and the norms" -- "$FRONTIER" sweep "$M" -o a.h5 "${Q[@]}" --include 'layers\.[0-2]\.|norm'
expect_rc 0 "part B: layers 2-4, embeddings, final norm" -- "$FRONTIER" sweep "$M" -o b.h5 "${Q[@]}" --include 'layers\.[2-4]\.|embed|model\.norm'
expect_rc 0 "merge A B" -- "$FRONTIER" merge a.h5 b.h5 -o ab.h5
expect_stderr "\(([1-9][0-9]*) duplicates\)" "reports the overlapping rows"
python3 "$HERE/h5tool.py" same-by-name full.h5 ab.h5 && pass "merged = full run" || fail "merged differs from the full run"
expect_rc 0 "merge B A" -- "$FRONTIER" merge b.h5 a.h5 -o ba.h5 -q
python3 "$HERE/h5tool.py" same-by-name full.h5 ba.h5 && pass "merge order does not matter" || fail "B+A differs"

# configurations from separate runs are joined
expect_rc 0 "a run of other configurations" -- "$FRONTIER" sweep "$M" -o c.h5 --quantizers 'int8-g32-sym' --quiet
expect_rc 0 "merge runs of different configurations" -- "$FRONTIER" merge full.h5 c.h5 -o fc.h5 -q
python3 - <<'PY' && pass "configurations joined" || fail "configurations not joined"
import h5py
f = h5py.File("fc.h5", "r")
names = [n.decode() for n in f["configs"]["name"]]
assert "int8-g32-sym" in names and "nvfp4" in names, names
assert len(f["sources"]) == 1 and len(f["tensors"]) == 36
PY

# synthetic runs with different seeds are different sources
expect_rc 0 "synthetic seed 1" -- "$FRONTIER" sweep --synthetic gaussian:64x64 --seed 1 -o s1.h5 --quantizers nvfp4 --quiet
expect_rc 0 "synthetic seed 2" -- "$FRONTIER" sweep --synthetic gaussian:64x64 --seed 2 -o s2.h5 --quantizers nvfp4 --quiet
expect_rc 0 "merge two seeds" -- "$FRONTIER" merge s1.h5 s2.h5 -o s12.h5 -q
python3 -c 'import h5py,sys; f=h5py.File("s12.h5"); sys.exit(0 if len(f["sources"]) == 2 and len(f["results"]) == 2 else 1)' \
  && pass "two seeds, two sources" || fail "seeds were merged as one source"

# disagreement: a value of an overlapping row changed beyond 1e-12 relative
row=$(python3 - <<'PY'
import h5py
f = h5py.File("b.h5", "r")
names = [n.decode() for n in f["tensors"]["name"]]
r = f["results"][...]
print(next(i for i, x in enumerate(r) if names[x["tensor_id"]].startswith("model.layers.2.")))
PY
)
cp b.h5 b_tiny.h5; python3 "$HERE/h5tool.py" bump b_tiny.h5 rel_err "$row" 1.000000000000001
expect_rc 0 "a difference within 1e-12 merges" -- "$FRONTIER" merge a.h5 b_tiny.h5 -o tiny.h5 -q
cp b.h5 b_bad.h5; python3 "$HERE/h5tool.py" bump b_bad.h5 rel_err "$row" 1.000001
expect_rc 9 "overlapping rows that disagree" -- "$FRONTIER" merge a.h5 b_bad.h5 -o bad.h5
expect_stderr "disagrees: rel_err is .* in 'a.h5' but .* in 'b_bad.h5'" "names the row, field and files"
[ -e bad.h5 ] && fail "a refused merge wrote its output"

# outputs and inputs
before=$(sha256sum ab.h5)
expect_rc 5 "existing output" -- "$FRONTIER" merge a.h5 b.h5 -o ab.h5
[ "$(sha256sum ab.h5)" = "$before" ] || fail "merge changed an existing output"
expect_rc 3 "missing input" -- "$FRONTIER" merge a.h5 missing.h5 -o m.h5
echo "text" > text.h5
expect_rc 4 "input that is not a dataset" -- "$FRONTIER" merge a.h5 text.h5 -o m.h5
expect_rc 2 "no output" -- "$FRONTIER" merge a.h5 b.h5
expect_rc 2 "output among the inputs" -- "$FRONTIER" merge a.h5 b.h5 -o a.h5
[ -e m.h5 ] && fail "a failed merge wrote its output"
finish
