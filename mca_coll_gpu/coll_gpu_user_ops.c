/* The user-op tables of coll_gpu_user_ops.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "coll_gpu_user_ops.h"

#include <ctype.h>
#include <stdio.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Index of the table entry named `name` (`len` bytes, any case), or -1. */
static int name_index(const char *name, size_t len, const char *(*name_of)(int), int count)
{
    for (int i = 0; i < count; i++) {
        const char *n = name_of(i);
        if (strlen(n) == len && strncasecmp(n, name, len) == 0) return i;
    }
    return -1;
}

static const char *dtype_name_of(int i) { return gpucoll_dtype_name((gpucoll_dtype_t)i); }
static const char *op_name_of(int i) { return gpucoll_op_name((gpucoll_op_t)i); }

bool coll_gpu_meaning_parse(const char *text, size_t len, coll_gpu_meaning_t *m)
{
    const char *colon = memchr(text, ':', len);
    if (colon == NULL) return false;
    size_t tlen = (size_t)(colon - text), olen = len - tlen - 1;
    int d = name_index(text, tlen, dtype_name_of, GPUCOLL_DTYPE_COUNT);
    int o = name_index(colon + 1, olen, op_name_of, GPUCOLL_OP_COUNT);
    if (d < 0 || o < 0 || !gpucoll_op_valid((gpucoll_op_t)o, (gpucoll_dtype_t)d)) return false;
    m->dtype = (gpucoll_dtype_t)d;
    m->op = (gpucoll_op_t)o;
    return true;
}

static bool is_separator(char c) { return c == ',' || isspace((unsigned char)c); }

/* One "SYMBOL=TYPE:OP" entry into *rule; NULL, or why it is not one. */
static const char *parse_rule(const char *entry, size_t len, coll_gpu_symbol_rule_t *rule)
{
    const char *eq = memchr(entry, '=', len);
    if (eq == NULL) return "no '=' between the symbol and TYPE:OP";
    if (eq == entry) return "no symbol before '='";
    size_t slen = (size_t)(eq - entry);
    if (!coll_gpu_meaning_parse(eq + 1, len - slen - 1, &rule->as))
        return "not TYPE:OP with a type and op the GPU kernels reduce (e.g. float16:sum)";
    if ((rule->symbol = malloc(slen + 1)) == NULL) return "out of memory";
    memcpy(rule->symbol, entry, slen);
    rule->symbol[slen] = '\0';
    return NULL;
}

int coll_gpu_symbol_rules_parse(const char *spec, coll_gpu_symbol_rule_t **rules, coll_gpu_report_fn report,
                                void *ctx)
{
    *rules = NULL;
    if (spec == NULL || strcmp(spec, "none") == 0) return 0;
    size_t most = 1;
    for (const char *p = spec; *p; p++) most += is_separator(*p);
    coll_gpu_symbol_rule_t *out = calloc(most, sizeof *out);
    if (out == NULL) {
        if (report) report(ctx, spec, "out of memory");
        return 0;
    }
    int n = 0;
    for (const char *p = spec; *p;) {
        if (is_separator(*p)) {
            p++;
            continue;
        }
        size_t len = 0;
        while (p[len] && !is_separator(p[len])) len++;
        const char *why = parse_rule(p, len, &out[n]);
        if (why == NULL) {
            n++;
        } else if (report) {
            char entry[256];
            snprintf(entry, sizeof entry, "%.*s", (int)(len < 255 ? len : 255), p);
            report(ctx, entry, why);
        }
        p += len;
    }
    if (n == 0) {
        free(out);
        out = NULL;
    }
    *rules = out;
    return n;
}

void coll_gpu_symbol_rules_free(coll_gpu_symbol_rule_t *rules, int n)
{
    for (int i = 0; i < n; i++) free(rules[i].symbol);
    free(rules);
}

const coll_gpu_symbol_rule_t *coll_gpu_symbol_rules_match(const coll_gpu_symbol_rule_t *rules, int n,
                                                          const char *symbol)
{
    for (int i = 0; symbol != NULL && i < n; i++)
        if (strcmp(rules[i].symbol, symbol) == 0) return &rules[i];
    return NULL;
}

/* ---- recognition ---------------------------------------------------------- */

static bool cached(coll_gpu_recogniser_t *r, void *fn, const coll_gpu_symbol_rule_t **rule)
{
    int n = __atomic_load_n(&r->count, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        if (r->cache[i].fn != fn) continue;
        *rule = r->cache[i].rule;
        return true;
    }
    return false;
}

static const coll_gpu_symbol_rule_t *ask_dladdr(const coll_gpu_recogniser_t *r, void *fn)
{
    Dl_info info;
    if (fn == NULL || dladdr(fn, &info) == 0 || info.dli_saddr != fn) return NULL;
    return coll_gpu_symbol_rules_match(r->rules, r->nrules, info.dli_sname);
}

const coll_gpu_symbol_rule_t *coll_gpu_recognise(coll_gpu_recogniser_t *r, void *fn, const char *spec,
                                                 coll_gpu_report_fn report, void *ctx, bool *fresh)
{
    const coll_gpu_symbol_rule_t *rule = NULL;
    if (fresh) *fresh = false;
    if (__atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) && (cached(r, fn, &rule) || r->nrules == 0)) return rule;
    pthread_mutex_lock(&r->lock);
    if (!r->ready) {
        r->nrules = coll_gpu_symbol_rules_parse(spec, &r->rules, report, ctx);
        __atomic_store_n(&r->ready, 1, __ATOMIC_RELEASE);
    }
    if (r->nrules > 0 && !cached(r, fn, &rule)) {
        rule = ask_dladdr(r, fn);
        if (fresh) *fresh = true;
        if (r->count < COLL_GPU_FN_CACHE_MAX) {
            r->cache[r->count].fn = fn;
            r->cache[r->count].rule = rule;
            __atomic_store_n(&r->count, r->count + 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return rule;
}

/* ---- declarations --------------------------------------------------------- */

static bool same_key(coll_gpu_decl_key_t a, coll_gpu_decl_key_t b)
{
    return a.fn == b.fn && a.size == b.size && a.predefined == b.predefined;
}

bool coll_gpu_decl_find(coll_gpu_decl_table_t *t, coll_gpu_decl_key_t key, coll_gpu_meaning_t *as)
{
    int n = __atomic_load_n(&t->count, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        if (!same_key(t->e[i].key, key)) continue;
        *as = t->e[i].as;
        return true;
    }
    return false;
}

coll_gpu_decl_result_t coll_gpu_decl_add(coll_gpu_decl_table_t *t, coll_gpu_decl_key_t key, coll_gpu_meaning_t as,
                                         coll_gpu_meaning_t *prior)
{
    coll_gpu_decl_result_t res;
    pthread_mutex_lock(&t->lock);
    coll_gpu_meaning_t old;
    if (coll_gpu_decl_find(t, key, &old)) {
        if (prior) *prior = old;
        res = old.dtype == as.dtype && old.op == as.op ? COLL_GPU_DECL_SAME : COLL_GPU_DECL_CONFLICT;
    } else if (t->count == COLL_GPU_DECL_MAX) {
        res = COLL_GPU_DECL_FULL;
    } else {
        t->e[t->count].key = key;
        t->e[t->count].as = as;
        __atomic_store_n(&t->count, t->count + 1, __ATOMIC_RELEASE);
        res = COLL_GPU_DECL_ADDED;
    }
    pthread_mutex_unlock(&t->lock);
    return res;
}
