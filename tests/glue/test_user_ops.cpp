// The user-op tables of mca_coll_gpu/coll_gpu_user_ops.c, without Open MPI:
// parsing coll_gpu_user_op_symbols, matching symbols, recognising functions
// through dladdr (this program is linked with -rdynamic, as Horovod's library
// exports its symbols) with the cache, and the declaration table, also from
// several threads at once.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "coll_gpu_user_ops.h"

#include "../common/check.h"

// Horovod's four fp16 functions under their own names and signature: Open
// MPI's MPI_Datatype is struct ompi_datatype_t *, so the compiler mangles
// them exactly as horovod/common/half.cc's, which the default value names.
struct ompi_datatype_t;
#define EXPORTED __attribute__((visibility("default"), noinline))
namespace horovod {
namespace common {
EXPORTED void float16_sum(void *, void *, int *, ompi_datatype_t **) { std::puts("sum"); }
EXPORTED void float16_min(void *, void *, int *, ompi_datatype_t **) { std::puts("min"); }
EXPORTED void float16_max(void *, void *, int *, ompi_datatype_t **) { std::puts("max"); }
EXPORTED void float16_prod(void *, void *, int *, ompi_datatype_t **) { std::puts("prod"); }
} // namespace common
} // namespace horovod
extern "C" EXPORTED void other_exported(void *, void *, int *, ompi_datatype_t **) { std::puts("other"); }
// Internal linkage: no dynamic symbol, so dladdr cannot name it.
static __attribute__((noinline)) void unnamed_sum(void *, void *, int *, ompi_datatype_t **) { std::puts("unnamed"); }

namespace {

void *fn_of(void (*f)(void *, void *, int *, ompi_datatype_t **)) { return reinterpret_cast<void *>(f); }

bool is(const coll_gpu_meaning_t &m, gpucoll_dtype_t d, gpucoll_op_t o) { return m.dtype == d && m.op == o; }

void test_meaning()
{
    coll_gpu_meaning_t m{};
    auto parse = [&](const char *s) { return coll_gpu_meaning_parse(s, std::strlen(s), &m); };
    CHECK(parse("float16:sum") && is(m, GPUCOLL_FLOAT16, GPUCOLL_OP_SUM));
    CHECK(parse("BFLOAT16:Max") && is(m, GPUCOLL_BFLOAT16, GPUCOLL_OP_MAX));
    CHECK(parse("int32:bxor") && is(m, GPUCOLL_INT32, GPUCOLL_OP_BXOR));
    CHECK(parse("uint8:land") && is(m, GPUCOLL_UINT8, GPUCOLL_OP_LAND));
    CHECK(!parse("float32:band"), "no bitwise op on floats");
    CHECK(!parse("float16"));
    CHECK(!parse("float16:"));
    CHECK(!parse(":sum"));
    CHECK(!parse("half:sum"));
    CHECK(!parse("float16:summ"));
    CHECK(!parse("float16:su"), "a prefix of a name is not the name");
    CHECK(coll_gpu_meaning_parse("float16:sumXXX", 11, &m) && is(m, GPUCOLL_FLOAT16, GPUCOLL_OP_SUM),
          "only `len` bytes count");
}

struct Reports {
    std::vector<std::string> entries, whys;
};
void record(void *ctx, const char *entry, const char *why)
{
    auto *r = static_cast<Reports *>(ctx);
    r->entries.push_back(entry);
    r->whys.push_back(why);
}

void test_parse()
{
    coll_gpu_symbol_rule_t *rules = nullptr;
    Reports rep;
    int n = coll_gpu_symbol_rules_parse(COLL_GPU_USER_OP_SYMBOLS_DEFAULT, &rules, record, &rep);
    CHECK(n == 4 && rep.entries.empty(), "default: %d rules, %zu reports", n, rep.entries.size());
    const gpucoll_op_t ops[] = {GPUCOLL_OP_SUM, GPUCOLL_OP_MIN, GPUCOLL_OP_MAX, GPUCOLL_OP_PROD};
    for (int i = 0; i < n && i < 4; i++) CHECK(is(rules[i].as, GPUCOLL_FLOAT16, ops[i]), "rule %d", i);
    CHECK(n == 4 && coll_gpu_symbol_rules_match(rules, n, "_ZN7horovod6common11float16_sumEPvS1_PiPP15ompi_datatype_t") == &rules[0]);
    CHECK(coll_gpu_symbol_rules_match(rules, n, "_ZN7horovod6common11float16_sum") == nullptr, "a prefix");
    CHECK(coll_gpu_symbol_rules_match(rules, n, nullptr) == nullptr);
    coll_gpu_symbol_rules_free(rules, n);

    for (const char *off : {"", "none"}) {
        n = coll_gpu_symbol_rules_parse(off, &rules, record, &rep);
        CHECK(n == 0 && rules == nullptr && rep.entries.empty(), "\"%s\": %d rules", off, n);
    }
    CHECK(coll_gpu_symbol_rules_parse(nullptr, &rules, record, &rep) == 0 && rules == nullptr);

    n = coll_gpu_symbol_rules_parse(" a=float16:sum ,\n\tb=int32:band,,c=BFLOAT16:PROD\n", &rules, record, &rep);
    CHECK(n == 3 && rep.entries.empty(), "%d rules", n);
    if (n == 3) {
        CHECK(std::strcmp(rules[0].symbol, "a") == 0 && is(rules[0].as, GPUCOLL_FLOAT16, GPUCOLL_OP_SUM));
        CHECK(std::strcmp(rules[1].symbol, "b") == 0 && is(rules[1].as, GPUCOLL_INT32, GPUCOLL_OP_BAND));
        CHECK(std::strcmp(rules[2].symbol, "c") == 0 && is(rules[2].as, GPUCOLL_BFLOAT16, GPUCOLL_OP_PROD));
    }
    coll_gpu_symbol_rules_free(rules, n);

    // Each bad entry is reported and left out; the good one stays.
    n = coll_gpu_symbol_rules_parse("x,=float16:sum,y=float16:band,z=float16,ok=float16:min,w=float16:sum:extra",
                                    &rules, record, &rep);
    CHECK(n == 1 && std::strcmp(rules[0].symbol, "ok") == 0 && is(rules[0].as, GPUCOLL_FLOAT16, GPUCOLL_OP_MIN),
          "%d rules", n);
    const char *bad[] = {"x", "=float16:sum", "y=float16:band", "z=float16", "w=float16:sum:extra"};
    CHECK(rep.entries.size() == 5, "%zu reports", rep.entries.size());
    for (size_t i = 0; i < rep.entries.size() && i < 5; i++)
        CHECK(rep.entries[i] == bad[i] && !rep.whys[i].empty(), "report %zu: %s", i, rep.entries[i].c_str());
    coll_gpu_symbol_rules_free(rules, n);
}

const coll_gpu_symbol_rule_t *ask(coll_gpu_recogniser_t *r, void *fn, const char *spec, bool *fresh = nullptr)
{
    return coll_gpu_recognise(r, fn, spec, nullptr, nullptr, fresh);
}

void test_recognise_default()
{
    static coll_gpu_recogniser_t r = COLL_GPU_RECOGNISER_INIT;
    struct {
        void *fn;
        gpucoll_op_t op;
    } hvd[] = {{fn_of(horovod::common::float16_sum), GPUCOLL_OP_SUM},
               {fn_of(horovod::common::float16_min), GPUCOLL_OP_MIN},
               {fn_of(horovod::common::float16_max), GPUCOLL_OP_MAX},
               {fn_of(horovod::common::float16_prod), GPUCOLL_OP_PROD}};
    for (auto &h : hvd) {
        bool fresh = false;
        const coll_gpu_symbol_rule_t *rule = ask(&r, h.fn, COLL_GPU_USER_OP_SYMBOLS_DEFAULT, &fresh);
        CHECK(rule && is(rule->as, GPUCOLL_FLOAT16, h.op) && fresh, "Horovod's op %s", gpucoll_op_name(h.op));
        rule = ask(&r, h.fn, "ignored after the first call", &fresh);
        CHECK(rule && is(rule->as, GPUCOLL_FLOAT16, h.op) && !fresh, "second time, from the cache");
    }
    bool fresh = false;
    CHECK(ask(&r, fn_of(unnamed_sum), nullptr, &fresh) == nullptr && fresh, "a function without a dynamic symbol");
    CHECK(ask(&r, fn_of(unnamed_sum), nullptr, &fresh) == nullptr && !fresh, "the negative answer is cached");
    CHECK(ask(&r, fn_of(other_exported), nullptr) == nullptr, "an exported function no rule names");
    // An address inside a named function is not that function.
    void *inside = static_cast<char *>(fn_of(horovod::common::float16_sum)) + 1;
    CHECK(ask(&r, inside, nullptr, &fresh) == nullptr && fresh, "inside float16_sum");
    CHECK(ask(&r, nullptr, nullptr) == nullptr);
}

void test_recognise_off_and_custom()
{
    static coll_gpu_recogniser_t off = COLL_GPU_RECOGNISER_INIT;
    bool fresh = true;
    CHECK(ask(&off, fn_of(horovod::common::float16_sum), "none", &fresh) == nullptr && !fresh, "none: no dladdr");
    CHECK(ask(&off, fn_of(horovod::common::float16_sum), COLL_GPU_USER_OP_SYMBOLS_DEFAULT) == nullptr,
          "the value is read once");
    static coll_gpu_recogniser_t empty = COLL_GPU_RECOGNISER_INIT;
    CHECK(ask(&empty, fn_of(horovod::common::float16_max), "") == nullptr, "empty: none");
    // A custom value: only what it names, with the meaning it gives.
    static coll_gpu_recogniser_t custom = COLL_GPU_RECOGNISER_INIT;
    const char *spec = "other_exported=bfloat16:max unnamed_sum=float16:sum";
    const coll_gpu_symbol_rule_t *rule = ask(&custom, fn_of(other_exported), spec);
    CHECK(rule && is(rule->as, GPUCOLL_BFLOAT16, GPUCOLL_OP_MAX));
    CHECK(ask(&custom, fn_of(horovod::common::float16_sum), spec) == nullptr, "not named any more");
    CHECK(ask(&custom, fn_of(unnamed_sum), spec) == nullptr, "named, but dladdr cannot see its name");
}

// Past the cache's room every answer is still right (asked again each time).
void test_cache_full()
{
    static coll_gpu_recogniser_t r = COLL_GPU_RECOGNISER_INIT;
    static char data[COLL_GPU_FN_CACHE_MAX + 50];
    for (int i = 1; i < COLL_GPU_FN_CACHE_MAX + 40; i++)
        CHECK(ask(&r, data + i, COLL_GPU_USER_OP_SYMBOLS_DEFAULT) == nullptr, "data address %d", i);
    CHECK(r.count == COLL_GPU_FN_CACHE_MAX, "cache holds %d", r.count);
    for (int round = 0; round < 2; round++) {
        bool fresh = false;
        const coll_gpu_symbol_rule_t *rule = ask(&r, fn_of(horovod::common::float16_prod), nullptr, &fresh);
        CHECK(rule && is(rule->as, GPUCOLL_FLOAT16, GPUCOLL_OP_PROD) && fresh, "round %d, cache full", round);
    }
}

// Threads racing the first parse and each function's first lookup.
void test_recognise_threads()
{
    static coll_gpu_recogniser_t r = COLL_GPU_RECOGNISER_INIT;
    void *fns[] = {fn_of(horovod::common::float16_sum), fn_of(horovod::common::float16_min),
                   fn_of(horovod::common::float16_max), fn_of(horovod::common::float16_prod), fn_of(unnamed_sum)};
    const gpucoll_op_t want[] = {GPUCOLL_OP_SUM, GPUCOLL_OP_MIN, GPUCOLL_OP_MAX, GPUCOLL_OP_PROD, GPUCOLL_OP_NONE};
    std::atomic<int> wrong{0}, fresh_total{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; t++)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 2000; i++) {
                int k = (i + t) % 5;
                bool fresh = false;
                const coll_gpu_symbol_rule_t *rule = ask(&r, fns[k], COLL_GPU_USER_OP_SYMBOLS_DEFAULT, &fresh);
                gpucoll_op_t got = rule ? rule->as.op : GPUCOLL_OP_NONE;
                wrong += got != want[k];
                fresh_total += fresh;
            }
        });
    for (auto &t : threads) t.join();
    CHECK(wrong == 0, "%d wrong answers", wrong.load());
    CHECK(fresh_total == 5, "dladdr asked %d times for 5 functions", fresh_total.load());
}

coll_gpu_decl_key_t key(void *fn, size_t size, int predefined) { return coll_gpu_decl_key_t{fn, size, predefined}; }

void test_declarations()
{
    static coll_gpu_decl_table_t t = COLL_GPU_DECL_TABLE_INIT;
    void *f = fn_of(unnamed_sum);
    coll_gpu_meaning_t sum{GPUCOLL_FLOAT16, GPUCOLL_OP_SUM}, max{GPUCOLL_FLOAT16, GPUCOLL_OP_MAX}, got{}, prior{};
    CHECK(!coll_gpu_decl_find(&t, key(f, 2, -1), &got), "empty table");
    CHECK(coll_gpu_decl_add(&t, key(f, 2, -1), sum, &prior) == COLL_GPU_DECL_ADDED);
    CHECK(coll_gpu_decl_add(&t, key(f, 2, -1), sum, &prior) == COLL_GPU_DECL_SAME);
    CHECK(coll_gpu_decl_add(&t, key(f, 2, -1), max, &prior) == COLL_GPU_DECL_CONFLICT &&
              is(prior, GPUCOLL_FLOAT16, GPUCOLL_OP_SUM), "a declaration is never changed");
    CHECK(coll_gpu_decl_find(&t, key(f, 2, -1), &got) && is(got, GPUCOLL_FLOAT16, GPUCOLL_OP_SUM));
    CHECK(!coll_gpu_decl_find(&t, key(f, 4, -1), &got), "another size");
    CHECK(!coll_gpu_decl_find(&t, key(f, 2, 7), &got), "a predefined type, not the derived ones");
    CHECK(!coll_gpu_decl_find(&t, key(fn_of(other_exported), 2, -1), &got), "another function");
    // The same function on a predefined type is a key of its own.
    CHECK(coll_gpu_decl_add(&t, key(f, 2, 7), max, nullptr) == COLL_GPU_DECL_ADDED);
    CHECK(coll_gpu_decl_find(&t, key(f, 2, 7), &got) && is(got, GPUCOLL_FLOAT16, GPUCOLL_OP_MAX));
    CHECK(coll_gpu_decl_find(&t, key(f, 2, -1), &got) && is(got, GPUCOLL_FLOAT16, GPUCOLL_OP_SUM));
    static char fake[COLL_GPU_DECL_MAX];
    int added = 2;
    for (int i = 0; added < COLL_GPU_DECL_MAX; i++, added++)
        CHECK(coll_gpu_decl_add(&t, key(fake + i, 4, -1), coll_gpu_meaning_t{GPUCOLL_INT32, GPUCOLL_OP_BOR}, nullptr) ==
              COLL_GPU_DECL_ADDED);
    CHECK(coll_gpu_decl_add(&t, key(fake + COLL_GPU_DECL_MAX - 1, 4, -1), sum, nullptr) == COLL_GPU_DECL_FULL);
    CHECK(coll_gpu_decl_add(&t, key(f, 2, -1), sum, nullptr) == COLL_GPU_DECL_SAME, "full, but known");
}

// Adders and finders at once: a found entry is always the one added for its key.
void test_declaration_threads()
{
    static coll_gpu_decl_table_t t = COLL_GPU_DECL_TABLE_INIT;
    static char fns[COLL_GPU_DECL_MAX];
    auto meaning_of = [](int i) {
        return coll_gpu_meaning_t{(gpucoll_dtype_t)(i % 2 ? GPUCOLL_INT64 : GPUCOLL_UINT64),
                                  (gpucoll_op_t)(GPUCOLL_OP_SUM + i % 4)};
    };
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; w++)
        threads.emplace_back([&, w] {
            for (int i = w; i < COLL_GPU_DECL_MAX; i += 4)
                wrong += coll_gpu_decl_add(&t, key(fns + i, 8, -1), meaning_of(i), nullptr) != COLL_GPU_DECL_ADDED;
        });
    for (int rd = 0; rd < 4; rd++)
        threads.emplace_back([&] {
            for (int round = 0; round < 200; round++)
                for (int i = 0; i < COLL_GPU_DECL_MAX; i++) {
                    coll_gpu_meaning_t got{};
                    coll_gpu_meaning_t want = meaning_of(i);
                    if (coll_gpu_decl_find(&t, key(fns + i, 8, -1), &got)) wrong += !is(got, want.dtype, want.op);
                }
        });
    for (auto &th : threads) th.join();
    CHECK(wrong == 0, "%d wrong", wrong.load());
    for (int i = 0; i < COLL_GPU_DECL_MAX; i++) {
        coll_gpu_meaning_t got{};
        CHECK(coll_gpu_decl_find(&t, key(fns + i, 8, -1), &got) && is(got, meaning_of(i).dtype, meaning_of(i).op),
              "entry %d", i);
    }
}

} // namespace

int main()
{
    test_meaning();
    test_parse();
    test_recognise_default();
    test_recognise_off_and_custom();
    test_cache_full();
    test_recognise_threads();
    test_declarations();
    test_declaration_threads();
    std::printf("test_user_ops: %d failures\n", failures);
    return failures ? 1 : 0;
}
