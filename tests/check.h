/*
 * The checks of every C test: a failed check prints file:line and what
 * failed on stderr, counts, and the test goes on; fr_test_finish turns the
 * count into the exit code (0 pass, 1 fail; a test that skips exits 77
 * itself, the CTest SKIP_RETURN_CODE). One splitmix64 generator for the
 * seeded data of every suite.
 *
 * Only the first FR_TEST_MAX_PRINTED failures are printed (define it before
 * including this header to change it); all are counted.
 */
#ifndef FR_TEST_CHECK_H
#define FR_TEST_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef FR_TEST_MAX_PRINTED
#define FR_TEST_MAX_PRINTED 50
#endif

#define FR_TEST_SKIP 77

/* Failed checks so far; a test may add a count it made itself. Unused in
 * hosts such as plugin_driver that share a test header but check nothing. */
static long fr_test_failures __attribute__((unused));

/* Counts one failure and prints "file:line: [check failed: cond: ]message". */
static inline void fr_test_failv(const char *file, int line, const char *cond, const char *fmt,
                                 va_list ap)
{
    if (++fr_test_failures > FR_TEST_MAX_PRINTED)
        return;
    fprintf(stderr, "%s:%d: ", file, line);
    if (cond)
        fprintf(stderr, "check failed: %s: ", cond);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    if (fr_test_failures == FR_TEST_MAX_PRINTED)
        fprintf(stderr, "(further failures are counted, not printed)\n");
}

static inline __attribute__((format(printf, 3, 4))) void fr_test_fail(const char *file, int line,
                                                                       const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fr_test_failv(file, line, NULL, fmt, ap);
    va_end(ap);
}

static inline __attribute__((format(printf, 4, 5))) void
fr_test_fail_check(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fr_test_failv(file, line, cond, fmt, ap);
    va_end(ap);
}

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond))                                                                           \
            fr_test_fail(__FILE__, __LINE__, "check failed: %s", #cond);                       \
    } while (0)

/* CHECK with a printf-style explanation: CHECK_MSG(rc == 0, "%s: rc %d", name, rc). */
#define CHECK_MSG(cond, ...)                                                                   \
    do {                                                                                       \
        if (!(cond))                                                                           \
            fr_test_fail_check(__FILE__, __LINE__, #cond, __VA_ARGS__);                        \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                     \
    do {                                                                                       \
        uint64_t fr_test_a_ = (uint64_t)(a), fr_test_b_ = (uint64_t)(b);                       \
        if (fr_test_a_ != fr_test_b_)                                                          \
            fr_test_fail(__FILE__, __LINE__, "%s == %s failed: %llu != %llu", #a, #b,          \
                         (unsigned long long)fr_test_a_, (unsigned long long)fr_test_b_);      \
    } while (0)

/* Whole-string equality (messages are part of the interface); NULL never matches. */
static inline void fr_test_check_str(const char *file, int line, const char *got,
                                     const char *expected)
{
    if (!got || !expected || strcmp(got, expected) != 0)
        fr_test_fail(file, line, "strings differ\n  got:      %s\n  expected: %s",
                     got ? got : "(null)", expected ? expected : "(null)");
}
#define CHECK_STR(got, expected) fr_test_check_str(__FILE__, __LINE__, (got), (expected))

/* a and b agree to rel relative to the larger magnitude. */
#define CHECK_NEAR(a, b, rel)                                                                  \
    do {                                                                                       \
        double fr_test_a_ = (a), fr_test_b_ = (b);                                             \
        if (!(fabs(fr_test_a_ - fr_test_b_) <=                                                 \
              (rel) * fmax(fabs(fr_test_a_), fabs(fr_test_b_)) + 1e-300))                      \
            fr_test_fail(__FILE__, __LINE__, "%s = %.17g, expected %s = %.17g", #a, fr_test_a_, \
                         #b, fr_test_b_);                                                      \
    } while (0)

/* expr returns a status (0: success); err is the error struct whose msg it fills. */
#define CHECK_OK(expr, err)                                                                    \
    do {                                                                                       \
        int fr_test_st_ = (int)(expr);                                                         \
        if (fr_test_st_ != 0)                                                                  \
            fr_test_fail(__FILE__, __LINE__, "%s failed (%d): %s", #expr, fr_test_st_,         \
                         (err).msg);                                                           \
    } while (0)

/* The exit code of a test: 1 after printing the count of failed checks, else 0
 * after "name: all checks passed". */
static inline int fr_test_finish(const char *name)
{
    if (fr_test_failures) {
        fprintf(stderr, "%s: %ld check(s) failed\n", name, fr_test_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

/* splitmix64 (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number
 * generators"): golden values of several tests rest on this exact sequence. */
static inline uint64_t fr_test_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1): the top 53 bits. */
static inline double fr_test_uniform(uint64_t *state)
{
    return (double)(fr_test_splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform in (0, 1), never 0 (safe under log): the top 53 bits plus one half. */
static inline double fr_test_uniform_open(uint64_t *state)
{
    return ((double)(fr_test_splitmix64(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

#endif
