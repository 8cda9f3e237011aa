/*
 * Content checksums of the frontier dataset (docs/security.md). HDF5's
 * Fletcher32 filter protects the chunks of each table, but a table's
 * variable-length strings live in HDF5's global heap, which no filter or
 * metadata checksum covers, and root attributes have none either. So the
 * writer stores, per table, a checksum over every field of every row as
 * the reader will see it, and one over the root attributes; the reader
 * recomputes them. FNV-1a 64 (Fowler, Noll, Vo; the 64-bit offset basis and
 * prime of draft-eastlake-fnv) changes with any single changed byte (each
 * step is a bijection of the state), and detects other accidental changes
 * with probability 1 - 2^-64: an integrity check against a failing disk or
 * a bad copy, not against someone who edits the file on purpose.
 */
#include <stdio.h>
#include <string.h>

#include "frontier/dataset/dataset_checksum.h"

#define FNV64_OFFSET 0xcbf29ce484222325ULL
#define FNV64_PRIME 0x100000001b3ULL

void ds_hash_init(ds_hash *h)
{
    h->h = FNV64_OFFSET;
}

static void hash_bytes(ds_hash *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t v = h->h;
    for (size_t i = 0; i < n; i++) {
        v ^= p[i];
        v *= FNV64_PRIME;
    }
    h->h = v;
}

/* Little-endian, whatever the host: the checksum is a property of the file. */
static void hash_u64(ds_hash *h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    hash_bytes(h, b, sizeof b);
}

/* A string is its length, then its bytes, so ("ab", "c") differs from ("a", "bc"). */
static void hash_str(ds_hash *h, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    hash_u64(h, (uint64_t)n);
    hash_bytes(h, s, n);
}

void ds_hash_rows(ds_hash *h, const ds_table *table, const void *rows, size_t n)
{
    for (size_t r = 0; r < n; r++) {
        const char *row = (const char *)rows + r * table->row_size;
        for (size_t f = 0; f < table->n_fields; f++) {
            const void *at = row + table->fields[f].offset;
            switch (table->fields[f].type) {
            case DS_U32: {
                uint32_t v;
                memcpy(&v, at, sizeof v);
                /* an optional field counts only where it is set, so a file
                 * without it (read as 0) keeps its checksum */
                if (v || !ds_field_optional(&table->fields[f]))
                    hash_u64(h, v);
                break;
            }
            case DS_U64:
            case DS_I64:
            case DS_F64: { /* the bits as stored: NaN payloads and -0 count */
                uint64_t v;
                memcpy(&v, at, sizeof v);
                if (v || !ds_field_optional(&table->fields[f]))
                    hash_u64(h, v);
                break;
            }
            case DS_STR: {
                const char *s;
                memcpy(&s, at, sizeof s);
                if ((s && *s) || !ds_field_optional(&table->fields[f]))
                    hash_str(h, s);
                break;
            }
            }
        }
    }
}

void ds_hash_root(ds_hash *h, const fr_dataset *ds)
{
    hash_str(h, DS_FORMAT);
    hash_u64(h, (uint64_t)FR_SCHEMA_VERSION);
    hash_str(h, ds->tool_version);
    hash_str(h, ds->created);
    hash_str(h, ds->command_line);
    hash_str(h, ds->host);
    hash_str(h, ds->devices);
}

void ds_hash_text(const ds_hash *h, char out[DS_CHECKSUM_TEXT])
{
    snprintf(out, DS_CHECKSUM_TEXT, "fnv1a64:%016llx", (unsigned long long)h->h);
}
