#include "dtype.h"

static const struct {
    const char *name;
    unsigned size;
    int is_float;
} dtype_traits[FR_DTYPE_COUNT] = {
    [FR_DTYPE_F32] = {"F32", 4, 1},
    [FR_DTYPE_F16] = {"F16", 2, 1},
    [FR_DTYPE_BF16] = {"BF16", 2, 1},
    [FR_DTYPE_F8_E4M3] = {"F8_E4M3", 1, 1},
    [FR_DTYPE_F8_E5M2] = {"F8_E5M2", 1, 1},
    [FR_DTYPE_F64] = {"F64", 8, 1},
    [FR_DTYPE_I8] = {"I8", 1, 0},
    [FR_DTYPE_U8] = {"U8", 1, 0},
    [FR_DTYPE_I16] = {"I16", 2, 0},
    [FR_DTYPE_U16] = {"U16", 2, 0},
    [FR_DTYPE_I32] = {"I32", 4, 0},
    [FR_DTYPE_U32] = {"U32", 4, 0},
    [FR_DTYPE_I64] = {"I64", 8, 0},
    [FR_DTYPE_U64] = {"U64", 8, 0},
    [FR_DTYPE_BOOL] = {"BOOL", 1, 0},
    [FR_DTYPE_QUANT] = {"QUANT", 0, 0},
};

const char *fr_dtype_name(fr_dtype dt)
{
    return (unsigned)dt < FR_DTYPE_COUNT ? dtype_traits[dt].name : "?";
}

unsigned fr_dtype_size(fr_dtype dt)
{
    return (unsigned)dt < FR_DTYPE_COUNT ? dtype_traits[dt].size : 0;
}

int fr_dtype_is_float(fr_dtype dt)
{
    return (unsigned)dt < FR_DTYPE_COUNT && dtype_traits[dt].is_float;
}
