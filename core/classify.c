/*
 * Tensor classes from names: one table of (glob pattern, minimum rank,
 * class), matched case-insensitively with fnmatch(3), first match wins.
 * docs/tensor-classes.md shows this table; keep the two in step.
 *
 * Naming schemes covered: Hugging Face Llama/Mistral/Qwen/Mixtral/
 * Qwen-MoE/DeepSeek ("model.layers.N.self_attn.q_proj.weight",
 * "block_sparse_moe.experts.N.w1"), original Llama ("layers.N.attention.wq"),
 * GPT-2/NeoX/Falcon/BERT, timm ViT ("blocks.N.attn.qkv", "mlp.fc1"),
 * GGUF ("blk.N.attn_q.weight", "ffn_gate_exps"), and Paddle/ONNX exports
 * ("conv2d_3.w_0", "batch_norm2d_5.w_1", "layer_norm_43.w_0").
 */
#include "classify.h"

#include <fnmatch.h>
#include <stddef.h>
#include <string.h>

static const char *const class_names[FR_CLASS_COUNT] = {
    [FR_CLASS_ATTN_Q] = "attn_q",     [FR_CLASS_ATTN_K] = "attn_k",
    [FR_CLASS_ATTN_V] = "attn_v",     [FR_CLASS_ATTN_O] = "attn_o",
    [FR_CLASS_ATTN_QKV] = "attn_qkv", [FR_CLASS_MLP_GATE] = "mlp_gate",
    [FR_CLASS_MLP_UP] = "mlp_up",     [FR_CLASS_MLP_DOWN] = "mlp_down",
    [FR_CLASS_EXPERT] = "expert",     [FR_CLASS_EMBED] = "embed",
    [FR_CLASS_LM_HEAD] = "lm_head",   [FR_CLASS_NORM] = "norm",
    [FR_CLASS_CONV] = "conv",         [FR_CLASS_OTHER] = "other",
};

/* Order matters: norms before attention (Qwen3's "self_attn.q_norm" is a
 * norm), MoE routers before experts before the dense MLP ("mlp.gate" is a
 * router, "mlp.experts.3.gate_proj" an expert, "mlp.gate_proj" a gate),
 * lm_head before embed ("embed_out" is GPT-NeoX's head). */
static const struct class_rule {
    const char *pattern;
    int min_ndim;
    fr_tensor_class cls;
} class_rules[] = {
    /* normalisation */
    {"*norm*", 0, FR_CLASS_NORM},
    {"*.ln_*", 0, FR_CLASS_NORM},
    {"ln_*", 0, FR_CLASS_NORM},
    /* MoE routers are small dense layers, not experts */
    {"*block_sparse_moe.gate.*", 0, FR_CLASS_OTHER},
    {"*mlp.gate.*", 0, FR_CLASS_OTHER},
    {"*shared_expert_gate*", 0, FR_CLASS_OTHER},
    {"*ffn_gate_inp*", 0, FR_CLASS_OTHER},
    {"*router*", 0, FR_CLASS_OTHER},
    /* experts, routed and shared */
    {"*experts*", 0, FR_CLASS_EXPERT},
    {"*shared_expert*", 0, FR_CLASS_EXPERT},
    {"*_exps.*", 0, FR_CLASS_EXPERT},
    {"*_shexp.*", 0, FR_CLASS_EXPERT},
    /* output head and embeddings */
    {"lm_head*", 0, FR_CLASS_LM_HEAD},
    {"*.lm_head.*", 0, FR_CLASS_LM_HEAD},
    {"output.weight", 0, FR_CLASS_LM_HEAD},
    {"*embed_out*", 0, FR_CLASS_LM_HEAD},
    {"*embed*", 0, FR_CLASS_EMBED},
    {"token_embd*", 0, FR_CLASS_EMBED},
    {"*wte*", 0, FR_CLASS_EMBED},
    {"*wpe*", 0, FR_CLASS_EMBED},
    /* attention: fused qkv first, then q, k, v, output */
    {"*qkv*", 0, FR_CLASS_ATTN_QKV},
    {"*query_key_value*", 0, FR_CLASS_ATTN_QKV},
    {"*attn.c_attn*", 0, FR_CLASS_ATTN_QKV},
    {"*q_proj*", 0, FR_CLASS_ATTN_Q},
    {"*attn_q.*", 0, FR_CLASS_ATTN_Q},
    {"*attention.wq.*", 0, FR_CLASS_ATTN_Q},
    {"*attention.self.query*", 0, FR_CLASS_ATTN_Q},
    {"*k_proj*", 0, FR_CLASS_ATTN_K},
    {"*attn_k.*", 0, FR_CLASS_ATTN_K},
    {"*attention.wk.*", 0, FR_CLASS_ATTN_K},
    {"*attention.self.key*", 0, FR_CLASS_ATTN_K},
    {"*v_proj*", 0, FR_CLASS_ATTN_V},
    {"*attn_v.*", 0, FR_CLASS_ATTN_V},
    {"*attention.wv.*", 0, FR_CLASS_ATTN_V},
    {"*attention.self.value*", 0, FR_CLASS_ATTN_V},
    {"*o_proj*", 0, FR_CLASS_ATTN_O},
    {"*out_proj*", 0, FR_CLASS_ATTN_O},
    {"*attn_output*", 0, FR_CLASS_ATTN_O},
    {"*attention.wo.*", 0, FR_CLASS_ATTN_O},
    {"*attention.output.dense*", 0, FR_CLASS_ATTN_O},
    {"*attn.c_proj*", 0, FR_CLASS_ATTN_O},
    {"*attn.proj*", 0, FR_CLASS_ATTN_O},
    {"*self_attention.dense*", 0, FR_CLASS_ATTN_O},
    /* dense MLP */
    {"*gate_proj*", 0, FR_CLASS_MLP_GATE},
    {"*ffn_gate.*", 0, FR_CLASS_MLP_GATE},
    {"*feed_forward.w1.*", 0, FR_CLASS_MLP_GATE},
    {"*up_proj*", 0, FR_CLASS_MLP_UP},
    {"*ffn_up.*", 0, FR_CLASS_MLP_UP},
    {"*feed_forward.w3.*", 0, FR_CLASS_MLP_UP},
    {"*fc1.*", 0, FR_CLASS_MLP_UP},
    {"*mlp.c_fc*", 0, FR_CLASS_MLP_UP},
    {"*intermediate.dense*", 0, FR_CLASS_MLP_UP},
    {"*dense_h_to_4h*", 0, FR_CLASS_MLP_UP},
    {"*down_proj*", 0, FR_CLASS_MLP_DOWN},
    {"*ffn_down.*", 0, FR_CLASS_MLP_DOWN},
    {"*feed_forward.w2.*", 0, FR_CLASS_MLP_DOWN},
    {"*fc2.*", 0, FR_CLASS_MLP_DOWN},
    {"*mlp.c_proj*", 0, FR_CLASS_MLP_DOWN},
    {"*output.dense*", 0, FR_CLASS_MLP_DOWN},
    {"*dense_4h_to_h*", 0, FR_CLASS_MLP_DOWN},
    /* convolutions: by name, or any weight of rank 3 or more left over */
    {"*conv*", 0, FR_CLASS_CONV},
    {"*", 3, FR_CLASS_CONV},
};

const char *fr_class_name(fr_tensor_class cls)
{
    return (unsigned)cls < FR_CLASS_COUNT ? class_names[cls] : "?";
}

int fr_class_from_name(const char *name)
{
    for (int i = 0; i < FR_CLASS_COUNT; i++)
        if (!strcmp(class_names[i], name))
            return i;
    return -1;
}

fr_tensor_class fr_classify(const char *tensor_name, int ndim)
{
    for (size_t i = 0; i < sizeof class_rules / sizeof class_rules[0]; i++) {
        const struct class_rule *rule = &class_rules[i];
        if (ndim >= rule->min_ndim && fnmatch(rule->pattern, tensor_name, FNM_CASEFOLD) == 0)
            return rule->cls;
    }
    return FR_CLASS_OTHER;
}
