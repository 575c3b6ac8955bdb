/* contam.app.core._native: the signing loops in C, bit for bit what app/core/text.py and
 * app/core/signatures.py define.
 *
 * Tokens: markup blanked (strip_markup's regular expression, matched by hand), then every match of
 * text._TOKEN: a CJK character alone, or a run of other alphanumeric characters
 * (Py_UNICODE_ISALNUM, which is the \w of Python's re without "_"). An ASCII token is lower-cased
 * here; a token holding any other character is given to text._norm (NFKC and casefold, Python's
 * own unicodedata) once per distinct token and cached. Token hashes are xxh3_64 (the official
 * xxhash.h, vendored beside this file) of the normalised token's UTF-8 bytes, surrogates encoded
 * as "surrogatepass" does. n-gram rolls, MinHash (datasketch's affine32 scheme) and band keys follow
 * signatures.py's definitions; stable_order is numpy's stable argsort of int64 keys, sort_rows
 * the worker's sort of a batch's rows, merge_runs the writer's stable merge of sorted batches, and
 * copy_blocks the PostgreSQL COPY stream of app/store/blocks.py, block_rows its blocks for SQLite.
 *
 * The tokeniser holds the GIL throughout (the normaliser is Python code), so the caches below are
 * only touched by one thread at a time. The loops on buffers alone (ngrams, minhash, band_keys,
 * sort_rows, merge_runs, copy_blocks, filter_add) release it while they run, so that another
 * thread of the process (an indexer's writer, a Ray worker's signing) runs meanwhile; they touch
 * no cache and no Python object then.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define XXH_INLINE_ALL
#include "xxhash.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define MULTIVERSION __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef MULTIVERSION
#define MULTIVERSION
#endif

/* ------------------------------------------------------------------ buffers */

/* A large array, in huge pages where the kernel gives them on request (as numpy asks for its
 * arrays): on this kind of machine a fresh array of 4 KiB pages costs a page fault per page,
 * which took longer than filling it. */
#define HUGE_PAGE ((size_t)1 << 21)
static void *big_alloc(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= 2 * HUGE_PAGE) {
        void *p = aligned_alloc(HUGE_PAGE, (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE);
        if (p)
            madvise(p, bytes, MADV_HUGEPAGE);
        return p;
    }
#endif
    return malloc(bytes ? bytes : 1);
}

/* What the functions return: bytes this module allocated, which numpy views (writable) through
 * the buffer protocol and which are freed with the last view. */
typedef struct {
    PyObject_HEAD char *p;
    Py_ssize_t len;
} Buf;

static int buf_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Buf *b = (Buf *)self;
    return PyBuffer_FillInfo(view, self, b->p, b->len, 0, flags);
}

static void buf_dealloc(PyObject *self) {
    free(((Buf *)self)->p);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs buf_as_buffer = {.bf_getbuffer = buf_getbuffer};

static PyTypeObject BufType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "contam.app.core._native.Buffer",
    .tp_basicsize = sizeof(Buf),
    .tp_dealloc = buf_dealloc,
    .tp_as_buffer = &buf_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Bytes returned by contam.app.core._native, for numpy.frombuffer.",
};

/* A Buf owning p (from big_alloc or malloc), or NULL (p freed) */
static PyObject *buf_own(char *p, Py_ssize_t len) {
    Buf *b = PyObject_New(Buf, &BufType);
    if (!b) {
        free(p);
        return NULL;
    }
    b->p = p;
    b->len = len;
    return (PyObject *)b;
}

static PyObject *buf_new(Py_ssize_t len) {
    char *p = big_alloc((size_t)len);
    if (!p)
        return PyErr_NoMemory();
    return buf_own(p, len);
}

/* What a function returns: a memoryview of the Buf (numpy takes it as it is), or None as it is. */
static PyObject *view_of(PyObject *buf) {
    if (!buf || buf == Py_None)
        return buf;
    PyObject *view = PyMemoryView_FromObject(buf);
    Py_DECREF(buf);
    return view;
}

#define BUF(o) (((Buf *)(o))->p)
#define BUF_SHRINK(o, n) (((Buf *)(o))->len = (n))

/* growable byte buffers */

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Vec;

static int vec_grow(Vec *v, Py_ssize_t extra) {
    if (v->len + extra <= v->cap)
        return 0;
    Py_ssize_t cap = v->cap ? v->cap : 256;
    while (cap < v->len + extra)
        cap *= 2;
    char *p;
    if ((size_t)cap >= 2 * HUGE_PAGE) { /* moved into huge pages, not realloc'd into small ones */
        p = big_alloc((size_t)cap);
        if (p && v->len)
            memcpy(p, v->p, (size_t)v->len);
        if (p)
            free(v->p);
    } else {
        p = realloc(v->p, (size_t)cap);
    }
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    v->p = p;
    v->cap = cap;
    return 0;
}

static inline int vec_put(Vec *v, const void *x, Py_ssize_t n) {
    if (v->len + n > v->cap && vec_grow(v, n) < 0)
        return -1;
    memcpy(v->p + v->len, x, (size_t)n);
    v->len += n;
    return 0;
}

static PyObject *vec_take(Vec *v) { /* the vector's bytes handed to a Buf */
    char *p = v->p ? v->p : malloc(1);
    Py_ssize_t len = v->len;
    v->p = NULL;
    v->len = v->cap = 0;
    if (!p)
        return PyErr_NoMemory();
    return buf_own(p, len);
}

/* A read-only C-contiguous buffer of `itemsize`-byte items. */
static int get_items(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len % itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of %zd-byte items", what, view->len,
                     itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ hashing */

static const uint64_t P64 = 0x9E3779B97F4A7C15ULL;

static inline uint64_t fmix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    return h ^ (h >> 33);
}

static inline uint32_t fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85EBCA6BU;
    h ^= h >> 13;
    h *= 0xC2B2AE35U;
    return h ^ (h >> 16);
}

/* UTF-8 of code points, surrogates included (Python's "surrogatepass"). */
static inline char *put_utf8(char *o, Py_UCS4 c) {
    if (c < 0x80) {
        *o++ = (char)c;
    } else if (c < 0x800) {
        *o++ = (char)(0xC0 | (c >> 6));
        *o++ = (char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        *o++ = (char)(0xE0 | (c >> 12));
        *o++ = (char)(0x80 | ((c >> 6) & 0x3F));
        *o++ = (char)(0x80 | (c & 0x3F));
    } else {
        *o++ = (char)(0xF0 | (c >> 18));
        *o++ = (char)(0x80 | ((c >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((c >> 6) & 0x3F));
        *o++ = (char)(0x80 | (c & 0x3F));
    }
    return o;
}

/* xxh3_64 of s.encode("utf-8", "surrogatepass"); scratch grows as needed. */
static int hash_str(PyObject *s, Vec *scratch, uint64_t *out) {
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "a token must be str, not %.100s", Py_TYPE(s)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (PyUnicode_IS_ASCII(s)) {
        *out = XXH3_64bits(PyUnicode_1BYTE_DATA(s), (size_t)n);
        return 0;
    }
    if (scratch->cap < 4 * n && vec_grow(scratch, 4 * n) < 0)
        return -1;
    int kind = PyUnicode_KIND(s);
    const void *d = PyUnicode_DATA(s);
    char *o = scratch->p;
    for (Py_ssize_t i = 0; i < n; i++)
        o = put_utf8(o, PyUnicode_READ(kind, d, i));
    *out = XXH3_64bits(scratch->p, (size_t)(o - scratch->p));
    return 0;
}

/* ------------------------------------------------------------------ character kinds */

enum {
    SEP = 0,
    WORD = 1,
    CJK = 2,
    UPPER = 3, /* ASCII A-Z: a word character, lower-cased */
    MARK = 4,  /* a combining mark: part of the token before it */
    IGN = 5    /* a default-ignorable code point: joins a word's two parts, in no token's text */
};

static unsigned char ascii_kind[128];
static unsigned char bmp_kind[65536];

/* text._CJK_RANGES, _MARK_RANGES and unicode_ranges.IGNORABLE (set_normaliser): int64 first, last,
 * ...; until then every character is a word character or a separator as Python's isalnum says. */
typedef struct {
    int64_t *r;
    Py_ssize_t n; /* ranges */
} Ranges;
static Ranges cjk_ranges, mark_ranges, ign_ranges;

static int in_ranges(const Ranges *rs, Py_UCS4 c) { /* binary search: the ranges ascend, disjoint */
    Py_ssize_t lo = 0, hi = rs->n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if ((int64_t)c > rs->r[2 * mid + 1])
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < rs->n && (int64_t)c >= rs->r[2 * lo];
}

static int kind_of_slow(Py_UCS4 c) {
    if (in_ranges(&cjk_ranges, c))
        return CJK;
    if (in_ranges(&ign_ranges, c))
        return IGN;
    if (in_ranges(&mark_ranges, c))
        return MARK;
    return Py_UNICODE_ISALNUM(c) ? WORD : SEP;
}

static void init_kinds(void) {
    for (Py_UCS4 c = 0; c < 65536; c++)
        bmp_kind[c] = (unsigned char)kind_of_slow(c);
    for (int c = 0; c < 128; c++)
        ascii_kind[c] = (c >= 'A' && c <= 'Z') ? UPPER : bmp_kind[c];
}

static inline int kind_of(Py_UCS4 c) {
    if (c < 128)
        return ascii_kind[c];
    if (c < 65536)
        return bmp_kind[c];
    return kind_of_slow(c);
}

/* Ranges from a buffer of int64 first, last pairs, ascending and disjoint (else a ValueError). */
static int ranges_from(PyObject *obj, Ranges *out) {
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_SIMPLE) < 0)
        return -1;
    Py_ssize_t n = b.len / (Py_ssize_t)(2 * sizeof(int64_t));
    int64_t *r = n ? malloc((size_t)n * 2 * sizeof(int64_t)) : NULL;
    if (n && !r) {
        PyBuffer_Release(&b);
        PyErr_NoMemory();
        return -1;
    }
    if (n)
        memcpy(r, b.buf, (size_t)n * 2 * sizeof(int64_t));
    PyBuffer_Release(&b);
    for (Py_ssize_t i = 0; i < n; i++)
        if (r[2 * i] > r[2 * i + 1] || (i && r[2 * i] <= r[2 * i - 1]) || r[2 * i] < 0 || r[2 * i + 1] > 0x10FFFF) {
            free(r);
            PyErr_SetString(PyExc_ValueError, "character ranges must ascend without overlapping");
            return -1;
        }
    free(out->r);
    out->r = r;
    out->n = n;
    return 0;
}

/* ------------------------------------------------------------------ markup (text._MARKUP) */

static inline int ascii_alpha(Py_UCS4 c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static inline int ascii_digit(Py_UCS4 c) { return c >= '0' && c <= '9'; }
static inline int ascii_alnum(Py_UCS4 c) { return ascii_alpha(c) || ascii_digit(c); }
static inline int ascii_hex(Py_UCS4 c) { return ascii_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

#define AT(i) PyUnicode_READ(kind, d, (i))

/* text._ATTRIBUTE's name characters and a bare value's. */
static inline int attr_start(Py_UCS4 c) { return ascii_alpha(c) || c == '_' || c == ':' || c == '@'; }
static inline int attr_char(Py_UCS4 c) { return attr_start(c) || ascii_digit(c) || c == '-' || c == '.'; }
static inline int bare_char(Py_UCS4 c) { /* after a bare value's first character, which is no '=' either */
    return !Py_UNICODE_ISSPACE(c) && c != '"' && c != '\'' && c != '<' && c != '>' && c != '`';
}

/* End of the attribute value of text._ATTRIBUTE starting at k (after "=" and spaces), or -1. */
static Py_ssize_t value_end(int kind, const void *d, Py_ssize_t n, Py_ssize_t k) {
    Py_ssize_t m;
    if (k >= n)
        return -1;
    Py_UCS4 q = AT(k);
    if (q == '"' || q == '\'') { /* "[^"<]{0,400}" */
        for (m = k + 1; m < n && m - (k + 1) <= 400; m++) {
            Py_UCS4 c = AT(m);
            if (c == q)
                return m + 1;
            if (c == '<')
                return -1;
        }
        return -1;
    }
    if (q == '=' || !bare_char(q)) /* [^\s"'=<>`][^\s"'<>`]{0,399} */
        return -1;
    for (m = k + 1; m < n && m - k < 400 && bare_char(AT(m)); m++)
        ;
    return m;
}

/* End of the markup match of text._MARKUP starting at i (a '<' or '&'), or -1 if none starts
 * there. The regex backtracks nowhere that could change a match: each part's greedy run is
 * followed by a character that part cannot hold, and an attribute's "=" can follow nothing
 * else. No part holds a '<', so a match ends before the next '<' and the work is linear. */
static Py_ssize_t markup_end(int kind, const void *d, Py_ssize_t n, Py_ssize_t i) {
    Py_ssize_t j, k;
    if (AT(i) == '<') {
        /* </?[A-Za-z][A-Za-z0-9:-]*(?:\s+ATTRIBUTE){0,64}\s*\/?> */
        j = i + 1;
        if (j < n && AT(j) == '/')
            j++;
        if (j >= n || !ascii_alpha(AT(j)))
            return -1;
        for (j++; j < n; j++) {
            Py_UCS4 c = AT(j);
            if (!(ascii_alnum(c) || c == ':' || c == '-'))
                break;
        }
        for (int attrs = 0, valued = 0;; attrs++) {
            Py_ssize_t spaced = j;
            while (j < n && Py_UNICODE_ISSPACE(AT(j)))
                j++;
            if (j >= n)
                return -1;
            Py_UCS4 c = AT(j);
            if (c == '>' || c == '/') { /* words alone, two or more, are text (the regex's lookahead) */
                if (attrs >= 2 && !valued)
                    return -1;
                if (c == '>')
                    return j + 1;
                return (j + 1 < n && AT(j + 1) == '>') ? j + 2 : -1;
            }
            if (j == spaced || attrs == 64 || !attr_start(c))
                return -1;
            for (j++; j < n && attr_char(AT(j)); j++)
                ;
            for (k = j; k < n && Py_UNICODE_ISSPACE(AT(k)); k++)
                ;
            if (k < n && AT(k) == '=') {
                for (k++; k < n && Py_UNICODE_ISSPACE(AT(k)); k++)
                    ;
                if ((j = value_end(kind, d, n, k)) < 0)
                    return -1;
                valued = 1;
            }
        }
    }
    /* &(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31}); */
    j = i + 1;
    if (j >= n)
        return -1;
    if (AT(j) == '#') {
        j++;
        if (j < n && ascii_digit(AT(j))) {
            for (k = j; k < n && k - j < 7 && ascii_digit(AT(k)); k++)
                ;
        } else if (j < n && (AT(j) == 'x' || AT(j) == 'X')) {
            j++;
            for (k = j; k < n && k - j < 6 && ascii_hex(AT(k)); k++)
                ;
            if (k == j)
                return -1;
        } else {
            return -1;
        }
        return (k < n && AT(k) == ';') ? k + 1 : -1;
    }
    if (!ascii_alpha(AT(j)))
        return -1;
    j++;
    for (k = j; k < n && k - j < 31 && ascii_alnum(AT(k)); k++)
        ;
    return (k > j && k < n && AT(k) == ';') ? k + 1 : -1;
}

/* ------------------------------------------------------------------ the tokeniser */

enum { M_HASH, M_STR, M_SPANS, M_HASH_SPANS }; /* what a pass gives: hashes, str tokens, str tokens and spans, hashes and spans */

static PyObject *normaliser; /* text._norm: raw token -> normalised token */
static size_t cache_limit = 1000000;

/* What the normaliser answered for each raw token holding a non-ASCII character, keyed by the
 * raw token's UTF-8 (kept in an arena): the normalised token and its hash. Open addressing,
 * emptied when it holds cache_limit tokens. */
typedef struct {
    uint64_t key; /* xxh3_64 of the raw UTF-8 */
    uint32_t off, len;
    uint64_t hash;
    PyObject *str; /* NULL: an empty slot */
} Entry;

static Entry *table;
static size_t table_cap, table_count;
static char *arena;
static size_t arena_len, arena_cap;
/* single BMP characters (every CJK token) answered without a look-up */
static uint64_t one_hash[65536];
static PyObject *one_str[65536];

static void cache_clear(void) {
    for (size_t i = 0; i < table_cap; i++)
        Py_CLEAR(table[i].str);
    table_count = 0;
    arena_len = 0;
}

static int cache_grow(void) {
    size_t cap = table_cap ? 2 * table_cap : 4096;
    Entry *t = calloc(cap, sizeof(Entry));
    if (!t) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < table_cap; i++) {
        if (!table[i].str)
            continue;
        size_t j = table[i].key & (cap - 1);
        while (t[j].str)
            j = (j + 1) & (cap - 1);
        t[j] = table[i];
    }
    free(table);
    table = t;
    table_cap = cap;
    return 0;
}

/* The entry for text[s:e] (whose UTF-8 is raw[0:len]), asking the normaliser if it is new. */
static Entry *cache_get(PyObject *text, Py_ssize_t s, Py_ssize_t e, const char *raw, size_t len) {
    uint64_t key = XXH3_64bits(raw, len);
    if (table_cap) {
        for (size_t j = key & (table_cap - 1); table[j].str; j = (j + 1) & (table_cap - 1))
            if (table[j].key == key && table[j].len == len && !memcmp(arena + table[j].off, raw, len))
                return &table[j];
    }
    if (!normaliser) {
        PyErr_SetString(PyExc_RuntimeError, "contam.app.core._native: set_normaliser was not called");
        return NULL;
    }
    PyObject *sub = PyUnicode_Substring(text, s, e);
    if (!sub)
        return NULL;
    PyObject *norm = PyObject_CallOneArg(normaliser, sub);
    Py_DECREF(sub);
    if (!norm)
        return NULL;
    if (!PyUnicode_Check(norm)) {
        Py_DECREF(norm);
        PyErr_SetString(PyExc_TypeError, "the normaliser must return str");
        return NULL;
    }
    Vec scratch = {0};
    uint64_t h;
    int bad = hash_str(norm, &scratch, &h);
    free(scratch.p);
    if (bad < 0) {
        Py_DECREF(norm);
        return NULL;
    }
    /* the normaliser ran Python code: the table may have been cleared or grown meanwhile */
    if (table_count >= cache_limit || arena_len + len > UINT32_MAX)
        cache_clear();
    if (2 * (table_count + 1) > table_cap && cache_grow() < 0) {
        Py_DECREF(norm);
        return NULL;
    }
    if (arena_len + len > arena_cap) {
        size_t cap = arena_cap ? arena_cap : 65536;
        while (cap < arena_len + len)
            cap *= 2;
        char *a = realloc(arena, cap);
        if (!a) {
            Py_DECREF(norm);
            PyErr_NoMemory();
            return NULL;
        }
        arena = a;
        arena_cap = cap;
    }
    memcpy(arena + arena_len, raw, len);
    size_t j = key & (table_cap - 1);
    while (table[j].str)
        j = (j + 1) & (table_cap - 1);
    table[j] = (Entry){key, (uint32_t)arena_len, (uint32_t)len, h, norm};
    arena_len += len;
    table_count++;
    return &table[j];
}

/* ASCII tokens already made into str objects (M_STR, M_SPANS): the same words come again and
 * again, and one look-up is cheaper than a new object. Direct-mapped by the token's hash. */
#define ASCII_SLOTS (1 << 16)
#define ASCII_LONGEST 24
static PyObject *ascii_strs[ASCII_SLOTS];

typedef struct {
    int mode;
    Vec hashes;     /* uint64 */
    PyObject *list; /* tokens */
    Vec starts, ends;
    Vec buf; /* an ASCII token lower-cased, or a token's UTF-8 */
} Tok;

static inline int emit_span(Tok *t, Py_ssize_t s, Py_ssize_t e) {
    int64_t a = s, b = e;
    if (vec_put(&t->starts, &a, 8) < 0 || vec_put(&t->ends, &b, 8) < 0)
        return -1;
    return 0;
}

static inline int emit_hash(Tok *t, uint64_t h, Py_ssize_t s, Py_ssize_t e) {
    if (vec_put(&t->hashes, &h, 8) < 0)
        return -1;
    return t->mode == M_HASH_SPANS ? emit_span(t, s, e) : 0;
}

static int emit_str(Tok *t, PyObject *u, Py_ssize_t s, Py_ssize_t e) { /* u borrowed */
    if (PyList_Append(t->list, u) < 0)
        return -1;
    return t->mode == M_SPANS ? emit_span(t, s, e) : 0;
}

/* An ASCII token, already lower-cased: b[0:len]. */
static inline int emit_ascii(Tok *t, const char *b, Py_ssize_t len, Py_ssize_t s, Py_ssize_t e) {
    uint64_t h = XXH3_64bits(b, (size_t)len);
    if (t->mode == M_HASH || t->mode == M_HASH_SPANS)
        return emit_hash(t, h, s, e);
    PyObject **slot = len <= ASCII_LONGEST ? &ascii_strs[h & (ASCII_SLOTS - 1)] : NULL;
    if (slot && *slot && PyUnicode_GET_LENGTH(*slot) == len && !memcmp(PyUnicode_1BYTE_DATA(*slot), b, (size_t)len))
        return emit_str(t, *slot, s, e);
    PyObject *u = PyUnicode_New(len, 127);
    if (!u)
        return -1;
    memcpy(PyUnicode_1BYTE_DATA(u), b, (size_t)len);
    int r = emit_str(t, u, s, e);
    if (slot)
        Py_XSETREF(*slot, u);
    else
        Py_DECREF(u);
    return r;
}

/* A token holding a non-ASCII character, text[s:e]: normalised by the normaliser, once. */
static int emit_wide(Tok *t, PyObject *text, Py_ssize_t s, Py_ssize_t e) {
    int kind = PyUnicode_KIND(text);
    const void *d = PyUnicode_DATA(text);
    Py_UCS4 one = e - s == 1 ? PyUnicode_READ(kind, d, s) : 0x110000;
    if (one < 65536 && one_str[one]) {
        if (t->mode == M_HASH || t->mode == M_HASH_SPANS)
            return emit_hash(t, one_hash[one], s, e);
        return emit_str(t, one_str[one], s, e);
    }
    if (t->buf.cap < 4 * (e - s) && vec_grow(&t->buf, 4 * (e - s)) < 0)
        return -1;
    char *o = t->buf.p;
    for (Py_ssize_t i = s; i < e; i++)
        o = put_utf8(o, PyUnicode_READ(kind, d, i));
    Entry *got = cache_get(text, s, e, t->buf.p, (size_t)(o - t->buf.p));
    if (!got)
        return -1;
    uint64_t h = got->hash;
    PyObject *norm = got->str;
    if (one < 65536) {
        Py_INCREF(norm);
        one_str[one] = norm;
        one_hash[one] = h;
    }
    if (t->mode == M_HASH || t->mode == M_HASH_SPANS)
        return emit_hash(t, h, s, e);
    return emit_str(t, norm, s, e);
}

/* A word character that is no decimal digit (the regular expressions' [^\W\d_]). */
static inline int letterish(Py_UCS4 c) { return c != '_' && Py_UNICODE_ISALNUM(c) && !Py_UNICODE_ISDECIMAL(c); }

/* Where a line-break hyphen starting at q ends (text._BREAK: after a letter or a mark, '-', U+2010 or
 * a soft hyphen, spaces or tabs, an optional CR, a LF, spaces or tabs, before a letter; markup counts
 * as the spaces strip_markup makes of it), or -1 if none starts there. */
#define BREAK_END(NAME, CHAR)                                                                                    \
    static Py_ssize_t NAME(const CHAR *p, Py_ssize_t n, Py_ssize_t q) {                                        \
        const int kind = (int)sizeof(CHAR);                                                                    \
        int newline = 0;                                                                                       \
        Py_UCS4 c = p[q];                                                                                      \
        if ((c != '-' && c != 0x2010 && c != 0xAD) || q == 0 || !(letterish(p[q - 1]) || kind_of(p[q - 1]) == MARK)) \
            return -1;                                                                                         \
        for (q++; q < n;) {                                                                                    \
            c = p[q];                                                                                          \
            if (c == ' ' || c == '\t') {                                                                       \
                q++;                                                                                           \
            } else if (c == '<' || c == '&') {                                                                 \
                Py_ssize_t e = markup_end(kind, p, n, q);                                                      \
                if (e < 0)                                                                                     \
                    break;                                                                                     \
                q = e;                                                                                         \
            } else if (!newline && c == '\r' && q + 1 < n && p[q + 1] == '\n') {                               \
                q += 2;                                                                                        \
                newline = 1;                                                                                   \
            } else if (!newline && c == '\n') {                                                                \
                q++;                                                                                           \
                newline = 1;                                                                                   \
            } else {                                                                                           \
                break;                                                                                         \
            }                                                                                                  \
        }                                                                                                      \
        return newline && q < n && letterish(p[q]) ? q : -1;                                                   \
    }

BREAK_END(break_end1, Py_UCS1)
BREAK_END(break_end2, Py_UCS2)
BREAK_END(break_end4, Py_UCS4)

/* The tokens of one text of CHARs, appended to t (text._TOKEN in strip_markup's text): each CJK
 * character with the marks after it; runs of word characters with the marks after any of them and
 * the ignorables and line-break hyphens between two of them (ASCII ones lower-cased on the way; a
 * run holding any other character is the normaliser's); markup stepped over as strip_markup blanks
 * it; a mark or ignorable outside a token dropped. */
#define TOKENISE(NAME, CHAR, BREAK)                                                                              \
    static int NAME(Tok *t, PyObject *text, const CHAR *p, Py_ssize_t n) {                                     \
        const int kind = (int)sizeof(CHAR);                                                                    \
        Py_ssize_t i = 0;                                                                                      \
        if (t->buf.cap < n && vec_grow(&t->buf, n) < 0)                                                        \
            return -1;                                                                                         \
        while (i < n) {                                                                                        \
            Py_UCS4 c = p[i];                                                                                  \
            int k = kind_of(c);                                                                                \
            if (k == SEP || k == MARK || k == IGN) {                                                           \
                if (c == '<' || c == '&') {                                                                    \
                    Py_ssize_t e = markup_end(kind, p, n, i);                                                  \
                    if (e > 0) {                                                                               \
                        i = e;                                                                                 \
                        continue;                                                                              \
                    }                                                                                          \
                }                                                                                              \
                i++;                                                                                           \
                continue;                                                                                      \
            }                                                                                                  \
            if (k == CJK) {                                                                                    \
                Py_ssize_t e = i + 1, q = e;                                                                   \
                while (q < n && (k = kind_of(p[q])) != SEP) {                                                  \
                    if (k == MARK)                                                                             \
                        e = q + 1;                                                                             \
                    else if (k != IGN)                                                                         \
                        break;                                                                                 \
                    q++;                                                                                       \
                }                                                                                              \
                if (emit_wide(t, text, i, e) < 0)                                                              \
                    return -1;                                                                                 \
                i = e;                                                                                         \
                continue;                                                                                      \
            }                                                                                                  \
            Py_ssize_t s = i, e = i;                                                                           \
            int upper = 0, wide = 0, broken = 0;                                                               \
            while (i < n) {                                                                                    \
                c = p[i];                                                                                      \
                k = kind_of(c);                                                                                \
                if (k == WORD || k == UPPER || (k == MARK && !broken)) {                                       \
                    wide |= c >= 128 || i > e;                                                                 \
                    upper |= k == UPPER;                                                                       \
                    e = ++i;                                                                                   \
                    broken = 0;                                                                                \
                    continue;                                                                                  \
                }                                                                                              \
                Py_ssize_t q = -1;                                                                             \
                if (c == '-' || c == 0x2010 || c == 0xAD)                                                      \
                    q = BREAK(p, n, i);                                                                        \
                if (q > 0) { /* a word character must follow (after more ignorables or breaks) */             \
                    i = q;                                                                                     \
                    broken = 1;                                                                                \
                    continue;                                                                                  \
                }                                                                                              \
                if (k != IGN)                                                                                  \
                    break;                                                                                     \
                i++;                                                                                           \
            }                                                                                                  \
            i = e;                                                                                             \
            int r;                                                                                             \
            if (wide) {                                                                                        \
                r = emit_wide(t, text, s, e);                                                                  \
            } else if (kind == 1 && !upper) {                                                                  \
                r = emit_ascii(t, (const char *)(p + s), e - s, s, e);                                         \
            } else {                                                                                           \
                char *o = t->buf.p;                                                                            \
                for (Py_ssize_t j = s; j < e; j++)                                                             \
                    o[j - s] = (char)(p[j] >= 'A' && p[j] <= 'Z' ? p[j] + 32 : p[j]);                          \
                r = emit_ascii(t, o, e - s, s, e);                                                             \
            }                                                                                                  \
            if (r < 0)                                                                                         \
                return -1;                                                                                     \
        }                                                                                                      \
        return 0;                                                                                              \
    }

TOKENISE(tokenise1, Py_UCS1, break_end1)
TOKENISE(tokenise2, Py_UCS2, break_end2)
TOKENISE(tokenise4, Py_UCS4, break_end4)

static int tokenise(Tok *t, PyObject *text) {
    if (!normaliser) {
        PyErr_SetString(PyExc_RuntimeError, "contam.app.core._native: set_normaliser was not called");
        return -1;
    }
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "a text must be str, not %.100s", Py_TYPE(text)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        return tokenise1(t, text, PyUnicode_1BYTE_DATA(text), n);
    case PyUnicode_2BYTE_KIND:
        return tokenise2(t, text, PyUnicode_2BYTE_DATA(text), n);
    default:
        return tokenise4(t, text, PyUnicode_4BYTE_DATA(text), n);
    }
}

static void tok_free(Tok *t) {
    free(t->hashes.p);
    free(t->starts.p);
    free(t->ends.p);
    free(t->buf.p);
    Py_XDECREF(t->list);
}

static PyObject *py_set_normaliser(PyObject *self, PyObject *args) {
    PyObject *fn, *cjk, *marks, *ign;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "OnOOO", &fn, &limit, &cjk, &marks, &ign))
        return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "the normaliser must be callable");
        return NULL;
    }
    Ranges c = {0}, m = {0}, g = {0};
    if (ranges_from(cjk, &c) < 0 || ranges_from(marks, &m) < 0 || ranges_from(ign, &g) < 0) {
        free(c.r);
        free(m.r);
        free(g.r);
        return NULL;
    }
    free(cjk_ranges.r);
    free(mark_ranges.r);
    free(ign_ranges.r);
    cjk_ranges = c;
    mark_ranges = m;
    ign_ranges = g;
    init_kinds();
    Py_INCREF(fn);
    Py_XSETREF(normaliser, fn);
    cache_limit = (size_t)limit;
    cache_clear();
    for (int c = 0; c < 65536; c++)
        Py_CLEAR(one_str[c]);
    Py_RETURN_NONE;
}

static PyObject *py_tokens(PyObject *self, PyObject *text) {
    Tok t = {.mode = M_STR};
    t.list = PyList_New(0);
    if (!t.list || tokenise(&t, text) < 0) {
        tok_free(&t);
        return NULL;
    }
    PyObject *out = t.list;
    t.list = NULL;
    tok_free(&t);
    return out;
}

static PyObject *py_spans(PyObject *self, PyObject *text) {
    Tok t = {.mode = M_SPANS};
    t.list = PyList_New(0);
    if (!t.list || tokenise(&t, text) < 0) {
        tok_free(&t);
        return NULL;
    }
    PyObject *starts = view_of(vec_take(&t.starts)), *ends = view_of(vec_take(&t.ends));
    PyObject *out = (starts && ends) ? PyTuple_Pack(3, t.list, starts, ends) : NULL;
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    tok_free(&t);
    return out;
}

/* hash_spans(text) -> (uint64 token hashes, int64 start and end of each token): spans and
 * hash_tokens in one pass, no token made into a str unless it holds a non-ASCII character */
static PyObject *py_hash_spans(PyObject *self, PyObject *text) {
    Tok t = {.mode = M_HASH_SPANS};
    if (tokenise(&t, text) < 0) {
        tok_free(&t);
        return NULL;
    }
    PyObject *h = view_of(vec_take(&t.hashes));
    PyObject *starts = view_of(vec_take(&t.starts)), *ends = view_of(vec_take(&t.ends));
    PyObject *out = (h && starts && ends) ? PyTuple_Pack(3, h, starts, ends) : NULL;
    Py_XDECREF(h);
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    tok_free(&t);
    return out;
}

/* text_hashes(texts) -> (uint64 token hashes of all texts end to end, int64 token count per text) */
static PyObject *py_text_hashes(PyObject *self, PyObject *texts) {
    PyObject *seq = PySequence_Fast(texts, "texts must be a sequence of str");
    if (!seq)
        return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    Tok t = {.mode = M_HASH};
    Vec lens = {0};
    if (vec_grow(&lens, 8 * m + 8) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < m; i++) {
        Py_ssize_t before = t.hashes.len;
        PyObject *text = PySequence_Fast_GET_ITEM(seq, i);
        Py_INCREF(text); /* the normaliser is Python code: the sequence must not drop it meanwhile */
        int r = tokenise(&t, text);
        Py_DECREF(text);
        if (r < 0)
            goto fail;
        int64_t k = (t.hashes.len - before) / 8;
        vec_put(&lens, &k, 8);
    }
    Py_DECREF(seq);
    PyObject *h = view_of(vec_take(&t.hashes)), *l = view_of(vec_take(&lens));
    PyObject *out = (h && l) ? PyTuple_Pack(2, h, l) : NULL;
    Py_XDECREF(h);
    Py_XDECREF(l);
    tok_free(&t);
    return out;
fail:
    Py_DECREF(seq);
    free(lens.p);
    tok_free(&t);
    return NULL;
}

/* hash_tokens(tokens) -> uint64 xxh3_64 of each token's UTF-8 (surrogatepass) */
static PyObject *py_hash_tokens(PyObject *self, PyObject *tokens) {
    PyObject *seq = PySequence_Fast(tokens, "tokens must be a sequence of str");
    if (!seq)
        return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = buf_new(8 * m);
    Vec scratch = {0};
    if (!out)
        goto done;
    uint64_t *h = (uint64_t *)BUF(out);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < m; i++) {
        if (hash_str(items[i], &scratch, &h[i]) < 0) {
            Py_CLEAR(out);
            break;
        }
    }
done:
    free(scratch.p);
    Py_DECREF(seq);
    return view_of(out);
}

/* ------------------------------------------------------------------ n-grams, MinHash, bands */

static inline uint64_t roll_at(const uint64_t *th, Py_ssize_t i, Py_ssize_t n) {
    uint64_t acc = th[i];
    for (Py_ssize_t k = 1; k < n; k++)
        acc = acc * P64 + th[i + k];
    return fmix64(acc);
}

/* roll(th, n) -> uint64 hash of every run of n token hashes */
static PyObject *py_roll(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t n;
    Py_buffer th;
    if (!PyArg_ParseTuple(args, "On", &obj, &n))
        return NULL;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "n must be at least 1");
        return NULL;
    }
    if (get_items(obj, &th, 8, "token hashes") < 0)
        return NULL;
    Py_ssize_t len = th.len / 8, m = len - n + 1 > 0 ? len - n + 1 : 0;
    PyObject *out = buf_new(8 * m);
    if (out) {
        const uint64_t *h = th.buf;
        uint64_t *o = (uint64_t *)BUF(out);
        for (Py_ssize_t i = 0; i < m; i++)
            o[i] = roll_at(h, i, n);
    }
    PyBuffer_Release(&th);
    return view_of(out);
}

/* ngrams(th, lens, n, sample_mod) -> (uint64 n-gram hashes of each text, laid end to end, none
 * spanning two texts, those not divisible by sample_mod (if > 1) left out; int32 text of each) */
static PyObject *py_ngrams(PyObject *self, PyObject *args) {
    PyObject *tobj, *lobj;
    Py_ssize_t n;
    unsigned long long mod;
    Py_buffer th, lens;
    if (!PyArg_ParseTuple(args, "OOnK", &tobj, &lobj, &n, &mod))
        return NULL;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "n must be at least 1");
        return NULL;
    }
    if (get_items(tobj, &th, 8, "token hashes") < 0)
        return NULL;
    if (get_items(lobj, &lens, 8, "lengths") < 0) {
        PyBuffer_Release(&th);
        return NULL;
    }
    const uint64_t *h = th.buf;
    const int64_t *ln = lens.buf;
    Py_ssize_t texts = lens.len / 8, total = th.len / 8, off = 0, cap = 0;
    for (Py_ssize_t i = 0; i < texts; i++) {
        if (ln[i] < 0 || ln[i] > total - off) {
            PyErr_SetString(PyExc_ValueError, "text lengths do not add up to the token hashes");
            goto fail;
        }
        off += ln[i];
        cap += ln[i] >= n ? ln[i] - n + 1 : 0;
    }
    PyObject *grams = buf_new(8 * cap);
    PyObject *owner = buf_new(4 * cap);
    if (!grams || !owner) {
        Py_XDECREF(grams);
        Py_XDECREF(owner);
        goto fail;
    }
    uint64_t *g = (uint64_t *)BUF(grams);
    int32_t *w = (int32_t *)BUF(owner);
    Py_ssize_t k = 0;
    off = 0;
    Py_BEGIN_ALLOW_THREADS; /* plain C on buffers: a Ray worker's writer thread runs meanwhile */
    for (Py_ssize_t i = 0; i < texts; i++) {
        for (Py_ssize_t p = off; p + n <= off + ln[i]; p++) {
            uint64_t v = roll_at(h, p, n);
            if (mod > 1 && v % mod)
                continue;
            g[k] = v;
            w[k++] = (int32_t)i;
        }
        off += ln[i];
    }
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&th);
    PyBuffer_Release(&lens);
    BUF_SHRINK(grams, 8 * k);
    BUF_SHRINK(owner, 4 * k);
    grams = view_of(grams);
    owner = view_of(owner);
    PyObject *out = grams && owner ? PyTuple_Pack(2, grams, owner) : NULL;
    Py_DECREF(grams);
    Py_DECREF(owner);
    return out;
fail:
    PyBuffer_Release(&th);
    PyBuffer_Release(&lens);
    return NULL;
}

/* The minimum of a*h + b (mod 2^32) over the window's shingles, for every permutation. */
MULTIVERSION
static void minhash_windows(const uint32_t *mixed, const uint32_t *a, const uint32_t *b, Py_ssize_t perms,
                            const int64_t *starts, const int64_t *ends, Py_ssize_t windows, uint32_t *out) {
    for (Py_ssize_t w = 0; w < windows; w++) {
        uint32_t *acc = out + w * perms;
        for (Py_ssize_t p = 0; p < perms; p++)
            acc[p] = 0xFFFFFFFFU;
        for (int64_t i = starts[w]; i < ends[w]; i++) {
            uint32_t h = mixed[i];
            for (Py_ssize_t p = 0; p < perms; p++) {
                uint32_t v = a[p] * h + b[p];
                acc[p] = v < acc[p] ? v : acc[p];
            }
        }
    }
}

/* minhash(th, shingle, a, b, starts, ends) -> uint32 (windows, perms): window j's signature over
 * shingles starts[j] <= i < ends[j], shingle i being the roll of th[i:i + shingle], its low 32
 * bits mixed by fmix32 (signatures.window_minhashes). */
static PyObject *py_minhash(PyObject *self, PyObject *args) {
    PyObject *o_th, *o_a, *o_b, *o_s, *o_e;
    Py_ssize_t shingle;
    Py_buffer th = {0}, a = {0}, b = {0}, s = {0}, e = {0};
    PyObject *out = NULL;
    uint32_t *mixed = NULL;
    if (!PyArg_ParseTuple(args, "OnOOOO", &o_th, &shingle, &o_a, &o_b, &o_s, &o_e))
        return NULL;
    if (shingle < 1) {
        PyErr_SetString(PyExc_ValueError, "shingle must be at least 1");
        return NULL;
    }
    if (get_items(o_th, &th, 8, "token hashes") < 0 || get_items(o_a, &a, 4, "a") < 0 ||
        get_items(o_b, &b, 4, "b") < 0 || get_items(o_s, &s, 8, "starts") < 0 || get_items(o_e, &e, 8, "ends") < 0)
        goto done;
    Py_ssize_t perms = a.len / 4, windows = s.len / 8, n = th.len / 8;
    Py_ssize_t m = n - shingle + 1 > 0 ? n - shingle + 1 : 0;
    if (b.len != a.len || e.len != s.len) {
        PyErr_SetString(PyExc_ValueError, "a and b, starts and ends must have the same lengths");
        goto done;
    }
    const int64_t *st = s.buf, *en = e.buf;
    Py_ssize_t lo = m, hi = 0;
    for (Py_ssize_t w = 0; w < windows; w++) {
        if (st[w] < 0 || en[w] <= st[w] || en[w] > m) {
            PyErr_Format(PyExc_ValueError, "window %zd: shingles [%lld, %lld) not within [0, %zd)", w,
                         (long long)st[w], (long long)en[w], m);
            goto done;
        }
        lo = st[w] < lo ? st[w] : lo;
        hi = en[w] > hi ? en[w] : hi;
    }
    out = buf_new(4 * windows * perms);
    if (!out || !windows)
        goto done;
    mixed = malloc(4 * (size_t)m);
    if (!mixed) {
        PyErr_NoMemory();
        Py_CLEAR(out);
        goto done;
    }
    const uint64_t *h = th.buf;
    uint32_t *sig = (uint32_t *)BUF(out);
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = lo; i < hi; i++)
        mixed[i] = fmix32((uint32_t)roll_at(h, i, shingle));
    minhash_windows(mixed, a.buf, b.buf, perms, st, en, windows, sig);
    Py_END_ALLOW_THREADS;
done:
    free(mixed);
    PyBuffer_Release(&th);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    PyBuffer_Release(&s);
    PyBuffer_Release(&e);
    return view_of(out);
}

/* band_keys(sigs, bands, rows) -> int64 (windows, bands): band k of a window is its rows values
 * rolled from (k + 1) * P, finished with fmix64 (signatures.band_keys). */
static PyObject *py_band_keys(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t bands, rows;
    Py_buffer sg;
    if (!PyArg_ParseTuple(args, "Onn", &obj, &bands, &rows))
        return NULL;
    if (bands < 1 || rows < 1) {
        PyErr_SetString(PyExc_ValueError, "bands and rows must be at least 1");
        return NULL;
    }
    if (get_items(obj, &sg, 4, "signatures") < 0)
        return NULL;
    Py_ssize_t vals = sg.len / 4, width = bands * rows, windows = vals / width;
    PyObject *out = NULL;
    if (vals % width) {
        PyErr_SetString(PyExc_ValueError, "signatures are not whole rows of bands * rows values");
        goto done;
    }
    out = buf_new(8 * windows * bands);
    if (!out)
        goto done;
    const uint32_t *v = sg.buf;
    uint64_t *o = (uint64_t *)BUF(out);
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t w = 0; w < windows; w++)
        for (Py_ssize_t k = 0; k < bands; k++) {
            uint64_t acc = (uint64_t)(k + 1) * P64;
            const uint32_t *r = v + w * width + k * rows;
            for (Py_ssize_t j = 0; j < rows; j++)
                acc = acc * P64 + r[j];
            o[w * bands + k] = fmix64(acc);
        }
    Py_END_ALLOW_THREADS;
done:
    PyBuffer_Release(&sg);
    return view_of(out);
}

/* ------------------------------------------------------------------ the postings' sort */

typedef struct {
    uint64_t key;  /* an int64 key with its sign bit flipped: unsigned order is signed order */
    uint64_t rest; /* what orders equal keys: the row's index, or its (document, window) */
} Item;

static const uint64_t FLIP = 1ULL << 63;

static inline int item_less(const Item *a, const Item *b) {
    return a->key < b->key || (a->key == b->key && a->rest < b->rest);
}

static int item_cmp(const void *x, const void *y) {
    const Item *a = x, *b = y;
    return item_less(a, b) ? -1 : item_less(b, a);
}

static void small_sort(Item *a, size_t n) {
    if (n > 32) {
        qsort(a, n, sizeof(Item), item_cmp);
        return;
    }
    for (size_t x = 1; x < n; x++) {
        Item v = a[x];
        size_t y = x;
        while (y > 0 && item_less(&v, &a[y - 1])) {
            a[y] = a[y - 1];
            y--;
        }
        a[y] = v;
    }
}

/* The rows ordered by (key, rest), written out in that order: ORDER, each row's index (rest is
 * the index: numpy's stable argsort); ROWS, each row's key, document and window (rest is the
 * document and window), a (key, document) pair's repeats left out when `distinct`. */
enum { ORDER, ROWS };

typedef struct {
    int mode, distinct;
    int64_t *index;  /* ORDER */
    uint64_t *keys;  /* ROWS */
    uint32_t *docs, *wins;
    size_t m;        /* rows written */
    uint64_t last_key, last_rest;
} Out;

static void emit_sorted(Out *o, const Item *a, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (o->mode == ORDER) {
            o->index[o->m++] = (int64_t)a[i].rest;
            continue;
        }
        if (o->distinct && o->m && a[i].key == o->last_key && a[i].rest == o->last_rest)
            continue;
        o->last_key = a[i].key;
        o->last_rest = a[i].rest;
        o->keys[o->m] = a[i].key ^ FLIP;
        o->docs[o->m] = (uint32_t)(a[i].rest >> 32);
        if (o->wins)
            o->wins[o->m] = (uint32_t)a[i].rest;
        o->m++;
    }
}

/* src[0:m], rows whose keys agree above bit `top`, into dst sorted by (key, rest): spread by the
 * next bits (at most max_bits of them) into buckets of about four rows, each sorted on its own.
 * sub: room for 2**max_bits + 1 counts. */
static void sort_bucket(const Item *src, Item *dst, size_t m, int top, size_t *sub, int max_bits) {
    if (m <= 64) {
        memcpy(dst, src, m * sizeof(Item));
        small_sort(dst, m);
        return;
    }
    int b = 1;
    while (b < max_bits && ((size_t)1 << (b + 2)) < m)
        b++;
    size_t buckets = (size_t)1 << b, shift = (size_t)(top - b), mask = buckets - 1;
    memset(sub, 0, sizeof(size_t) * (buckets + 1));
    for (size_t i = 0; i < m; i++)
        sub[((src[i].key >> shift) & mask) + 1]++;
    for (size_t k = 1; k <= buckets; k++)
        sub[k] += sub[k - 1];
    for (size_t i = 0; i < m; i++)
        dst[sub[(src[i].key >> shift) & mask]++] = src[i];
    /* sub[k] is now bucket k's end */
    for (size_t k = 0, start = 0; k < buckets; k++) {
        small_sort(dst + start, sub[k] - start);
        start = sub[k];
    }
}

/* Keys are hashes, near uniform: one stable pass into 256 buckets by the top 8 bits, then each
 * bucket (small enough for the cache) spread by its next bits into buckets of about four rows,
 * each sorted on its own, and written out. The rows are read from the columns (keys, and for ROWS
 * docs and wins, which may be NULL). -1: out of memory. */
static int sort_out(const uint64_t *keys, const uint32_t *docs, const uint32_t *wins, size_t n, Out *o) {
    size_t count[257] = {0}, pos[256];
    for (size_t i = 0; i < n; i++)
        count[((keys[i] ^ FLIP) >> 56) + 1]++;
    size_t widest = 0;
    for (int j = 1; j <= 256; j++) {
        widest = count[j] > widest ? count[j] : widest;
        count[j] += count[j - 1];
    }
    int bits = 1;
    while (bits < 16 && ((size_t)1 << (bits + 2)) < widest)
        bits++;
    Item *tmp = big_alloc(sizeof(Item) * (n ? n : 1)), *bucket = malloc(sizeof(Item) * (widest ? widest : 1));
    size_t *sub = malloc(sizeof(size_t) * (((size_t)1 << bits) + 1));
    if (!tmp || !bucket || !sub) {
        free(tmp);
        free(bucket);
        free(sub);
        return -1;
    }
    memcpy(pos, count, sizeof pos);
    for (size_t i = 0; i < n; i++) {
        uint64_t u = keys[i] ^ FLIP;
        uint64_t rest = o->mode == ORDER ? i : ((uint64_t)docs[i] << 32) | (wins ? wins[i] : 0);
        tmp[pos[u >> 56]++] = (Item){u, rest};
    }
    for (int j = 0; j < 256; j++) {
        size_t m = count[j + 1] - count[j];
        sort_bucket(tmp + count[j], bucket, m, 56, sub, bits);
        emit_sorted(o, bucket, m);
    }
    free(tmp);
    free(bucket);
    free(sub);
    return 0;
}

/* stable_order(keys) -> int64: numpy's argsort(keys, kind="stable") of int64 keys (the order by
 * key, then by index). */
static PyObject *py_stable_order(PyObject *self, PyObject *obj) {
    Py_buffer kb;
    if (get_items(obj, &kb, 8, "keys") < 0)
        return NULL;
    size_t n = (size_t)(kb.len / 8);
    PyObject *out = buf_new((Py_ssize_t)(8 * n));
    if (out) {
        Out o = {.mode = ORDER, .index = (int64_t *)BUF(out)};
        if (sort_out(kb.buf, NULL, NULL, n, &o) < 0) {
            PyErr_NoMemory();
            Py_CLEAR(out);
        }
    }
    PyBuffer_Release(&kb);
    return view_of(out);
}

/* sort_rows(keys, docs, wins, distinct) -> (keys, docs, wins): the rows (int64 key, int32
 * document >= 0, int32 window >= 0; wins None: none) ordered by (key, document, window), and with
 * distinct, a (key, document) pair's repeats left out (then wins must be None; so is the third
 * result). Rows given in (document, window) order come out as a stable sort by key leaves them. */
static PyObject *py_sort_rows(PyObject *self, PyObject *args) {
    PyObject *ko, *dob, *wo;
    int distinct;
    Py_buffer kb = {0}, db = {0}, wb = {0};
    PyObject *keys = NULL, *docs = NULL, *wins = NULL, *out = NULL;
    if (!PyArg_ParseTuple(args, "OOOp", &ko, &dob, &wo, &distinct))
        return NULL;
    int windows = wo != Py_None;
    if (windows && distinct) {
        PyErr_SetString(PyExc_ValueError, "sort_rows: distinct rows are (key, document) pairs: no windows");
        return NULL;
    }
    if (get_items(ko, &kb, 8, "keys") < 0 || get_items(dob, &db, 4, "documents") < 0 ||
        (windows && get_items(wo, &wb, 4, "windows") < 0))
        goto done;
    size_t n = (size_t)(kb.len / 8);
    if ((size_t)db.len != 4 * n || (windows && (size_t)wb.len != 4 * n)) {
        PyErr_SetString(PyExc_ValueError, "sort_rows: keys, documents and windows must have one value a row");
        goto done;
    }
    keys = buf_new((Py_ssize_t)(8 * n));
    docs = buf_new((Py_ssize_t)(4 * n));
    wins = windows ? buf_new((Py_ssize_t)(4 * n)) : Py_NewRef(Py_None);
    if (!keys || !docs || !wins)
        goto done;
    Out o = {.mode = ROWS,
             .distinct = distinct,
             .keys = (uint64_t *)BUF(keys),
             .docs = (uint32_t *)BUF(docs),
             .wins = windows ? (uint32_t *)BUF(wins) : NULL};
    int sorted_ok;
    Py_BEGIN_ALLOW_THREADS;
    sorted_ok = sort_out(kb.buf, db.buf, windows ? wb.buf : NULL, n, &o);
    Py_END_ALLOW_THREADS;
    if (sorted_ok < 0) {
        PyErr_NoMemory();
        goto done;
    }
    BUF_SHRINK(keys, (Py_ssize_t)(8 * o.m));
    BUF_SHRINK(docs, (Py_ssize_t)(4 * o.m));
    keys = view_of(keys);
    docs = view_of(docs);
    wins = view_of(wins);
    if (keys && docs && wins)
        out = PyTuple_Pack(3, keys, docs, wins);
done:
    Py_XDECREF(keys);
    Py_XDECREF(docs);
    Py_XDECREF(wins);
    PyBuffer_Release(&kb);
    PyBuffer_Release(&db);
    PyBuffer_Release(&wb);
    return out;
}

/* merge_runs(runs) -> columns: runs of rows, each a tuple of columns (int64 keys sorted
 * ascending, then one or two int32 columns), merged into one run sorted by key; rows with equal
 * keys keep the order of their runs, then their order within a run (what numpy's stable argsort
 * of the runs' keys laid end to end gives). */
typedef struct {
    const int64_t *key;
    const int32_t *col[2];
    size_t at, len, col_end; /* the next row; the rows; the end of the range in hand */
} Run;

static PyObject *py_merge_runs(PyObject *self, PyObject *runs) {
    PyObject *seq = PySequence_Fast(runs, "runs must be a sequence of tuples of columns");
    if (!seq)
        return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq), ncols = -1, held = 0;
    Py_buffer *views = NULL;
    Run *rs = NULL;
    PyObject *outs[3] = {NULL, NULL, NULL}, *result = NULL;
    size_t total = 0;
    for (Py_ssize_t r = 0; r < k; r++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, r);
        Py_ssize_t c = PySequence_Check(t) ? PySequence_Size(t) : -1;
        if (c < 2 || c > 3 || (ncols >= 0 && c != ncols)) {
            PyErr_SetString(PyExc_ValueError, "merge_runs: every run must have the same 2 or 3 columns");
            goto done;
        }
        ncols = c;
    }
    if (k >= ((Py_ssize_t)1 << 23)) {
        PyErr_SetString(PyExc_ValueError, "merge_runs: too many runs");
        goto done;
    }
    views = calloc((size_t)(k * 3 + 1), sizeof(Py_buffer));
    rs = calloc((size_t)k + 1, sizeof(Run));
    if (!views || !rs) {
        PyErr_NoMemory();
        goto done;
    }
    size_t n = 0;
    for (Py_ssize_t r = 0; r < k; r++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, r);
        Run run = {0};
        for (Py_ssize_t c = 0; c < ncols; c++) {
            PyObject *col = PySequence_GetItem(t, c);
            if (!col)
                goto done;
            int bad = get_items(col, &views[held], c ? 4 : 8, c ? "an int32 column" : "keys");
            Py_DECREF(col);
            if (bad < 0)
                goto done;
            size_t len = (size_t)(views[held].len / (c ? 4 : 8));
            if (c == 0) {
                run.key = views[held].buf;
                run.len = len;
            } else {
                run.col[c - 1] = views[held].buf;
                if (len != run.len) {
                    held++;
                    PyErr_SetString(PyExc_ValueError, "merge_runs: a run's columns must have one value a row");
                    goto done;
                }
            }
            held++;
        }
        total += run.len;
        if (run.len)
            rs[n++] = run;
    }
    for (Py_ssize_t c = 0; c < ncols; c++) {
        outs[c] = buf_new((Py_ssize_t)(total * (c ? 4 : 8)));
        if (!outs[c])
            goto done;
    }
    int64_t *ok = (int64_t *)BUF(outs[0]);
    int32_t *o1 = (int32_t *)BUF(outs[1]);
    int32_t *o2 = ncols == 3 ? (int32_t *)BUF(outs[2]) : NULL;
    /* The runs' keys are hashes, near uniform, and sorted: the rows of one range of keys (their
     * top bits) are a slice of each run. Range by range, the slices' rows are gathered with
     * their run and place (which order equal keys: run order, then place), sorted in the cache,
     * and written out. */
    int bits = 0;
    while (bits < 24 && ((size_t)1 << (bits + 10)) < total)
        bits++;
    size_t ranges = (size_t)1 << bits, cap = 0, m = 0;
    int shift = 64 - bits;
    Item *items = NULL, *sorted = NULL;
    size_t *sub = malloc(sizeof(size_t) * (((size_t)1 << 16) + 1));
    if (!sub) {
        PyErr_NoMemory();
        goto done;
    }
    int no_memory = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (size_t g = 0; g < ranges; g++) {
        size_t want = 0;
        for (size_t r = 0; r < n; r++) {
            Run *t = &rs[r];
            size_t e = t->at;
            while (e < t->len && (bits == 0 || (((uint64_t)t->key[e] ^ FLIP) >> shift) == g))
                e++;
            t->col_end = e;
            want += e - t->at;
        }
        if (want > cap) {
            free(items);
            free(sorted);
            cap = 2 * want;
            items = malloc(sizeof(Item) * cap);
            sorted = malloc(sizeof(Item) * cap);
            if (!items || !sorted) {
                no_memory = 1;
                break;
            }
        }
        size_t k = 0;
        for (size_t r = 0; r < n; r++) {
            Run *t = &rs[r];
            for (size_t i = t->at; i < t->col_end; i++)
                items[k++] = (Item){(uint64_t)t->key[i] ^ FLIP, ((uint64_t)r << 40) | i};
            t->at = t->col_end;
        }
        sort_bucket(items, sorted, k, shift, sub, shift < 16 ? shift : 16);
        for (size_t i = 0; i < k; i++) {
            const Run *t = &rs[sorted[i].rest >> 40];
            size_t at = (size_t)(sorted[i].rest & ((1ULL << 40) - 1));
            ok[m] = (int64_t)(sorted[i].key ^ FLIP);
            o1[m] = t->col[0][at];
            if (o2)
                o2[m] = t->col[1][at];
            m++;
        }
    }
    Py_END_ALLOW_THREADS;
    free(items);
    free(sorted);
    free(sub);
    if (no_memory) {
        PyErr_NoMemory();
        goto done;
    }
    if (m != total) {
        PyErr_SetString(PyExc_ValueError, "merge_runs: every run must be sorted by key");
        goto done;
    }
    result = PyTuple_New(ncols);
    if (result)
        for (Py_ssize_t c = 0; c < ncols; c++) {
            PyTuple_SET_ITEM(result, c, view_of(outs[c]));
            outs[c] = NULL;
            if (!PyTuple_GET_ITEM(result, c)) {
                Py_CLEAR(result);
                break;
            }
        }
done:
    for (Py_ssize_t i = 0; i < held; i++)
        PyBuffer_Release(&views[i]);
    for (int c = 0; c < 3; c++)
        Py_XDECREF(outs[c]);
    free(views);
    free(rs);
    Py_DECREF(seq);
    return result;
}

/* copy_blocks(seg, columns, shift) -> a PostgreSQL binary COPY stream of rows (seg, bucket,
 * data): the rows given as columns (int64 keys sorted ascending, then one or two int32 columns,
 * strided or not) cut into blocks by bucket = key >> shift (arithmetic), each block one row whose
 * data is its rows as packed little-endian records (app.store.blocks). */
static inline char *put_be16(char *o, int v) {
    o[0] = (char)(v >> 8);
    o[1] = (char)v;
    return o + 2;
}

static inline char *put_be32(char *o, int64_t v) {
    uint32_t u = (uint32_t)v;
    o[0] = (char)(u >> 24);
    o[1] = (char)(u >> 16);
    o[2] = (char)(u >> 8);
    o[3] = (char)u;
    return o + 4;
}

static inline char *put_le(char *o, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++)
        o[i] = (char)(v >> (8 * i));
    return o + bytes;
}

static inline int64_t shift_right(int64_t key, int shift) { /* arithmetic, whatever the compiler */
    uint64_t u = (uint64_t)key, b = u >> shift;
    if (u >> 63)
        b |= ~(~0ULL >> shift);
    return (int64_t)b;
}

/* The columns of copy_blocks and block_rows: 1-d int64 keys, then one or two int32 columns of as
 * many values (strided or not), their buffers held in v (release the first *held of them). */
static int get_columns(const char *fn, PyObject *seq, Py_buffer *v, Py_ssize_t *held) {
    Py_ssize_t nc = PySequence_Fast_GET_SIZE(seq);
    if (nc < 2 || nc > 3) {
        PyErr_Format(PyExc_ValueError, "%s: keys and one or two int32 columns", fn);
        return -1;
    }
    for (Py_ssize_t c = 0; c < nc; c++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, c), &v[c], PyBUF_STRIDES | PyBUF_FORMAT) < 0)
            return -1;
        (*held)++;
        if (v[c].ndim != 1 || v[c].itemsize != (c ? 4 : 8) || v[c].shape[0] != v[0].shape[0]) {
            PyErr_Format(PyExc_ValueError, "%s: 1-d columns of int64 keys, then int32, one value a row", fn);
            return -1;
        }
    }
    return 0;
}

/* Loads through memcpy: the columns may be fields of packed 12- or 16-byte records (unaligned). */
static inline int64_t load_i64(const char *p) {
    int64_t x;
    memcpy(&x, p, 8);
    return x;
}

static inline uint32_t load_u32(const char *p) {
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

#define KEY_AT(v, i) load_i64((const char *)(v)[0].buf + (Py_ssize_t)(i) * (v)[0].strides[0])

/* One block's records, packed little-endian, at o; returns the end. */
static char *put_records(char *o, const Py_buffer *v, Py_ssize_t nc, size_t i, size_t e) {
    for (; i < e; i++) {
        o = put_le(o, (uint64_t)KEY_AT(v, i), 8);
        for (Py_ssize_t c = 1; c < nc; c++)
            o = put_le(o, load_u32((const char *)v[c].buf + (Py_ssize_t)i * v[c].strides[0]), 4);
    }
    return o;
}

static size_t block_end(const Py_buffer *v, size_t i, size_t n, int shift) {
    int64_t b = shift_right(KEY_AT(v, i), shift);
    size_t e = i + 1;
    while (e < n && shift_right(KEY_AT(v, e), shift) == b)
        e++;
    return e;
}

/* The columns a block writer was given, their buffers held, and the blocks they make. */
typedef struct {
    PyObject *seq;
    Py_buffer v[3];
    Py_ssize_t nc, held;
    size_t n, width, blocks;
} Columns;

static void columns_close(Columns *c) {
    for (Py_ssize_t i = 0; i < c->held; i++)
        PyBuffer_Release(&c->v[i]);
    c->held = 0;
    Py_CLEAR(c->seq);
}

/* Checks the shift and the columns and counts the blocks; on failure (-1) nothing is held. */
static int columns_open(Columns *c, const char *fn, PyObject *cols, int shift) {
    c->seq = NULL;
    c->held = 0;
    if (shift < 1 || shift > 63) {
        PyErr_Format(PyExc_ValueError, "%s: a shift of 1 to 63", fn);
        return -1;
    }
    c->seq = PySequence_Fast(cols, "block writer: columns must be a sequence");
    if (!c->seq)
        return -1;
    c->nc = PySequence_Fast_GET_SIZE(c->seq);
    if (get_columns(fn, c->seq, c->v, &c->held) < 0) {
        columns_close(c);
        return -1;
    }
    c->n = (size_t)c->v[0].shape[0];
    c->width = 8 + 4 * (size_t)(c->nc - 1);
    c->blocks = 0;
    for (size_t i = 0; i < c->n; i = block_end(c->v, i, c->n, shift))
        c->blocks++;
    return 0;
}

static PyObject *py_copy_blocks(PyObject *self, PyObject *args) {
    long long seg;
    PyObject *cols;
    int shift;
    Columns c;
    if (!PyArg_ParseTuple(args, "LOi", &seg, &cols, &shift) || columns_open(&c, "copy_blocks", cols, shift) < 0)
        return NULL;
    static const char header[] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";
    const size_t hlen = 19, head = 22;
    PyObject *out = buf_new((Py_ssize_t)(hlen + c.blocks * head + c.n * c.width + 2));
    if (out) {
        char *o = BUF(out);
        memcpy(o, header, hlen);
        o += hlen;
        Py_BEGIN_ALLOW_THREADS;
        for (size_t i = 0, e; i < c.n; i = e) {
            e = block_end(c.v, i, c.n, shift);
            o = put_be16(o, 3);
            o = put_be32(o, 4);
            o = put_be32(o, seg);
            o = put_be32(o, 4);
            o = put_be32(o, shift_right(KEY_AT(c.v, i), shift));
            o = put_be32(o, (int64_t)((e - i) * c.width));
            o = put_records(o, c.v, c.nc, i, e);
        }
        put_be16(o, -1);
        Py_END_ALLOW_THREADS;
    }
    columns_close(&c);
    return view_of(out);
}

/* block_rows(columns, shift) -> [bucket, data, bucket, data, ...]: the same blocks as copy_blocks,
 * each bucket an int and its data a bytes object of packed records, laid end to end in one list
 * (SQLite's multi-row INSERTs take them a slice at a time). */
static PyObject *py_block_rows(PyObject *self, PyObject *args) {
    PyObject *cols;
    int shift;
    Columns c;
    if (!PyArg_ParseTuple(args, "Oi", &cols, &shift) || columns_open(&c, "block_rows", cols, shift) < 0)
        return NULL;
    PyObject *out = PyList_New((Py_ssize_t)(2 * c.blocks));
    Py_ssize_t k = 0;
    for (size_t i = 0, e; out && i < c.n; i = e) {
        e = block_end(c.v, i, c.n, shift);
        if (k + 2 > (Py_ssize_t)(2 * c.blocks)) { /* the keys changed under us (a finaliser, say) */
            PyErr_SetString(PyExc_RuntimeError, "block_rows: the keys changed while their blocks were made");
            Py_CLEAR(out);
            break;
        }
        PyObject *b = PyLong_FromLongLong(shift_right(KEY_AT(c.v, i), shift));
        PyObject *d = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((e - i) * c.width));
        if (!b || !d) {
            Py_XDECREF(b);
            Py_XDECREF(d);
            Py_CLEAR(out); /* the list's unset items are NULL, which its deallocation skips */
            break;
        }
        put_records(PyBytes_AS_STRING(d), c.v, c.nc, i, e);
        PyList_SET_ITEM(out, k++, b);
        PyList_SET_ITEM(out, k++, d);
    }
    columns_close(&c);
    return out;
}
#undef KEY_AT

/* ------------------------------------------------------------------ key filters
 *
 * A segment's key filter (app/store/blocks.py, KeyFilter): a split-block Bloom filter, as Parquet's
 * (blocks of eight 32-bit words; each key sets one bit in each word of one block). Keys are
 * uniform 64-bit hashes already (the blocks' buckets rely on it too): the key's own high 32 bits
 * pick the block, so keys in sorted order (as segments are written and look-ups ask) walk the
 * filter in order instead of missing the cache on every key (47 -> 8 ns a key for 8 M keys); the
 * low 32 bits of fmix64(key) times eight odd salts pick the bits. A look-up asks a segment's
 * blocks only for the keys its filter may hold. */

static const uint32_t FILTER_SALT[8] = {0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
                                        0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};

static inline uint32_t *filter_block(uint32_t *words, uint64_t nblocks, uint64_t key) {
    return words + 8 * (((key >> 32) * nblocks) >> 32);
}

/* filter_add(bits, keys): every int64 key set in the filter `bits` (a writable buffer of whole
 * 32-byte blocks). */
static PyObject *py_filter_add(PyObject *self, PyObject *args) {
    PyObject *o_bits, *o_keys;
    Py_buffer bits, keys;
    if (!PyArg_ParseTuple(args, "OO", &o_bits, &o_keys))
        return NULL;
    if (PyObject_GetBuffer(o_bits, &bits, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return NULL;
    if (bits.len == 0 || bits.len % 32) {
        PyErr_SetString(PyExc_ValueError, "filter_add: the filter is not a whole number of 32-byte blocks");
        PyBuffer_Release(&bits);
        return NULL;
    }
    if (get_items(o_keys, &keys, 8, "keys") < 0) {
        PyBuffer_Release(&bits);
        return NULL;
    }
    uint32_t *words = (uint32_t *)bits.buf;
    const uint64_t nblocks = (uint64_t)bits.len / 32;
    const uint64_t *k = (const uint64_t *)keys.buf;
    const Py_ssize_t n = keys.len / 8;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint64_t h = fmix64(k[i]);
        uint32_t *w = filter_block(words, nblocks, k[i]);
        for (int j = 0; j < 8; j++)
            w[j] |= 1U << (((uint32_t)h * FILTER_SALT[j]) >> 27);
    }
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&keys);
    PyBuffer_Release(&bits);
    Py_RETURN_NONE;
}

/* filter_query(bits, keys, out): out[i] |= 1 where the filter may hold keys[i] (out: a writable
 * buffer of one byte per key, so the parts of one segment are asked into the same answer). */
static PyObject *py_filter_query(PyObject *self, PyObject *args) {
    PyObject *o_bits, *o_keys, *o_out;
    Py_buffer bits, keys, out;
    if (!PyArg_ParseTuple(args, "OOO", &o_bits, &o_keys, &o_out))
        return NULL;
    if (get_items(o_bits, &bits, 32, "filter") < 0)
        return NULL;
    if (get_items(o_keys, &keys, 8, "keys") < 0) {
        PyBuffer_Release(&bits);
        return NULL;
    }
    if (PyObject_GetBuffer(o_out, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&keys);
        PyBuffer_Release(&bits);
        return NULL;
    }
    const Py_ssize_t n = keys.len / 8;
    if (out.len != n || bits.len == 0) {
        PyErr_SetString(PyExc_ValueError, "filter_query: one answer byte per key, and a filter of one block or more");
    } else {
        const uint32_t *words = (const uint32_t *)bits.buf;
        const uint64_t nblocks = (uint64_t)bits.len / 32;
        const uint64_t *k = (const uint64_t *)keys.buf;
        uint8_t *o = (uint8_t *)out.buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (o[i])
                continue;
            const uint64_t h = fmix64(k[i]);
            const uint32_t *w = filter_block((uint32_t *)words, nblocks, k[i]);
            uint32_t all = 1;
            for (int j = 0; j < 8; j++)
                all &= w[j] >> (((uint32_t)h * FILTER_SALT[j]) >> 27);
            o[i] = (uint8_t)(all & 1U);
        }
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&bits);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ sorted tables */

/* The first index in [lo, hi) of ascending int64 keys whose key is not below v (hi if none). */
static inline Py_ssize_t lower_bound(const int64_t *k, Py_ssize_t lo, Py_ssize_t hi, int64_t v) {
    while (lo < hi) {
        const Py_ssize_t mid = lo + ((hi - lo) >> 1);
        if (k[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The index of v in keys (ascending, without repeats), or -1, searching only v's bucket of the
 * key directory dir (see sorted_find). */
static inline Py_ssize_t dir_find(const int64_t *k, const int64_t *dir, int shift, int64_t v) {
    const uint64_t b = ((uint64_t)v ^ 0x8000000000000000ULL) >> shift;
    const Py_ssize_t at = lower_bound(k, dir[b], dir[b + 1], v);
    return at < dir[b + 1] && k[at] == v ? at : -1;
}

/* member(needles, keys, out): out[i] = 1 where needles[i] (int64) is one of keys (int64, sorted,
 * without repeats), else 0. The scorer asks this of a few hundred grams against a few hundred to a
 * few thousand many times per document; numpy's binary search (four passes with temporaries) was
 * 5-7% of a scan. A table of the keys (open addressing, twice their count) answers each needle in
 * about one probe; when the keys far outnumber the needles, each needle is binary-searched. */
static PyObject *py_member(PyObject *self, PyObject *args) {
    PyObject *o_needles, *o_keys, *o_out;
    Py_buffer needles, keys, out;
    if (!PyArg_ParseTuple(args, "OOO", &o_needles, &o_keys, &o_out))
        return NULL;
    if (get_items(o_needles, &needles, 8, "needles") < 0)
        return NULL;
    if (get_items(o_keys, &keys, 8, "keys") < 0) {
        PyBuffer_Release(&needles);
        return NULL;
    }
    if (PyObject_GetBuffer(o_out, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&keys);
        PyBuffer_Release(&needles);
        return NULL;
    }
    const Py_ssize_t n = needles.len / 8, nk = keys.len / 8;
    const int64_t *x = (const int64_t *)needles.buf, *k = (const int64_t *)keys.buf;
    uint8_t *o = (uint8_t *)out.buf;
    if (out.len != n) {
        PyErr_SetString(PyExc_ValueError, "member: one byte of answer per needle");
    } else if (nk == 0) {
        memset(o, 0, (size_t)n);
    } else if (n < 8 || nk > 8 * n) {
        for (Py_ssize_t i = 0; i < n; i++) {
            const Py_ssize_t lo = lower_bound(k, 0, nk, x[i]);
            o[i] = lo < nk && k[lo] == x[i];
        }
    } else {
        int bits = 1;
        while (((Py_ssize_t)1 << bits) < 2 * nk)
            bits++;
        const size_t cap = (size_t)1 << bits, mask = cap - 1;
        /* slots hold key + 1 as unsigned (0: empty); the key -1 (whose key + 1 is 0) is kept apart */
        uint64_t *slot = calloc(cap, sizeof(uint64_t));
        if (!slot) {
            PyErr_NoMemory();
        } else {
            int minus_one = 0;
            for (Py_ssize_t j = 0; j < nk; j++) {
                const uint64_t v = (uint64_t)k[j] + 1;
                if (!v) {
                    minus_one = 1;
                    continue;
                }
                size_t h = (size_t)((v * P64) >> (64 - bits));
                while (slot[h])
                    h = (h + 1) & mask;
                slot[h] = v;
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                const uint64_t v = (uint64_t)x[i] + 1;
                if (!v) {
                    o[i] = (uint8_t)minus_one;
                    continue;
                }
                size_t h = (size_t)((v * P64) >> (64 - bits));
                while (slot[h] && slot[h] != v)
                    h = (h + 1) & mask;
                o[i] = slot[h] == v;
            }
            free(slot);
        }
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&needles);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* sorted_find(keys, dir, shift, needles, out): out[i] = the index of needles[i] in keys (int64,
 * ascending, without repeats), or -1. dir (int64, 2**(64 - shift) + 1 entries) is where the keys
 * of each bucket start, a key's bucket being the top bits of the key with its sign bit flipped
 * (so buckets follow the keys' order): a look-up searches one bucket of a few keys instead of
 * the whole table, whose binary search missed the cache at every step. */
static PyObject *py_sorted_find(PyObject *self, PyObject *args) {
    PyObject *o_keys, *o_dir, *o_needles, *o_out;
    int shift;
    Py_buffer keys, dir, needles, out;
    if (!PyArg_ParseTuple(args, "OOiOO", &o_keys, &o_dir, &shift, &o_needles, &o_out))
        return NULL;
    if (shift < 1 || shift > 63) {
        PyErr_SetString(PyExc_ValueError, "sorted_find: shift must be 1 to 63");
        return NULL;
    }
    if (get_items(o_keys, &keys, 8, "keys") < 0)
        return NULL;
    if (get_items(o_dir, &dir, 8, "dir") < 0) {
        PyBuffer_Release(&keys);
        return NULL;
    }
    if (get_items(o_needles, &needles, 8, "needles") < 0) {
        PyBuffer_Release(&dir);
        PyBuffer_Release(&keys);
        return NULL;
    }
    if (PyObject_GetBuffer(o_out, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&needles);
        PyBuffer_Release(&dir);
        PyBuffer_Release(&keys);
        return NULL;
    }
    const Py_ssize_t n = needles.len / 8, nk = keys.len / 8;
    const uint64_t buckets = 1ULL << (64 - shift);
    if (out.len != needles.len || (uint64_t)(dir.len / 8) != buckets + 1) {
        PyErr_SetString(PyExc_ValueError, "sorted_find: one int64 answer per needle, and 2**(64 - shift) + 1 offsets");
    } else {
        const int64_t *k = (const int64_t *)keys.buf, *d = (const int64_t *)dir.buf, *x = (const int64_t *)needles.buf;
        int64_t *o = (int64_t *)out.buf;
        if (d[buckets] != nk) {
            PyErr_SetString(PyExc_ValueError, "sorted_find: the directory does not end at the table's length");
        } else {
            for (Py_ssize_t i = 0; i < n; i++)
                o[i] = dir_find(k, d, shift, x[i]);
        }
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&needles);
    PyBuffer_Release(&dir);
    PyBuffer_Release(&keys);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* Open every buffer of objs as `itemsize`-byte items (views[i]), or none: on failure each one
 * opened is released and -1 returned with the error set. */
static int get_all(PyObject *const *objs, Py_buffer *views, int n, Py_ssize_t itemsize, const char *const *names) {
    for (int i = 0; i < n; i++) {
        if (get_items(objs[i], &views[i], itemsize, names[i]) < 0) {
            while (i--)
                PyBuffer_Release(&views[i]);
            return -1;
        }
    }
    return 0;
}

/* select_records(blobs, itemsize, keys, dir, shift) -> (records, pos): of the posting blocks
 * `blobs` (a sequence of bytes-like objects, each whole records of `itemsize` bytes whose first 8
 * are a little-endian int64 key), the records whose key is one of keys (int64, ascending, without
 * repeats; dir and shift as sorted_find), in the order read, and each one's index in keys (int64).
 * What decoding every block and a sorted_find of every key, then keeping the hits, gave: a
 * look-up reads blocks of 64 to 128 postings to keep one or two (app.store.blocks), and joining,
 * copying and searching every record of them was a sixth of a look-up of long items. */
static PyObject *py_select_records(PyObject *self, PyObject *args) {
    PyObject *o_blobs, *objs[2];
    Py_buffer v[2];
    static const char *const names[2] = {"keys", "dir"};
    Py_ssize_t itemsize;
    int shift;
    if (!PyArg_ParseTuple(args, "OnOOi", &o_blobs, &itemsize, &objs[0], &objs[1], &shift))
        return NULL;
    if (itemsize < 8 || shift < 1 || shift > 63) {
        PyErr_SetString(PyExc_ValueError, "select_records: records of at least 8 bytes, and a shift of 1 to 63");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(o_blobs, "select_records: blobs must be a sequence");
    if (!seq)
        return NULL;
    if (get_all(objs, v, 2, 8, names) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    const int64_t *k = v[0].buf, *d = v[1].buf;
    const Py_ssize_t nk = v[0].len / 8;
    const uint64_t buckets = 1ULL << (64 - shift);
    Vec rec = {0}, pos = {0};
    PyObject *result = NULL, *r = NULL, *q = NULL;
    if ((uint64_t)(v[1].len / 8) != buckets + 1 || d[buckets] != nk) {
        PyErr_SetString(PyExc_ValueError, "select_records: 2**(64 - shift) + 1 offsets ending at the keys' length");
        goto done;
    }
    const Py_ssize_t nb = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t b = 0; b < nb; b++) {
        Py_buffer blob;
        if (PyObject_GetBuffer(items[b], &blob, PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        if (blob.len % itemsize) {
            PyErr_Format(PyExc_ValueError, "select_records: block %zd holds %zd bytes, not whole %zd-byte records", b,
                         blob.len, itemsize);
            PyBuffer_Release(&blob);
            goto done;
        }
        const unsigned char *p = blob.buf;
        int failed = 0;
        for (Py_ssize_t off = 0; off < blob.len; off += itemsize) {
            uint64_t u = 0;
            for (int j = 7; j >= 0; j--)
                u = (u << 8) | p[off + j];
            const int64_t at = dir_find(k, d, shift, (int64_t)u);
            if (at >= 0 && (vec_put(&rec, p + off, itemsize) < 0 || vec_put(&pos, &at, 8) < 0)) {
                failed = 1;
                break;
            }
        }
        PyBuffer_Release(&blob);
        if (failed)
            goto done;
    }
    r = view_of(vec_take(&rec));
    q = r ? view_of(vec_take(&pos)) : NULL;
    if (r && q)
        result = PyTuple_Pack(2, r, q);
done:
    Py_XDECREF(r);
    Py_XDECREF(q);
    free(rec.p);
    free(pos.p);
    for (int i = 0; i < 2; i++)
        PyBuffer_Release(&v[i]);
    Py_DECREF(seq);
    return result;
}

/* candidate_votes(pkeys, pstart, pdocs, grams, freq, q, sgrams, sfreq, sspos, sflags, pgrams) ->
 * (docs, votes, asked, flags, hits): what an item's n-grams say of each document that holds one
 * (Scanner._votes): the postings are pkeys (int64, ascending, without repeats), the documents of
 * pkeys[r] being pdocs[pstart[r] .. pstart[r + 1]). Each distinct gram votes once, at its first
 * place: grams (the exact channel; freq: items holding each, q: in the question, one byte each)
 * first, then sgrams (the short channel; sfreq, and sflags: bit 0 in the question, bit 1 a gram
 * of the item's own; sspos: its token position), a gram of both channels only in the first. A
 * document's vote is the sum of 1 / max(f, 1) over its grams, added in that order (so it is the
 * same double the Python loop gave), `asked` the same over the question's grams (flags bit 0: it
 * has one); hits: its exact-channel grams, plus 2 for two short-channel grams starting at most
 * SHORT_PAIR_GAP tokens apart (in a row, or on either side of one word changed), one of them the
 * item's own, else 1 for any own short-channel gram; then each of pgrams (the
 * passage's n-grams the item lacks, distinct) adds 0.01 to the vote and 1 to the hits of each
 * document holding it. Documents in the order first met. */
typedef struct {
    int64_t doc, hits;
    double votes, asked;
    char has_asked;
} DocVote;

typedef struct {
    int64_t slot, at;
    char own;
} ShortHit;

/* Two short-channel grams of an item make a pair when they start at most this many tokens apart: in
 * a row (1), or on either side of one word a copy changed, dropped or added (up to 4). */
#define SHORT_PAIR_GAP 4

typedef struct {
    int64_t *keys;
    int64_t *vals; /* slot + 1; 0: empty */
    size_t cap, used;
    int bits; /* cap == 1 << bits */
} I64Map;

static int64_t *map_slot(I64Map *m, int64_t key) { /* the value cell of key, made 0 if new; NULL: out of memory */
    if (2 * (m->used + 1) > m->cap) {
        const size_t old_cap = m->cap;
        int64_t *ok = m->keys, *ov = m->vals;
        m->bits = old_cap ? m->bits + 1 : 6;
        m->cap = (size_t)1 << m->bits;
        m->keys = malloc(sizeof(int64_t) * m->cap);
        m->vals = calloc(m->cap, sizeof(int64_t));
        if (!m->keys || !m->vals) {
            free(ok);
            free(ov);
            return NULL;
        }
        for (size_t o = 0; o < old_cap; o++) {
            if (!ov[o])
                continue;
            size_t h = (size_t)(((uint64_t)ok[o] * P64) >> (64 - m->bits));
            while (m->vals[h])
                h = (h + 1) & (m->cap - 1);
            m->keys[h] = ok[o];
            m->vals[h] = ov[o];
        }
        free(ok);
        free(ov);
    }
    size_t h = (size_t)(((uint64_t)key * P64) >> (64 - m->bits));
    while (m->vals[h] && m->keys[h] != key)
        h = (h + 1) & (m->cap - 1);
    if (!m->vals[h]) {
        m->keys[h] = key;
        m->used++;
    }
    return &m->vals[h];
}

static Py_ssize_t find_key(const int64_t *keys, Py_ssize_t n, int64_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo] == x ? lo : -1;
}

static int cmp_short(const void *a, const void *b) {
    const ShortHit *x = a, *y = b;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    return x->at < y->at ? -1 : (x->at > y->at);
}

static PyObject *py_candidate_votes(PyObject *self, PyObject *args) {
    enum { NV = 11 };
    PyObject *objs[NV];
    Py_buffer v[NV];
    static const char *const names[NV] = {"pkeys", "pstart", "pdocs",  "grams",  "freq",  "q",
                                          "sgrams", "sfreq", "sspos", "sflags", "pgrams"};
    static const Py_ssize_t sizes[NV] = {8, 8, 8, 8, 8, 1, 8, 8, 8, 1, 8};
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7], &objs[8], &objs[9], &objs[10]))
        return NULL;
    int got = 0;
    for (; got < NV; got++)
        if (get_items(objs[got], &v[got], sizes[got], names[got]) < 0)
            break;
    PyObject *result = NULL;
    I64Map seen = {0}, slots = {0};
    Vec dv = {0}, sh = {0};
    if (got < NV)
        goto done;
    const int64_t *pkeys = v[0].buf, *pstart = v[1].buf, *pdocs = v[2].buf;
    const Py_ssize_t nk = v[0].len / 8, nd = v[2].len / 8;
    if (v[1].len / 8 != nk + 1 || (nk && (pstart[0] != 0 || pstart[nk] != nd)) || v[4].len != v[3].len ||
        v[5].len != v[3].len / 8 || v[7].len != v[6].len || v[8].len != v[6].len || v[9].len != v[6].len / 8) {
        PyErr_SetString(PyExc_ValueError, "candidate_votes: a start per key and one more, ending at the documents' "
                                          "length; a frequency and a flag per gram, a position per short gram");
        goto done;
    }
    for (int channel = 0; channel < 3; channel++) {
        const int64_t *g = v[channel == 0 ? 3 : channel == 1 ? 6 : 10].buf;
        const Py_ssize_t n = v[channel == 0 ? 3 : channel == 1 ? 6 : 10].len / 8;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (channel < 2) {
                int64_t *mark = map_slot(&seen, g[i]);
                if (!mark) {
                    PyErr_NoMemory();
                    goto done;
                }
                if (*mark)
                    continue;
                *mark = 1;
            }
            const Py_ssize_t r = find_key(pkeys, nk, g[i]);
            if (r < 0)
                continue;
            if (pstart[r] < 0 || pstart[r] > pstart[r + 1] || pstart[r + 1] > nd) {
                PyErr_SetString(PyExc_ValueError, "candidate_votes: a key's documents run past the documents");
                goto done;
            }
            int64_t f = 1;
            char in_q = 0, own = 0;
            if (channel == 0) {
                f = ((const int64_t *)v[4].buf)[i];
                in_q = ((const char *)v[5].buf)[i] != 0;
            } else if (channel == 1) {
                f = ((const int64_t *)v[7].buf)[i];
                in_q = (((const char *)v[9].buf)[i] & 1) != 0;
                own = (((const char *)v[9].buf)[i] & 2) != 0;
            }
            const double w = channel == 2 ? 0.01 : 1.0 / (double)(f > 1 ? f : 1);
            for (int64_t j = pstart[r]; j < pstart[r + 1]; j++) {
                int64_t *cell = map_slot(&slots, pdocs[j]);
                if (!cell) {
                    PyErr_NoMemory();
                    goto done;
                }
                if (!*cell) {
                    const DocVote fresh = {.doc = pdocs[j]};
                    if (vec_put(&dv, &fresh, sizeof fresh) < 0)
                        goto done;
                    *cell = (int64_t)(dv.len / (Py_ssize_t)sizeof(DocVote));
                }
                DocVote *d = (DocVote *)dv.p + (*cell - 1);
                d->votes += w;
                if (channel == 1) {
                    const ShortHit hit = {.slot = *cell - 1, .at = ((const int64_t *)v[8].buf)[i], .own = own};
                    if (vec_put(&sh, &hit, sizeof hit) < 0)
                        goto done;
                } else {
                    d->hits++;
                }
                if (in_q) {
                    d->asked += w;
                    d->has_asked = 1;
                }
            }
        }
        if (channel == 1) { /* the short channel's hits, once its grams are all in */
            ShortHit *h = (ShortHit *)sh.p;
            const Py_ssize_t nh = sh.len / (Py_ssize_t)sizeof(ShortHit);
            if (nh > 1)
                qsort(h, (size_t)nh, sizeof(ShortHit), cmp_short);
            for (Py_ssize_t a = 0; a < nh;) {
                Py_ssize_t b = a;
                int pair = 0, any_own = 0;
                for (; b < nh && h[b].slot == h[a].slot; b++) {
                    any_own |= h[b].own;
                    if (b > a && h[b].at > h[b - 1].at && h[b].at - h[b - 1].at <= SHORT_PAIR_GAP &&
                        (h[b].own || h[b - 1].own))
                        pair = 1;
                }
                ((DocVote *)dv.p)[h[a].slot].hits += pair ? 2 : any_own;
                a = b;
            }
        }
    }
    {
        const Py_ssize_t m = dv.len / (Py_ssize_t)sizeof(DocVote);
        PyObject *bufs[5] = {buf_new(8 * m), buf_new(8 * m), buf_new(8 * m), buf_new(m), buf_new(8 * m)};
        if (!bufs[0] || !bufs[1] || !bufs[2] || !bufs[3] || !bufs[4]) {
            for (int k = 0; k < 5; k++)
                Py_XDECREF(bufs[k]);
            goto done;
        }
        const DocVote *d = (const DocVote *)dv.p;
        for (Py_ssize_t k = 0; k < m; k++) {
            ((int64_t *)BUF(bufs[0]))[k] = d[k].doc;
            ((double *)BUF(bufs[1]))[k] = d[k].votes;
            ((double *)BUF(bufs[2]))[k] = d[k].asked;
            BUF(bufs[3])[k] = d[k].has_asked;
            ((int64_t *)BUF(bufs[4]))[k] = d[k].hits;
        }
        result = PyTuple_New(5);
        for (int k = 0; k < 5; k++) {
            PyObject *view = view_of(bufs[k]);
            if (!view || !result) {
                for (int j = k + 1; j < 5; j++)
                    Py_DECREF(bufs[j]);
                Py_XDECREF(view);
                Py_CLEAR(result);
                break;
            }
            PyTuple_SET_ITEM(result, k, view);
        }
    }
done:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&v[i]);
    free(seen.keys);
    free(seen.vals);
    free(slots.keys);
    free(slots.vals);
    free(dv.p);
    free(sh.p);
    return result;
}

/* top_groups(keys, dir, shift, start, count, groups, needles, max_items, exclude, k) -> the k
 * groups that hold the most of needles, the most first, equal counts in ascending order of group.
 * A benchmark's gram table (items._GramTable): keys (int64, ascending, without repeats) found
 * through dir as sorted_find does, key r held by the groups groups[start[r] .. start[r] + count[r]).
 * A needle counts once per time it is given (repeats count again), for each group holding it,
 * unless more than max_items groups hold it; the group `exclude` is never counted. What
 * _GramTable.groups_of, then np.unique(..., return_counts=True) and a stable sort by count gave,
 * in one pass: the competitor search asks it three times per candidate document. */
static int64_t *tg_count = NULL, *tg_touched = NULL; /* top_groups' counts by group, and the groups counted */
static size_t tg_cap = 0, tg_touched_cap = 0;

static PyObject *py_top_groups(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    Py_buffer v[6];
    static const char *const names[6] = {"keys", "dir", "start", "count", "groups", "needles"};
    int shift, k;
    Py_ssize_t max_items;
    int64_t exclude;
    if (!PyArg_ParseTuple(args, "OOiOOOOnLi", &objs[0], &objs[1], &shift, &objs[2], &objs[3], &objs[4], &objs[5],
                          &max_items, &exclude, &k))
        return NULL;
    if (shift < 1 || shift > 63 || k < 0) {
        PyErr_SetString(PyExc_ValueError, "top_groups: shift must be 1 to 63 and k at least 0");
        return NULL;
    }
    if (get_all(objs, v, 6, 8, names) < 0)
        return NULL;
    const int64_t *keys = v[0].buf, *dir = v[1].buf, *start = v[2].buf, *count = v[3].buf, *groups = v[4].buf,
                  *x = v[5].buf;
    const Py_ssize_t nk = v[0].len / 8, n = v[5].len / 8, ng = v[4].len / 8;
    const uint64_t buckets = 1ULL << (64 - shift);
    int64_t *rows = NULL, *best_g = NULL, *best_c = NULL;
    PyObject *result = NULL;
    if ((uint64_t)(v[1].len / 8) != buckets + 1 || dir[buckets] != nk || v[2].len != v[0].len ||
        v[3].len != v[0].len) {
        PyErr_SetString(PyExc_ValueError, "top_groups: 2**(64 - shift) + 1 offsets ending at the table's length, "
                                          "and a start and a count per key");
        goto done;
    }
    rows = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!rows) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t found = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Py_ssize_t lo = dir_find(keys, dir, shift, x[i]);
        if (lo >= 0 && count[lo] <= max_items) {
            if (start[lo] < 0 || count[lo] < 0 || count[lo] > ng - start[lo]) {
                PyErr_SetString(PyExc_ValueError, "top_groups: a key's groups run past the group table");
                goto done;
            }
            rows[found++] = lo;
        }
    }
    /* groups counted in a dense array indexed by group (groups are an item's place in the
     * benchmark: 0 to its size), kept between calls and zeroed where it was touched; the groups
     * touched listed for the choice of the best. An open-addressing table took three times as
     * long: a passage's grams visit the same few dozen siblings thousands of times. No Python code
     * may run while a count is set (an error is raised, the list made, only once they are zero
     * again): a collection's callbacks, run then, could call this function again, or let another
     * thread do so, which would find them set. */
    size_t used = 0;
    int failed = 0; /* 1: a group out of range, 2: no memory */
    best_g = malloc(sizeof(int64_t) * (size_t)(k ? k : 1));
    best_c = malloc(sizeof(int64_t) * (size_t)(k ? k : 1));
    if (!best_g || !best_c) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < found; i++) {
        const int64_t r = rows[i];
        for (int64_t j = start[r]; j < start[r] + count[r]; j++) {
            const int64_t g = groups[j];
            if (g == exclude)
                continue;
            if (g < 0 || g >= INT32_MAX) {
                failed = 1;
                goto counted;
            }
            if ((size_t)g >= tg_cap) {
                size_t cap = tg_cap ? tg_cap : 1024;
                while (cap <= (size_t)g)
                    cap *= 2;
                int64_t *c = realloc(tg_count, sizeof(int64_t) * cap);
                if (!c) {
                    failed = 2;
                    goto counted;
                }
                memset(c + tg_cap, 0, sizeof(int64_t) * (cap - tg_cap));
                tg_count = c;
                tg_cap = cap;
            }
            if (!tg_count[g]++) {
                if (used == tg_touched_cap) {
                    const size_t cap = tg_touched_cap ? 2 * tg_touched_cap : 256;
                    int64_t *t = realloc(tg_touched, sizeof(int64_t) * cap);
                    if (!t) {
                        tg_count[g] = 0;
                        failed = 2;
                        goto counted;
                    }
                    tg_touched = t;
                    tg_touched_cap = cap;
                }
                tg_touched[used++] = g;
            }
        }
    }
counted:;
    int m = 0; /* best_*[0..m): the best so far, best first */
    for (size_t h = 0; !failed && h < used; h++) {
        const int64_t g = tg_touched[h], c = tg_count[g];
        int at = m;
        while (at > 0 && (best_c[at - 1] < c || (best_c[at - 1] == c && best_g[at - 1] > g)))
            at--;
        if (at >= k)
            continue;
        if (m < k)
            m++;
        memmove(best_g + at + 1, best_g + at, sizeof(int64_t) * (size_t)(m - 1 - at));
        memmove(best_c + at + 1, best_c + at, sizeof(int64_t) * (size_t)(m - 1 - at));
        best_g[at] = g;
        best_c[at] = c;
    }
    for (size_t h = 0; h < used; h++) /* the counts back to zero before any Python code runs */
        tg_count[tg_touched[h]] = 0;
    if (failed) {
        if (failed == 1)
            PyErr_SetString(PyExc_ValueError, "top_groups: a group must be 0 to 2**31 - 2");
        else
            PyErr_NoMemory();
        goto done;
    }
    result = PyList_New(m);
    for (int i = 0; result && i < m; i++) {
        PyObject *g = PyLong_FromLongLong(best_g[i]);
        if (!g)
            Py_CLEAR(result);
        else
            PyList_SET_ITEM(result, i, g);
    }
done:
    free(rows);
    free(best_g);
    free(best_c);
    for (int i = 0; i < 6; i++)
        PyBuffer_Release(&v[i]);
    return result;
}

static int cmp_int64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* positions(ranked, order, needles) -> int64, ascending, without repeats: order[j] for every j
 * where ranked[j] (int64, ascending) equals one of needles. A document's grams sorted once
 * (ranked, and order: where each stands in the document) answer where an item's grams occur
 * in it; numpy's way (two searchsorted passes, a repeat, a sort, a mask) cost 3% of a scan. */
static PyObject *py_positions(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    Py_buffer v[3];
    static const char *const names[3] = {"ranked", "order", "needles"};
    if (!PyArg_ParseTuple(args, "OOO", &objs[0], &objs[1], &objs[2]))
        return NULL;
    if (get_all(objs, v, 3, 8, names) < 0)
        return NULL;
    const int64_t *ranked = v[0].buf, *order = v[1].buf, *x = v[2].buf;
    const Py_ssize_t n = v[0].len / 8, nx = v[2].len / 8;
    Vec out = {0};
    PyObject *result = NULL;
    if (v[1].len != v[0].len) {
        PyErr_SetString(PyExc_ValueError, "positions: one position per ranked gram");
        goto done;
    }
    for (Py_ssize_t i = 0; i < nx; i++) {
        for (Py_ssize_t j = lower_bound(ranked, 0, n, x[i]); j < n && ranked[j] == x[i]; j++)
            if (vec_put(&out, &order[j], 8) < 0)
                goto done;
    }
    int64_t *p = (int64_t *)out.p;
    Py_ssize_t m = out.len / 8, kept = 0;
    if (m > 1)
        qsort(p, (size_t)m, sizeof(int64_t), cmp_int64);
    for (Py_ssize_t j = 0; j < m; j++)
        if (!kept || p[kept - 1] != p[j])
            p[kept++] = p[j];
    out.len = kept * 8;
    result = view_of(vec_take(&out));
done:
    free(out.p);
    for (int i = 0; i < 3; i++)
        PyBuffer_Release(&v[i]);
    return result;
}

/* ------------------------------------------------------------------ alignment */

/* align(item, region, whole, starts, min_block) -> (matched, doc_pos, blocks): the longest common
 * subsequence of two int64 sequences, cut into blocks as rapidfuzz's
 * LCSseq.opcodes(item, region).as_matching_blocks() cuts it (the same subsequence: its common
 * prefix and suffix taken first, then Hyyro's bit-parallel matrix, traced back from the end,
 * deletions first), the blocks kept that are min_block tokens long or a one-token field
 * (whole[a]), each grown over the equal tokens beside it up to its neighbours, never across a
 * field start (starts[i]: a field starts at item token i). matched: one byte per item token;
 * doc_pos: int64 region index of each matched item token, -1 elsewhere; blocks: [(item start,
 * region start, size), ...] in order. Python's own loop over rapidfuzz's blocks was 6-9% of a
 * scan. whole and starts: bool arrays as long as the item, or None. */
typedef struct {
    Py_ssize_t a, b, size;
} Block;

static inline int bit_at(const uint64_t *row, Py_ssize_t i) { return (int)((row[i >> 6] >> (i & 63)) & 1); }

/* The matched pairs of the LCS of a[0:n1] and b[0:n2] (neither empty), appended to (ia, ib) in
 * order from *k on. -1: no memory. */
static int lcs_pairs(const int64_t *a, Py_ssize_t n1, const int64_t *b, Py_ssize_t n2, Py_ssize_t off, Py_ssize_t *ia,
                     Py_ssize_t *ib, Py_ssize_t *k) {
    const Py_ssize_t words = (n1 + 63) / 64;
    size_t cap = 16;
    while (cap < (size_t)n1 * 2)
        cap <<= 1;
    int64_t *keys = malloc(cap * sizeof(int64_t));
    int32_t *slot = malloc(cap * sizeof(int32_t)), *row_of = malloc((size_t)n1 * sizeof(int32_t));
    uint64_t *pm = NULL; /* one row of bits per distinct value */
    uint64_t *matrix = malloc((size_t)n2 * (size_t)words * sizeof(uint64_t));
    uint64_t *zero = calloc((size_t)words, sizeof(uint64_t)), *start = calloc((size_t)words, sizeof(uint64_t));
    int rc = -1;
    if (!keys || !slot || !row_of || !matrix || !zero || !start)
        goto done;
    for (size_t s = 0; s < cap; s++)
        slot[s] = -1;
    int32_t rows = 0;
    for (Py_ssize_t i = 0; i < n1; i++) {
        size_t s = (size_t)fmix64((uint64_t)a[i]) & (cap - 1);
        while (slot[s] >= 0 && keys[s] != a[i])
            s = (s + 1) & (cap - 1);
        if (slot[s] < 0) {
            slot[s] = rows++;
            keys[s] = a[i];
        }
        row_of[i] = slot[s];
    }
    pm = calloc((size_t)rows * (size_t)words, sizeof(uint64_t)); /* rows, not n1: few for repetitive text */
    if (!pm)
        goto done;
    for (Py_ssize_t i = 0; i < n1; i++)
        pm[(size_t)row_of[i] * (size_t)words + (size_t)(i >> 6)] |= 1ULL << (i & 63);
    for (Py_ssize_t w = 0; w < words; w++) /* S = (1 << n1) - 1 */
        start[w] = (w == words - 1 && n1 % 64) ? (1ULL << (n1 % 64)) - 1 : ~0ULL;
    const uint64_t *prev = start;
    for (Py_ssize_t j = 0; j < n2; j++) {
        size_t s = (size_t)fmix64((uint64_t)b[j]) & (cap - 1);
        while (slot[s] >= 0 && keys[s] != b[j])
            s = (s + 1) & (cap - 1);
        const uint64_t *m = slot[s] >= 0 ? pm + (size_t)slot[s] * (size_t)words : zero;
        uint64_t *row = matrix + (size_t)j * (size_t)words, carry = 0;
        for (Py_ssize_t w = 0; w < words; w++) { /* S = (S + u) | (S - u), u = S & M, carried across words */
            const uint64_t x = prev[w], u = x & m[w];
            uint64_t sum = x + u;
            uint64_t c = sum < x;
            sum += carry;
            c |= sum < carry;
            row[w] = sum | (x - u);
            carry = c;
        }
        prev = row;
    }
    /* traced back from the end, as rapidfuzz's recover_alignment: pairs found last to first */
    Py_ssize_t col = n1, r = n2, first = *k, last;
    while (r && col) {
        if (bit_at(matrix + (size_t)(r - 1) * (size_t)words, col - 1)) {
            col--; /* a deletion */
        } else {
            r--;
            if (r && !bit_at(matrix + (size_t)(r - 1) * (size_t)words, col - 1))
                continue; /* an insertion */
            col--;
            ia[*k] = off + col;
            ib[*k] = off + r;
            (*k)++;
        }
    }
    for (last = *k - 1; first < last; first++, last--) {
        Py_ssize_t t = ia[first];
        ia[first] = ia[last], ia[last] = t;
        t = ib[first];
        ib[first] = ib[last], ib[last] = t;
    }
    rc = 0;
done:
    free(keys);
    free(slot);
    free(row_of);
    free(pm);
    free(matrix);
    free(zero);
    free(start);
    if (rc < 0)
        PyErr_NoMemory();
    return rc;
}

static PyObject *py_align(PyObject *self, PyObject *args) {
    PyObject *o_a, *o_b, *o_whole, *o_starts, *result = NULL;
    Py_ssize_t min_block;
    Py_buffer va = {0}, vb = {0}, vw = {0}, vs = {0};
    Py_ssize_t *ia = NULL, *ib = NULL;
    Block *bl = NULL;
    if (!PyArg_ParseTuple(args, "OOOOn", &o_a, &o_b, &o_whole, &o_starts, &min_block))
        return NULL;
    if (get_items(o_a, &va, 8, "item") < 0)
        return NULL;
    if (get_items(o_b, &vb, 8, "region") < 0)
        goto done;
    const int64_t *a = va.buf, *b = vb.buf;
    const Py_ssize_t n = va.len / 8, m = vb.len / 8;
    if ((o_whole != Py_None && get_items(o_whole, &vw, 1, "whole") < 0) ||
        (o_starts != Py_None && get_items(o_starts, &vs, 1, "starts") < 0))
        goto done;
    if ((vw.buf && vw.len != n) || (vs.buf && vs.len != n)) {
        PyErr_SetString(PyExc_ValueError, "align: whole and starts need one value per item token");
        goto done;
    }
    const uint8_t *whole = vw.buf, *starts = vs.buf;
    const Py_ssize_t most = (n < m ? n : m) + 1;
    ia = malloc((size_t)most * sizeof(Py_ssize_t));
    ib = malloc((size_t)most * sizeof(Py_ssize_t));
    bl = malloc((size_t)most * sizeof(Block));
    if (!ia || !ib || !bl) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t k = 0, pre = 0, suf = 0, nb = 0;
    if (n && m) {
        while (pre < n && pre < m && a[pre] == b[pre])
            pre++;
        while (suf < n - pre && suf < m - pre && a[n - 1 - suf] == b[m - 1 - suf])
            suf++;
        for (; k < pre; k++)
            ia[k] = ib[k] = k;
        if (n - pre - suf > 0 && m - pre - suf > 0 &&
            lcs_pairs(a + pre, n - pre - suf, b + pre, m - pre - suf, pre, ia, ib, &k) < 0)
            goto done;
        for (Py_ssize_t t = 0; t < suf; t++, k++)
            ia[k] = n - suf + t, ib[k] = m - suf + t;
    }
    for (Py_ssize_t t = 0; t < k;) { /* the blocks: runs of pairs on one diagonal, those kept */
        Py_ssize_t e = t + 1;
        while (e < k && ia[e] == ia[e - 1] + 1 && ib[e] == ib[e - 1] + 1)
            e++;
        if (e - t >= min_block || (e - t == 1 && whole && whole[ia[t]]))
            bl[nb++] = (Block){ia[t], ib[t], e - t};
        t = e;
    }
    for (Py_ssize_t t = 0; t < nb; t++) { /* grown over equal tokens beside them (align._extend) */
        Block *x = &bl[t];
        const Py_ssize_t floor_a = t ? bl[t - 1].a + bl[t - 1].size : 0, floor_b = t ? bl[t - 1].b + bl[t - 1].size : 0;
        while (x->a > floor_a && x->b > floor_b && !(starts && starts[x->a]) && a[x->a - 1] == b[x->b - 1])
            x->a--, x->b--, x->size++;
        const Py_ssize_t ceil_a = t + 1 < nb ? bl[t + 1].a : n, ceil_b = t + 1 < nb ? bl[t + 1].b : m;
        while (x->a + x->size < ceil_a && x->b + x->size < ceil_b && !(starts && starts[x->a + x->size]) &&
               a[x->a + x->size] == b[x->b + x->size])
            x->size++;
    }
    /* Blocks next to each other in the item, apart in the region, moved together where the region
     * holds one beside the other (align.align's docstring): LCS spends a copy's first words on an earlier
     * repeat of them ("in the city of Bath and draws ... In the city of Bath which ..."). Only a
     * block with no neighbour in both sequences on its other side moves, the smaller of the two
     * first, so every move joins two pieces and parts none. */
    for (Py_ssize_t t = 0; t + 1 < nb; t++) {
        Block *x = &bl[t], *y = &bl[t + 1];
        if (x->a + x->size != y->a || x->b + x->size >= y->b)
            continue;
        const int x_free = !(t && bl[t - 1].a + bl[t - 1].size == x->a && bl[t - 1].b + bl[t - 1].size == x->b);
        const int y_free = !(t + 2 < nb && y->a + y->size == bl[t + 2].a && y->b + y->size == bl[t + 2].b);
        const Py_ssize_t xb = y->b - x->size, yb = x->b + x->size;
        const int x_fits = x_free && !memcmp(a + x->a, b + xb, (size_t)x->size * sizeof(int64_t));
        const int y_fits = y_free && !memcmp(a + y->a, b + yb, (size_t)y->size * sizeof(int64_t));
        if (x_fits && (x->size <= y->size || !y_fits))
            x->b = xb;
        else if (y_fits)
            y->b = yb;
    }
    PyObject *mbuf = buf_new(n), *pbuf = buf_new(n * 8), *list = PyList_New(nb);
    if (!mbuf || !pbuf || !list) {
        Py_XDECREF(mbuf);
        Py_XDECREF(pbuf);
        Py_XDECREF(list);
        goto done;
    }
    uint8_t *matched = (uint8_t *)BUF(mbuf);
    int64_t *pos = (int64_t *)BUF(pbuf);
    memset(matched, 0, (size_t)n);
    for (Py_ssize_t i = 0; i < n; i++)
        pos[i] = -1;
    for (Py_ssize_t t = 0; t < nb; t++) {
        for (Py_ssize_t i = 0; i < bl[t].size; i++) {
            matched[bl[t].a + i] = 1;
            pos[bl[t].a + i] = bl[t].b + i;
        }
        PyObject *blk = Py_BuildValue("(nnn)", bl[t].a, bl[t].b, bl[t].size);
        if (!blk) {
            Py_DECREF(mbuf);
            Py_DECREF(pbuf);
            Py_DECREF(list);
            goto done;
        }
        PyList_SET_ITEM(list, t, blk);
    }
    result = Py_BuildValue("(NNN)", view_of(mbuf), view_of(pbuf), list);
done:
    free(ia);
    free(ib);
    free(bl);
    PyBuffer_Release(&va);
    if (vb.obj)
        PyBuffer_Release(&vb);
    if (vw.obj)
        PyBuffer_Release(&vw);
    if (vs.obj)
        PyBuffer_Release(&vs);
    return result;
}

/* ------------------------------------------------------------------ masks */

/* runs(mask) -> [(start, end), ...]: every run of nonzero bytes of a bool array, [start, end).
 * With longest set (longest_run), just the length of the longest. The scorer asks several
 * times per candidate document, and numpy's way (pad, diff, flatnonzero, pair) took 8 us. */
static PyObject *mask_runs(PyObject *obj, int longest) {
    Py_buffer view;
    if (get_items(obj, &view, 1, "mask") < 0)
        return NULL;
    const uint8_t *m = view.buf;
    const Py_ssize_t n = view.len;
    PyObject *out = longest ? NULL : PyList_New(0);
    Py_ssize_t best = 0, i = 0;
    while (i < n && (longest || out)) {
        if (!m[i]) {
            i++;
            continue;
        }
        const Py_ssize_t s = i;
        while (i < n && m[i])
            i++;
        if (longest) {
            best = i - s > best ? i - s : best;
            continue;
        }
        PyObject *pair = Py_BuildValue("(nn)", s, i);
        if (!pair || PyList_Append(out, pair) < 0)
            Py_CLEAR(out);
        Py_XDECREF(pair);
    }
    PyBuffer_Release(&view);
    return longest ? PyLong_FromSsize_t(best) : out;
}



/* breaks(sel, matched, doc_pos, field_starts, item, region, piece) -> bits: what it costs to say
 * where each piece of the selected matched text resumes (matching.breaks, whose docstring gives
 * the rule): sel and matched one byte per item token, doc_pos the region index of each (int64),
 * field_starts where the item's fields start (int64, ascending), item and region the token ids.
 * Two of the scorer's calls per candidate document; in numpy about 40 us each. */
static Py_ssize_t find_run(const int64_t *hay, Py_ssize_t h, const int64_t *needle, Py_ssize_t m) {
    if (m == 0 || m > h)
        return -1;
    for (Py_ssize_t i = 0; i + m <= h; i++)
        if (hay[i] == needle[0] && !memcmp(hay + i, needle, (size_t)m * 8))
            return i;
    return -1;
}

static PyObject *py_breaks(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    double piece;
    Py_buffer v[6] = {{0}};
    static const Py_ssize_t sizes[6] = {1, 1, 8, 8, 8, 8};
    static const char *const names[6] = {"sel", "matched", "doc_pos", "field_starts", "item", "region"};
    if (!PyArg_ParseTuple(args, "OOOOOOd", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &piece))
        return NULL;
    int got = 0;
    for (; got < 6; got++)
        if (get_items(objs[got], &v[got], sizes[got], names[got]) < 0)
            break;
    Py_ssize_t *idx = NULL, *field = NULL, *missing = NULL;
    PyObject *result = NULL;
    if (got < 6)
        goto done;
    const uint8_t *sel = v[0].buf, *matched = v[1].buf;
    const int64_t *pos = v[2].buf, *starts = v[3].buf, *item = v[4].buf, *region = v[5].buf;
    const Py_ssize_t n = v[1].len, nstarts = v[3].len / 8, m = v[5].len / 8;
    if (v[0].len != n || v[2].len / 8 != n || v[4].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "breaks: sel, matched, doc_pos and item need one value per item token");
        goto done;
    }
    idx = malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    field = malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    missing = malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    if (!idx || !field || !missing) {
        PyErr_NoMemory();
        goto done;
    }
    /* the selected matched tokens; each one's field (how many starts are at or before it) and
     * the unmatched item tokens up to it */
    Py_ssize_t k = 0, f = 0, unmatched = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unmatched += !matched[i];
        while (f < nstarts && starts[f] <= i)
            f++;
        if (sel[i] && matched[i]) {
            idx[k] = i;
            field[k] = f;
            missing[k++] = unmatched;
        }
    }
    double cost = 0.0;
    if (k >= 2) {
        /* pieces: a new one where the field changes, the offset (region minus item place)
         * changes, or an item token is missing between two selected ones */
        Py_ssize_t first = idx[0], c = 1;
        while (c < k) {
            Py_ssize_t e = c + 1; /* the piece starting at c ends before e */
            while (e < k && field[e] == field[e - 1] && pos[idx[e]] - idx[e] == pos[idx[e - 1]] - idx[e - 1] &&
                   missing[e] == missing[e - 1])
                e++;
            const int cut = !(field[c] == field[c - 1] && pos[idx[c]] - idx[c] == pos[idx[c - 1]] - idx[c - 1] &&
                              missing[c] == missing[c - 1]);
            if (!cut) { /* (only the first position can be no cut) */
                c = e;
                continue;
            }
            const Py_ssize_t end = idx[e - 1];
            if (field[c] != field[c - 1]) {
                first = idx[c];
            } else if (find_run(region, m, item + first, end - first + 1) < 0) {
                const Py_ssize_t a = idx[c - 1], b = idx[c];
                const int64_t gap = (b - a - 1) + (pos[b] - pos[a] - 1);
                if (gap >= 0) {
                    const double bits = 1.0 + log2((double)(1 + gap));
                    cost += bits < piece ? bits : piece;
                } else {
                    cost += piece;
                }
                first = b;
            }
            c = e;
        }
    }
    result = PyFloat_FromDouble(cost);
done:
    free(idx);
    free(field);
    free(missing);
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&v[i]);
    return result;
}

/* covered(mask, n, length) -> bool per token of `length`: token i is inside an n-gram that starts
 * at a position j (i - n < j <= i) where mask[j] is set (mask: bool, one per gram start, of any
 * length). The scorer asks several times per candidate document; numpy's way (a convolution
 * with ones, a cast and a comparison) took 5 to 10 us. */
static PyObject *py_covered(PyObject *self, PyObject *args) {
    PyObject *o_mask;
    Py_ssize_t n, length;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "Onn", &o_mask, &n, &length))
        return NULL;
    if (n < 1 || length < 0) {
        PyErr_SetString(PyExc_ValueError, "covered: n must be at least 1 and length at least 0");
        return NULL;
    }
    if (get_items(o_mask, &view, 1, "mask") < 0)
        return NULL;
    const uint8_t *m = view.buf;
    PyObject *out = buf_new(length);
    if (out) {
        uint8_t *o = (uint8_t *)BUF(out);
        Py_ssize_t last = -n; /* the latest set start seen */
        for (Py_ssize_t i = 0; i < length; i++) {
            if (i < view.len && m[i])
                last = i;
            o[i] = i - last < n;
        }
    }
    PyBuffer_Release(&view);
    return view_of(out);
}

static PyObject *py_runs(PyObject *self, PyObject *mask) { return mask_runs(mask, 0); }

/* glued(tokens, joined, glue_max, min_chars, first) -> (hashes, starts, lens): items._glued's runs
 * of one field. joined[i]: tokens i and i + 1 are parted by punctuation alone (bool, one fewer
 * than the tokens). In each chain of joined tokens, every run a..b-1 of 2 to glue_max tokens whose
 * characters number at least min_chars, in order of a then b: the xxh3_64 of the tokens' UTF-8
 * (surrogatepass) laid end to end, as token_hashes("".join(tokens[a:b])) gives it, first + a, and
 * b - a. The Python loop made a str of every run (a news article has two hundred of them). */
static PyObject *py_glued(PyObject *self, PyObject *args) {
    PyObject *tokens, *mask, *result = NULL;
    Py_ssize_t glue_max, min_chars;
    long long first;
    if (!PyArg_ParseTuple(args, "OOnnL", &tokens, &mask, &glue_max, &min_chars, &first))
        return NULL;
    PyObject *seq = PySequence_Fast(tokens, "tokens must be a sequence of str");
    if (!seq)
        return NULL;
    Py_buffer m;
    if (PyObject_GetBuffer(mask, &m, PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    const unsigned char *joined = m.buf;
    Vec hashes = {0}, starts = {0}, lens = {0}, utf = {0};
    Py_ssize_t *off = NULL, *chars = NULL; /* each token's place in utf, its characters */
    if (m.len != (n ? n - 1 : 0) || glue_max < 2) {
        PyErr_SetString(PyExc_ValueError, "glued: one joined flag per pair of neighbouring tokens, glue_max >= 2");
        goto done;
    }
    off = malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    chars = malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
    if (!off || !chars) {
        PyErr_NoMemory();
        goto done;
    }
    /* every token's UTF-8, end to end: a run is a slice of it */
    off[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = items[i];
        if (!PyUnicode_Check(t)) {
            PyErr_Format(PyExc_TypeError, "a token must be str, not %.100s", Py_TYPE(t)->tp_name);
            goto done;
        }
        const Py_ssize_t len = PyUnicode_GET_LENGTH(t);
        chars[i] = len;
        if (vec_grow(&utf, 4 * len) < 0)
            goto done;
        if (PyUnicode_IS_ASCII(t)) {
            memcpy(utf.p + utf.len, PyUnicode_1BYTE_DATA(t), (size_t)len);
            utf.len += len;
        } else {
            const int kind = PyUnicode_KIND(t);
            const void *d = PyUnicode_DATA(t);
            char *o = utf.p + utf.len;
            for (Py_ssize_t c = 0; c < len; c++)
                o = put_utf8(o, PyUnicode_READ(kind, d, c));
            utf.len = o - utf.p;
        }
        off[i + 1] = utf.len;
    }
    for (Py_ssize_t k = 0; k + 1 < n;) {
        if (!joined[k]) {
            k++;
            continue;
        }
        Py_ssize_t end = k; /* the chain is tokens k..end */
        while (end + 1 < n && joined[end])
            end++;
        for (Py_ssize_t a = k; a < end; a++) {
            Py_ssize_t count = chars[a];
            const Py_ssize_t last = end + 1 - a < glue_max ? end + 1 : a + glue_max; /* no a + glue_max overflow */
            for (Py_ssize_t b = a + 2; b <= last; b++) {
                count += chars[b - 1];
                if (count < min_chars)
                    continue;
                if (vec_grow(&hashes, 8) < 0 || vec_grow(&starts, 8) < 0 || vec_grow(&lens, 8) < 0)
                    goto done;
                const uint64_t h = XXH3_64bits(utf.p + off[a], (size_t)(off[b] - off[a]));
                const int64_t at = (int64_t)first + a, size = b - a;
                memcpy(hashes.p + hashes.len, &h, 8);
                memcpy(starts.p + starts.len, &at, 8);
                memcpy(lens.p + lens.len, &size, 8);
                hashes.len += 8;
                starts.len += 8;
                lens.len += 8;
            }
        }
        k = end;
    }
    result = Py_BuildValue("(y#y#y#)", hashes.p ? hashes.p : "", hashes.len, starts.p ? starts.p : "", starts.len,
                           lens.p ? lens.p : "", lens.len);
done:
    free(off);
    free(chars);
    free(hashes.p);
    free(starts.p);
    free(lens.p);
    free(utf.p);
    PyBuffer_Release(&m);
    Py_DECREF(seq);
    return result;
}

static PyObject *py_longest_run(PyObject *self, PyObject *mask) { return mask_runs(mask, 1); }

/* json_depth(data, limit) -> the deepest nesting of brackets outside strings in JSON text (bytes),
 * stopping at the first past `limit` (limits.check_json_depth): one pass, a string's escapes
 * stepped over, an unterminated string running to the end. A regular expression for the strings
 * took time in the square of a run of escaped quotes (60 KB: 10 s) and memory per escape. */
static PyObject *py_json_depth(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "y*n", &view, &limit))
        return NULL;
    const unsigned char *p = view.buf;
    const Py_ssize_t n = view.len;
    Py_ssize_t depth = 0, deepest = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && deepest <= limit; i++) {
        const unsigned char c = p[i];
        if (c == '"') {
            for (i++; i < n && p[i] != '"'; i++)
                if (p[i] == '\\')
                    i++;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest)
                deepest = depth;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(deepest);
}

/* ------------------------------------------------------------------ the module */

static PyMethodDef methods[] = {
    {"member", py_member, METH_VARARGS,
     "member(needles, keys, out): out[i] = needles[i] is one of keys (int64, sorted, without repeats)"},
    {"sorted_find", py_sorted_find, METH_VARARGS,
     "sorted_find(keys, dir, shift, needles, out): out[i] = index of needles[i] in sorted keys, or -1"},
    {"select_records", py_select_records, METH_VARARGS,
     "select_records(blobs, itemsize, keys, dir, shift) -> (records, pos): the records of posting blocks whose "
     "int64 key is one of sorted keys, in order, and each one's index in keys"},
    {"positions", py_positions, METH_VARARGS,
     "positions(ranked, order, needles) -> int64 order[j] for every ranked[j] among needles, ascending, distinct"},
    {"align", py_align, METH_VARARGS,
     "align(item, region, whole, starts, min_block) -> (matched, doc_pos, blocks): LCS blocks of two int64 "
     "sequences as rapidfuzz's LCSseq opcodes give them, those kept grown over equal neighbours"},
    {"breaks", py_breaks, METH_VARARGS,
     "breaks(sel, matched, doc_pos, field_starts, item, region, piece) -> bits to place the pieces of "
     "the selected matched text (matching.breaks)"},
    {"covered", py_covered, METH_VARARGS,
     "covered(mask, n, length) -> bool per token of length: inside an n-gram starting where mask is set"},
    {"runs", py_runs, METH_O, "runs(mask) -> [(start, end), ...] of every run of True in a bool array"},
    {"glued", py_glued, METH_VARARGS,
     "glued(tokens, joined, glue_max, min_chars, first) -> (hashes, starts, lens) of the glued runs of one "
     "field (items._glued), as bytes"},
    {"longest_run", py_longest_run, METH_O, "longest_run(mask) -> the length of the longest run of True in a bool array"},
    {"json_depth", py_json_depth, METH_VARARGS,
     "json_depth(data, limit) -> the deepest bracket nesting outside strings of JSON bytes, stopping past limit"},
    {"candidate_votes", py_candidate_votes, METH_VARARGS,
     "candidate_votes(pkeys, pstart, pdocs, grams, freq, q, sgrams, sfreq, sspos, sflags, pgrams) -> (docs, "
     "votes, asked, flags, hits): what an item's n-grams vote for each document holding one (Scanner._votes)"},
    {"top_groups", py_top_groups, METH_VARARGS,
     "top_groups(keys, dir, shift, start, count, groups, needles, max_items, exclude, k) -> the k groups "
     "holding most of needles in a gram table, most first, ties by ascending group"},
    {"set_normaliser", py_set_normaliser, METH_VARARGS,
     "set_normaliser(norm, cache_limit, cjk, marks, ignorables): the function non-ASCII tokens are normalised "
     "by (text._norm), its answers cached up to cache_limit distinct tokens before the cache is emptied; the "
     "character classes (int64 first, last, ... as bytes) of text._CJK_RANGES, _MARK_RANGES and IGNORABLE."},
    {"tokens", py_tokens, METH_O, "tokens(text) -> the normalised tokens of text (text.tokenize)"},
    {"spans", py_spans, METH_O,
     "spans(text) -> (tokens, starts, ends): tokens and their character spans, int64 as bytearrays"},
    {"hash_spans", py_hash_spans, METH_O,
     "hash_spans(text) -> (uint64 hash of each token, int64 start of each, int64 end of each)"},
    {"text_hashes", py_text_hashes, METH_O,
     "text_hashes(texts) -> (hashes, lens): every text's token hashes end to end (uint64) and each "
     "text's token count (int64), as bytearrays"},
    {"hash_tokens", py_hash_tokens, METH_O, "hash_tokens(tokens) -> uint64 xxh3_64 of each token, as a bytearray"},
    {"roll", py_roll, METH_VARARGS, "roll(th, n) -> uint64 hash of every n consecutive token hashes"},
    {"ngrams", py_ngrams, METH_VARARGS,
     "ngrams(th, lens, n, sample_mod) -> (uint64 n-gram hashes inside each text, int32 text of each)"},
    {"minhash", py_minhash, METH_VARARGS,
     "minhash(th, shingle, a, b, starts, ends) -> uint32 MinHash signature of each window"},
    {"band_keys", py_band_keys, METH_VARARGS, "band_keys(sigs, bands, rows) -> int64 LSH band keys"},
    {"stable_order", py_stable_order, METH_O, "stable_order(keys) -> numpy's stable argsort of int64 keys"},
    {"merge_runs", py_merge_runs, METH_O,
     "merge_runs(runs) -> columns: sorted runs of (int64 keys, int32 columns...) merged stably by key"},
    {"copy_blocks", py_copy_blocks, METH_VARARGS,
     "copy_blocks(seg, columns, shift) -> PostgreSQL binary COPY stream of (seg, bucket, data) blocks"},
    {"block_rows", py_block_rows, METH_VARARGS,
     "block_rows(columns, shift) -> [bucket, data, ...]: copy_blocks' blocks as ints and bytes, end to end"},
    {"sort_rows", py_sort_rows, METH_VARARGS,
     "sort_rows(keys, docs, wins, distinct) -> (keys, docs, wins) ordered by (key, doc, win), "
     "(key, doc) repeats dropped if distinct"},
    {"filter_add", py_filter_add, METH_VARARGS,
     "filter_add(bits, keys): set int64 keys in a split-block Bloom filter (a writable buffer of 32-byte blocks)"},
    {"filter_query", py_filter_query, METH_VARARGS,
     "filter_query(bits, keys, out): out[i] |= 1 where the filter may hold keys[i] (one byte per key)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_native", .m_doc = "contam's signing loops in C.", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__native(void) {
    init_kinds();
    if (PyType_Ready(&BufType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddObjectRef(m, "Buffer", (PyObject *)&BufType) < 0)
        Py_CLEAR(m);
    if (m && PyModule_AddIntConstant(m, "SHORT_PAIR_GAP", SHORT_PAIR_GAP) < 0)
        Py_CLEAR(m);
    return m;
}
