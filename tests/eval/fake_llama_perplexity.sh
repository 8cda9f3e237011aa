#!/bin/sh
# A stand-in llama-perplexity for tests/eval/test_evaluate_fake.sh: takes
# the arguments frontier evaluate passes, writes a --kl-divergence-base file
# of 2 chunks (header only: n_ctx 128, n_vocab 512, n_chunk 2) or prints
# what the pinned llama-perplexity prints for --kl-divergence (lines copied
# from a real run), as FAKE_MODE says: full (rows and closing statistics),
# rows (the closing statistics lost), rows-once (lost at the first
# --kl-divergence call after FAKE_CALLS.rows was removed, full after),
# truncated (the last row lost too),
# fail (exit 1 with llama.cpp's error line). Each call is appended to
# FAKE_CALLS.
echo "$*" >> "$FAKE_CALLS"
base=
kld=0
while [ $# -gt 0 ]; do
  case "$1" in
    --kl-divergence-base) base=$2; shift 2 ;;
    --kl-divergence) kld=1; shift ;;
    *) shift ;;
  esac
done
if [ "$FAKE_MODE" = fail ]; then
  echo "0.00.051.923 E llama_model_load: error loading model: fake failure"
  exit 1
fi
if [ "$kld" = 0 ]; then
  printf '_logits_\200\000\000\000\000\002\000\000\002\000\000\000' > "$base"
  echo "0.00.425.629 I perplexity: calculating perplexity over 2 chunks, n_ctx=128, batch_size=2048, n_seq=16"
  exit 0
fi
echo "0.00.649.797 I kl_divergence: computing over 2 chunks, n_ctx=128, batch_size=2048, n_seq=16"
echo
echo "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p"
echo "   1     630.0305 ±  130.2674      -0.34956 ±    0.08419       1.03970 ±    0.12281     0.136 ±  0.013 %    60.317 ±  6.213 %"
[ "$FAKE_MODE" = truncated ] && exit 0
echo "   2     632.8722 ±   91.7529      -0.31252 ±    0.05330       1.02320 ±    0.08914     0.125 ±  0.008 %    56.349 ±  4.436 %"
[ "$FAKE_MODE" = rows ] && exit 0
if [ "$FAKE_MODE" = rows-once ] && [ ! -e "$FAKE_CALLS.rows" ]; then
  : > "$FAKE_CALLS.rows"
  exit 0
fi
cat <<'OUT'

====== Perplexity statistics ======
Mean PPL(Q)                   : 632.872211 ±  91.752912
Mean PPL(base)                : 865.056248 ± 104.055512
Cor(ln(PPL(Q)), ln(PPL(base))):  88.60%
Mean ln(PPL(Q)/PPL(base))     :  -0.312520 ±   0.053300

====== KL divergence statistics ======
Mean    KLD:   1.023204 ±   0.089141
Maximum KLD:   7.019514

====== Token probability statistics ======
Mean    Δp:  0.078 ± 0.002 %
RMS Δp    :  0.125 ± 0.008 %
Same top p: 56.349 ±  4.436 %
OUT
exit 0
