/*
 * Tensor classes from names (docs/tensor-classes.md holds the table), so
 * users can compare attention against MLP and experts.
 */
#ifndef FR_CLASSIFY_H
#define FR_CLASSIFY_H

typedef enum fr_tensor_class {
    FR_CLASS_ATTN_Q = 0,
    FR_CLASS_ATTN_K,
    FR_CLASS_ATTN_V,
    FR_CLASS_ATTN_O,
    FR_CLASS_ATTN_QKV,
    FR_CLASS_MLP_GATE,
    FR_CLASS_MLP_UP,
    FR_CLASS_MLP_DOWN,
    FR_CLASS_EXPERT,
    FR_CLASS_EMBED,
    FR_CLASS_LM_HEAD,
    FR_CLASS_NORM,
    FR_CLASS_CONV,
    FR_CLASS_OTHER,
    FR_CLASS_COUNT
} fr_tensor_class;

const char *fr_class_name(fr_tensor_class cls);
/* -1 when name is not a class name. */
int fr_class_from_name(const char *name);
/* Class of a tensor from its name and rank. */
fr_tensor_class fr_classify(const char *tensor_name, int ndim);

#endif
