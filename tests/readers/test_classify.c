/*
 * Tensor classes from real names of each naming scheme (docs/tensor-classes.md).
 * One row per case: name, rank, class.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/classify.h"

static const struct {
    const char *name;
    int ndim;
    const char *cls;
} cases[] = {
    /* Hugging Face Llama / Mistral / Qwen */
    {"model.embed_tokens.weight", 2, "embed"},
    {"model.layers.0.self_attn.q_proj.weight", 2, "attn_q"},
    {"model.layers.0.self_attn.k_proj.weight", 2, "attn_k"},
    {"model.layers.0.self_attn.v_proj.weight", 2, "attn_v"},
    {"model.layers.0.self_attn.o_proj.weight", 2, "attn_o"},
    {"model.layers.0.self_attn.q_proj.bias", 1, "attn_q"},
    {"model.layers.0.self_attn.q_norm.weight", 1, "norm"},
    {"model.layers.0.mlp.gate_proj.weight", 2, "mlp_gate"},
    {"model.layers.0.mlp.up_proj.weight", 2, "mlp_up"},
    {"model.layers.0.mlp.down_proj.weight", 2, "mlp_down"},
    {"model.layers.0.input_layernorm.weight", 1, "norm"},
    {"model.layers.0.post_attention_layernorm.weight", 1, "norm"},
    {"model.norm.weight", 1, "norm"},
    {"lm_head.weight", 2, "lm_head"},
    {"model.layers.0.self_attn.qkv_proj.weight", 2, "attn_qkv"},
    /* Mixtral, Qwen-MoE, DeepSeek */
    {"model.layers.3.block_sparse_moe.gate.weight", 2, "other"},
    {"model.layers.3.block_sparse_moe.experts.7.w1.weight", 2, "expert"},
    {"model.layers.3.block_sparse_moe.experts.7.w2.weight", 2, "expert"},
    {"model.layers.3.mlp.gate.weight", 2, "other"},
    {"model.layers.3.mlp.experts.12.gate_proj.weight", 2, "expert"},
    {"model.layers.3.mlp.experts.12.down_proj.weight", 2, "expert"},
    {"model.layers.3.mlp.shared_expert.up_proj.weight", 2, "expert"},
    {"model.layers.3.mlp.shared_experts.up_proj.weight", 2, "expert"},
    {"model.layers.3.mlp.shared_expert_gate.weight", 2, "other"},
    {"model.layers.3.mlp.gate.e_score_correction_bias", 1, "other"},
    /* original Llama checkpoints */
    {"tok_embeddings.weight", 2, "embed"},
    {"layers.0.attention.wq.weight", 2, "attn_q"},
    {"layers.0.attention.wk.weight", 2, "attn_k"},
    {"layers.0.attention.wv.weight", 2, "attn_v"},
    {"layers.0.attention.wo.weight", 2, "attn_o"},
    {"layers.0.feed_forward.w1.weight", 2, "mlp_gate"},
    {"layers.0.feed_forward.w2.weight", 2, "mlp_down"},
    {"layers.0.feed_forward.w3.weight", 2, "mlp_up"},
    {"layers.0.attention_norm.weight", 1, "norm"},
    {"output.weight", 2, "lm_head"},
    /* GGUF */
    {"token_embd.weight", 2, "embed"},
    {"blk.0.attn_q.weight", 2, "attn_q"},
    {"blk.0.attn_k.weight", 2, "attn_k"},
    {"blk.0.attn_v.weight", 2, "attn_v"},
    {"blk.0.attn_output.weight", 2, "attn_o"},
    {"blk.0.attn_qkv.weight", 2, "attn_qkv"},
    {"blk.0.attn_norm.weight", 1, "norm"},
    {"blk.0.ffn_gate.weight", 2, "mlp_gate"},
    {"blk.0.ffn_up.weight", 2, "mlp_up"},
    {"blk.0.ffn_down.weight", 2, "mlp_down"},
    {"blk.0.ffn_norm.weight", 1, "norm"},
    {"blk.0.ffn_gate_inp.weight", 2, "other"},
    {"blk.0.ffn_gate_exps.weight", 3, "expert"},
    {"blk.0.ffn_up_exps.weight", 3, "expert"},
    {"blk.0.ffn_down_exps.weight", 3, "expert"},
    {"blk.0.ffn_up_shexp.weight", 2, "expert"},
    {"output_norm.weight", 1, "norm"},
    /* GPT-2, NeoX, Falcon, BERT */
    {"transformer.wte.weight", 2, "embed"},
    {"transformer.h.0.ln_1.weight", 1, "norm"},
    {"transformer.h.0.attn.c_attn.weight", 2, "attn_qkv"},
    {"transformer.h.0.attn.c_proj.weight", 2, "attn_o"},
    {"transformer.h.0.mlp.c_fc.weight", 2, "mlp_up"},
    {"transformer.h.0.mlp.c_proj.weight", 2, "mlp_down"},
    {"gpt_neox.layers.0.attention.query_key_value.weight", 2, "attn_qkv"},
    {"gpt_neox.layers.0.mlp.dense_h_to_4h.weight", 2, "mlp_up"},
    {"gpt_neox.layers.0.mlp.dense_4h_to_h.weight", 2, "mlp_down"},
    {"embed_out.weight", 2, "lm_head"},
    {"transformer.h.0.self_attention.dense.weight", 2, "attn_o"},
    {"bert.encoder.layer.0.attention.self.query.weight", 2, "attn_q"},
    {"bert.encoder.layer.0.attention.self.key.weight", 2, "attn_k"},
    {"bert.encoder.layer.0.attention.self.value.weight", 2, "attn_v"},
    {"bert.encoder.layer.0.attention.output.dense.weight", 2, "attn_o"},
    {"bert.encoder.layer.0.intermediate.dense.weight", 2, "mlp_up"},
    {"bert.encoder.layer.0.output.dense.weight", 2, "mlp_down"},
    {"bert.encoder.layer.0.attention.output.LayerNorm.weight", 1, "norm"},
    /* timm ViT / SVTR-style exports */
    {"blocks.0.attn.qkv.weight", 2, "attn_qkv"},
    {"blocks.0.attn.proj.weight", 2, "attn_o"},
    {"blocks.0.mlp.fc1.weight", 2, "mlp_up"},
    {"blocks.0.mlp.fc2.weight", 2, "mlp_down"},
    {"blocks.0.norm1.weight", 1, "norm"},
    {"patch_embed.proj.weight", 4, "embed"},
    /* Paddle / ONNX (data/ppocr-v4-rec) */
    {"conv2d_106.w_0", 4, "conv"},
    {"conv2d_106.b_0", 1, "conv"},
    {"batch_norm2d_148.w_1", 1, "norm"},
    {"layer_norm_43.w_0", 1, "norm"},
    {"linear_77.w_0", 2, "other"},
    {"p2o.helper.constant.1", 0, "other"},
    /* a rank-4 weight with no telling name is a convolution */
    {"stem.0.weight", 4, "conv"},
    {"whisper.encoder.conv1.weight", 3, "conv"},
    {"something.else", 2, "other"},
};

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = fr_class_name(fr_classify(cases[i].name, cases[i].ndim));
        if (fr_class_from_name(cases[i].cls) < 0) {
            fr_test_fail(__FILE__, __LINE__, "'%s' is not a class name", cases[i].cls);
        } else if (strcmp(got, cases[i].cls) != 0) {
            fr_test_fail(__FILE__, __LINE__, "'%s' (rank %d) is %s, want %s", cases[i].name, cases[i].ndim, got,
                    cases[i].cls);
        }
    }
    for (int c = 0; c < FR_CLASS_COUNT; c++)
        if (fr_class_from_name(fr_class_name((fr_tensor_class)c)) != c) {
            fr_test_fail(__FILE__, __LINE__, "class %d does not round-trip its name", c);
        }
    if (fr_class_from_name("nonsense") != -1) {
        fr_test_fail(__FILE__, __LINE__, "'nonsense' is a class");
    }
    if (!fr_test_failures)
        printf("test_classify: %zu names classified as expected\n", sizeof cases / sizeof cases[0]);
    return fr_test_finish("test_classify");
}
