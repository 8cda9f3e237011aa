/*
 * A protobuf wire-format reader of just what the ONNX reader needs: walk the
 * fields of one message without allocating, with every length checked
 * against the bytes that remain (https://protobuf.dev/programming-guides/encoding/).
 *
 * Hardened for hostile input: varints longer than 10 bytes or wider than 64
 * bits, lengths past the end of the enclosing message, field number 0 and
 * the wire types nobody writes any more (groups, 3 and 4) or that do not
 * exist (6, 7) are all reported as errors, never read past.
 */
#ifndef FR_PROTOBUF_H
#define FR_PROTOBUF_H

#include <stdint.h>

typedef enum fr_pb_wire {
    FR_PB_VARINT = 0,
    FR_PB_I64 = 1,
    FR_PB_LEN = 2,
    FR_PB_I32 = 5
} fr_pb_wire;

typedef struct fr_pb_field {
    uint32_t number;
    fr_pb_wire wire;
    uint64_t value;      /* FR_PB_VARINT, FR_PB_I64, FR_PB_I32 */
    const uint8_t *data; /* FR_PB_LEN: the payload */
    uint64_t len;        /* FR_PB_LEN: payload bytes */
    uint64_t pos;        /* offset of the field's tag from the reader's base */
} fr_pb_field;

typedef struct fr_pb_reader {
    const uint8_t *base; /* start of the whole buffer, for offsets in messages */
    const uint8_t *p;
    const uint8_t *end;
    const char *error;   /* static text of the last error */
    uint64_t error_pos;  /* offset from base where it happened */
} fr_pb_reader;

/* A reader over the message data[0..len), offsets counted from base. */
void fr_pb_init(fr_pb_reader *r, const uint8_t *base, const uint8_t *data, uint64_t len);

/* 1: *f holds the next field; 0: end of the message; -1: malformed
 * (r->error and r->error_pos say why and where). */
int fr_pb_next(fr_pb_reader *r, fr_pb_field *f);

/* Reads one varint from *p (< end), advancing *p. 0 on success, -1 when it
 * is truncated or does not fit 64 bits. */
int fr_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *out);

/* Counts the varints of a packed field; -1 if one is malformed. When
 * max_value is not UINT64_MAX, a value above it is also malformed. */
int64_t fr_pb_count_varints(const uint8_t *data, uint64_t len, uint64_t max_value);

/* Name of a wire type for messages ("varint", "length-delimited", ...). */
const char *fr_pb_wire_name(int wire);

#endif
