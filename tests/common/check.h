// The check macro of the unit tests: CHECK(cond) or CHECK(cond, "fmt", args...)
// records a failure (printing the first 30) and lets the test go on, so one
// run reports every broken case. Each test returns failures ? 1 : 0.
#pragma once

#include <cstdarg>
#include <cstdio>

static int failures;

static inline void check_failed(const char *file, int line, const char *expr, const char *fmt, ...)
{
    if (failures++ >= 30) return;
    std::printf("FAIL %s:%d: %s", file, line, expr);
    if (fmt[0]) {
        std::printf(": ");
        va_list ap;
        va_start(ap, fmt);
        std::vprintf(fmt, ap);
        va_end(ap);
    }
    std::printf("\n");
}

// "" glues onto an optional format string, so a bare CHECK(cond) works too.
#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) check_failed(__FILE__, __LINE__, #cond, "" __VA_ARGS__); \
    } while (0)
