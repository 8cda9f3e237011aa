/*
 * Runs a fuzz target's LLVMFuzzerTestOneInput over every file of the given
 * folders (the committed corpus), so CI exercises the corpus without
 * clang's fuzzer runtime; under the sanitizer build it is a regression test.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    int ok = buf && fread(buf, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    if (ok)
        LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    int files = 0;
    for (int i = 1; i < argc; i++) {
        DIR *dir = opendir(argv[i]);
        if (!dir) {
            fprintf(stderr, "cannot open folder '%s'\n", argv[i]);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (replay_file(path) != 0) {
                fprintf(stderr, "cannot read '%s'\n", path);
                closedir(dir);
                return 1;
            }
            files++;
        }
        closedir(dir);
    }
    if (files == 0) {
        fprintf(stderr, "no corpus files\n");
        return 1;
    }
    printf("replayed %d inputs\n", files);
    return 0;
}
