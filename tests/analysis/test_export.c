/*
 * Writes every export format of a stories260K-shaped dataset (synth.h) into
 * the folder given as argv[1], for check_export.py, the pgfplots and the
 * gnuplot tests to read back; checks the options each format refuses.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/analysis/allocate.h"
#include "frontier/export/export.h"
#include "synth.h"

static void export_one(const fr_dataset *ds, const fr_result_index *ix, fr_export_options opt,
                       fr_export_format format, const char *dir, const char *file)
{
    char path[512];
    fr_error err;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    opt.format = format;
    fr_status st = fr_export(ds, ix, &opt, path, &err);
    if (st == FR_E_USAGE && !fr_plot_available() &&
        (format == FR_EXPORT_SVG || format == FR_EXPORT_PDF || format == FR_EXPORT_PNG)) {
        CHECK(strstr(err.msg, "without cairo") != NULL);
        return;
    }
    if (st != FR_OK)
        fprintf(stderr, "export %s: %s\n", file, err.msg);
    CHECK(st == FR_OK);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_export DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    fr_dataset ds;
    fr_error err;
    fr_result_index ix;
    fr_alloc_problem prob;
    fr_mixed_curve curve;
    synth_stories(&ds, 1);
    CHECK(fr_result_index_build(&ds, &ix, &err) == FR_OK);
    fr_alloc_options aopt = {FR_METRIC_REL_ERR, {NULL, NULL, NULL}, 0, NULL, 0, 0, NULL};
    CHECK(fr_alloc_prepare(&ds, &ix, &aopt, &prob, &err) == FR_OK);
    CHECK(fr_alloc_sweep(&prob, 2, 9, 0.05, 1, &curve, &err) == FR_OK);

    fr_export_options opt;
    memset(&opt, 0, sizeof opt);
    opt.y = FR_METRIC_REL_ERR;
    opt.log_y = 1;
    opt.by = FR_BY_FAMILY;
    opt.mixed = &curve;
    opt.label_frontier = 0;
    opt.dataset_path = "synthetic stories260K-shaped dataset";
    export_one(&ds, &ix, opt, FR_EXPORT_CSV, dir, "out.csv");
    export_one(&ds, &ix, opt, FR_EXPORT_JSON, dir, "out.json");
    export_one(&ds, &ix, opt, FR_EXPORT_TEX, dir, "out.tex");
    export_one(&ds, &ix, opt, FR_EXPORT_GNUPLOT, dir, "out.gp");
    export_one(&ds, &ix, opt, FR_EXPORT_SVG, dir, "out.svg");
    export_one(&ds, &ix, opt, FR_EXPORT_PDF, dir, "out.pdf");
    export_one(&ds, &ix, opt, FR_EXPORT_PNG, dir, "out.png");
    fr_export_options by_class = opt;
    by_class.by = FR_BY_CLASS;
    by_class.selection.configs = "^int[2-8]-g32-sym$";
    by_class.title = "Attention vs MLP (int, g32)";
    export_one(&ds, &ix, by_class, FR_EXPORT_PNG, dir, "class.png");
    export_one(&ds, &ix, by_class, FR_EXPORT_TEX, dir, "class.tex");
    fr_export_options sq = opt;
    sq.y = FR_METRIC_SQNR_DB;
    sq.log_y = 0;
    sq.label_frontier = 1;
    export_one(&ds, &ix, sq, FR_EXPORT_SVG, dir, "sqnr.svg");
    export_one(&ds, &ix, sq, FR_EXPORT_GNUPLOT, dir, "sqnr.gp");

    /* refused: log scale of decibels, grouping by tensor, an unwritable file */
    char path[512];
    snprintf(path, sizeof path, "%s/x.svg", dir);
    sq.log_y = 1;
    sq.format = FR_EXPORT_CSV;
    CHECK(fr_export(&ds, &ix, &sq, path, &err) == FR_E_USAGE);
    CHECK(strstr(err.msg, "--log-y") != NULL);
    fr_export_options bad = opt;
    bad.by = FR_BY_TENSOR;
    CHECK(fr_export(&ds, &ix, &bad, path, &err) == FR_E_USAGE);
    bad = opt;
    bad.format = FR_EXPORT_CSV;
    CHECK(fr_export(&ds, &ix, &bad, "/nonexistent-dir/x.csv", &err) == FR_E_OUTPUT);
    /* git style: the system error lowercased like every other message */
    CHECK(!strcmp(err.msg, "cannot write '/nonexistent-dir/x.csv': no such file or directory"));
    bad.format = FR_EXPORT_GNUPLOT;
    CHECK(fr_export(&ds, &ix, &bad, "/nonexistent-dir/x.gp", &err) == FR_E_OUTPUT);
    if (fr_plot_available()) {
        bad.format = FR_EXPORT_PNG;
        CHECK(fr_export(&ds, &ix, &bad, "/nonexistent-dir/x.png", &err) == FR_E_OUTPUT);
    }
    /* out_rel_err without calibration */
    bad = opt;
    bad.y = FR_METRIC_OUT_REL_ERR;
    bad.format = FR_EXPORT_CSV;
    CHECK(fr_export(&ds, &ix, &bad, path, &err) == FR_E_FORMAT);

    /* what check_export.py compares against */
    snprintf(path, sizeof path, "%s/expected.txt", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "results %zu\nmixed %zu\nconfigs %zu\ncairo %d\n", ds.n_results,
                curve.n_points, ds.n_configs, fr_plot_available());
        fclose(f);
    }
    fr_mixed_curve_free(&curve);
    fr_alloc_problem_free(&prob);
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);
    return fr_test_finish("test_export");
}
