/*
 * test_imatrix DIR: llama.cpp importance matrices (core/imatrix.h) through
 * the calibration reader (core/calib.h), on the files make_imatrix.py wrote
 * into DIR. The good files of both formats (GGUF and Hugging Face names,
 * gguf-py's layout, .dat with and without its trailer): the values against
 * make_imatrix.py's formula, diagonal only, name matching (own name, the
 * GGUF <-> Hugging Face map, the dimension skip), token and module counts;
 * the same through fr_calib_open_memory; an expert stack's per-expert
 * entry (experts.imatrix.gguf) and the same stack in a legacy .dat, split
 * on its first per-expert lookup; then imatrix_cases.tsv: every bad
 * file's exit code and exact message.
 */
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "check.h"
#include "imatrix.h"

#define COUNT 64
#define NCALL 8
#define N_MODULES 6

/* make_imatrix.py's mean(): ((j*3 + salt*5) % 11) / 4 */
static float mean_sq(int j, int salt)
{
    return (float)((j * 3 + salt * 5) % 11) * 0.25f;
}

static const struct {
    const char *gguf, *hf;
    int in, salt;
} modules[N_MODULES] = {
    {"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 8, 0},
    {"blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", 8, 1},
    {"blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight", 8, 2},
    {"blk.0.attn_output.weight", "model.layers.0.self_attn.o_proj.weight", 8, 3},
    {"blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight", 16, 4},
    {"output.weight", "lm_head.weight", 8, 5},
};

/* weight must find module's diagonal statistics (salt's values). */
static void expect_diag(fr_calib_file *cf, const char *weight, const char *module, int in, int salt)
{
    fr_calib_stats s;
    fr_error err = {0};
    CHECK_OK(fr_calib_lookup(cf, weight, in, &s, &err), err);
    CHECK_MSG(s.found, "%s: not found: %s", weight, s.skip_reason);
    if (!s.found)
        return;
    CHECK_STR(s.module, module);
    CHECK_MSG(!s.calib.hessian && !s.calib.act_mean_abs && s.calib.act_mean_sq,
              "%s: not diagonal-only", weight);
    CHECK_MSG(s.n_sensitivity == 0, "%s: a sensitivity", weight);
    for (int j = 0; j < in && s.calib.act_mean_sq; j++)
        CHECK_MSG(s.calib.act_mean_sq[j] == mean_sq(j, salt), "%s: act_sq_mean[%d] = %g, not %g",
                  weight, j, (double)s.calib.act_mean_sq[j], (double)mean_sq(j, salt));
    fr_calib_release(cf, &s);
    /* released statistics come back the same */
    CHECK_OK(fr_calib_lookup(cf, weight, in, &s, &err), err);
    CHECK_MSG(s.found && s.calib.act_mean_sq && s.calib.act_mean_sq[in - 1] == mean_sq(in - 1, salt),
              "%s: second lookup", weight);
}

static void expect_skip(fr_calib_file *cf, const char *weight, int64_t cols, const char *reason)
{
    fr_calib_stats s;
    fr_error err = {0};
    CHECK_OK(fr_calib_lookup(cf, weight, cols, &s, &err), err);
    CHECK_MSG(!s.found, "%s: found, expected a skip", weight);
    CHECK_STR(s.skip_reason, reason);
}

/* names: 0 GGUF names in the file, 1 Hugging Face names. */
static void check_good(fr_calib_file *cf, const char *what, int format, int names,
                       int64_t tokens)
{
    CHECK_MSG(fr_calib_is_imatrix(cf) == format, "%s: format %d, not %d", what,
              fr_calib_is_imatrix(cf), format);
    CHECK_MSG(fr_calib_token_count(cf) == tokens, "%s: token count %lld, not %lld", what,
              (long long)fr_calib_token_count(cf), (long long)tokens);
    CHECK_EQ_U64(fr_calib_module_count(cf), N_MODULES);
    fr_error err = {0};
    CHECK_OK(fr_calib_check_values(cf, &err), err);
    char module[256];
    for (int i = 0; i < N_MODULES; i++) {
        const char *own = names ? modules[i].hf : modules[i].gguf;
        fr_calib_module_of(own, module, sizeof module);
        CHECK_MSG(fr_calib_module_in(cf, module) == modules[i].in, "%s: %s in", what, module);
        expect_diag(cf, own, module, modules[i].in, modules[i].salt);
        /* a GGUF-named file serves a Hugging Face checkpoint through the name map */
        if (!names)
            expect_diag(cf, modules[i].hf, module, modules[i].in, modules[i].salt);
    }
    const char *q = names ? "model.layers.0.self_attn.q_proj" : "blk.0.attn_q";
    char reason[512];
    snprintf(reason, sizeof reason, "act_sq_mean of '%s' is [8], the weight has 9 input columns", q);
    expect_skip(cf, names ? "model.layers.0.self_attn.q_proj.weight" : "blk.0.attn_q.weight", 9,
                reason);
    expect_skip(cf, "blk.3.ffn_up.weight", 8, "no statistics for 'blk.3.ffn_up'");
    expect_skip(cf, "model.layers.3.mlp.up_proj.weight", 8,
                "no statistics for 'model.layers.3.mlp.up_proj'");
    /* the map is whole components only */
    expect_skip(cf, "model.layers.0.self_attn.q_proj2.weight", 8,
                "no statistics for 'model.layers.0.self_attn.q_proj2'");
    /* unmatched: all but the two weights given */
    const char *weights[] = {names ? "model.layers.0.self_attn.q_proj.weight"
                                   : "model.layers.0.self_attn.q_proj.weight",
                             names ? "lm_head.weight" : "output.weight"};
    const char **un = NULL;
    size_t n_un = 0;
    CHECK_OK(fr_calib_unmatched(cf, weights, 2, &un, &n_un, &err), err);
    CHECK_EQ_U64(n_un, N_MODULES - 2);
    free(un);
}

static void test_good(const char *dir, const char *file, int format, int names, int64_t tokens)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    fr_calib_file *cf = NULL;
    fr_error err = {0};
    fr_status st = fr_calib_open(path, &cf, &err);
    CHECK_MSG(st == FR_OK, "%s: %s", file, err.msg);
    if (st != FR_OK)
        return;
    check_good(cf, file, format, names, tokens);
    fr_calib_close(cf);

    /* the same bytes from memory (the fuzz targets' door) */
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open '%s'", path);
    if (!f)
        return;
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    st = fr_calib_open_memory(buf, n, file, &cf, &err);
    CHECK_MSG(st == FR_OK, "%s (memory): %s", file, err.msg);
    if (st == FR_OK)
        check_good(cf, file, format, names, tokens);
    fr_calib_close(cf);
}

/* experts.imatrix.gguf: an expert stack's entry (n_mat 4) read as per-expert
 * statistics: expert e's mean(j, e), expert 2 (no token) the token-weighted
 * mean of the others, and the entry refused for the stack taken as one matrix. */
static void test_experts(const char *dir)
{
    static const double counts[4] = {64, 32, 0, 16};
    char path[4096];
    snprintf(path, sizeof path, "%s/experts.imatrix.gguf", dir);
    fr_calib_file *cf = NULL;
    fr_error err = {0};
    CHECK_OK(fr_calib_open(path, &cf, &err), err);
    if (!cf)
        return;
    const char *w = "blk.0.ffn_up_exps.weight";
    CHECK_MSG(fr_calib_module_experts(cf, "blk.0.ffn_up_exps") == 4, "experts: %lld experts",
              (long long)fr_calib_module_experts(cf, "blk.0.ffn_up_exps"));
    CHECK_MSG(fr_calib_token_count(cf) == COUNT, "experts: token count %lld",
              (long long)fr_calib_token_count(cf));
    for (int e = 0; e < 4; e++) {
        fr_calib_stats s;
        CHECK_OK(fr_calib_lookup_expert(cf, w, 8, e, 4, &s, &err), err);
        CHECK_MSG(s.found && s.calib.act_mean_sq && !s.calib.hessian, "expert %d: not found (%s)",
                  e, s.skip_reason);
        if (!s.found || !s.calib.act_mean_sq)
            continue;
        CHECK_MSG(s.expert_tokens == (int64_t)counts[e], "expert %d: %lld tokens", e,
                  (long long)s.expert_tokens);
        CHECK_MSG(s.fallback == (e == 2), "expert %d: fallback %d", e, s.fallback);
        for (int j = 0; j < 8; j++) {
            float want = mean_sq(j, e);
            if (e == 2) { /* sum_e n_e m_e / sum_e n_e over the experts with tokens */
                double num = 0, den = 0;
                for (int k = 0; k < 4; k++)
                    if (counts[k] > 0) {
                        num += counts[k] * (double)mean_sq(j, k);
                        den += counts[k];
                    }
                want = (float)(num / den);
            }
            CHECK_MSG(s.calib.act_mean_sq[j] == want, "expert %d: act_sq_mean[%d] = %.9g, not %.9g",
                      e, j, (double)s.calib.act_mean_sq[j], (double)want);
        }
        fr_calib_release(cf, &s);
    }
    fr_calib_stats s;
    CHECK_OK(fr_calib_lookup(cf, w, 8, &s, &err), err);
    CHECK_MSG(!s.found, "the stack as one matrix found per-expert statistics");
    CHECK_STR(s.skip_reason, "act_sq_mean of 'blk.0.ffn_up_exps' is [4, 8]: per-expert statistics, "
                             "for a tensor handled expert by expert; 'blk.0.ffn_up_exps' is handled "
                             "here as one matrix");
    /* another expert count is refused */
    fr_status st = fr_calib_lookup_expert(cf, w, 8, 0, 8, &s, &err);
    CHECK_MSG(st == FR_E_FORMAT, "8 experts against 4: status %d", st);
    /* the dense entry beside it is unchanged */
    expect_diag(cf, "blk.0.attn_q.weight", "blk.0.attn_q", 8, 0);
    fr_calib_close(cf);
}

/* experts.imatrix.dat: the same stack as a legacy .dat entry of 4 x 8
 * values. Taken as one matrix of 8 columns it is a dimension skip; looked
 * up expert by expert it splits into 4 experts of 8: expert e's mean(j, e),
 * no token count (-1), and expert 2 (all ones: llama.cpp's mark of no
 * tokens) the plain mean of the other three. */
static void test_experts_dat(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/experts.imatrix.dat", dir);
    fr_calib_file *cf = NULL;
    fr_error err = {0};
    CHECK_OK(fr_calib_open(path, &cf, &err), err);
    if (!cf)
        return;
    const char *w = "blk.0.ffn_up_exps.weight";
    fr_calib_stats s;
    CHECK_OK(fr_calib_lookup(cf, w, 8, &s, &err), err);
    CHECK_MSG(!s.found, "the .dat stack as one matrix of 8 columns found statistics");
    CHECK_STR(s.skip_reason, "act_sq_mean of 'blk.0.ffn_up_exps' is [32], the weight has 8 input "
                             "columns");
    /* 8 experts of 8 columns are not 32 values: refused, the entry unsplit */
    fr_status st = fr_calib_lookup_expert(cf, w, 8, 0, 8, &s, &err);
    CHECK_MSG(st == FR_E_FORMAT, ".dat, 8 experts against 32 values: status %d", st);
    for (int e = 0; e < 4; e++) {
        CHECK_OK(fr_calib_lookup_expert(cf, w, 8, e, 4, &s, &err), err);
        CHECK_MSG(s.found && s.calib.act_mean_sq && !s.calib.hessian,
                  ".dat expert %d: not found (%s)", e, s.skip_reason);
        if (!s.found || !s.calib.act_mean_sq)
            continue;
        CHECK_MSG(s.expert_tokens == (e == 2 ? 0 : -1), ".dat expert %d: %lld tokens", e,
                  (long long)s.expert_tokens);
        CHECK_MSG(s.fallback == (e == 2), ".dat expert %d: fallback %d", e, s.fallback);
        for (int j = 0; j < 8; j++) {
            float want = mean_sq(j, e);
            if (e == 2)
                want = (float)(((double)mean_sq(j, 0) + (double)mean_sq(j, 1) +
                                (double)mean_sq(j, 3)) / 3.0);
            CHECK_MSG(s.calib.act_mean_sq[j] == want,
                      ".dat expert %d: act_sq_mean[%d] = %.9g, not %.9g", e, j,
                      (double)s.calib.act_mean_sq[j], (double)want);
        }
        fr_calib_release(cf, &s);
    }
    /* split, the stack taken as one matrix is now per-expert statistics */
    CHECK_OK(fr_calib_lookup(cf, w, 8, &s, &err), err);
    CHECK_MSG(!s.found, "the split .dat stack as one matrix found statistics");
    CHECK_STR(s.skip_reason, "act_sq_mean of 'blk.0.ffn_up_exps' is [4, 8]: per-expert statistics, "
                             "for a tensor handled expert by expert; 'blk.0.ffn_up_exps' is handled "
                             "here as one matrix");
    expect_diag(cf, "blk.0.attn_q.weight", "blk.0.attn_q", 8, 0);
    fr_calib_close(cf);
}

/* One line of imatrix_cases.tsv: file, exit code, message. */
static void run_case(const char *dir, char *line)
{
    char *file = line, *code_text = strchr(line, '\t');
    char *message = code_text ? strchr(code_text + 1, '\t') : NULL;
    if (!message) {
        fr_test_fail(__FILE__, __LINE__, "imatrix_cases.tsv: bad line '%s'", line);
        return;
    }
    *code_text++ = '\0';
    *message++ = '\0';
    char path[4096];
    snprintf(path, sizeof path, "%.2000s/%.2000s", dir, file);
    fr_calib_file *cf = NULL;
    fr_error err = {0};
    fr_status st = fr_calib_open(path, &cf, &err);
    CHECK_MSG(st == (fr_status)atoi(code_text), "%s: open returned %d, expected %s (%s)", file, st,
              code_text, err.msg);
    CHECK_MSG(cf == NULL, "%s: a failed open returned a file", file);
    CHECK_MSG(strstr(err.msg, path) != NULL, "%s: the message does not name the file: %s", file,
              err.msg);
    CHECK_STR(err.msg, message);
    fr_calib_close(cf);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_imatrix DIR (written by make_imatrix.py)\n");
        return 2;
    }
    const char *dir = argv[1];
    test_good(dir, "good.imatrix.gguf", FR_IMATRIX_GGUF, 0, COUNT);
    test_good(dir, "good_hf.imatrix.gguf", FR_IMATRIX_GGUF, 1, COUNT);
    test_good(dir, "good.imatrix.dat", FR_IMATRIX_DAT, 0, 0);
    test_good(dir, "good_notrailer.dat", FR_IMATRIX_DAT, 0, 0);
    test_good(dir, "good_chunks_only.dat", FR_IMATRIX_DAT, 0, 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/good_gguf_py.imatrix.gguf", dir);
    FILE *probe = fopen(path, "rb");
    if (probe) {
        fclose(probe);
        test_good(dir, "good_gguf_py.imatrix.gguf", FR_IMATRIX_GGUF, 0, COUNT);
    } else {
        printf("test_imatrix: gguf-py not installed: its layout not checked\n");
    }

    test_experts(dir);
    test_experts_dat(dir);

    snprintf(path, sizeof path, "%s/imatrix_cases.tsv", dir);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open '%s'", path);
    int cases = 0;
    char line[8192];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0]) {
            run_case(dir, line);
            cases++;
        }
    }
    if (f)
        fclose(f);
    CHECK_MSG(cases >= 41, "only %d cases in imatrix_cases.tsv", cases);
    printf("test_imatrix: %d cases\n", cases);
    return fr_test_finish("test_imatrix");
}
