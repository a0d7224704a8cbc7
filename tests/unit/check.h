/* Minimal assertion helpers for hotbuf's unit tests.
 *
 * Each unit test is a standalone program: CHECK() failures are printed and
 * counted, and the program's exit status is the number of failed checks, so
 * the runner (tests/run-tests.sh) needs no framework to tell pass from fail.
 */
#ifndef HOTBUF_TEST_CHECK_H
#define HOTBUF_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
            check_failures++;                                                  \
        }                                                                      \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                     \
    do {                                                                       \
        unsigned long long a_ = (unsigned long long)(a);                       \
        unsigned long long b_ = (unsigned long long)(b);                       \
        if (a_ != b_) {                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%llu != %llu)\n",  \
                    __FILE__, __LINE__, #a, #b, a_, b_);                       \
            check_failures++;                                                  \
        }                                                                      \
    } while (0)

#define CHECK_STR(a, b)                                                        \
    do {                                                                       \
        const char *a_ = (a), *b_ = (b);                                       \
        if (strcmp(a_, b_)) {                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: \"%s\" == \"%s\"\n",         \
                    __FILE__, __LINE__, a_, b_);                               \
            check_failures++;                                                  \
        }                                                                      \
    } while (0)

/* Runs run(seed) for seeds 1..n (each returns nonzero when that seed
 * failed) and checks that none failed, saying how many did. */
#define CHECK_SEEDS(run, n, what)                                              \
    do {                                                                       \
        int bad_ = 0;                                                          \
        for (unsigned seed_ = 1; seed_ <= (n); seed_++)                        \
            bad_ += (run)(seed_) != 0;                                         \
        if (bad_)                                                              \
            fprintf(stderr, "%d of %u random %s failed\n", bad_,               \
                    (unsigned)(n), what);                                      \
        CHECK(bad_ == 0);                                                      \
    } while (0)

/* Returns the exit status for main(). */
#define CHECK_DONE()                                                           \
    (fprintf(stderr, "%s: %d check(s) failed\n", __FILE__, check_failures),    \
     check_failures ? 1 : 0)

#endif
