/*
 * test_readers INPUTS: opens every good file make_inputs.py wrote and checks
 * what expected.json says about it: tensor names, dtypes, shapes, classes,
 * skip reasons, F8 scale links, metadata, and every float32 bit of every
 * loaded tensor (values computed in Python, independently of the C
 * converters). Each file is read twice: from disk and, where it has no
 * external data, from memory (fr_source_open_memory); loads are repeated
 * after fr_tensor_release to prove dropping pages loses nothing.
 *
 * test_readers --dump FILE TENSOR prints a tensor's float32 bits, one hex
 * word per line (for the ml_dtypes cross-check).
 *
 * test_readers --load-all FILE [--keep] loads every readable tensor into one
 * reused buffer, releasing each tensor's pages after it (unless --keep), and
 * prints the peak resident set size: the streaming figure of docs/readers.md.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"
#include "core/dtype.h"
#include "core/source.h"
#include "source_util.h"

static char *slurp(const char *path)
{
    size_t n;
    return fr_test_slurp(path, &n);
}

static const fr_tensor *find(const fr_source *src, const char *name)
{
    for (size_t i = 0; i < src->n_tensors; i++)
        if (!strcmp(src->tensors[i].name, name))
            return &src->tensors[i];
    return NULL;
}

/* Every member of want is in got with an equal value (recursively). */
static void check_subset(const char *file, const char *path, const cJSON *want, const cJSON *got)
{
    if (cJSON_IsObject(want)) {
        const cJSON *item;
        cJSON_ArrayForEach(item, want)
        {
            const cJSON *g = cJSON_GetObjectItemCaseSensitive(got, item->string);
            CHECK_MSG(g, "%s: metadata %s.%s missing", file, path, item->string);
            if (g)
                check_subset(file, item->string, item, g);
        }
        return;
    }
    CHECK_MSG(cJSON_Compare(want, got, 1), "%s: metadata %s differs: want %s got %s", file, path,
              cJSON_PrintUnformatted(want), cJSON_PrintUnformatted(got));
}

static void check_values(const char *file, const fr_source *src, const fr_tensor *t, const cJSON *bits)
{
    int n = cJSON_GetArraySize(bits);
    CHECK_MSG(n == t->numel, "%s: '%s' expected %d values, tensor has %" PRId64, file, t->name, n, t->numel);
    if (n != t->numel)
        return;
    float *v = malloc(((size_t)n + 1) * sizeof *v);
    fr_error err;
    for (int pass = 0; pass < 2; pass++) {
        fr_status st = fr_tensor_load_f32(src, t, v, &err);
        CHECK_MSG(st == FR_OK, "%s: load '%s': %s", file, t->name, err.msg);
        if (st != FR_OK)
            break;
        const cJSON *item = bits->child; /* walk the list: indexing it is quadratic */
        for (int i = 0; i < n; i++, item = item->next) {
            uint32_t want = (uint32_t)item->valuedouble;
            uint32_t got = fr_f32_to_bits(v[i]);
            float wf = fr_bits_to_f32(want);
            int same = isnan(wf) ? isnan(v[i]) : want == got;
            CHECK_MSG(same, "%s: '%s'[%d] = 0x%08x, want 0x%08x (pass %d)", file, t->name, i, got, want, pass);
            if (!same)
                break;
        }
        /* drop the pages; the second pass must read the same bits again */
        fr_tensor_release(src, t);
    }
    free(v);
}

static void check_source(const char *file, const fr_source *src, const cJSON *exp)
{
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(exp, "kind"));
    CHECK_MSG(!strcmp(fr_source_kind_name(src->kind), kind), "%s: kind %s, want %s", file,
              fr_source_kind_name(src->kind), kind);
    const cJSON *tensors = cJSON_GetObjectItem(exp, "tensors");
    CHECK_MSG((int)src->n_tensors == cJSON_GetArraySize(tensors), "%s: %zu tensors, want %d", file, src->n_tensors,
              cJSON_GetArraySize(tensors));
    int64_t total = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, tensors)
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(e, "name"));
        const fr_tensor *t = find(src, name);
        CHECK_MSG(t, "%s: tensor '%s' missing", file, name);
        if (!t)
            continue;
        const char *dtype = cJSON_GetStringValue(cJSON_GetObjectItem(e, "dtype"));
        CHECK_MSG(!strcmp(t->dtype_name, dtype), "%s: '%s' dtype %s, want %s", file, name, t->dtype_name, dtype);
        const cJSON *canonical = cJSON_GetObjectItem(e, "canonical");
        if (canonical)
            CHECK_MSG(!strcmp(fr_dtype_name(t->dtype), canonical->valuestring), "%s: '%s' canonical dtype %s", file,
                      name, fr_dtype_name(t->dtype));
        const cJSON *shape = cJSON_GetObjectItem(e, "shape");
        int ndim = cJSON_GetArraySize(shape);
        CHECK_MSG(t->ndim == ndim, "%s: '%s' rank %d, want %d", file, name, t->ndim, ndim);
        int64_t numel = 1;
        for (int d = 0; d < ndim && d < t->ndim; d++) {
            int64_t want = (int64_t)cJSON_GetArrayItem(shape, d)->valuedouble;
            CHECK_MSG(t->shape[d] == want, "%s: '%s' dim %d is %" PRId64 ", want %" PRId64, file, name, d,
                      t->shape[d], want);
            numel *= want;
        }
        CHECK_MSG(t->numel == numel, "%s: '%s' numel %" PRId64 ", want %" PRId64, file, name, t->numel, numel);
        total += t->numel;
        const char *cls = cJSON_GetStringValue(cJSON_GetObjectItem(e, "class"));
        CHECK_MSG(!strcmp(fr_class_name(t->cls), cls), "%s: '%s' class %s, want %s", file, name,
                  fr_class_name(t->cls), cls);
        int skip = cJSON_IsTrue(cJSON_GetObjectItem(e, "skip"));
        CHECK_MSG(skip == (t->skip_reason != NULL), "%s: '%s' skip_reason %s", file, name,
                  t->skip_reason ? t->skip_reason : "(none)");
        if (skip) {
            float dummy[8];
            fr_error err;
            CHECK_MSG(t->numel > 8 || fr_tensor_load_f32(src, t, dummy, &err) != FR_OK,
                      "%s: '%s' is skipped but loads", file, name);
        }
        const cJSON *scale = cJSON_GetObjectItem(e, "scale");
        if (scale)
            CHECK_MSG(t->scale_tensor >= 0 && !strcmp(src->tensors[t->scale_tensor].name, scale->valuestring),
                      "%s: '%s' scale tensor not linked to %s", file, name, scale->valuestring);
        else
            CHECK_MSG(t->scale_tensor == -1, "%s: '%s' has an unexpected scale tensor", file, name);
        if (t->encoding == FR_ENC_RAW && !t->skip_reason)
            CHECK_MSG(fr_tensor_raw(src, t) != NULL || t->nbytes == 0, "%s: '%s' has no raw view", file, name);
        const cJSON *bits = cJSON_GetObjectItem(e, "bits");
        if (bits)
            check_values(file, src, t, bits);
        int64_t rows, cols;
        fr_tensor_matrix(t, &rows, &cols);
        CHECK_MSG(rows * cols == t->numel, "%s: '%s' matrix %" PRId64 " x %" PRId64, file, name, rows, cols);
    }
    CHECK_MSG(fr_source_numel(src) == total, "%s: fr_source_numel %" PRId64 ", want %" PRId64, file,
              fr_source_numel(src), total);
    const cJSON *meta = cJSON_GetObjectItem(exp, "metadata");
    if (meta)
        check_subset(file, "", meta, src->metadata);
}

static int dump(const char *file, const char *name)
{
    fr_source *src;
    fr_error err;
    if (fr_source_open(file, &src, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const fr_tensor *t = find(src, name);
    int rc = 1;
    if (t) {
        float *v = malloc(((size_t)t->numel + 1) * sizeof *v);
        if (fr_tensor_load_f32(src, t, v, &err) == FR_OK) {
            for (int64_t i = 0; i < t->numel; i++)
                printf("%08x\n", fr_f32_to_bits(v[i]));
            rc = 0;
        } else {
            fprintf(stderr, "%s\n", err.msg);
        }
        free(v);
    }
    fr_source_close(src);
    return rc;
}

static int load_all(const char *file, int keep)
{
    fr_source *src;
    fr_error err;
    if (fr_source_open(file, &src, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int64_t largest = 1, loaded = 0;
    for (size_t i = 0; i < src->n_tensors; i++)
        if (src->tensors[i].numel > largest)
            largest = src->tensors[i].numel;
    float *buf = malloc((size_t)largest * sizeof *buf);
    int rc = buf ? 0 : 1;
    for (size_t i = 0; buf && i < src->n_tensors; i++) {
        const fr_tensor *t = &src->tensors[i];
        if (t->skip_reason)
            continue;
        if (fr_tensor_load_f32(src, t, buf, &err) != FR_OK) {
            fprintf(stderr, "%s\n", err.msg);
            rc = 1;
            break;
        }
        loaded += t->numel;
        if (!keep)
            fr_tensor_release(src, t);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint64_t bytes = 0;
    for (size_t i = 0; i < src->n_files; i++)
        bytes += src->files[i].size;
    printf("loaded %" PRId64 " elements from %" PRIu64 " bytes; largest tensor %" PRId64
           " elements; peak RSS %ld KiB (%s)\n",
           loaded, bytes, largest, ru.ru_maxrss, keep ? "pages kept" : "pages released");
    free(buf);
    fr_source_close(src);
    return rc;
}

int main(int argc, char **argv)
{
    if ((argc == 3 || argc == 4) && !strcmp(argv[1], "--load-all"))
        return load_all(argv[2], argc == 4 && !strcmp(argv[3], "--keep"));
    if (argc == 4 && !strcmp(argv[1], "--dump"))
        return dump(argv[2], argv[3]);
    if (argc != 2) {
        fprintf(stderr, "usage: test_readers INPUTS | --dump FILE TENSOR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/expected.json", argv[1]);
    char *text = slurp(path);
    cJSON *expected = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!expected) {
        fprintf(stderr, "cannot read %s\n", path);
        return 1;
    }
    const cJSON *exp;
    cJSON_ArrayForEach(exp, expected)
    {
        snprintf(path, sizeof path, "%s/%s", argv[1], exp->string);
        fr_source *src = NULL;
        fr_error err;
        fr_status st = fr_source_open(path, &src, &err);
        CHECK_MSG(st == FR_OK, "open %s: %s", path, err.msg);
        if (st != FR_OK)
            continue;
        check_source(exp->string, src, exp);
        int external = src->n_files > 1;
        fr_source_close(src);
        if (external)
            continue; /* the memory entry point cannot reach sibling files */
        /* the same bytes from memory must read the same */
        char *bytes = NULL;
        FILE *f = fopen(path, "rb");
        long n = 0;
        if (f) {
            fseek(f, 0, SEEK_END);
            n = ftell(f);
            fseek(f, 0, SEEK_SET);
            bytes = malloc((size_t)n);
            if (!bytes || fread(bytes, 1, (size_t)n, f) != (size_t)n)
                n = -1;
            fclose(f);
        }
        CHECK_MSG(bytes && n > 0, "cannot read %s back", path);
        if (bytes && n > 0) {
            st = fr_source_open_memory(bytes, (size_t)n, exp->string, &src, &err);
            CHECK_MSG(st == FR_OK, "open_memory %s: %s", path, err.msg);
            if (st == FR_OK) {
                char label[4200];
                snprintf(label, sizeof label, "%s (memory)", exp->string);
                check_source(label, src, exp);
                fr_source_close(src);
            }
        }
        free(bytes);
    }
    cJSON_Delete(expected);
    return fr_test_finish("test_readers");
}
