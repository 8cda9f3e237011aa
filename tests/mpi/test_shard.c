/*
 * Sharding a plan (frontier/exec/shard.h): the cost split (largest first, each
 * to the least loaded shard), --device parsing for one process and for the
 * ranks of a node, the report of unmeasured tensors, and the
 * several-device executor run with CPU lanes: the same outcomes as one
 * executor, each reported once, one sink call at a time, whatever the
 * number of lanes.
 * usage: test_shard MODEL.safetensors
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/registry.h"
#include "core/source.h"
#include "frontier/exec/exec_cpu.h"
#include "frontier/exec/shard.h"
#include "frontier/model/tensors.h"
#include "frontier/sweep/sweep.h"
#include "frontier/exec/builtins.h"

/* ---- balance ---- */

static fr_tensor fake_tensors[16];
static fr_sweep_item fake_items[16];

static void fake_plan(const uint64_t *bytes, const size_t *n_configs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        memset(&fake_tensors[i], 0, sizeof fake_tensors[i]);
        fake_tensors[i].nbytes = bytes[i];
        fake_tensors[i].numel = (int64_t)bytes[i] / 4;
        memset(&fake_items[i], 0, sizeof fake_items[i]);
        fake_items[i].tensor = &fake_tensors[i];
        fake_items[i].n_configs = n_configs[i];
    }
}

static void test_balance(void)
{
    fr_error err = {0};
    /* costs 400, 300, 200, 200, 100 (bytes x configurations) over 2 shards:
     * 400 -> 0; 300 -> 1; 200 (item 1) -> 1 (300 < 400); 200 (item 3) -> 0
     * (400 < 500); 100 -> 1 (500 < 600) */
    const uint64_t bytes[] = {100, 200, 300, 200, 400};
    const size_t configs[] = {1, 1, 1, 1, 1};
    fake_plan(bytes, configs, 5);
    size_t shard[16]; /* the largest plan below has 16 items */
    double load[2];
    CHECK_OK(fr_shard_balance(fake_items, 5, 2, shard, load, &err), err);
    const size_t want[] = {1, 1, 1, 0, 0};
    for (size_t i = 0; i < 5; i++)
        CHECK_MSG(shard[i] == want[i], "item %zu on shard %zu, expected %zu", i, shard[i], want[i]);
    CHECK(load[0] == 600 && load[1] == 600);

    /* configurations count: 10 bytes x 50 configurations outweigh 400 x 1 */
    const uint64_t b2[] = {400, 10, 100};
    const size_t c2[] = {1, 50, 1};
    fake_plan(b2, c2, 3);
    CHECK_OK(fr_shard_balance(fake_items, 3, 2, shard, load, &err), err);
    CHECK(shard[1] == 0 && shard[0] == 1 && shard[2] == 1);
    CHECK(fr_shard_cost(&fake_items[1]) == 500.0);

    /* more shards than items: one item each, the rest empty */
    double load5[5];
    CHECK_OK(fr_shard_balance(fake_items, 3, 5, shard, load5, &err), err);
    CHECK(shard[0] != shard[1] && shard[1] != shard[2] && shard[0] != shard[2]);
    CHECK(load5[3] == 0 && load5[4] == 0);

    /* no items, and no shards */
    CHECK_OK(fr_shard_balance(fake_items, 0, 3, shard, NULL, &err), err);
    CHECK(fr_shard_balance(fake_items, 3, 0, shard, NULL, &err) != FR_OK);

    /* within 4/3 of the best split on equal-cost items */
    uint64_t b3[16];
    size_t c3[16];
    for (size_t i = 0; i < 16; i++) {
        b3[i] = 1000;
        c3[i] = 1;
    }
    fake_plan(b3, c3, 16);
    double l3[3];
    CHECK_OK(fr_shard_balance(fake_items, 16, 3, shard, l3, &err), err);
    double most = l3[0] > l3[1] ? l3[0] : l3[1];
    most = most > l3[2] ? most : l3[2];
    CHECK_MSG(most == 6000, "most loaded shard %.0f, expected 6000", most);
}

/* ---- devices ---- */

static void expect_devices(const char *text, int local_rank, int local_size, fr_status want,
                           const char *name)
{
    fr_devices d;
    fr_error err = {0};
    fr_status st = fr_devices_parse(text, local_rank, local_size, &d, &err);
    CHECK_MSG(st == want, "--device %s (rank %d of %d): status %d, expected %d (%s)",
              text ? text : "(null)", local_rank, local_size, st, want, err.msg);
    if (st == FR_OK && name) {
        char buf[64];
        fr_devices_name(&d, buf, sizeof buf);
        CHECK_MSG(!strcmp(buf, name), "--device %s (rank %d of %d): %s, expected %s", text,
                  local_rank, local_size, buf, name);
    }
    if (st != FR_OK)
        CHECK_MSG(strstr(err.msg, "--device") != NULL, "the message names --device: %s", err.msg);
}

static void test_devices(void)
{
    expect_devices("cpu", 0, 1, FR_OK, "cpu");
    expect_devices("cpu", 3, 4, FR_OK, "cpu");
    expect_devices("gpu", 0, 1, FR_E_USAGE, NULL);
    expect_devices("cuda:", 0, 1, FR_E_USAGE, NULL);
    expect_devices("cuda:x", 0, 1, FR_E_USAGE, NULL);
    expect_devices("cuda:0,", 0, 1, FR_E_USAGE, NULL);
    expect_devices("cuda:0,0", 0, 1, FR_E_USAGE, NULL);
    expect_devices("cuda:-1", 0, 1, FR_E_USAGE, NULL);
    expect_devices("cuda:all,1", 0, 1, FR_E_USAGE, NULL);
#ifndef FRONTIER_HAVE_CUDA
    /* without CUDA: auto is the CPU, every cuda form a device error */
    expect_devices(NULL, 0, 1, FR_OK, "cpu");
    expect_devices("auto", 1, 2, FR_OK, "cpu");
    expect_devices("cuda", 0, 1, FR_E_DEVICE, NULL);
    expect_devices("cuda:0", 0, 1, FR_E_DEVICE, NULL);
    expect_devices("cuda:all", 0, 1, FR_E_DEVICE, NULL);
    expect_devices("cuda:0,2", 0, 1, FR_E_DEVICE, NULL);
#endif
}

/* ---- lost tensors ---- */

static void test_lost(void)
{
    static fr_tensor t[12];
    static fr_sweep_item it[12];
    static char names[12][16];
    uint8_t done[12];
    for (int i = 0; i < 12; i++) {
        snprintf(names[i], sizeof names[i], "w%d", i);
        t[i].name = names[i];
        it[i].tensor = &t[i];
        done[i] = 1;
    }
    char buf[256];
    CHECK(fr_shard_lost(it, 12, done, buf, sizeof buf) == 0 && buf[0] == '\0');
    done[3] = 0;
    CHECK(fr_shard_lost(it, 12, done, buf, sizeof buf) == 1);
    CHECK_STR(buf, "1 tensor not measured: 'w3'");
    memset(done, 0, sizeof done);
    CHECK(fr_shard_lost(it, 12, done, buf, sizeof buf) == 12);
    CHECK_MSG(strstr(buf, "12 tensors not measured: 'w0', 'w1'") == buf && strstr(buf, ", ..."),
              "%s", buf);
}

/* ---- several lanes of the CPU executor ---- */

typedef struct collected {
    size_t n_items, max_configs;
    frontier_error_sums *sums;
    int *seen, *done, *norms;
    double *norm;
    int inside;      /* a sink call is running */
    int overlapped;  /* two ran at once */
} collected;

static void enter(collected *c)
{
    if (__atomic_exchange_n(&c->inside, 1, __ATOMIC_SEQ_CST))
        c->overlapped = 1;
}

static void leave(collected *c)
{
    __atomic_store_n(&c->inside, 0, __ATOMIC_SEQ_CST);
}

static void on_outcome(void *ctx, const fr_sweep_outcome *o)
{
    collected *c = ctx;
    enter(c);
    if (o->item < c->n_items && o->config < c->max_configs) {
        size_t k = o->item * c->max_configs + o->config;
        c->seen[k]++;
        c->sums[k] = o->sums;
    }
    leave(c);
}

static void on_done(void *ctx, size_t item, uint64_t bytes)
{
    collected *c = ctx;
    (void)bytes;
    enter(c);
    if (item < c->n_items)
        c->done[item]++;
    leave(c);
}

static void on_norm(void *ctx, size_t item, double sq_norm)
{
    collected *c = ctx;
    enter(c);
    if (item < c->n_items) {
        c->norms[item]++;
        c->norm[item] = sq_norm;
    }
    leave(c);
}

static void run_lanes(const fr_registry *reg, const fr_sweep_item *items, size_t n_items,
                      size_t max_configs, int n_lanes, collected *c)
{
    memset(c, 0, sizeof *c);
    c->n_items = n_items;
    c->max_configs = max_configs;
    c->sums = calloc(n_items * max_configs, sizeof *c->sums);
    c->seen = calloc(n_items * max_configs, sizeof *c->seen);
    c->done = calloc(n_items, sizeof *c->done);
    c->norms = calloc(n_items, sizeof *c->norms);
    c->norm = calloc(n_items, sizeof *c->norm);
    if (!c->sums || !c->seen || !c->done || !c->norms || !c->norm) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    fr_executor_options opt = {.threads = 3, .device = -1, .seed = 1};
    fr_sweep_sink sink = {.ctx = c, .outcome = on_outcome, .item_done = on_done,
                          .item_norm = on_norm};
    fr_error err = {0};
    fr_status st;
    if (n_lanes == 0) {
        st = fr_exec_cpu(reg, items, n_items, &opt, &sink, &err);
    } else {
        int device[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
        st = fr_exec_lanes(fr_exec_cpu, device, n_lanes, reg, items, n_items, &opt, &sink, &err);
    }
    CHECK_MSG(st == FR_OK, "%d lanes: %s", n_lanes, err.msg);
}

static void collected_free(collected *c)
{
    free(c->sums);
    free(c->seen);
    free(c->done);
    free(c->norms);
    free(c->norm);
}

static void test_lanes(const char *model)
{
    fr_error err = {0};
    fr_registry reg;
    fr_source *src = NULL;
    if (fr_registry_init(&reg, &err) != FR_OK || fr_source_open(model, &src, &err) != FR_OK) {
        fr_test_fail(__FILE__, __LINE__, "setup: %s", err.msg);
        return;
    }
    /* a few configurations of every family, and every quantizable tensor */
    const fr_config_ref *cfgs[16];
    size_t n_cfgs = 0;
    for (size_t i = 0; i < reg.n_configs && n_cfgs < 16; i += 7) {
        const frontier_quantizer *q = fr_config_quantizer(&reg, &reg.configs[i]);
        if (!(q->flags & (FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS)))
            cfgs[n_cfgs++] = &reg.configs[i];
    }
    fr_sweep_item *items = calloc(src->n_tensors + 1, sizeof *items);
    size_t n_items = 0;
    for (size_t t = 0; t < src->n_tensors; t++) {
        char why[160];
        const fr_tensor *tensor = &src->tensors[t];
        if (fr_sweep_skip_reason(tensor, 0, why, sizeof why))
            continue;
        fr_sweep_item *it = &items[n_items++];
        it->src = src;
        it->tensor = tensor;
        fr_sweep_matrix(tensor, &it->rows, &it->cols);
        /* items with different numbers of configurations: costs differ */
        it->n_configs = 1 + t % n_cfgs;
        it->configs = cfgs;
    }
    CHECK(n_items > 8 && n_cfgs > 4);
    collected one, several;
    run_lanes(&reg, items, n_items, n_cfgs, 0, &one);
    for (int lanes = 1; lanes <= 4; lanes++) {
        run_lanes(&reg, items, n_items, n_cfgs, lanes, &several);
        CHECK_MSG(!several.overlapped, "%d lanes: two sink calls at once", lanes);
        for (size_t i = 0; i < n_items; i++) {
            CHECK_MSG(several.done[i] == 1 && several.norms[i] == 1,
                      "%d lanes: '%s' done %d times, norm %d times", lanes, items[i].tensor->name,
                      several.done[i], several.norms[i]);
            CHECK_MSG(several.norm[i] == one.norm[i], "%d lanes: '%s' norm differs", lanes,
                      items[i].tensor->name);
            for (size_t c = 0; c < items[i].n_configs; c++) {
                size_t k = i * n_cfgs + c;
                CHECK_MSG(several.seen[k] == 1, "%d lanes: %s on '%s' reported %d times", lanes,
                          cfgs[c]->cfg->name, items[i].tensor->name, several.seen[k]);
                CHECK_MSG(!memcmp(&several.sums[k], &one.sums[k], sizeof one.sums[k]),
                          "%d lanes: %s on '%s': sums differ from one executor", lanes,
                          cfgs[c]->cfg->name, items[i].tensor->name);
            }
        }
        collected_free(&several);
    }
    collected_free(&one);
    free(items);
    fr_source_close(src);
    fr_registry_free(&reg);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_shard MODEL.safetensors\n");
        return 2;
    }
    test_balance();
    test_devices();
    test_lost();
    test_lanes(argv[1]);
    return fr_test_finish("mpi.shard");
}
