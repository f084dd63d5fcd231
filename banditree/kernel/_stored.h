/*
 * A chunk of log entries decoded in one call (included by _native.c once): the stored
 * decisions and feedbacks of a model's log, as the stores read them (texts), straight
 * into the columns learn_chunk takes, without a Python object per entry.
 *
 * It mirrors service/domain/runtime/replay.py's decode_entry for the forms a model's
 * log holds: a binary stored decision (banditree/core/codec.py, binary_payload: "b1:"
 * and the hexadecimal digits of a 64-byte little-endian header, the context's float64s,
 * the uid, the event id and the extras) with the feedback feedback_json writes for a
 * loss ({"loss":X,"losses":null,"label":null}, or {"loss":X}), or no feedback (an
 * expired decision: the default loss, or nothing to learn).  Each entry gets a status:
 *
 *   0  learn it: its context, action, propensity and loss are written;
 *   1  nothing to learn: another model's decision (its header well formed up to the
 *      uid, as codec._binary_fields reads it), or an expiry without a default loss;
 *   2  the Python path decides: a JSON decision, extras, an event id that is not ASCII,
 *      a feedback of another form, anything malformed or not finite, a context of
 *      another length.  decode_entry then reads it, and names what is wrong.
 *
 * Status 0 and 1 are given only where decode_entry gives the same pair (or None); any
 * doubt is status 2, never an error.  Every length read from a record is checked
 * against the record's size before any byte behind it is read.
 */

/* a binary stored decision: its text's prefix, and its header's bytes (codec.py) */
#define STORED_PREFIX "b1:"
#define STORED_HEAD 64
#define STORED_MAX_FEATURES (1 << 20)

enum { STORED_LEARN = 0, STORED_NONE = 1, STORED_PYTHON = 2 };

/* the value of a hexadecimal digit (either case), -1 for any other byte */
static signed char HEX_VALUE[256];
static int hex_ready = 0;

static void hex_init(void) {
    memset(HEX_VALUE, -1, sizeof HEX_VALUE);
    for (int c = 0; c < 10; c++) {
        HEX_VALUE['0' + c] = (signed char)c;
    }
    for (int c = 0; c < 6; c++) {
        HEX_VALUE['a' + c] = (signed char)(10 + c);
        HEX_VALUE['A' + c] = (signed char)(10 + c);
    }
    hex_ready = 1;
}

static inline uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t le64(const unsigned char *p) {
    return (uint64_t)le32(p) | ((uint64_t)le32(p + 4) << 32);
}

static inline double le_double(const unsigned char *p) {
    uint64_t bits = le64(p);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* The loss of a feedback text feedback_json writes for a plain loss; 1 when read. */
static int stored_loss(const char *text, Py_ssize_t len, double *out) {
    static const char head[] = "{\"loss\":";
    static const char tail[] = ",\"losses\":null,\"label\":null}";
    Py_ssize_t hl = (Py_ssize_t)sizeof head - 1, tl = (Py_ssize_t)sizeof tail - 1;
    if (len < hl + 2 || memcmp(text, head, (size_t)hl) != 0) {
        return 0;
    }
    Py_ssize_t end = len - 1; /* the closing brace of {"loss":X} */
    if (len >= hl + tl + 1 && memcmp(text + len - tl, tail, (size_t)tl) == 0) {
        end = len - tl;
    } else if (text[len - 1] != '}') {
        return 0;
    }
    double v;
    if (read_number(text + hl, text + end, &v) != text + end) { /* not the whole number */
        return 0;
    }
    *out = v;
    return 1;
}

/*
 * One binary stored decision (its hexadecimal digits `hex`, `n_hex` of them) decoded
 * into `raw` (at least n_hex / 2 bytes): its status, and for STORED_LEARN its context
 * (d values into `row`), action and propensity.
 */
static int stored_decision(const char *hex, Py_ssize_t n_hex, unsigned char *raw,
                           const char *uid, Py_ssize_t uid_len, Py_ssize_t d, double *row,
                           int64_t *action, double *propensity) {
    if (n_hex & 1) {
        return STORED_PYTHON;
    }
    Py_ssize_t size = n_hex / 2;
    int bad = 0; /* any byte not a digit: its value -1 sets the sign bit */
    for (Py_ssize_t i = 0; i < size; i++) {
        int hi = HEX_VALUE[(unsigned char)hex[2 * i]];
        int lo = HEX_VALUE[(unsigned char)hex[2 * i + 1]];
        bad |= hi | lo;
        raw[i] = (unsigned char)(((unsigned)hi << 4) | ((unsigned)lo & 0xFu));
    }
    if (bad < 0) {
        return STORED_PYTHON;
    }
    if (size < STORED_HEAD) {
        return STORED_PYTHON;
    }
    /* <BBHHHIIqqqqqd: version, flags, uid, event id and extras lengths, n, reserved,
     * model_version, action, greedy_action, leaf, perturbation, propensity */
    unsigned version = raw[0], flags = raw[1];
    Py_ssize_t ul = le16(raw + 2), el = le16(raw + 4), xl = le16(raw + 6);
    uint32_t n = le32(raw + 8), reserved = le32(raw + 12);
    if (version != 1 || reserved != 0 || (flags & ~3u) != 0 || n > STORED_MAX_FEATURES) {
        return STORED_PYTHON;
    }
    Py_ssize_t start = STORED_HEAD + 8 * (Py_ssize_t)n;
    if (size != start + ul + el + xl) {
        return STORED_PYTHON;
    }
    if (ul != uid_len || memcmp(raw + start, uid, (size_t)ul) != 0) {
        return STORED_NONE; /* another model's (codec._binary_fields: None) */
    }
    double p = le_double(raw + 56);
    if (!isfinite(p) || xl != 0 || (Py_ssize_t)n != d) {
        return STORED_PYTHON;
    }
    const unsigned char *event = raw + start + ul;
    for (Py_ssize_t i = 0; i < el; i++) {
        if (event[i] >= 0x80) {
            return STORED_PYTHON; /* UTF-8 beyond ASCII: Python's decode says if it is */
        }
    }
    for (Py_ssize_t j = 0; j < d; j++) {
        double v = le_double(raw + STORED_HEAD + 8 * j);
        if (!isfinite(v)) {
            return STORED_PYTHON;
        }
        row[j] = v;
    }
    *action = (int64_t)le64(raw + 24);
    *propensity = p;
    return STORED_LEARN;
}

/* A str's UTF-8 (no copy for an ASCII one); NULL for anything else (not an error). */
static const char *text_of(PyObject *obj, Py_ssize_t *len) {
    if (!PyUnicode_Check(obj)) {
        return NULL;
    }
    const char *s = PyUnicode_AsUTF8AndSize(obj, len);
    if (s == NULL) {
        PyErr_Clear(); /* a lone surrogate: the Python path names it */
    }
    return s;
}

PyDoc_STRVAR(decode_stored_doc,
             "decode_stored(decisions, feedbacks, uid, default_loss, rows, actions, "
             "propensity, loss, status)\n\n"
             "Decode a chunk of log entries (lists of the stored decisions' texts and the "
             "feedbacks' texts or None, the model's uid as bytes, the default loss or "
             "None) into rows (n, d), actions, propensity, loss and status (n,); see "
             "_stored.h for the statuses.");

static PyObject *decode_stored(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *decisions, *feedbacks, *uid_obj, *default_obj, *o[5];
    if (!PyArg_ParseTuple(args, "O!O!SOOOOOO:decode_stored", &PyList_Type, &decisions,
                          &PyList_Type, &feedbacks, &uid_obj, &default_obj, &o[0], &o[1],
                          &o[2], &o[3], &o[4])) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(decisions);
    if (PyList_GET_SIZE(feedbacks) != n) {
        PyErr_Format(PyExc_ValueError, "feedbacks must have length %zd, got %zd", n,
                     PyList_GET_SIZE(feedbacks));
        return NULL;
    }
    int has_default = default_obj != Py_None;
    double default_loss = 0.0;
    if (has_default) {
        default_loss = PyFloat_AsDouble(default_obj);
        if (default_loss == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    Arr a[5];
    memset(a, 0, sizeof a);
    Py_ssize_t rs[2] = {n, -1}, s1[1] = {n};
    Py_ssize_t s2[1] = {n}, s3[1] = {n}, s4[1] = {n};
    if (take(o[0], "rows", 'd', 2, rs, 1, &a[0]) < 0 ||
        take(o[1], "actions", 'q', 1, s1, 1, &a[1]) < 0 ||
        take(o[2], "propensity", 'd', 1, s2, 1, &a[2]) < 0 ||
        take(o[3], "loss", 'd', 1, s3, 1, &a[3]) < 0 ||
        take(o[4], "status", 'q', 1, s4, 1, &a[4]) < 0) {
        release(a, 5);
        return NULL;
    }
    Py_ssize_t d = rs[1];
    const char *uid = PyBytes_AS_STRING(uid_obj);
    Py_ssize_t uid_len = PyBytes_GET_SIZE(uid_obj);
    double *rows = f64(&a[0]), *propensity = f64(&a[2]), *loss = f64(&a[3]);
    int64_t *actions = i64(&a[1]), *status = i64(&a[4]);
    unsigned char *raw = NULL;
    Py_ssize_t raw_size = 0;
    const char *last_fb = NULL; /* the last feedback read, and its loss: a log repeats few */
    Py_ssize_t last_len = -1;
    double last_loss = 0.0;
    if (!hex_ready) {
        hex_init();
    }
    int little = 1;
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    little = 0; /* the rows are written as native doubles: leave every entry to Python */
#endif
    for (Py_ssize_t i = 0; i < n; i++) {
        double *row = rows + i * d;
        for (Py_ssize_t j = 0; j < d; j++) {
            row[j] = 0.0;
        }
        actions[i] = -1;
        propensity[i] = 1.0;
        loss[i] = 0.0;
        status[i] = STORED_PYTHON;
        Py_ssize_t len = 0;
        const char *text = little ? text_of(PyList_GET_ITEM(decisions, i), &len) : NULL;
        if (text == NULL || len < 3 || memcmp(text, STORED_PREFIX, 3) != 0) {
            continue;
        }
        Py_ssize_t need = (len - 3) / 2 + 1;
        if (need > raw_size) {
            unsigned char *grown = PyMem_Realloc(raw, (size_t)need);
            if (grown == NULL) {
                PyMem_Free(raw);
                release(a, 5);
                return PyErr_NoMemory();
            }
            raw = grown;
            raw_size = need;
        }
        int64_t action = -1;
        double p = 1.0;
        int got = stored_decision(text + 3, len - 3, raw, uid, uid_len, d, row, &action, &p);
        if (got != STORED_LEARN) {
            status[i] = got;
            continue;
        }
        PyObject *fb = PyList_GET_ITEM(feedbacks, i);
        double v = 0.0;
        if (fb == Py_None) {
            if (!has_default) {
                status[i] = STORED_NONE; /* expired, nothing to learn */
                continue;
            }
            if (!isfinite(default_loss)) {
                continue; /* Feedback refuses it: the Python path logs it */
            }
            v = default_loss;
        } else {
            Py_ssize_t fl = 0;
            const char *ft = text_of(fb, &fl);
            if (ft == NULL) {
                continue;
            }
            if (fl == last_len && memcmp(ft, last_fb, (size_t)fl) == 0) {
                v = last_loss;
            } else if (stored_loss(ft, fl, &v)) {
                last_fb = ft, last_len = fl, last_loss = v;
            } else {
                continue;
            }
        }
        actions[i] = action;
        propensity[i] = p;
        loss[i] = v;
        status[i] = STORED_LEARN;
    }
    PyMem_Free(raw);
    release(a, 5);
    Py_RETURN_NONE;
}
