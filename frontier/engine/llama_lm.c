/* A GGUF model run by llama.cpp as an fr_lm: float32 weights set in place. */
#include "frontier/engine/llama_lm.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ggml-backend.h>
#include <ggml.h>
#include <gguf.h>
#include <llama.h>

#include "core/log.h"
#include "frontier/engine/sensitivity.h"

#ifndef FRONTIER_LLAMA_ORIGIN
#define FRONTIER_LLAMA_ORIGIN "libllama"
#endif

/* A tensor of the model, as the loader handed it to set_tensor_data. */
struct seen {
    const char *name;
    struct ggml_tensor *t;
};

struct fr_llama {
    fr_lm lm;
    char *path;
    int fd;
    struct gguf_context *src;      /* the file's metadata and tensor infos */
    struct ggml_context *src_ctx;  /* its tensors' shapes and types (no data) */
    size_t data_offset;
    struct llama_model *model;
    struct llama_context *ctx;
    struct llama_model_params mparams;
    struct llama_context_params cparams;
    struct llama_batch batch;
    int threads;
    fr_lm_tensor *tensors;
    struct ggml_tensor **model_t; /* [n] the model's tensor of lm.tensors[k] */
    struct ggml_tensor **tied_t;  /* [n] its second use (output.weight), or NULL */
    const char **unused;
    size_t n_unused;
    struct seen *seen;
    size_t n_seen, cap_seen;
    int load_failed;
    fr_error load_err;
};

/* ---- llama.cpp's log: errors always, the rest with --verbose ---- */

static int log_verbose;

static void log_line(enum ggml_log_level level, const char *text, void *ud)
{
    static enum ggml_log_level last = GGML_LOG_LEVEL_INFO;
    (void)ud;
    if (level != GGML_LOG_LEVEL_CONT)
        last = level;
    if (log_verbose || last == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
        fflush(stderr);
    }
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static void shape_text(const struct ggml_tensor *t, char *buf, size_t len)
{
    snprintf(buf, len, "[%lld, %lld, %lld, %lld]", (long long)t->ne[0], (long long)t->ne[1],
             (long long)t->ne[2], (long long)t->ne[3]);
}

/* Tensor id of the file into dst (float32, the model tensor t's shape). */
static fr_status read_tensor(fr_llama *m, int64_t id, const struct ggml_tensor *t, float *dst,
                             fr_error *err)
{
    const char *name = gguf_get_tensor_name(m->src, id);
    const struct ggml_tensor *s = ggml_get_tensor(m->src_ctx, name);
    char a[96], b[96];
    for (int d = 0; d < GGML_MAX_DIMS; d++)
        if (!s || s->ne[d] != t->ne[d]) {
            shape_text(s ? s : t, a, sizeof a);
            shape_text(t, b, sizeof b);
            return fr_fail(err, FR_E_FORMAT,
                           "'%s': tensor '%s' is %s (ggml ne) in the file, llama.cpp's model "
                           "has it %s",
                           m->path, t->name, a, b);
        }
    const struct ggml_type_traits *tr = ggml_get_type_traits(s->type);
    if (s->type != GGML_TYPE_F32 && (!tr || !tr->to_float))
        return fr_fail(err, FR_E_FORMAT, "'%s': tensor '%s': ggml cannot convert its type %s to float",
                       m->path, name, ggml_type_name(s->type));
    size_t nb = ggml_nbytes(s);
    unsigned char *raw = malloc(nb ? nb : 1);
    if (!raw)
        return fr_fail(err, FR_E_NOMEM, "out of memory reading tensor '%s' (%zu bytes)", name, nb);
    off_t at = (off_t)(m->data_offset + gguf_get_tensor_offset(m->src, id));
    size_t got = 0;
    while (got < nb) {
        ssize_t r = pread(m->fd, raw + got, nb - got, at + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            char why[128];
            free(raw);
            return fr_fail(err, r < 0 ? FR_E_IO : FR_E_FORMAT, "cannot read '%s': tensor '%s': %s",
                           m->path, name,
                           r < 0 ? fr_errno_text(errno, why, sizeof why) : "the file ends inside it");
        }
        got += (size_t)r;
    }
    if (s->type == GGML_TYPE_F32)
        memcpy(dst, raw, nb);
    else
        tr->to_float(raw, dst, ggml_nelements(s));
    free(raw);
    return FR_OK;
}

/* The values of model tensor t: the file's, or the neutral value of an
 * optional tensor the file lacks, or the embedding for a tied output. */
static fr_status fill(fr_llama *m, const struct ggml_tensor *t, float *dst, fr_error *err)
{
    int64_t id = gguf_find_tensor(m->src, t->name), n = ggml_nelements(t);
    if (id >= 0)
        return read_tensor(m, id, t, dst, err);
    if (ends_with(t->name, ".bias")) {
        memset(dst, 0, (size_t)n * sizeof *dst);
        return FR_OK;
    }
    if (ends_with(t->name, ".scale") || ends_with(t->name, ".input_scale") ||
        !strncmp(t->name, "rope_freqs", 10) || !strncmp(t->name, "rope_factors", 12)) {
        for (int64_t i = 0; i < n; i++)
            dst[i] = 1.0f;
        return FR_OK;
    }
    int64_t embd = gguf_find_tensor(m->src, "token_embd.weight");
    if (!strcmp(t->name, "output.weight") && embd >= 0)
        return read_tensor(m, embd, t, dst, err);
    return fr_fail(err, FR_E_FORMAT,
                   "'%s': llama.cpp's model of this architecture has a tensor '%s' that the file "
                   "lacks, and no neutral value is known for it",
                   m->path, t->name);
}

static void set_tensor_data(struct ggml_tensor *t, void *ud)
{
    fr_llama *m = ud;
    if (m->n_seen == m->cap_seen) {
        size_t cap = m->cap_seen ? 2 * m->cap_seen : 256;
        struct seen *grown = realloc(m->seen, cap * sizeof *grown);
        if (!grown) {
            m->load_failed = 1;
            fr_fail(&m->load_err, FR_E_NOMEM, "out of memory");
            return;
        }
        m->seen = grown;
        m->cap_seen = cap;
    }
    m->seen[m->n_seen++] = (struct seen){t->name, t};
    if (m->load_failed)
        return;
    size_t n = (size_t)ggml_nelements(t);
    float *buf = malloc((n ? n : 1) * sizeof *buf);
    fr_status st = buf ? fill(m, t, buf, &m->load_err)
                       : fr_fail(&m->load_err, FR_E_NOMEM, "out of memory for tensor '%s'", t->name);
    if (st == FR_OK && t->type != GGML_TYPE_F32)
        st = fr_fail(&m->load_err, FR_E_FAIL, "llama.cpp made tensor '%s' %s, not f32", t->name,
                     ggml_type_name(t->type));
    if (st == FR_OK)
        ggml_backend_tensor_set(t, buf, 0, n * sizeof *buf);
    else
        m->load_failed = 1;
    free(buf);
}

static struct ggml_tensor *seen_tensor(const fr_llama *m, const char *name)
{
    for (size_t i = 0; i < m->n_seen; i++)
        if (!strcmp(m->seen[i].name, name))
            return m->seen[i].t;
    return NULL;
}

/* ---- the fr_lm ---- */

static fr_status lm_get(fr_lm *lm, size_t k, float *w, fr_error *err)
{
    fr_llama *m = lm->state;
    (void)err;
    ggml_backend_tensor_get(m->model_t[k], w, 0, ggml_nbytes(m->model_t[k]));
    return FR_OK;
}

static fr_status lm_set(fr_lm *lm, size_t k, const float *w, fr_error *err)
{
    fr_llama *m = lm->state;
    (void)err;
    ggml_backend_tensor_set(m->model_t[k], w, 0, ggml_nbytes(m->model_t[k]));
    if (m->tied_t[k])
        ggml_backend_tensor_set(m->tied_t[k], w, 0, ggml_nbytes(m->tied_t[k]));
    return FR_OK;
}

/* One sequence from position 0 through ctx; its logits into out[n x n_vocab]. */
static fr_status decode(fr_llama *m, struct llama_context *ctx, const int32_t *tokens, int64_t n,
                        float *out, fr_error *err)
{
    if (n > (int64_t)m->cparams.n_batch)
        return fr_fail(err, FR_E_USAGE, "%lld tokens in one sequence, the context holds %u",
                       (long long)n, m->cparams.n_batch);
    llama_memory_clear(llama_get_memory(ctx), true);
    struct llama_batch *b = &m->batch;
    b->n_tokens = (int32_t)n;
    for (int64_t i = 0; i < n; i++) {
        b->token[i] = tokens[i];
        b->pos[i] = (llama_pos)i;
        b->n_seq_id[i] = 1;
        b->seq_id[i][0] = 0;
        b->logits[i] = 1;
    }
    int rc = llama_decode(ctx, *b);
    if (rc != 0)
        return fr_fail(err, FR_E_FAIL, "llama.cpp could not evaluate %lld tokens of '%s' "
                       "(llama_decode returned %d)", (long long)n, m->path, rc);
    size_t V = (size_t)m->lm.n_vocab;
    for (int64_t i = 0; i < n; i++) {
        const float *row = llama_get_logits_ith(ctx, (int32_t)i);
        if (!row)
            return fr_fail(err, FR_E_FAIL, "llama.cpp returned no logits for position %lld", (long long)i);
        memcpy(out + (size_t)i * V, row, V * sizeof *out);
    }
    return FR_OK;
}

static fr_status lm_logits(fr_lm *lm, const int32_t *tokens, int64_t n, float *out, fr_error *err)
{
    fr_llama *m = lm->state;
    return decode(m, m->ctx, tokens, n, out, err);
}

/* ---- opening ---- */

/* The file's metadata and tensor infos, and the metadata-only copy the
 * model is built from (no tensor infos: llama.cpp makes every tensor f32). */
static fr_status open_file(fr_llama *m, struct gguf_context **meta, fr_error *err)
{
    char why[128];
    m->fd = open(m->path, O_RDONLY | O_CLOEXEC);
    if (m->fd < 0)
        return fr_fail(err, FR_E_IO, "cannot open '%s': %s", m->path,
                       fr_errno_text(errno, why, sizeof why));
    struct gguf_init_params gp = {.no_alloc = true, .ctx = &m->src_ctx};
    m->src = gguf_init_from_file(m->path, gp);
    if (!m->src)
        return fr_fail(err, FR_E_FORMAT, "cannot read '%s': not a GGUF file that llama.cpp's reader "
                       "accepts (its log line above says why)", m->path);
    if (gguf_find_key(m->src, "general.architecture") < 0)
        return fr_fail(err, FR_E_FORMAT, "'%s': a GGUF file without general.architecture (not a model)",
                       m->path);
    m->data_offset = gguf_get_data_offset(m->src);
    *meta = gguf_init_empty();
    if (!*meta)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    gguf_set_kv(*meta, m->src);
    return FR_OK;
}

/* lm.tensors: the file's tensors of two or more dimensions the model uses. */
static fr_status list_tensors(fr_llama *m, fr_error *err)
{
    int64_t n = gguf_get_n_tensors(m->src);
    m->tensors = calloc((size_t)n + 1, sizeof *m->tensors);
    m->model_t = calloc((size_t)n + 1, sizeof *m->model_t);
    m->tied_t = calloc((size_t)n + 1, sizeof *m->tied_t);
    m->unused = calloc((size_t)n + 1, sizeof *m->unused);
    if (!m->tensors || !m->model_t || !m->tied_t || !m->unused)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    int tied = gguf_find_tensor(m->src, "output.weight") < 0;
    size_t k = 0;
    for (int64_t id = 0; id < n; id++) {
        const char *name = gguf_get_tensor_name(m->src, id);
        const struct ggml_tensor *s = ggml_get_tensor(m->src_ctx, name);
        if (!s || ggml_n_dims(s) < 2)
            continue;
        struct ggml_tensor *t = seen_tensor(m, name);
        if (!t || t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t)) {
            m->unused[m->n_unused++] = name;
            continue;
        }
        m->tensors[k] = (fr_lm_tensor){.name = name, .rows = ggml_nelements(s) / s->ne[0],
                                       .cols = s->ne[0], .type_name = ggml_type_name(s->type)};
        m->model_t[k] = t;
        if (tied && !strcmp(name, "token_embd.weight")) {
            m->tied_t[k] = seen_tensor(m, "output.weight");
            m->tensors[k].tied = m->tied_t[k] != NULL;
        }
        k++;
    }
    m->lm.tensors = m->tensors;
    m->lm.n_tensors = k;
    return FR_OK;
}

static int online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void silent_params(fr_llama *m, const fr_llama_options *o)
{
    m->mparams = llama_model_default_params();
    m->mparams.progress_callback = NULL;
    m->threads = o->threads > 0 ? o->threads : online_cores();
    struct llama_context_params *c = &m->cparams;
    *c = llama_context_default_params();
    c->n_ctx = c->n_batch = c->n_ubatch = (uint32_t)o->n_ctx;
    c->n_seq_max = 1;
    c->n_threads = c->n_threads_batch = m->threads;
    c->type_k = c->type_v = GGML_TYPE_F32;
    c->no_perf = true;
}

static bool quiet_progress(float progress, void *ud)
{
    (void)progress;
    (void)ud;
    return true;
}

/* The model and its context, once the file is open. */
static fr_status build(fr_llama *m, struct gguf_context *meta, fr_error *err)
{
    m->mparams.progress_callback = quiet_progress;
    m->model = llama_model_init_from_user(meta, set_tensor_data, m, m->mparams);
    if (m->load_failed) {
        *err = m->load_err;
        return err->code;
    }
    if (!m->model)
        return fr_fail(err, FR_E_FORMAT, "'%s': llama.cpp cannot build this model (its log line "
                       "above says why)", m->path);
    m->ctx = llama_init_from_model(m->model, m->cparams);
    if (!m->ctx)
        return fr_fail(err, FR_E_FAIL, "'%s': llama.cpp cannot make a context of %u tokens",
                       m->path, m->cparams.n_ctx);
    m->batch = llama_batch_init((int32_t)m->cparams.n_batch, 0, 1);
    m->lm = (fr_lm){.state = m, .get = lm_get, .set = lm_set, .logits = lm_logits,
                    .n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m->model))};
    return list_tensors(m, err);
}

fr_status fr_llama_open(const char *path, const fr_llama_options *o, fr_llama **out,
                        fr_error *err)
{
    *out = NULL;
    if (o->n_ctx < 1 || o->n_ctx > INT32_MAX)
        return fr_fail(err, FR_E_USAGE, "a context of %lld tokens", (long long)o->n_ctx);
    log_verbose = o->verbose;
    llama_log_set(log_line, NULL);
    llama_backend_init();
    fr_llama *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    m->fd = -1;
    silent_params(m, o);
    struct gguf_context *meta = NULL;
    fr_status st = open_file(m, &meta, err);
    if (st == FR_OK)
        st = build(m, meta, err);
    if (meta)
        gguf_free(meta);
    if (st != FR_OK) {
        fr_llama_close(m);
        return st;
    }
    *out = m;
    return FR_OK;
}

void fr_llama_close(fr_llama *m)
{
    if (!m)
        return;
    if (m->batch.token)
        llama_batch_free(m->batch);
    if (m->ctx)
        llama_free(m->ctx);
    if (m->model)
        llama_model_free(m->model);
    if (m->src)
        gguf_free(m->src);
    if (m->src_ctx)
        ggml_free(m->src_ctx);
    if (m->fd >= 0)
        close(m->fd);
    free(m->tensors);
    free(m->model_t);
    free(m->tied_t);
    free(m->unused);
    free(m->seen);
    free(m->path);
    free(m);
}

fr_lm *fr_llama_lm(fr_llama *m)
{
    return &m->lm;
}

const char *const *fr_llama_unused(const fr_llama *m, size_t *n)
{
    *n = m->n_unused;
    return m->unused;
}

fr_status fr_llama_tokenize(fr_llama *m, const char *text, size_t len, int32_t **tokens,
                            int64_t *n, fr_error *err)
{
    *tokens = NULL;
    *n = 0;
    if (len > (size_t)INT32_MAX / 2)
        return fr_fail(err, FR_E_USAGE, "a text of %zu bytes is too long to tokenize at once", len);
    const struct llama_vocab *v = llama_model_get_vocab(m->model);
    int32_t cap = (int32_t)len + 16;
    llama_token *t = malloc((size_t)cap * sizeof *t);
    if (!t)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    int32_t got = llama_tokenize(v, text, (int32_t)len, t, cap, true, false);
    if (got < 0) {
        free(t);
        return fr_fail(err, FR_E_FAIL, "llama.cpp could not tokenize the text (%d)", got);
    }
    *tokens = (int32_t *)t;
    *n = got;
    return FR_OK;
}

/* Mean KL(p_file || p_this) over n positions: the file's logits from ctx. */
static fr_status compare(fr_llama *m, struct llama_context *fctx, const int32_t *tokens,
                         int64_t n, double *kl, fr_error *err)
{
    size_t V = (size_t)m->lm.n_vocab;
    float *ours = malloc((size_t)n * V * sizeof *ours), *theirs = malloc((size_t)n * V * sizeof *theirs);
    fr_status st = ours && theirs ? FR_OK : fr_fail(err, FR_E_NOMEM, "out of memory");
    if (st == FR_OK && (st = decode(m, m->ctx, tokens, n, ours, err)) == FR_OK &&
        (st = decode(m, fctx, tokens, n, theirs, err)) == FR_OK) {
        double sum = 0;
        for (int64_t i = 0; i < n; i++) {
            const float *p = theirs + (size_t)i * V, *q = ours + (size_t)i * V;
            sum += fr_sens_kl_row(p, fr_sens_logsumexp(p, (int64_t)V), q,
                                  fr_sens_logsumexp(q, (int64_t)V), (int64_t)V);
        }
        *kl = sum / (double)n;
    }
    free(ours);
    free(theirs);
    return st;
}

fr_status fr_llama_check(fr_llama *m, const int32_t *tokens, int64_t n, double *kl,
                         fr_error *err)
{
    struct llama_model_params p = m->mparams;
    p.progress_callback = quiet_progress;
    struct llama_model *fmodel = llama_model_load_from_file(m->path, p);
    if (!fmodel)
        return fr_fail(err, FR_E_FORMAT, "'%s': llama.cpp cannot load the file itself (its log "
                       "line above says why)", m->path);
    struct llama_context *fctx = llama_init_from_model(fmodel, m->cparams);
    fr_status st = fctx ? compare(m, fctx, tokens, n, kl, err)
                        : fr_fail(err, FR_E_FAIL, "'%s': llama.cpp cannot make a context for the "
                                  "file's own model", m->path);
    if (fctx)
        llama_free(fctx);
    llama_model_free(fmodel);
    return st;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

fr_status fr_llama_tune_threads(fr_llama *m, const int32_t *tokens, int64_t n, fr_error *err)
{
    int all = online_cores(), pick = all;
    float *out = all > 1 ? malloc((size_t)n * (size_t)m->lm.n_vocab * sizeof *out) : NULL;
    fr_status st = all == 1 || out ? FR_OK : fr_fail(err, FR_E_NOMEM, "out of memory");
    double best = INFINITY;
    if (st == FR_OK && all > 1)
        st = decode(m, m->ctx, tokens, n, out, err); /* the warm-up: buffers, page faults */
    for (int c = all; st == FR_OK && c >= 1 && all > 1; c = c > 1 ? 1 : 0) {
        llama_set_n_threads(m->ctx, c, c);
        double t0 = seconds_now();
        st = decode(m, m->ctx, tokens, n, out, err);
        double dt = seconds_now() - t0;
        fr_debug("llama.cpp: %lld tokens with %d thread%s: %.2f s", (long long)n, c, c > 1 ? "s" : "", dt);
        if (dt < best) {
            best = dt;
            pick = c;
        }
    }
    free(out);
    m->threads = pick;
    m->cparams.n_threads = m->cparams.n_threads_batch = pick;
    llama_set_n_threads(m->ctx, pick, pick);
    return st;
}

const char *fr_llama_version(void)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "llama.cpp (ggml %s, commit %s; %s)", ggml_version(), ggml_commit(),
             FRONTIER_LLAMA_ORIGIN);
    return buf;
}

const char *fr_llama_arch(const fr_llama *m)
{
    int64_t k = gguf_find_key(m->src, "general.architecture");
    return k >= 0 && gguf_get_kv_type(m->src, k) == GGUF_TYPE_STRING ? gguf_get_val_str(m->src, k)
                                                                     : "?";
}

int fr_llama_threads(const fr_llama *m)
{
    return m->threads;
}
