/*
 * BLAKE2b with a 16-byte digest, no key (RFC 7693), for the event-id draws of
 * banditree.explore.event_uniforms: the uniforms of an event are the two
 * little-endian 64-bit halves of blake2b("{seed}:{event_id}", digest_size=16), each
 * times 2^-64.  Included by _native.c once; tests/kernel checks it against hashlib.
 */

static const uint64_t BLAKE2B_IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
    0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
    0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

/* the message schedule of each round (rounds 10 and 11 repeat rounds 0 and 1) */
static const uint8_t BLAKE2B_SIGMA[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
};

static inline uint64_t rotr64(uint64_t w, unsigned c) { return (w >> c) | (w << (64 - c)); }

static inline uint64_t load64(const uint8_t *p) {
    uint64_t w = 0;
    for (int i = 7; i >= 0; i--) {
        w = (w << 8) | p[i];
    }
    return w;
}

#define B2B_G(a, b, c, d, x, y)            \
    do {                                   \
        v[a] = v[a] + v[b] + (x);          \
        v[d] = rotr64(v[d] ^ v[a], 32);    \
        v[c] = v[c] + v[d];                \
        v[b] = rotr64(v[b] ^ v[c], 24);    \
        v[a] = v[a] + v[b] + (y);          \
        v[d] = rotr64(v[d] ^ v[a], 16);    \
        v[c] = v[c] + v[d];                \
        v[b] = rotr64(v[b] ^ v[c], 63);    \
    } while (0)

/* F: one 128-byte block into the state h; `t` the bytes hashed so far, with it */
static void blake2b_compress(uint64_t h[8], const uint8_t block[128], uint64_t t, int last) {
    uint64_t v[16], m[16];
    for (int i = 0; i < 16; i++) {
        m[i] = load64(block + 8 * i);
    }
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = BLAKE2B_IV[i];
    }
    v[12] ^= t; /* the counter's high word stays 0: messages are far below 2^64 bytes */
    if (last) {
        v[14] = ~v[14];
    }
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = BLAKE2B_SIGMA[r % 10];
        B2B_G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        B2B_G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        B2B_G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        B2B_G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        B2B_G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        B2B_G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        B2B_G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        B2B_G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) {
        h[i] ^= v[i] ^ v[i + 8];
    }
}

/* The first two words of blake2b(prefix || text, digest_size=16) (the digest's two
 * little-endian halves), hashed as one message from its two pieces. */
static void blake2b_16(const uint8_t *prefix, size_t n_prefix, const uint8_t *text,
                       size_t n_text, uint64_t out[2]) {
    uint64_t h[8];
    memcpy(h, BLAKE2B_IV, sizeof h);
    h[0] ^= 0x01010000ULL ^ 16; /* depth 1, fanout 1, no key, 16-byte digest */
    uint8_t block[128];
    size_t total = n_prefix + n_text, done = 0, filled = 0;
    /* every full block but the last is compressed as it fills */
    const uint8_t *pieces[2] = {prefix, text};
    size_t sizes[2] = {n_prefix, n_text};
    for (int piece = 0; piece < 2; piece++) {
        const uint8_t *at = pieces[piece];
        size_t left = sizes[piece];
        while (left > 0) {
            if (filled == 128) {
                done += 128;
                blake2b_compress(h, block, (uint64_t)done, 0);
                filled = 0;
            }
            size_t take_n = left < 128 - filled ? left : 128 - filled;
            memcpy(block + filled, at, take_n);
            filled += take_n;
            at += take_n;
            left -= take_n;
        }
    }
    memset(block + filled, 0, 128 - filled);
    blake2b_compress(h, block, (uint64_t)total, 1);
    out[0] = h[0];
    out[1] = h[1];
}

PyDoc_STRVAR(event_uniforms_doc,
             "event_uniforms(prefix, event_ids, out)\n--\n\n"
             "out[b] = the two uniforms of blake2b(prefix + event_ids[b].encode(), 16).");

static PyObject *event_uniforms(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer prefix;
    PyObject *ids, *out_obj;
    if (!PyArg_ParseTuple(args, "y*OO:event_uniforms", &prefix, &ids, &out_obj)) {
        return NULL;
    }
    Arr out;
    memset(&out, 0, sizeof out);
    PyObject *seq = PySequence_Fast(ids, "event_ids must be a list of str");
    if (seq == NULL) {
        PyBuffer_Release(&prefix);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), shape[2] = {n, 2};
    if (take(out_obj, "out", 'd', 2, shape, 1, &out) < 0) {
        goto fail;
    }
    double *u = f64(&out);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    const double scale = 1.0 / 18446744073709551616.0; /* 2^-64, exact */
    for (Py_ssize_t b = 0; b < n; b++) {
        if (!PyUnicode_Check(items[b])) {
            PyErr_Format(PyExc_TypeError, "event_ids[%zd] must be str, got %.80s", b,
                         Py_TYPE(items[b])->tp_name);
            goto fail;
        }
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(items[b], &size);
        if (text == NULL) {
            goto fail; /* a lone surrogate: str.encode() refuses it too */
        }
        uint64_t halves[2];
        blake2b_16(prefix.buf, (size_t)prefix.len, (const uint8_t *)text, (size_t)size, halves);
        u[2 * b] = (double)halves[0] * scale;
        u[2 * b + 1] = (double)halves[1] * scale;
    }
    release(&out, 1);
    Py_DECREF(seq);
    PyBuffer_Release(&prefix);
    Py_RETURN_NONE;
fail:
    release(&out, 1);
    Py_DECREF(seq);
    PyBuffer_Release(&prefix);
    return NULL;
}
