/*
 * llama-perplexity as frontier evaluate's engine (frontier/analysis/llama_eval.h):
 * found, run with posix_spawn (argv, no shell) into a log file, and its
 * --kl-divergence statistics read back.
 */
#include "frontier/analysis/llama_eval.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define LLAMA_PERPLEXITY "llama-perplexity"

static int is_executable(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, X_OK) == 0;
}

fr_status fr_llama_find(const char *bin_dir, const char *default_dir, char *path, size_t len,
                        fr_error *err)
{
    if (bin_dir && *bin_dir) {
        snprintf(path, len, "%s/%s", bin_dir, LLAMA_PERPLEXITY);
        if (is_executable(path))
            return FR_OK;
        return fr_fail(err, FR_E_IO, "no executable %s in --llama-bin '%s' (scripts/llama-cpp.sh "
                       "builds the pinned llama.cpp)", LLAMA_PERPLEXITY, bin_dir);
    }
    if (default_dir && *default_dir) {
        snprintf(path, len, "%s/%s", default_dir, LLAMA_PERPLEXITY);
        if (is_executable(path))
            return FR_OK;
    }
    const char *env = getenv("PATH");
    char *dirs = env ? strdup(env) : NULL;
    for (char *save = NULL, *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d;
         d = strtok_r(NULL, ":", &save)) {
        snprintf(path, len, "%s/%s", *d ? d : ".", LLAMA_PERPLEXITY);
        if (is_executable(path)) {
            free(dirs);
            return FR_OK;
        }
    }
    free(dirs);
    path[0] = '\0';
    return fr_fail(err, FR_E_IO, "no %s: not in '%s' (the build's pinned llama.cpp; "
                   "scripts/llama-cpp.sh builds it) nor on PATH; give --llama-bin DIR",
                   LLAMA_PERPLEXITY, default_dir && *default_dir ? default_dir : "(none)");
}

fr_status fr_llama_run(const char *const *argv, const char *log_path, int *exit_status,
                       fr_error *err)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        posix_spawn_file_actions_destroy(&fa);
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", log_path, strerror(errno));
    }
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd);
    if (rc != 0)
        return fr_fail(err, FR_E_IO, "cannot run '%s': %s", argv[0], strerror(rc));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return fr_fail(err, FR_E_FAIL, "waiting for '%s': %s", argv[0], strerror(errno));
    }
    *exit_status = WIFEXITED(status) ? WEXITSTATUS(status)
                   : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 255;
    return FR_OK;
}

/* "NAME ± UNC" after the first ':' of line, as the closing statistics print them. */
static int value_pm(const char *line, double *v, double *u)
{
    const char *c = strchr(line, ':');
    return c && sscanf(c + 1, " %lf \xc2\xb1 %lf", v, u) == 2;
}

fr_status fr_llama_parse_kld(const char *log_path, int n_ctx, fr_llama_kld *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(log_path, "r");
    if (!f)
        return fr_fail(err, FR_E_IO, "cannot read '%s': %s", log_path, strerror(errno));
    char line[1024];
    int n_chunk = 0, have_kld = 0, have_top = 0, have_q = 0, have_base = 0, too_short = 0;
    int last_row = 0;
    double row[10] = {0}, u;
    fr_llama_kld sum = {0};
    while (fgets(line, sizeof line, f)) {
        const char *p;
        int k;
        if ((p = strstr(line, "computing over ")) && sscanf(p, "computing over %d chunks", &k) == 1)
            n_chunk = k;
        else if (strstr(line, "you need at least"))
            too_short = 1;
        else if (!strncmp(line, "Mean    KLD:", 12))
            have_kld = value_pm(line, &sum.kl_mean, &sum.kl_stderr);
        else if (!strncmp(line, "Mean PPL(Q) ", 12))
            have_q = value_pm(line, &sum.ppl_quant, &u);
        else if (!strncmp(line, "Mean PPL(base) ", 15))
            have_base = value_pm(line, &sum.ppl_base, &u);
        else if (!strncmp(line, "Same top p:", 11))
            have_top = value_pm(line, &sum.same_top, &sum.same_top_stderr);
        else {
            /* a chunk's running row: chunk, PPL(Q) ± u, ln(PPL(Q)/PPL(base)) ± u,
             * KLD ± u, dp RMS ± u %, same top ± u % */
            double r[10];
            int chunk;
            if (sscanf(line, "%d %lf \xc2\xb1 %lf %lf \xc2\xb1 %lf %lf \xc2\xb1 %lf %lf \xc2\xb1 %lf "
                       "%% %lf \xc2\xb1 %lf %%", &chunk, &r[0], &r[1], &r[2], &r[3], &r[4], &r[5],
                       &r[6], &r[7], &r[8], &r[9]) == 11 && chunk > last_row) {
                last_row = chunk;
                memcpy(row, r, sizeof row);
            }
        }
    }
    fclose(f);
    out->n_chunks = n_chunk;
    out->n_ctx = n_ctx;
    out->positions = (double)n_chunk * (double)(n_ctx - 1 - n_ctx / 2);
    if (too_short)
        return fr_fail(err, FR_E_USAGE, "the text is too short for --ctx %d: llama-perplexity needs "
                       "at least %d tokens (a smaller --ctx, or a longer text)", n_ctx, 2 * n_ctx);
    if (have_kld && have_top && have_q && have_base) {
        sum.n_chunks = out->n_chunks;
        sum.n_ctx = out->n_ctx;
        sum.positions = out->positions;
        sum.same_top /= 100.0;
        sum.same_top_stderr /= 100.0;
        sum.from_summary = 1;
        *out = sum;
        return FR_OK;
    }
    if (n_chunk > 0 && last_row == n_chunk) {
        out->ppl_quant = row[0];
        out->ppl_base = row[0] / exp(row[2]);
        out->kl_mean = row[4];
        out->kl_stderr = row[5];
        out->same_top = row[8] / 100.0;
        out->same_top_stderr = row[9] / 100.0;
        out->from_summary = 0;
        return FR_OK;
    }
    return fr_fail(err, FR_E_FORMAT, "'%s': no KL divergence statistics from llama-perplexity "
                   "(%d of %d chunks reported)", log_path, last_row, n_chunk);
}

int fr_llama_base_chunks(const char *path, int *n_ctx)
{
    unsigned char h[20];
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(h, 1, sizeof h, f) : 0;
    if (f)
        fclose(f);
    *n_ctx = 0;
    if (got != sizeof h || memcmp(h, "_logits_", 8) != 0)
        return 0;
    int32_t ctx, n_chunk;
    memcpy(&ctx, h + 8, 4);
    memcpy(&n_chunk, h + 16, 4);
    *n_ctx = ctx;
    return n_chunk > 0 ? n_chunk : 0;
}

void fr_llama_log_error(const char *log_path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(log_path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, " E ");
        if (!p && !(p = strstr(line, "error")))
            continue;
        p = p[0] == ' ' ? p + 3 : p;
        line[strcspn(line, "\n")] = '\0';
        snprintf(buf, len, "%s", p);
        break;
    }
    fclose(f);
}
