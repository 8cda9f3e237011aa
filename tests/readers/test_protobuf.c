/* The protobuf wire reader on hand-made edge cases: the longest and the
 * overlong varint, truncation at every step, every invalid wire type. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/protobuf.h"

static int first_field(const uint8_t *buf, uint64_t len, fr_pb_field *f, const char **why)
{
    fr_pb_reader r;
    fr_pb_init(&r, buf, buf, len);
    int rc = fr_pb_next(&r, f);
    *why = r.error;
    return rc;
}

int main(void)
{
    uint64_t v;
    const uint8_t *p;
    /* UINT64_MAX takes exactly 10 bytes, the last holding one bit */
    const uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    p = max;
    CHECK_MSG(fr_pb_varint(&p, max + sizeof max, &v) == 0 && v == UINT64_MAX && p == max + 10, "UINT64_MAX");
    const uint8_t wide[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    p = wide;
    CHECK_MSG(fr_pb_varint(&p, wide + sizeof wide, &v) != 0, "65-bit varint rejected");
    const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    p = eleven;
    CHECK_MSG(fr_pb_varint(&p, eleven + sizeof eleven, &v) != 0, "11-byte varint rejected");
    for (size_t n = 0; n < sizeof max; n++) {
        p = max;
        CHECK_MSG(fr_pb_varint(&p, max + n, &v) != 0, "truncated varint rejected");
    }
    const uint8_t one[] = {0x96, 0x01}; /* 150, the protobuf docs' example */
    p = one;
    CHECK_MSG(fr_pb_varint(&p, one + 2, &v) == 0 && v == 150, "150");

    fr_pb_field f;
    const char *why;
    const uint8_t len_ok[] = {0x0a, 0x03, 'a', 'b', 'c'};
    CHECK_MSG(first_field(len_ok, sizeof len_ok, &f, &why) == 1 && f.number == 1 && f.wire == FR_PB_LEN &&
                  f.len == 3 && !memcmp(f.data, "abc", 3),
              "length-delimited field");
    CHECK_MSG(first_field(len_ok, 4, &f, &why) == -1 && !strcmp(why, "length past the end of the message"),
              "length past the end");
    const uint8_t len_huge[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK_MSG(first_field(len_huge, sizeof len_huge, &f, &why) == -1, "2^64-1 length rejected");
    const uint8_t fixed32[] = {0x15, 1, 2, 3, 4};
    CHECK_MSG(first_field(fixed32, sizeof fixed32, &f, &why) == 1 && f.value == 0x04030201u, "fixed32");
    CHECK_MSG(first_field(fixed32, 4, &f, &why) == -1, "truncated fixed32");
    const uint8_t fixed64[] = {0x19, 1, 2, 3, 4, 5, 6, 7, 8};
    CHECK_MSG(first_field(fixed64, sizeof fixed64, &f, &why) == 1 && f.value == 0x0807060504030201ull, "fixed64");
    CHECK_MSG(first_field(fixed64, 8, &f, &why) == -1, "truncated fixed64");
    for (uint8_t wire = 3; wire <= 7; wire++) {
        if (wire == 5)
            continue;
        uint8_t bad[] = {(uint8_t)(1 << 3 | wire), 0, 0, 0, 0, 0, 0, 0, 0};
        CHECK_MSG(first_field(bad, sizeof bad, &f, &why) == -1, "invalid wire type rejected");
    }
    const uint8_t field0[] = {0x00, 0x01};
    CHECK_MSG(first_field(field0, sizeof field0, &f, &why) == -1 && !strcmp(why, "invalid field number"),
              "field number 0 rejected");
    const uint8_t empty[] = {0};
    CHECK_MSG(first_field(empty, 0, &f, &why) == 0, "empty message has no fields");
    const uint8_t packed[] = {0x01, 0x96, 0x01, 0xff, 0xff, 0x07};
    CHECK_MSG(fr_pb_count_varints(packed, sizeof packed, UINT64_MAX) == 3, "count packed varints");
    CHECK_MSG(fr_pb_count_varints(packed, sizeof packed, 0xffff) == -1, "value above the maximum rejected");
    CHECK_MSG(fr_pb_count_varints(packed, sizeof packed - 1, UINT64_MAX) == -1, "truncated packed run rejected");
    return fr_test_finish("test_protobuf");
}
