/*
 * The plugin loader against real shared objects (tests/plugins/test_plugins.c
 * built once per variant into one folder): the exact rejection message of
 * each broken plugin, that nothing of a rejected plugin is kept, and the
 * discovery rules (explicit files, FRONTIER_PLUGIN_PATH, the installed
 * folder, "none", sorted folder scans, duplicates, junk files).
 *
 *   test_loader PLUGIN_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/call.h"
#include "core/registry.h"
#include "plugin_test.h"

static const char *plugin_dir;

/* "<plugin_dir>/<name>" in a static buffer ring, so several can be alive. */
static const char *plugin(const char *name)
{
    static char ring[8][8192];
    static int next;
    char *p = ring[next++ % 8];
    snprintf(p, sizeof ring[0], "%s/%s", plugin_dir, name);
    return p;
}

/* Loading `file` alone must fail with the message built from `fmt`, in
 * which every %s is the plugin's path. */
static void expect_rejected(int line, const char *file, const char *expected)
{
    fr_registry reg;
    fr_registry_init_empty(&reg);
    fr_error err = {0};
    fr_status st = fr_registry_load_plugin(&reg, file, &err);
    if (st != FR_E_PLUGIN)
        fr_test_fail(__FILE__, line, "'%s' loaded with status %d", file, (int)st);
    fr_test_check_str(__FILE__, line, err.msg, expected);
    if (reg.n_entries || reg.n_configs)
        fr_test_fail(__FILE__, line, "something of '%s' was kept", file);
    fr_registry_free(&reg);
}

static void test_rejections(void)
{
    char expected[8192];
#define REJECTED(name, ...)                                       \
    do {                                                          \
        const char *p = plugin(name);                             \
        snprintf(expected, sizeof expected, __VA_ARGS__);         \
        expect_rejected(__LINE__, p, expected);                   \
    } while (0)

    REJECTED("libbad_abi.so", "plugin '%s' has ABI version 7, this frontier supports 1 to 2", p);
    REJECTED("libbad_noentry.so", "plugin '%s' does not export 'frontier_plugin_entry'", p);
    REJECTED("libbad_null.so", "plugin '%s' returned no descriptor from 'frontier_plugin_entry'",
             p);
    REJECTED("libbad_size.so",
             "plugin '%s' has a descriptor of %zu bytes, ABI version 2 needs at least %zu", p,
             offsetof(frontier_quantizer, quantize_cpu), offsetof(frontier_quantizer, quantize_cuda));
    REJECTED("libbad_cudaflag.so",
             "plugin '%s': quantizer 'bad_cudaflag' sets FRONTIER_Q_HAS_CUDA but has neither "
             "quantize_cuda nor sweep_cuda",
             p);
    REJECTED("libbad_cudafn.so",
             "plugin '%s': quantizer 'bad_cudafn' has a CUDA function but does not set "
             "FRONTIER_Q_HAS_CUDA",
             p);
    REJECTED("libbad_flags.so",
             "plugin '%s': quantizer 'bad_flags' sets unknown flag bits 0x200 (ABI version 2 "
             "knows 0xf)",
             p);
    REJECTED("libbad_dupself.so", "plugin '%s': configuration 'dupself-a' is listed twice", p);
    REJECTED("libbad_params.so",
             "plugin '%s': configuration 'params-list' has params_json that is not a JSON "
             "object: '[1, 2]'",
             p);
    REJECTED("/nonexistent/libx.so",
             "cannot load plugin '%s': cannot open shared object file: No such file or directory",
             p);
#undef REJECTED
}

/* An "older" plugin (a descriptor struct that ends after quantize_cpu, with
 * junk where a newer struct's GPU fields would be) loads, is read only as
 * far as its struct_size, and runs through the checked calls. */
static void test_older_plugin(void)
{
    fr_registry reg;
    fr_registry_init_empty(&reg);
    fr_error err = {0};
    const char *older = plugin("libolder.so");
    CHECK_OK(fr_registry_load_plugin(&reg, older, &err), err);
    CHECK(reg.n_entries == 1 && reg.n_configs == 1);
    const fr_config_ref *ref = fr_registry_find_config(&reg, "older-f32");
    CHECK(ref != NULL);
    if (!ref) {
        fr_registry_free(&reg);
        return;
    }
    const frontier_quantizer *q = fr_config_quantizer(&reg, ref);
    CHECK(q->struct_size == offsetof(frontier_quantizer, quantize_cuda));
    CHECK(!FR_QUANTIZER_HAS(q, quantize_cuda) && !FR_QUANTIZER_HAS(q, sweep_cuda));
    CHECK(!fr_quantizer_has_cuda(q));
    CHECK(fr_quantizer_quantize_cuda(&reg, ref, NULL, FRONTIER_DTYPE_F32, NULL, 1, 1, NULL,
                                     "w", NULL, NULL, &err) == FR_E_USAGE);
    char expected[8300];
    snprintf(expected, sizeof expected,
             "config 'older-f32' on tensor 'w': the quantizer has no quantize_cuda (quantizer "
             "'older' from '%s')",
             older);
    CHECK_STR(err.msg, expected);
    const float w[4] = {1.0f, -2.0f, 0.5f, 0.25f};
    float w_hat[4];
    uint64_t bits = 0;
    frontier_call call;
    fr_call_init(&call, NULL, 1, "w", "older-f32");
    CHECK_OK(fr_quantizer_size_bits(&reg, ref, 2, 2, "w", &call, &bits, &err), err);
    CHECK(bits == 4 * 32);
    CHECK_OK(fr_quantizer_quantize_cpu(&reg, ref, w, w_hat, 2, 2, NULL, "w", &call, &err), err);
    CHECK(!memcmp(w, w_hat, sizeof w));
    fr_call_release(&call);
    fr_registry_free(&reg);
}

static void test_good_and_duplicates(const char *tmp)
{
    fr_registry reg;
    fr_registry_init_empty(&reg);
    fr_error err = {0};
    char expected[8192];
    const char *good = plugin("libgood.so");

    CHECK(fr_registry_load_plugin(&reg, good, &err) == FR_OK);
    CHECK(reg.n_entries == 1 && reg.n_configs == 1);
    CHECK(reg.entries[0].dl != NULL);
    CHECK(!strcmp(reg.entries[0].origin, good));
    CHECK(fr_registry_find_config(&reg, "good-f32") != NULL);

    /* the same file again, directly or through a link: a no-op */
    CHECK(fr_registry_load_plugin(&reg, good, &err) == FR_OK);
    char link[4200];
    snprintf(link, sizeof link, "%s/other-name.so", tmp);
    CHECK(symlink(good, link) == 0);
    CHECK(fr_registry_load_plugin(&reg, link, &err) == FR_OK);
    CHECK(reg.n_entries == 1);
    unlink(link);

    /* a second plugin reusing a config name: rejected naming the first */
    const char *dup = plugin("libgood_dup.so");
    CHECK(fr_registry_load_plugin(&reg, dup, &err) == FR_E_PLUGIN);
    snprintf(expected, sizeof expected,
             "plugin '%s': configuration 'good-f32' is already registered by quantizer 'good' "
             "(from '%s')",
             dup, good);
    CHECK_STR(err.msg, expected);
    CHECK(reg.n_entries == 1 && reg.n_configs == 1);
    fr_registry_free(&reg);

    /* a name without a slash is a file in the current folder, not a library
     * searched on LD_LIBRARY_PATH */
    char cwd[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(plugin_dir) == 0);
    fr_registry_init_empty(&reg);
    CHECK(fr_registry_load_plugin(&reg, "libgood.so", &err) == FR_OK);
    CHECK(reg.n_entries == 1 && !strcmp(reg.entries[0].origin, "libgood.so"));
    fr_registry_free(&reg);
    fr_registry_init_empty(&reg);
    CHECK(fr_registry_load_plugin(&reg, "libm.so.6", &err) == FR_E_PLUGIN);
    CHECK_STR(err.msg,
              "cannot load plugin 'libm.so.6': cannot open shared object file: No such file or "
              "directory");
    fr_registry_free(&reg);
    CHECK(chdir(cwd) == 0);

    /* a file that is not a shared object */
    char junk[4200];
    snprintf(junk, sizeof junk, "%s/junk.so", tmp);
    FILE *f = fopen(junk, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("not an ELF file\n", f);
        fclose(f);
    }
    fr_registry_init_empty(&reg);
    CHECK(fr_registry_load_plugin(&reg, junk, &err) == FR_E_PLUGIN);
    snprintf(expected, sizeof expected, "cannot load plugin '%s': ", junk);
    CHECK(!strncmp(err.msg, expected, strlen(expected)));
    CHECK(reg.n_entries == 0);
    fr_registry_free(&reg);
}

/* Names of the registered quantizers, space-separated, in order. */
static const char *names(const fr_registry *reg)
{
    static char buf[1024];
    buf[0] = '\0';
    for (size_t i = 0; i < reg->n_entries; i++) {
        if (i)
            strcat(buf, " ");
        strcat(buf, reg->entries[i].q->name);
    }
    return buf;
}

static void test_discovery(const char *tmp)
{
    fr_registry reg;
    fr_error err = {0};
    char path[8192];
    const char *good = plugin("libgood.so");
    const char *bad_abi = plugin("libbad_abi.so");

    /* explicit only */
    fr_registry_init_empty(&reg);
    CHECK(fr_registry_discover_from(&reg, &good, 1, NULL, NULL, &err) == FR_OK);
    CHECK_STR(names(&reg), "good");
    fr_registry_free(&reg);

    /* a failing explicit plugin is an error, and the run stops there */
    fr_registry_init_empty(&reg);
    const char *both[] = {bad_abi, good};
    CHECK(fr_registry_discover_from(&reg, both, 2, NULL, NULL, &err) == FR_E_PLUGIN);
    snprintf(path, sizeof path, "plugin '%s' has ABI version 7, this frontier supports 1 to 2", bad_abi);
    CHECK_STR(err.msg, path);
    fr_registry_free(&reg);

    /* a folder on FRONTIER_PLUGIN_PATH: broken plugins are skipped, the
     * others load in sorted order (libgood < libgood_dup < libmisbehave) */
    fr_registry_init_empty(&reg);
    CHECK(fr_registry_discover_from(&reg, NULL, 0, plugin_dir, NULL, &err) == FR_OK);
    CHECK_STR(names(&reg), "good misbehave older");
    fr_registry_free(&reg);

    /* the installed folder alone gives the same */
    fr_registry_init_empty(&reg);
    CHECK(fr_registry_discover_from(&reg, NULL, 0, NULL, plugin_dir, &err) == FR_OK);
    CHECK_STR(names(&reg), "good misbehave older");
    fr_registry_free(&reg);

    /* "none" disables the path and the installed folder, not --plugin */
    fr_registry_init_empty(&reg);
    CHECK(fr_registry_discover_from(&reg, NULL, 0, "none", plugin_dir, &err) == FR_OK);
    CHECK(reg.n_entries == 0);
    CHECK(fr_registry_discover_from(&reg, &good, 1, "none", plugin_dir, &err) == FR_OK);
    CHECK_STR(names(&reg), "good");
    fr_registry_free(&reg);

    /* explicit first; the same file found again in the folder is no duplicate */
    const char *misbehave = plugin("libmisbehave.so");
    const char *two[] = {misbehave, good};
    fr_registry_init_empty(&reg);
    CHECK(fr_registry_discover_from(&reg, two, 2, plugin_dir, NULL, &err) == FR_OK);
    CHECK_STR(names(&reg), "misbehave good older");
    CHECK(!strcmp(reg.entries[0].origin, misbehave));
    fr_registry_free(&reg);

    /* files in the path, empty fields, a missing entry (warned, skipped) */
    fr_registry_init_empty(&reg);
    snprintf(path, sizeof path, "/nonexistent/folder::%s:%s:", good, plugin("libbad_null.so"));
    CHECK(fr_registry_discover_from(&reg, NULL, 0, path, NULL, &err) == FR_OK);
    CHECK_STR(names(&reg), "good");
    fr_registry_free(&reg);

    /* a folder with junk: a text file named .so, a folder named .so, a
     * dangling link, a file without the suffix (ignored), and the good plugin */
    char sub[4096], file[8192];
    snprintf(sub, sizeof sub, "%s/scan", tmp);
    CHECK(mkdir(sub, 0700) == 0);
    snprintf(file, sizeof file, "%s/a-junk.so", sub);
    FILE *f = fopen(file, "w");
    if (f) {
        fputs("junk", f);
        fclose(f);
    }
    snprintf(file, sizeof file, "%s/b-folder.so", sub);
    CHECK(mkdir(file, 0700) == 0);
    snprintf(file, sizeof file, "%s/c-dangling.so", sub);
    CHECK(symlink("/nonexistent/lib.so", file) == 0);
    snprintf(file, sizeof file, "%s/d-good.so", sub);
    CHECK(symlink(good, file) == 0);
    snprintf(file, sizeof file, "%s/e-misbehave.so.1", sub);
    CHECK(symlink(misbehave, file) == 0);
    fr_registry_init_empty(&reg);
    CHECK(fr_registry_discover_from(&reg, NULL, 0, sub, NULL, &err) == FR_OK);
    CHECK_STR(names(&reg), "good");
    fr_registry_free(&reg);

    /* the real environment variable is what fr_registry_discover reads */
    CHECK(setenv("FRONTIER_PLUGIN_PATH", sub, 1) == 0);
    fr_registry_init_empty(&reg);
    CHECK(fr_registry_discover(&reg, NULL, 0, &err) == FR_OK);
    CHECK(fr_registry_find_quantizer(&reg, "good") != NULL);
    fr_registry_free(&reg);
    CHECK(setenv("FRONTIER_PLUGIN_PATH", "none", 1) == 0);
    fr_registry_init_empty(&reg);
    CHECK(fr_registry_discover(&reg, NULL, 0, &err) == FR_OK);
    CHECK(reg.n_entries == 0);
    fr_registry_free(&reg);
    unsetenv("FRONTIER_PLUGIN_PATH");

    snprintf(file, sizeof file, "%s/a-junk.so", sub);
    unlink(file);
    snprintf(file, sizeof file, "%s/b-folder.so", sub);
    rmdir(file);
    snprintf(file, sizeof file, "%s/c-dangling.so", sub);
    unlink(file);
    snprintf(file, sizeof file, "%s/d-good.so", sub);
    unlink(file);
    snprintf(file, sizeof file, "%s/e-misbehave.so.1", sub);
    unlink(file);
    rmdir(sub);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_loader PLUGIN_DIR\n");
        return 2;
    }
    plugin_dir = argv[1];
    char tmp[] = "/tmp/frontier-test-loader-XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_rejections();
    test_older_plugin();
    test_good_and_duplicates(tmp);
    test_discovery(tmp);
    char junk[4200];
    snprintf(junk, sizeof junk, "%s/junk.so", tmp);
    unlink(junk);
    rmdir(tmp);
    return fr_test_finish("test_loader");
}
