/* Minimal checks for the sweep area's C tests: each failure is printed
 * with its line; main returns nonzero when any check failed. */
#ifndef FR_SWEEP_TEST_UTIL_H
#define FR_SWEEP_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int test_failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            test_failures++;                                                 \
        }                                                                    \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                   \
    do {                                                                     \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                     \
        if (a_ != b_) {                                                      \
            fprintf(stderr, "%s:%d: %s == %s failed: %llu != %llu\n", __FILE__, __LINE__, #a, \
                    #b, (unsigned long long)a_, (unsigned long long)b_);     \
            test_failures++;                                                 \
        }                                                                    \
    } while (0)

#define CHECK_STR(a, b)                                                      \
    do {                                                                     \
        const char *a_ = (a), *b_ = (b);                                     \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                             \
            fprintf(stderr, "%s:%d: '%s' != '%s'\n", __FILE__, __LINE__, a_ ? a_ : "(null)", \
                    b_ ? b_ : "(null)");                                     \
            test_failures++;                                                 \
        }                                                                    \
    } while (0)

/* expr returns an fr_status; err is the fr_error it fills */
#define CHECK_OK(expr, err)                                                  \
    do {                                                                     \
        int st_ = (int)(expr);                                               \
        if (st_ != 0) {                                                      \
            fprintf(stderr, "%s:%d: %s failed (%d): %s\n", __FILE__, __LINE__, #expr, st_, \
                    (err).msg);                                              \
            test_failures++;                                                 \
        }                                                                    \
    } while (0)

static inline int test_report(const char *name)
{
    if (test_failures)
        fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
    else
        printf("%s: all checks passed\n", name);
    return test_failures ? 1 : 0;
}

#endif
