/* A tiny test framework for the topo tests: no dependencies.
 *
 *   TOPO_TEST(plan_two_nodes) { CHECK_EQ(plan.nodes.size(), 2u); ... }
 *
 * CHECK / CHECK_EQ report the failure (file:line, expression, both values)
 * and let the test go on; REQUIRE / REQUIRE_OK stop the current test.
 * The runner (topo_check_main.cpp) runs every test whose name starts with
 * argv[1] (all when absent) and exits non-zero if any check failed. */
#ifndef GPUCOLL_TOPO_CHECK_H
#define GPUCOLL_TOPO_CHECK_H

#include "gpucoll_topo.h"

#include <cstdio>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace topo_check {

using TestFn = void (*)();

struct Registrar {
    Registrar(const char *name, TestFn fn);
};

/* Records one failed check of the running test. */
void fail(const char *file, int line, const std::string &what);

/* Printable text of a value, for failure messages. */
inline std::string text(const std::string &s) { return "\"" + s + "\""; }
inline std::string text(const char *s) { return s ? text(std::string(s)) : "(null)"; }
inline std::string text(bool b) { return b ? "true" : "false"; }
inline std::string text(gpucoll_status_t s) { return gpucoll_status_name(s); }
inline std::string text(gpucoll::topo::LinkKind k) { return gpucoll::topo::link_kind_name(k); }
inline std::string text(gpucoll::topo::PeerAccess p)
{
    return p == gpucoll::topo::PeerAccess::Yes ? "yes" : p == gpucoll::topo::PeerAccess::No ? "no" : "unknown";
}
template <typename T>
typename std::enable_if<std::is_arithmetic<T>::value, std::string>::type text(T v)
{
    std::ostringstream os;
    os << +v; /* + prints uint8_t as a number */
    return os.str();
}
template <typename T> std::string text(const std::vector<T> &v)
{
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i)
        s += (i ? "," : "") + text(v[i]);
    return s + "}";
}

} // namespace topo_check

#define TOPO_TEST(name)                                                                                      \
    static void name();                                                                                      \
    static topo_check::Registrar name##_registrar(#name, name);                                              \
    static void name()

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond))                                                                                         \
            topo_check::fail(__FILE__, __LINE__, "CHECK(" #cond ")");                                         \
    } while (0)

#define CHECK_EQ(actual, expected)                                                                           \
    do {                                                                                                     \
        const auto &check_a_ = (actual);                                                                     \
        const auto &check_e_ = (expected);                                                                   \
        if (!(check_a_ == check_e_))                                                                         \
            topo_check::fail(__FILE__, __LINE__,                                                             \
                             "CHECK_EQ(" #actual ", " #expected "): got " + topo_check::text(check_a_) +    \
                                 ", expected " + topo_check::text(check_e_));                                \
    } while (0)

#define REQUIRE(cond)                                                                                        \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            topo_check::fail(__FILE__, __LINE__, "REQUIRE(" #cond ")");                                       \
            return;                                                                                          \
        }                                                                                                    \
    } while (0)

/* The call must return GPUCOLL_SUCCESS; prints gpucoll_last_error() if not. */
#define REQUIRE_OK(call)                                                                                     \
    do {                                                                                                     \
        const gpucoll_status_t check_s_ = (call);                                                            \
        if (check_s_ != GPUCOLL_SUCCESS) {                                                                   \
            topo_check::fail(__FILE__, __LINE__,                                                             \
                             std::string(#call " failed: ") + gpucoll_status_name(check_s_) + ": " +         \
                                 gpucoll_last_error());                                                      \
            return;                                                                                          \
        }                                                                                                    \
    } while (0)

#endif
