#include "protobuf.h"

#include <stddef.h>

void fr_pb_init(fr_pb_reader *r, const uint8_t *base, const uint8_t *data, uint64_t len)
{
    r->base = base;
    r->p = data;
    r->end = data + len;
    r->error = NULL;
    r->error_pos = 0;
}

int fr_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    const uint8_t *q = *p;
    uint64_t v = 0;
    /* At most 10 bytes; the 10th may only carry the 64th bit. */
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (q >= end)
            return -1;
        uint8_t b = *q++;
        if (shift == 63 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7fu) << shift;
        if (!(b & 0x80u)) {
            *p = q;
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int pb_fail(fr_pb_reader *r, const uint8_t *at, const char *why)
{
    r->error = why;
    r->error_pos = (uint64_t)(at - r->base);
    return -1;
}

int fr_pb_next(fr_pb_reader *r, fr_pb_field *f)
{
    if (r->p >= r->end)
        return 0;
    const uint8_t *tag_at = r->p;
    uint64_t tag;
    if (fr_pb_varint(&r->p, r->end, &tag) != 0)
        return pb_fail(r, tag_at, "truncated varint");
    uint64_t number = tag >> 3;
    if (number == 0 || number > 0x1fffffffu) /* field numbers are 1 .. 2^29-1 */
        return pb_fail(r, tag_at, "invalid field number");
    f->number = (uint32_t)number;
    f->wire = (fr_pb_wire)(tag & 7u);
    f->pos = (uint64_t)(tag_at - r->base);
    f->value = 0;
    f->data = NULL;
    f->len = 0;
    const uint8_t *at = r->p;
    switch (tag & 7u) {
    case FR_PB_VARINT:
        if (fr_pb_varint(&r->p, r->end, &f->value) != 0)
            return pb_fail(r, at, "truncated varint");
        return 1;
    case FR_PB_I64:
        if (r->end - r->p < 8)
            return pb_fail(r, at, "truncated 64-bit field");
        for (int i = 7; i >= 0; i--)
            f->value = f->value << 8 | r->p[i];
        r->p += 8;
        return 1;
    case FR_PB_I32:
        if (r->end - r->p < 4)
            return pb_fail(r, at, "truncated 32-bit field");
        f->value = (uint64_t)r->p[0] | (uint64_t)r->p[1] << 8 | (uint64_t)r->p[2] << 16 |
                   (uint64_t)r->p[3] << 24;
        r->p += 4;
        return 1;
    case FR_PB_LEN: {
        uint64_t len;
        if (fr_pb_varint(&r->p, r->end, &len) != 0)
            return pb_fail(r, at, "truncated varint");
        if (len > (uint64_t)(r->end - r->p))
            return pb_fail(r, at, "length past the end of the message");
        f->data = r->p;
        f->len = len;
        r->p += len;
        return 1;
    }
    case 3:
    case 4:
        return pb_fail(r, tag_at, "unsupported wire type (group)");
    default:
        return pb_fail(r, tag_at, "invalid wire type");
    }
}

int64_t fr_pb_count_varints(const uint8_t *data, uint64_t len, uint64_t max_value)
{
    const uint8_t *p = data, *end = data + len;
    int64_t n = 0;
    while (p < end) {
        uint64_t v;
        if (fr_pb_varint(&p, end, &v) != 0 || v > max_value)
            return -1;
        n++;
    }
    return n;
}

const char *fr_pb_wire_name(int wire)
{
    switch (wire) {
    case FR_PB_VARINT: return "varint";
    case FR_PB_I64: return "64-bit";
    case FR_PB_LEN: return "length-delimited";
    case FR_PB_I32: return "32-bit";
    }
    return "invalid";
}
