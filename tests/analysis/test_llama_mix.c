/*
 * llama-quantize's stock mixes (frontier/analysis/llama_mix.h) on
 * data/stories260K.gguf (and data/tiny-moe.gguf, 4 experts): the type the
 * rules give every tensor for every mix, against the types the pinned
 * llama-quantize itself wrote (the tables below were written from its
 * output files), with the hyperparameters read
 * from the GGUF and, the model out of reach, inferred from a dataset of its
 * tensors; the tensor order the counters run in; the mix names.
 *
 * stories260K has rows of 64 (and ffn_down of 172): every super-block type
 * falls back (Q4_K to Q5_0, Q6_K to Q8_0, ...), ffn_down to F16, the tied
 * token_embd takes output.weight's rule (Q6_K, then Q8_0), and attn_v gets
 * the layer-position bumps of Q3_K_M, Q4_K_S and Q4_K_M (5 layers:
 * use_more_bits holds for layers 2 and 4). tests/llama/llama_mixes.py
 * compares the same against llama-quantize where it is built, on
 * SmolLM2-135M and a model with grouped-query attention too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/source.h"
#include "frontier/analysis/llama_mix.h"

#define N_MIXES FR_LLAMA_N_MIXES

/* written from llama-quantize's output: the pinned build (scripts/llama-cpp.sh,
 * llama.cpp of llama-cpp-python 0.3.36), `llama-quantize data/stories260K.gguf OUT TYPE`
 * for each TYPE below, the types read back with gguf-py; f32: a norm it copies */
static const char *const mix_order[N_MIXES] = {"Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "IQ4_XS", "Q4_0", "IQ4_NL", "Q4_K_S", "Q4_K_M", "Q4_1", "Q5_0", "Q5_K_S", "Q5_K_M", "Q5_1", "Q6_K", "Q8_0"};
typedef struct expected_row {
    const char *name;
    const char *type[N_MIXES];
} expected_row;
static const expected_row expected[] = {
    {"output_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"token_embd.weight", {"q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0"}},
    {"blk.0.attn_k.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.attn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.0.attn_output.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.attn_q.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.attn_v.weight", {"q4_0", "q4_0", "q5_1", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_1", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.ffn_down.weight", {"f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16"}},
    {"blk.0.ffn_gate.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.ffn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.0.ffn_up.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.attn_k.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.attn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.1.attn_output.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.attn_q.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.attn_v.weight", {"q4_0", "q4_0", "q5_1", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_1", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.ffn_down.weight", {"f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16"}},
    {"blk.1.ffn_gate.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.ffn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.1.ffn_up.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.2.attn_k.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.2.attn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.2.attn_output.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.2.attn_q.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.2.attn_v.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_1", "q8_0", "q4_1", "q5_0", "q5_1", "q8_0", "q5_1", "q8_0", "q8_0"}},
    {"blk.2.ffn_down.weight", {"f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16"}},
    {"blk.2.ffn_gate.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.2.ffn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.2.ffn_up.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.3.attn_k.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.3.attn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.3.attn_output.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.3.attn_q.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.3.attn_v.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_1", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.3.ffn_down.weight", {"f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16"}},
    {"blk.3.ffn_gate.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.3.ffn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.3.ffn_up.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.4.attn_k.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.4.attn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.4.attn_output.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.4.attn_q.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.4.attn_v.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q8_0", "q4_1", "q5_0", "q5_1", "q8_0", "q5_1", "q8_0", "q8_0"}},
    {"blk.4.ffn_down.weight", {"f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16"}},
    {"blk.4.ffn_gate.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.4.ffn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.4.ffn_up.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
};

/* the same from `llama-quantize data/tiny-moe.gguf OUT TYPE` (qwen3moe, 4 experts);
 * bf16: its router, copied; f32: norms */
static const expected_row expected_moe[] = {
    {"output.weight", {"q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0"}},
    {"output_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"token_embd.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.attn_k.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.attn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.0.attn_output.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.attn_q.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.attn_v.weight", {"q4_0", "q4_0", "q5_1", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_1", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.ffn_down_exps.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.ffn_gate_exps.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.0.ffn_gate_inp.weight", {"bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16"}},
    {"blk.0.ffn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.0.ffn_up_exps.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.attn_k.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.attn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.1.attn_output.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.attn_q.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.attn_v.weight", {"q4_0", "q4_0", "q5_1", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_1", "q8_0", "q4_1", "q5_0", "q5_1", "q8_0", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.ffn_down_exps.weight", {"q4_0", "q4_0", "q5_0", "q5_1", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q8_0", "q4_1", "q5_0", "q5_1", "q8_0", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.ffn_gate_exps.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
    {"blk.1.ffn_gate_inp.weight", {"bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16"}},
    {"blk.1.ffn_norm.weight", {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"}},
    {"blk.1.ffn_up_exps.weight", {"q4_0", "q4_0", "q4_0", "q4_0", "iq4_nl", "q4_0", "iq4_nl", "q5_0", "q5_0", "q4_1", "q5_0", "q5_1", "q5_1", "q5_1", "q8_0", "q8_0"}},
};

#define N_EXPECTED (sizeof expected / sizeof expected[0])
#define N_ROWS_MAX 64

/* The types of every mix on m against a table; NULL (not quantized) is the
 * tensor's own type, F32 or BF16 in these models (a fallback is F16). */
static void check_types(const fr_llama_model *m, const expected_row *rows, size_t n,
                        const char *how)
{
    CHECK_MSG(m->n_tensors == n && n <= N_ROWS_MAX, "%s: %zu tensors", how, m->n_tensors);
    if (m->n_tensors != n || n > N_ROWS_MAX)
        return;
    const char *target[N_ROWS_MAX], *stored[N_ROWS_MAX];
    for (int mix = 0; mix < N_MIXES; mix++) {
        CHECK_STR(fr_llama_mix_name(mix), mix_order[mix]);
        fr_llama_mix_types(mix, m, target, stored);
        for (size_t i = 0; i < n; i++) {
            /* llama-quantize's order: the counters of the rules run in it */
            CHECK_STR(m->tensors[i].name, rows[i].name);
            const char *want = rows[i].type[mix];
            int ok = stored[i] ? !strcmp(stored[i], want)
                               : !strcmp(want, "f32") || !strcmp(want, "bf16");
            CHECK_MSG(ok, "%s, %s, %s: %s, llama-quantize %s", how, mix_order[mix], rows[i].name,
                      stored[i] ? stored[i] : "(copied)", want);
        }
    }
}

/* A dataset of the model's tensors, as a sweep records them (no rows). */
static void dataset_of(const fr_source *src, fr_dataset *ds)
{
    memset(ds, 0, sizeof *ds);
    for (size_t i = 0; i < src->n_tensors; i++) {
        const fr_tensor *t = &src->tensors[i];
        char shape[64] = "";
        size_t used = 0;
        for (int d = 0; d < t->ndim; d++)
            used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%lld", d ? "x" : "",
                                     (long long)t->shape[d]);
        fr_ds_tensor row = {.tensor_id = (uint32_t)i, .name = t->name, .cls = "", .dtype = "F16",
                            .shape = shape, .numel = (uint64_t)t->numel,
                            .rows = t->shape[0], .cols = t->shape[t->ndim - 1]};
        fr_error err = {0};
        CHECK_OK(fr_dataset_add_tensor(ds, &row, &err), err);
    }
}

static void check_names(void)
{
    CHECK(fr_llama_mix_from_name("q4_k_m") == fr_llama_mix_from_name("Q4_K_M"));
    CHECK(fr_llama_mix_from_name("Q4_K") == fr_llama_mix_from_name("Q4_K_M"));
    CHECK(fr_llama_mix_from_name("q3_k") == fr_llama_mix_from_name("Q3_K_M"));
    CHECK(fr_llama_mix_from_name("Q5_K") == fr_llama_mix_from_name("Q5_K_M"));
    CHECK(fr_llama_mix_from_name("iq4_xs") >= 0);
    CHECK(fr_llama_mix_from_name("Q4_K_X") < 0);
    CHECK(fr_llama_mix_from_name("IQ2_XS") < 0); /* its types are not frontier's */
    CHECK(fr_llama_mix_from_name(NULL) < 0);
    char buf[256];
    CHECK(strstr(fr_llama_mix_names(buf, sizeof buf), "Q4_K_M") != NULL);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_llama_mix DATA_DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/stories260K.gguf", argv[1]);
    check_names();

    fr_error err = {0};
    fr_dataset empty;
    memset(&empty, 0, sizeof empty);
    fr_llama_model m;
    CHECK_OK(fr_llama_model_describe(&empty, path, &m, &err), err);
    CHECK(m.from_model && !strcmp(m.arch, "llama") && m.n_layer == 5 && m.n_head == 8 &&
          m.n_head_kv == 4 && m.n_expert == 0);
    check_types(&m, expected, N_EXPECTED, "from the GGUF");
    fr_llama_model_free(&m);

    /* without the model: the dataset's tensors say as much (its only source
     * cannot be opened); the architecture is unknown, which these rules
     * do not read for a llama of 5 layers */
    fr_source *src;
    CHECK_OK(fr_source_open(path, &src, &err), err);
    fr_dataset ds;
    dataset_of(src, &ds);
    fr_ds_source gone = {.source_id = 0, .path = "/nonexistent/stories260K.gguf", .kind = "gguf"};
    CHECK_OK(fr_dataset_add_source(&ds, &gone, &err), err);
    CHECK_OK(fr_llama_model_describe(&ds, NULL, &m, &err), err);
    CHECK(!m.from_model && !m.arch[0] && m.n_layer == 5 && m.n_head / m.n_head_kv == 2);
    for (size_t i = 0; i < m.n_tensors; i++)
        CHECK_MSG(m.tensors[i].ds >= 0 && !strcmp(ds.tensors[m.tensors[i].ds].name,
                                                   m.tensors[i].name),
                  "'%s' is not matched to its dataset row", m.tensors[i].name);
    check_types(&m, expected, N_EXPECTED, "from the dataset");
    fr_llama_model_free(&m);
    fr_dataset_free(&ds);
    fr_source_close(src);

    /* experts: the stacks take ffn_down's rules with the layer of their name */
    snprintf(path, sizeof path, "%s/tiny-moe.gguf", argv[1]);
    CHECK_OK(fr_llama_model_describe(&empty, path, &m, &err), err);
    CHECK(m.from_model && !strcmp(m.arch, "qwen3moe") && m.n_layer == 2 && m.n_expert == 4);
    check_types(&m, expected_moe, sizeof expected_moe / sizeof expected_moe[0], "tiny-moe");
    fr_llama_model_free(&m);
    return fr_test_finish("analysis.llama_mix");
}
