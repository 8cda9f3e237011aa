/*
 * Loading quantizer plugins (shared objects) and finding them.
 *
 * Order of discovery, after ggml's backend registry and HDF5's H5PL path:
 *   1. every --plugin FILE, in command-line order; a failure is an error;
 *   2. FRONTIER_PLUGIN_PATH: colon-separated files and folders, each folder
 *      scanned for *.so in byte-wise sorted order;
 *   3. the installed folder FRONTIER_PLUGIN_DIR (compiled in by CMake).
 * FRONTIER_PLUGIN_PATH=none skips 2 and 3 (HDF5's "disable all" value).
 * Plugins found in 2 and 3 that fail are reported with a warning and skipped;
 * the first registration of a name wins and a later duplicate is skipped.
 */
#include "registry.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "call.h"
#include "log.h"

#ifndef FRONTIER_PLUGIN_DIR
#define FRONTIER_PLUGIN_DIR "/usr/local/lib/frontier/plugins"
#endif

/* The value of FRONTIER_PLUGIN_PATH that disables discovery. */
#define FR_PLUGIN_PATH_NONE "none"

const char *fr_registry_plugin_dir(void)
{
    return FRONTIER_PLUGIN_DIR;
}

/* dlerror() often starts with the path itself ("/p/x.so: cannot open ...");
 * the message already names it. */
static const char *dl_reason(const char *path, const char *loaded)
{
    const char *why = dlerror();
    if (!why)
        return "unknown dynamic loader error";
    size_t n = strlen(loaded);
    if (!strncmp(why, loaded, n) && why[n] == ':' && why[n + 1] == ' ')
        return why + n + 2;
    n = strlen(path);
    if (!strncmp(why, path, n) && why[n] == ':' && why[n + 1] == ' ')
        return why + n + 2;
    return why;
}

fr_status fr_registry_load_plugin(fr_registry *reg, const char *path, fr_error *err)
{
    fr_status st = FR_OK;
    void *dl = NULL;
    char *loaded = NULL;

    /* dlopen() searches the library path for a name without a slash; a
     * plugin named on the command line is a file relative to the cwd */
    if (!strchr(path, '/')) {
        loaded = malloc(strlen(path) + 3);
        if (!loaded)
            return fr_fail(err, FR_E_NOMEM, "out of memory loading plugin '%s'", path);
        strcpy(loaded, "./");
        strcat(loaded, path);
    }
    const char *file = loaded ? loaded : path;

    dlerror();
    /* RTLD_NOW: an unresolved symbol fails here, not in the middle of a
     * sweep; RTLD_LOCAL: plugins cannot see each other's symbols */
    dl = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        st = fr_fail(err, FR_E_PLUGIN, "cannot load plugin '%s': %s", path, dl_reason(path, file));
        goto cleanup;
    }
    /* The same file loaded twice (named twice, or by --plugin and by the
     * plugin path) gives the same handle: keep the first registration. */
    for (size_t i = 0; i < reg->n_entries; i++) {
        if (reg->entries[i].dl == dl) {
            fr_debug("plugin '%s' is already loaded (from '%s')", path, reg->entries[i].origin);
            goto cleanup; /* st == FR_OK; closes the extra reference */
        }
    }

    dlerror();
    void *sym = dlsym(dl, FRONTIER_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        st = fr_fail(err, FR_E_PLUGIN, "plugin '%s' does not export '%s'", path,
                     FRONTIER_PLUGIN_ENTRY_SYMBOL);
        goto cleanup;
    }
    /* POSIX guarantees a function pointer survives the trip through void * */
    frontier_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    const frontier_quantizer *q = entry(fr_host_api());
    if (!q) {
        st = fr_fail(err, FR_E_PLUGIN, "plugin '%s' returned no descriptor from '%s'", path,
                     FRONTIER_PLUGIN_ENTRY_SYMBOL);
        goto cleanup;
    }
    st = fr_registry_add(reg, q, path, dl, err);
    if (st == FR_OK) {
        dl = NULL; /* owned by the registry now */
        fr_debug("loaded plugin '%s': quantizer '%s'", path, q->name);
    }

cleanup:
    if (dl)
        dlclose(dl);
    free(loaded);
    return st;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_so_suffix(const char *name)
{
    size_t n = strlen(name);
    return n > 3 && !strcmp(name + n - 3, ".so");
}

/* Loads one discovered plugin; a plugin error becomes a warning. */
static fr_status load_discovered(fr_registry *reg, const char *path, fr_error *err)
{
    fr_error local = {0};
    fr_status st = fr_registry_load_plugin(reg, path, &local);
    if (st == FR_E_NOMEM)
        return fr_fail(err, st, "%s", local.msg);
    if (st != FR_OK)
        fr_warn("%s (skipped)", local.msg);
    return FR_OK;
}

/* Loads every *.so of a folder in sorted order, so that which of two
 * duplicates wins does not depend on the file system. */
static fr_status load_folder(fr_registry *reg, const char *dir, fr_error *err)
{
    char ebuf[128];
    fr_status st = FR_OK;
    char **names = NULL;
    size_t n_names = 0, cap = 0;
    char *path = NULL;
    DIR *d = opendir(dir);
    if (!d) {
        fr_warn("cannot read plugin folder '%s': %s (skipped)", dir,
                fr_errno_text(errno, ebuf, sizeof ebuf));
        return FR_OK;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!has_so_suffix(de->d_name))
            continue;
        if (n_names == cap) {
            size_t grown_cap = cap ? cap * 2 : 16;
            char **grown = realloc(names, grown_cap * sizeof *grown);
            if (!grown) {
                st = fr_fail(err, FR_E_NOMEM, "out of memory reading plugin folder '%s'", dir);
                goto cleanup;
            }
            names = grown;
            cap = grown_cap;
        }
        names[n_names] = strdup(de->d_name);
        if (!names[n_names]) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory reading plugin folder '%s'", dir);
            goto cleanup;
        }
        n_names++;
    }
    if (n_names)
        qsort(names, n_names, sizeof *names, compare_names);
    for (size_t i = 0; i < n_names; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        char *grown = realloc(path, len);
        if (!grown) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory reading plugin folder '%s'", dir);
            goto cleanup;
        }
        path = grown;
        size_t dir_len = strlen(dir);
        snprintf(path, len, "%s%s%s", dir, dir_len && dir[dir_len - 1] == '/' ? "" : "/", names[i]);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue; /* a folder named x.so, a dangling link */
        st = load_discovered(reg, path, err);
        if (st != FR_OK)
            goto cleanup;
    }

cleanup:
    for (size_t i = 0; i < n_names; i++)
        free(names[i]);
    free(names);
    free(path);
    closedir(d);
    return st;
}

static fr_status load_path_entry(fr_registry *reg, const char *entry, fr_error *err)
{
    char ebuf[128];
    struct stat sb;
    if (stat(entry, &sb) != 0) {
        fr_warn("cannot use FRONTIER_PLUGIN_PATH entry '%s': %s (skipped)", entry,
                fr_errno_text(errno, ebuf, sizeof ebuf));
        return FR_OK;
    }
    if (S_ISDIR(sb.st_mode))
        return load_folder(reg, entry, err);
    return load_discovered(reg, entry, err);
}

fr_status fr_registry_discover_from(fr_registry *reg, const char *const *explicit_paths,
                                    size_t n_explicit, const char *plugin_path,
                                    const char *installed_dir, fr_error *err)
{
    fr_status st = FR_OK;
    char *copy = NULL;

    for (size_t i = 0; i < n_explicit; i++) {
        st = fr_registry_load_plugin(reg, explicit_paths[i], err);
        if (st != FR_OK)
            goto cleanup;
    }
    if (plugin_path && !strcmp(plugin_path, FR_PLUGIN_PATH_NONE)) {
        fr_debug("FRONTIER_PLUGIN_PATH=none: plugin discovery disabled");
        goto cleanup;
    }
    if (plugin_path && plugin_path[0]) {
        copy = strdup(plugin_path);
        if (!copy) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory reading FRONTIER_PLUGIN_PATH");
            goto cleanup;
        }
        /* strsep keeps empty fields ("a::b"), which are skipped like in $PATH
         * lists of most tools (HDF5 does the same) */
        char *rest = copy, *entry;
        while ((entry = strsep(&rest, ":")) != NULL) {
            if (!entry[0])
                continue;
            st = load_path_entry(reg, entry, err);
            if (st != FR_OK)
                goto cleanup;
        }
    }
    if (installed_dir && installed_dir[0]) {
        struct stat sb;
        /* an absent installed folder is normal for a build that was never installed */
        if (stat(installed_dir, &sb) == 0 && S_ISDIR(sb.st_mode))
            st = load_folder(reg, installed_dir, err);
    }

cleanup:
    free(copy);
    return st;
}

fr_status fr_registry_discover(fr_registry *reg, const char *const *explicit_paths,
                               size_t n_explicit, fr_error *err)
{
    return fr_registry_discover_from(reg, explicit_paths, n_explicit,
                                     getenv("FRONTIER_PLUGIN_PATH"), fr_registry_plugin_dir(), err);
}
