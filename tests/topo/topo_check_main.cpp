/* Runner of the topo tests: `topo_tests [name-prefix]`. */
#include "topo_check.h"

#include <cstring>

namespace topo_check {

namespace {

struct Test {
    const char *name;
    TestFn fn;
};

std::vector<Test> &registry()
{
    static std::vector<Test> tests; /* function-local: safe during static init */
    return tests;
}

int failures_in_current_test = 0;

} // namespace

Registrar::Registrar(const char *name, TestFn fn) { registry().push_back({name, fn}); }

void fail(const char *file, int line, const std::string &what)
{
    ++failures_in_current_test;
    std::printf("  FAILED %s:%d: %s\n", file, line, what.c_str());
}

} // namespace topo_check

int main(int argc, char **argv)
{
    using namespace topo_check;
    const char *prefix = argc > 1 ? argv[1] : "";
    int ran = 0, failed = 0;
    for (const Test &t : registry()) {
        if (std::strncmp(t.name, prefix, std::strlen(prefix)) != 0)
            continue;
        failures_in_current_test = 0;
        std::printf("[ RUN  ] %s\n", t.name);
        t.fn();
        ++ran;
        failed += failures_in_current_test > 0;
        std::printf("[ %s ] %s\n", failures_in_current_test ? "FAIL" : " OK ", t.name);
    }
    if (ran == 0) {
        std::printf("no test name starts with '%s'\n", prefix);
        return 1;
    }
    std::printf("%d test(s), %d failed\n", ran, failed);
    return failed ? 1 : 0;
}
