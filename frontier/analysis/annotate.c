/*
 * /frontier/measured (frontier/analysis/annotate.h): eval JSON in, a table of
 * measured model quality out, written to a copy of the dataset that is
 * renamed over it once complete.
 */
#include "frontier/analysis/annotate.h"
#include "frontier/dataset/dataset_file.h"
#include "frontier/analysis/pareto.h"
#include "frontier/recipe/recipe.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <hdf5.h>

static int num_field(const cJSON *o, const char *key, double *v)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(it))
        return 0;
    *v = it->valuedouble;
    return 1;
}

/* The bits per weight of configuration c over the tensors `frontier quantize
 * --config` changes by default (not embeddings, lm_head, norms). */
static double config_bpw(const fr_dataset *ds, uint32_t config_id)
{
    double bits = 0, numel = 0;
    for (size_t i = 0; i < ds->n_results; i++) {
        const fr_ds_result *r = &ds->results[i];
        if (r->config_id != config_id)
            continue;
        const fr_ds_tensor *t = fr_dataset_tensor(ds, r->tensor_id);
        if (!t || !strcmp(t->cls, "embed") || !strcmp(t->cls, "lm_head") || !strcmp(t->cls, "norm"))
            continue;
        bits += (double)r->total_bits;
        numel += (double)t->numel;
    }
    return numel > 0 ? bits / numel : NAN;
}

/* The recipe an eval result names, checked against ds (frontier/recipe/recipe.h:
 * a bare map without the "format" tag is read too); its size and prediction. */
static fr_status check_recipe(const char *file, const char *what, const fr_dataset *ds,
                              double *bpw, double *predicted_kl, fr_error *err)
{
    fr_recipe recipe;
    fr_status st = fr_recipe_read(file, FR_RECIPE_UNTAGGED, &recipe, NULL);
    if (st == FR_E_FORMAT)
        return fr_fail(err, FR_E_USAGE, "%s: unknown recipe: '%s' is not a frontier recipe", what,
                       file);
    if (st != FR_OK)
        return fr_fail(err, FR_E_USAGE, "%s: unknown recipe: cannot read '%s'", what, file);
    for (size_t i = 0; i < recipe.n_tensors && st == FR_OK; i++) {
        const fr_recipe_tensor *e = &recipe.tensors[i];
        int t_ok = 0, c_ok = 0;
        for (size_t t = 0; t < ds->n_tensors && !t_ok; t++)
            t_ok = !strcmp(ds->tensors[t].name, e->name);
        for (size_t c = 0; e->config && c < ds->n_configs && !c_ok; c++)
            c_ok = !strcmp(ds->configs[c].name, e->config);
        if (!t_ok || !c_ok)
            st = fr_fail(err, FR_E_USAGE, "%s: unknown recipe: '%s' maps tensor '%s' to '%s', %s",
                         what, file, e->name, e->config ? e->config : "?",
                         !t_ok ? "a tensor not in the dataset" : "a configuration not in the dataset");
    }
    if (st == FR_OK) {
        *bpw = recipe.bits_per_weight;
        *predicted_kl = recipe.predicted_kl;
    }
    fr_recipe_free(&recipe);
    return st;
}

fr_status fr_measured_parse(const char *text, const char *what, const char *base_dir,
                            const fr_dataset *ds, fr_measured *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    out->predicted_kl = NAN;
    fr_status st = FR_OK;
    cJSON *root = cJSON_Parse(text);
    if (!root)
        return fr_fail(err, FR_E_FORMAT, "%s: not JSON (near byte %ld)", what,
                       cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - text) : 0L);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(root, "config");
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(root, "recipe");
    if (!cJSON_IsObject(root) || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "frontier-eval")) {
        st = fr_fail(err, FR_E_FORMAT, "%s: not an eval result (\"format\": \"frontier-eval\", "
                     "as examples/eval/kld.py writes)", what);
        goto done;
    }
    if (!num_field(root, "kl_mean", &out->kl_mean)) {
        st = fr_fail(err, FR_E_FORMAT, "%s: no number \"kl_mean\"", what);
        goto done;
    }
    if (!num_field(root, "kl_stderr", &out->kl_stderr)) out->kl_stderr = NAN;
    if (!num_field(root, "ppl_quant", &out->ppl_quant)) out->ppl_quant = NAN;
    if (!num_field(root, "ppl_orig", &out->ppl_orig)) out->ppl_orig = NAN;
    if (!num_field(root, "top1_agreement", &out->top1_agreement)) out->top1_agreement = NAN;
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, "tokens");
    if (!tok || !num_field(tok, "predicted_positions", &out->positions)) out->positions = NAN;
    if (cJSON_IsString(cfg)) {
        int64_t c = fr_config_position(ds, cfg->valuestring);
        if (c < 0) {
            st = fr_fail(err, FR_E_USAGE, "%s: unknown configuration '%s': it is not in the dataset",
                         what, cfg->valuestring);
            goto done;
        }
        snprintf(out->kind, sizeof out->kind, "config");
        out->bits_per_weight = config_bpw(ds, ds->configs[c].config_id);
    } else if (cJSON_IsString(rec)) {
        char file[4096];
        if (rec->valuestring[0] == '/' || !base_dir || !*base_dir)
            snprintf(file, sizeof file, "%s", rec->valuestring);
        else
            snprintf(file, sizeof file, "%s/%s", base_dir, rec->valuestring);
        double predicted = NAN;
        if ((st = check_recipe(file, what, ds, &out->bits_per_weight, &predicted, err)) != FR_OK)
            goto done;
        snprintf(out->kind, sizeof out->kind, "recipe");
        /* the recipe's prediction travels with the measurement (the recipe
         * file may move); one the eval JSON already states is kept */
        if (!num_field(root, "predicted_kl", &out->predicted_kl) && isfinite(predicted)) {
            out->predicted_kl = predicted;
            cJSON_AddNumberToObject(root, "predicted_kl", predicted);
        }
    } else {
        st = fr_fail(err, FR_E_FORMAT, "%s: neither \"config\" nor \"recipe\": what was measured "
                     "cannot be matched to the dataset", what);
        goto done;
    }
    const char *nm = cJSON_IsString(name) ? name->valuestring
                     : cJSON_IsString(cfg) ? cfg->valuestring : rec->valuestring;
    if (strlen(nm) >= sizeof out->name) {
        st = fr_fail(err, FR_E_FORMAT, "%s: \"name\" is longer than %zu bytes", what,
                     sizeof out->name - 1);
        goto done;
    }
    snprintf(out->name, sizeof out->name, "%s", nm);
    if (!(out->json = cJSON_PrintUnformatted(root)))
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
done:
    cJSON_Delete(root);
    return st;
}

void fr_measured_free(fr_measured *m)
{
    free(m->json);
    m->json = NULL;
}

void fr_measured_free_all(fr_measured *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        fr_measured_free(&rows[i]);
    free(rows);
}

/* ---- HDF5 ---- */

typedef struct row_t {
    char name[256];
    char kind[16];
    double bits_per_weight, kl_mean, kl_stderr, ppl_quant, ppl_orig, top1_agreement, positions;
    char *json;
} row_t;

static hid_t row_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(row_t));
    hid_t s256 = H5Tcopy(H5T_C_S1), s16 = H5Tcopy(H5T_C_S1), vl = H5Tcopy(H5T_C_S1);
    H5Tset_size(s256, 256);
    H5Tset_strpad(s256, H5T_STR_NULLTERM);
    H5Tset_size(s16, 16);
    H5Tset_strpad(s16, H5T_STR_NULLTERM);
    H5Tset_size(vl, H5T_VARIABLE);
    H5Tset_cset(vl, H5T_CSET_UTF8);
    H5Tinsert(t, "name", offsetof(row_t, name), s256);
    H5Tinsert(t, "kind", offsetof(row_t, kind), s16);
#define F64(f) H5Tinsert(t, #f, offsetof(row_t, f), H5T_NATIVE_DOUBLE)
    F64(bits_per_weight); F64(kl_mean); F64(kl_stderr); F64(ppl_quant); F64(ppl_orig);
    F64(top1_agreement); F64(positions);
#undef F64
    H5Tinsert(t, "json", offsetof(row_t, json), vl);
    H5Tclose(s256);
    H5Tclose(s16);
    H5Tclose(vl);
    return t;
}

/* "predicted_kl" of a stored eval JSON, NaN without one. */
static double json_predicted_kl(const char *json)
{
    double v = NAN;
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    if (!root || !num_field(root, "predicted_kl", &v))
        v = NAN;
    cJSON_Delete(root);
    return v;
}

static fr_status read_rows(hid_t file, const char *path, fr_measured **rows, size_t *n,
                           fr_error *err)
{
    *rows = NULL;
    *n = 0;
    if (H5Lexists(file, "/frontier", H5P_DEFAULT) <= 0 ||
        H5Lexists(file, FR_MEASURED_GROUP, H5P_DEFAULT) <= 0)
        return FR_OK;
    fr_status st = FR_OK;
    hid_t d = H5Dopen2(file, FR_MEASURED_GROUP "/rows", H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID, t = row_type();
    hssize_t count = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    row_t *buf = count >= 0 ? calloc((size_t)count + 1, sizeof *buf) : NULL;
    if (!buf || (count > 0 && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)) {
        st = fr_fail(err, FR_E_FORMAT, "'%s': cannot read %s/rows", path, FR_MEASURED_GROUP);
        goto done;
    }
    *rows = calloc((size_t)count + 1, sizeof **rows);
    for (hssize_t i = 0; *rows && i < count; i++) {
        fr_measured *m = &(*rows)[i];
        memcpy(m->name, buf[i].name, sizeof m->name);
        m->name[sizeof m->name - 1] = '\0';
        memcpy(m->kind, buf[i].kind, sizeof m->kind);
        m->kind[sizeof m->kind - 1] = '\0';
        m->bits_per_weight = buf[i].bits_per_weight;
        m->kl_mean = buf[i].kl_mean;
        m->kl_stderr = buf[i].kl_stderr;
        m->ppl_quant = buf[i].ppl_quant;
        m->ppl_orig = buf[i].ppl_orig;
        m->top1_agreement = buf[i].top1_agreement;
        m->positions = buf[i].positions;
        m->json = strdup(buf[i].json ? buf[i].json : "");
        m->predicted_kl = json_predicted_kl(m->json);
    }
    if (!*rows)
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
    else
        *n = (size_t)count;
    if (count > 0)
        H5Dvlen_reclaim(t, sp, H5P_DEFAULT, buf);
done:
    free(buf);
    H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    if (d >= 0)
        H5Dclose(d);
    return st;
}

fr_status fr_measured_read(const char *path, fr_measured **rows, size_t *n, fr_error *err)
{
    H5E_auto2_t func;
    void *data;
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    fr_status st;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        st = fr_fail(err, FR_E_IO, "cannot open '%s' as HDF5", path);
    else {
        st = read_rows(f, path, rows, n, err);
        H5Fclose(f);
    }
    H5Eset_auto2(H5E_DEFAULT, func, data);
    return st;
}

static fr_status copy_file(const char *from, const char *to, fr_error *err)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return fr_fail(err, FR_E_IO, "cannot open '%s': %s", from, strerror(errno));
    int fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!out) {
        fclose(in);
        if (fd >= 0)
            close(fd);
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", to, strerror(errno));
    }
    char buf[1 << 16];
    size_t k;
    int ok = 1;
    while ((k = fread(buf, 1, sizeof buf, in)) > 0)
        ok &= fwrite(buf, 1, k, out) == k;
    ok &= !ferror(in);
    fclose(in);
    ok &= fclose(out) == 0;
    return ok ? FR_OK : fr_fail(err, FR_E_OUTPUT, "cannot write '%s'", to);
}

fr_status fr_measured_store(const char *path, const fr_measured *rows, size_t n,
                            const char *command_line, fr_error *err)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.frontier-tmp-%ld", path, (long)getpid());
    fr_status st = copy_file(path, tmp, err);
    if (st != FR_OK)
        return st;
    H5E_auto2_t func;
    void *data;
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    fr_measured *old = NULL;
    size_t n_old = 0, n_all = 0;
    row_t *all = NULL;
    hid_t fapl = ds_fapl(), t = row_type();
    hid_t f = fapl >= 0 ? H5Fopen(tmp, H5F_ACC_RDWR, fapl) : H5I_INVALID_HID;
    if (fapl >= 0)
        H5Pclose(fapl);
    if (f < 0) {
        st = fr_fail(err, FR_E_FORMAT, "'%s' is not an HDF5 file", path);
        goto done;
    }
    if ((st = read_rows(f, path, &old, &n_old, err)) != FR_OK)
        goto done;
    all = calloc(n_old + n + 1, sizeof *all);
    if (!all) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    /* the old rows not replaced, then the new ones (a name given twice: the last) */
    for (size_t i = 0; i < n_old + n; i++) {
        const fr_measured *m = i < n_old ? &old[i] : &rows[i - n_old];
        int replaced = 0;
        for (size_t j = i + 1; j < n_old + n && !replaced; j++)
            replaced = !strcmp(m->name, (j < n_old ? &old[j] : &rows[j - n_old])->name);
        if (replaced)
            continue;
        row_t *r = &all[n_all++];
        memcpy(r->name, m->name, sizeof r->name);
        memcpy(r->kind, m->kind, sizeof r->kind);
        r->bits_per_weight = m->bits_per_weight;
        r->kl_mean = m->kl_mean;
        r->kl_stderr = m->kl_stderr;
        r->ppl_quant = m->ppl_quant;
        r->ppl_orig = m->ppl_orig;
        r->top1_agreement = m->top1_agreement;
        r->positions = m->positions;
        r->json = m->json ? m->json : (char *)"";
    }
    if (H5Lexists(f, "/frontier", H5P_DEFAULT) <= 0) {
        hid_t g = H5Gcreate2(f, "/frontier", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g < 0) {
            st = fr_fail(err, FR_E_OUTPUT, "cannot create /frontier in '%s'", path);
            goto done;
        }
        H5Gclose(g);
    }
    if (H5Lexists(f, FR_MEASURED_GROUP, H5P_DEFAULT) > 0)
        H5Ldelete(f, FR_MEASURED_GROUP, H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, FR_MEASURED_GROUP, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[1] = {n_all}, chunk[1] = {n_all ? n_all : 1};
    hid_t sp = H5Screate_simple(1, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, chunk);
    H5Pset_fletcher32(dcpl);
    hid_t d = g >= 0 ? H5Dcreate2(g, "rows", t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    int ok = d >= 0 && (n_all == 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, all) >= 0);
    if (ok && command_line) {
        hid_t s = H5Tcopy(H5T_C_S1), asp = H5Screate(H5S_SCALAR);
        H5Tset_size(s, strlen(command_line) + 1);
        hid_t a = H5Acreate2(g, "command_line", s, asp, H5P_DEFAULT, H5P_DEFAULT);
        ok = a >= 0 && H5Awrite(a, s, command_line) >= 0;
        if (a >= 0)
            H5Aclose(a);
        H5Sclose(asp);
        H5Tclose(s);
    }
    if (d >= 0)
        H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
    if (g >= 0)
        H5Gclose(g);
    if (!ok)
        st = fr_fail(err, FR_E_OUTPUT, "cannot write %s in '%s'", FR_MEASURED_GROUP, path);
done:
    if (f >= 0 && H5Fclose(f) < 0 && st == FR_OK)
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s'", tmp);
    H5Tclose(t);
    H5Eset_auto2(H5E_DEFAULT, func, data);
    free(all);
    fr_measured_free_all(old, n_old);
    if (st == FR_OK) {
        int fd = open(tmp, O_RDONLY | O_CLOEXEC);
        int synced = fd >= 0 && fsync(fd) == 0;
        if (fd >= 0)
            close(fd);
        /* the dataset's own tables must still read (and checksum) as before */
        fr_dataset check;
        fr_error e2;
        if (!synced)
            st = fr_fail(err, FR_E_OUTPUT, "cannot sync '%s'", tmp);
        else if (fr_dataset_read(tmp, &check, &e2) != FR_OK)
            st = fr_fail(err, FR_E_OUTPUT, "the annotated copy does not read back: %s", e2.msg);
        else {
            fr_dataset_free(&check);
            if (rename(tmp, path) != 0)
                st = fr_fail(err, FR_E_OUTPUT, "cannot rename '%s' to '%s': %s", tmp, path,
                             strerror(errno));
        }
    }
    if (st != FR_OK)
        unlink(tmp);
    return st;
}
