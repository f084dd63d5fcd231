/*
 * A batch predict's request and answer, in C (included by _native.c): the contexts of a
 * body `{"contexts": [[numbers], ...]}` read straight into float64s (`parse_rows`), the
 * context of `{"context": [numbers]}` into a list of floats (`parse_row`), and
 * the decisions' public answer and stored records written in one pass (`write_rows`).
 * banditree/kernel/rows.py is their Python side; the references they are checked
 * against (tests/kernel/test_rows.py) are orjson with the service's hand checks
 * (service/edge/serve.py) and banditree.core.codec (columns_public, column_payloads).
 *
 * Both decline (return None) whatever they do not take exactly as the reference would,
 * and the caller then runs the reference: a body with another key, whitespace or a
 * number form they do not read, an event id that would need escaping.
 */

/* ---- parse_rows: {"contexts": [[n, ...], ...]} -> float64s --------------------- */

/* After a list's item at *p: 1 past a ',' (another item follows), 0 past the list's
 * closing ']', -1 for anything else. */
static int list_next(const char **p, const char *end) {
    const char *q = skip_space(*p, end);
    if (q >= end || (*q != ',' && *q != ']')) {
        return -1;
    }
    *p = q + 1;
    return *q == ',';
}

PyDoc_STRVAR(parse_rows_doc,
             "parse_rows(body, max_rows, max_columns)\n--\n\n"
             "The contexts of a predict body that is exactly {\"contexts\": [[numbers], ...]}\n"
             "(at least one row, every row of the same length in [1, max_columns], at most\n"
             "max_rows rows, every number finite) as (float64s in a bytearray, rows,\n"
             "columns); None for any other body.  See banditree.kernel.rows.");

/* Past the `[` of a body that opens exactly `{KEY:[` (white space between the tokens;
 * KEY with its quotes, KEY_LEN bytes), else NULL: the body is declined. */
static const char *open_keyed_list(const char *p, const char *end, const char *key,
                                   Py_ssize_t key_len) {
    p = skip_space(p, end);
    if (p >= end || *p++ != '{') {
        return NULL;
    }
    p = skip_space(p, end);
    if (end - p < key_len || memcmp(p, key, (size_t)key_len) != 0) {
        return NULL;
    }
    p = skip_space(p + key_len, end);
    if (p >= end || *p++ != ':') {
        return NULL;
    }
    p = skip_space(p, end);
    if (p >= end || *p++ != '[') {
        return NULL;
    }
    return p;
}

/* Whether what follows a body's list, from P, is exactly its closing `}` (white space
 * around it): the body ends there. */
static int closes_body(const char *p, const char *end) {
    p = skip_space(p, end);
    if (p >= end || *p++ != '}') {
        return 0;
    }
    return skip_space(p, end) == end;
}

static PyObject *parse_rows(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer body;
    Py_ssize_t max_rows, max_cols;
    if (!PyArg_ParseTuple(args, "y*nn:parse_rows", &body, &max_rows, &max_cols)) {
        return NULL;
    }
    if (max_rows < 1 || max_cols < 1) {
        PyBuffer_Release(&body);
        return PyErr_Format(PyExc_ValueError, "max_rows and max_columns must be >= 1");
    }
    static const char key[] = "\"contexts\"";
    const char *p = (const char *)body.buf, *end = p + body.len;
    double *values = NULL;
    Py_ssize_t used = 0, room = 0, rows = 0, cols = -1;
    PyObject *result = NULL;
    p = open_keyed_list(p, end, key, sizeof key - 1);
    if (p == NULL) {
        goto decline;
    }
    for (;;) {
        p = skip_space(p, end);
        if (p >= end || *p++ != '[') {
            goto decline; /* a row (an empty batch declines too) */
        }
        if (rows == max_rows) {
            goto decline;
        }
        Py_ssize_t in_row = 0;
        for (;;) {
            p = skip_space(p, end);
            if (in_row == max_cols || (cols >= 0 && in_row == cols)) {
                goto decline;
            }
            if (used == room) {
                Py_ssize_t grown = room ? 2 * room : 256;
                if (grown > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(double)) {
                    goto decline;
                }
                double *more = PyMem_Realloc(values, (size_t)grown * sizeof(double));
                if (more == NULL) {
                    PyErr_NoMemory();
                    goto fail;
                }
                values = more;
                room = grown;
            }
            p = read_number(p, end, values + used);
            if (p == NULL) {
                goto decline;
            }
            used++;
            in_row++;
            int more = list_next(&p, end);
            if (more < 0) {
                goto decline;
            }
            if (!more) {
                break;
            }
        }
        if (cols < 0) {
            cols = in_row;
        } else if (in_row != cols) {
            goto decline;
        }
        rows++;
        int more = list_next(&p, end);
        if (more < 0) {
            goto decline;
        }
        if (!more) {
            break;
        }
    }
    if (!closes_body(p, end)) {
        goto decline;
    }
    PyObject *floats = PyByteArray_FromStringAndSize((const char *)values,
                                                     used * (Py_ssize_t)sizeof(double));
    if (floats == NULL) {
        goto fail;
    }
    result = Py_BuildValue("(Nnn)", floats, rows, cols);
    goto fail; /* free and return result (NULL on error) */
decline:
    result = Py_NewRef(Py_None);
fail:
    PyMem_Free(values);
    PyBuffer_Release(&body);
    return result;
}

/* ---- parse_row: {"context": [n, ...]} -> a list of floats ------------------------ */

PyDoc_STRVAR(parse_row_doc,
             "parse_row(body, max_columns)\n--\n\n"
             "The context of a predict body that is exactly {\"context\": [numbers]} (1 to\n"
             "max_columns numbers, every one finite) as a list of floats; None for any other\n"
             "body.  See banditree.kernel.rows.");

static PyObject *parse_row(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer body;
    Py_ssize_t max_cols;
    if (!PyArg_ParseTuple(args, "y*n:parse_row", &body, &max_cols)) {
        return NULL;
    }
    if (max_cols < 1) {
        PyBuffer_Release(&body);
        return PyErr_Format(PyExc_ValueError, "max_columns must be >= 1");
    }
    static const char key[] = "\"context\"";
    const char *p = (const char *)body.buf, *end = p + body.len;
    PyObject *result = NULL, *list = NULL;
    double value;
    p = open_keyed_list(p, end, key, sizeof key - 1);
    if (p == NULL) {
        goto decline;
    }
    list = PyList_New(0);
    if (list == NULL) {
        goto fail;
    }
    for (;;) {
        p = skip_space(p, end);
        if (PyList_GET_SIZE(list) == max_cols) {
            goto decline; /* one more number than the bound (an empty list declines too) */
        }
        p = read_number(p, end, &value);
        if (p == NULL) {
            goto decline;
        }
        PyObject *number = PyFloat_FromDouble(value);
        if (number == NULL) {
            goto fail;
        }
        int appended = PyList_Append(list, number);
        Py_DECREF(number);
        if (appended < 0) {
            goto fail;
        }
        int more = list_next(&p, end);
        if (more < 0) {
            goto decline;
        }
        if (!more) {
            break;
        }
    }
    if (!closes_body(p, end)) {
        goto decline;
    }
    result = list;
    list = NULL;
    goto fail; /* release and return result */
decline:
    result = Py_NewRef(Py_None);
fail:
    Py_XDECREF(list);
    PyBuffer_Release(&body);
    return result;
}

/* ---- stack_rows: a tick's one-context bodies -> the bytes of a float64 array ---- */

PyDoc_STRVAR(stack_rows_doc,
             "stack_rows(rows, columns)\n--\n\n"
             "The bytes of the float64 (len(rows), columns) array of rows, a non-empty list\n"
             "of lists of exactly columns float objects, every one finite; None where any\n"
             "row or number is not so.  See banditree.kernel.rows.");

static PyObject *stack_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *rows;
    Py_ssize_t cols;
    if (!PyArg_ParseTuple(args, "O!n:stack_rows", &PyList_Type, &rows, &cols)) {
        return NULL;
    }
    if (cols < 1) {
        return PyErr_Format(PyExc_ValueError, "columns must be >= 1");
    }
    Py_ssize_t n = PyList_GET_SIZE(rows);
    if (n < 1 || n > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(double) / cols) {
        Py_RETURN_NONE;
    }
    /* every row checked before anything is allocated: a declined tick costs one pass */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyList_CheckExact(row) || PyList_GET_SIZE(row) != cols) {
            Py_RETURN_NONE;
        }
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * cols * (Py_ssize_t)sizeof(double));
    if (out == NULL) {
        return NULL;
    }
    char *at = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        /* checked again: the allocation may have run a collection, and a finalizer */
        PyObject *row = i < PyList_GET_SIZE(rows) ? PyList_GET_ITEM(rows, i) : NULL;
        if (row == NULL || !PyList_CheckExact(row) || PyList_GET_SIZE(row) != cols) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        for (Py_ssize_t j = 0; j < cols; j++) {
            PyObject *item = PyList_GET_ITEM(row, j);
            if (!PyFloat_CheckExact(item)) {
                Py_DECREF(out);
                Py_RETURN_NONE;
            }
            double value = PyFloat_AS_DOUBLE(item);
            if (!isfinite(value)) {
                Py_DECREF(out);
                Py_RETURN_NONE;
            }
            memcpy(at, &value, sizeof value);
            at += sizeof value;
        }
    }
    return out;
}

/* ---- write_rows: a classification batch's answer and stored records ------------ */

/* a growing text */
typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Text;

static int text_room(Text *t, Py_ssize_t more) {
    if (t->len + more <= t->cap) {
        return 0;
    }
    Py_ssize_t cap = t->cap ? t->cap : 1024;
    while (cap < t->len + more) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *grown = PyMem_Realloc(t->buf, (size_t)cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->buf = grown;
    t->cap = cap;
    return 0;
}

static int text_put(Text *t, const char *s, Py_ssize_t n) {
    if (text_room(t, n) < 0) {
        return -1;
    }
    memcpy(t->buf + t->len, s, (size_t)n);
    t->len += n;
    return 0;
}

static int text_int(Text *t, int64_t v) {
    char digits[24];
    int n = 0;
    uint64_t magnitude = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (v < 0) {
        digits[sizeof digits - 1 - n++] = '-';
    }
    return text_put(t, digits + sizeof digits - n, n);
}

/* a float as Python's repr writes it (the shortest text that reads back the same) */
static int text_float(Text *t, double v) {
    char *repr = PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (repr == NULL) {
        return -1;
    }
    int rc = text_put(t, repr, (Py_ssize_t)strlen(repr));
    PyMem_Free(repr);
    return rc;
}

/* little-endian bytes of an integer, as struct's '<' formats write them */
static void put_le(unsigned char *out, uint64_t v, int size) {
    for (int i = 0; i < size; i++) {
        out[i] = (unsigned char)(v >> (8 * i));
    }
}

/* whether an event id stands in JSON unescaped and is ASCII (what the service makes) */
static int plain_id(const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
            return 0;
        }
    }
    return 1;
}

/* the binary stored form's header (banditree.core.codec._HEAD), in bytes */

PyDoc_STRVAR(write_rows_doc,
             "write_rows(uid, event_ids, model_version, x, action, propensity, greedy, leaf)\n"
             "--\n\n"
             "A classification batch's public answers (each row's JSON object, as bytes)\n"
             "and its stored records (the binary form, one str per row), from the decision\n"
             "columns: (list of bytes, list of str); None when an event id would need\n"
             "escaping.\n"
             "See banditree.kernel.rows.");

static PyObject *write_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *uid_obj, *ids, *o[5];
    long long version;
    if (!PyArg_ParseTuple(args, "SO!LOOOOO:write_rows", &uid_obj, &PyList_Type, &ids, &version,
                          &o[0], &o[1], &o[2], &o[3], &o[4])) {
        return NULL;
    }
    Py_ssize_t b_rows = PyList_GET_SIZE(ids);
    Arr a[5];
    memset(a, 0, sizeof a);
    Py_ssize_t xs[2] = {b_rows, -1};
    Py_ssize_t bs[1] = {b_rows};
    if (take(o[0], "x", 'd', 2, xs, 0, &a[0]) < 0 || take(o[1], "action", 'q', 1, bs, 0, &a[1]) < 0 ||
        take(o[2], "propensity", 'd', 1, bs, 0, &a[2]) < 0 ||
        take(o[3], "greedy", 'q', 1, bs, 0, &a[3]) < 0) {
        release(a, 5);
        return NULL;
    }
    int has_leaf = o[4] != Py_None;
    if (has_leaf && take(o[4], "leaf", 'q', 1, bs, 0, &a[4]) < 0) {
        release(a, 5);
        return NULL;
    }
    Py_ssize_t d = xs[1];
    const char *uid = PyBytes_AS_STRING(uid_obj);
    Py_ssize_t uid_len = PyBytes_GET_SIZE(uid_obj);
    const double *x = f64(&a[0]), *propensity = f64(&a[2]);
    const int64_t *action = i64(&a[1]), *greedy = i64(&a[3]);
    const int64_t *leaf = has_leaf ? i64(&a[4]) : NULL;
    PyObject *result = NULL, *payloads = NULL, *answers = NULL;
    Text answer = {NULL, 0, 0};
    unsigned char *record = NULL;
    char *hex = NULL;
    if (uid_len > 0xFFFF || d > 0xFFFFFFFFLL) {
        goto decline;
    }
    for (Py_ssize_t i = 0; i < b_rows * d; i++) {
        if (!isfinite(x[i])) {
            goto decline; /* the reference names it */
        }
    }
    payloads = PyList_New(b_rows);
    answers = PyList_New(b_rows);
    if (payloads == NULL || answers == NULL) {
        goto fail;
    }
    Py_ssize_t fixed = STORED_HEAD + 8 * d + uid_len;
    char hex_pairs[512]; /* each byte's two lowercase hex digits, as bytes.hex writes them */
    static const char hexdigits[] = "0123456789abcdef";
    for (int i = 0; i < 256; i++) {
        hex_pairs[2 * i] = hexdigits[i >> 4];
        hex_pairs[2 * i + 1] = hexdigits[i & 15];
    }
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        PyObject *id = PyList_GET_ITEM(ids, b);
        if (!PyUnicode_Check(id)) {
            PyErr_Format(PyExc_TypeError, "event_ids[%zd] must be a str", b);
            goto fail;
        }
        Py_ssize_t id_len;
        const char *id_text = PyUnicode_AsUTF8AndSize(id, &id_len);
        if (id_text == NULL) {
            goto fail;
        }
        if (id_len > 0xFFFF || !plain_id(id_text, id_len) || !isfinite(propensity[b])) {
            goto decline;
        }
        int64_t act = action[b], best = greedy[b], at = has_leaf ? leaf[b] : 0;
        /* the answer: columns_public's keys in its order */
        answer.len = 0;
        if (text_put(&answer, "{\"event_id\":\"", 13) < 0 ||
            text_put(&answer, id_text, id_len) < 0 ||
            text_put(&answer, "\",\"model_version\":", 18) < 0 || text_int(&answer, version) < 0 ||
            text_put(&answer, ",\"leaf\":", 8) < 0 ||
            (has_leaf ? text_int(&answer, at) : text_put(&answer, "null", 4)) < 0 ||
            text_put(&answer, ",\"action\":", 10) < 0 || text_int(&answer, act) < 0 ||
            text_put(&answer, ",\"probability\":", 15) < 0 ||
            text_float(&answer, propensity[b]) < 0 ||
            text_put(&answer, ",\"greedy_action\":", 17) < 0 || text_int(&answer, best) < 0 ||
            text_put(&answer, "}", 1) < 0) {
            goto fail;
        }
        PyObject *row = PyBytes_FromStringAndSize(answer.buf, answer.len);
        if (row == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(answers, b, row);
        /* the stored record: codec._HEAD, the context, the uid, the event id */
        Py_ssize_t size = fixed + id_len;
        unsigned char *grown = PyMem_Realloc(record, (size_t)size);
        char *grown_hex = PyMem_Realloc(hex, (size_t)(3 + 2 * size));
        if (grown != NULL) {
            record = grown;
        }
        if (grown_hex != NULL) {
            hex = grown_hex;
        }
        if (grown == NULL || grown_hex == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        memset(record, 0, STORED_HEAD);
        record[0] = 1; /* version */
        record[1] = (unsigned char)((act != best ? 2 : 0) | (has_leaf ? 1 : 0));
        put_le(record + 2, (uint64_t)uid_len, 2);
        put_le(record + 4, (uint64_t)id_len, 2);
        /* extras' length 0, then the context's length and a reserved zero */
        put_le(record + 8, (uint64_t)d, 4);
        put_le(record + 16, (uint64_t)version, 8);
        put_le(record + 24, (uint64_t)act, 8);
        put_le(record + 32, (uint64_t)best, 8);
        put_le(record + 40, (uint64_t)at, 8);
        /* perturbation 0 at 48 */
        uint64_t bits;
        memcpy(&bits, propensity + b, 8);
        put_le(record + 56, bits, 8);
        for (Py_ssize_t j = 0; j < d; j++) {
            memcpy(&bits, x + b * d + j, 8);
            put_le(record + STORED_HEAD + 8 * j, bits, 8);
        }
        memcpy(record + STORED_HEAD + 8 * d, uid, (size_t)uid_len);
        memcpy(record + fixed, id_text, (size_t)id_len);
        memcpy(hex, STORED_PREFIX, 3);
        for (Py_ssize_t i = 0; i < size; i++) {
            memcpy(hex + 3 + 2 * i, hex_pairs + 2 * record[i], 2);
        }
        PyObject *text = PyUnicode_FromStringAndSize(hex, 3 + 2 * size);
        if (text == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(payloads, b, text);
    }
    result = Py_BuildValue("(OO)", answers, payloads);
    goto fail; /* free and return result (NULL on error) */
decline:
    result = Py_NewRef(Py_None);
fail:
    Py_XDECREF(payloads);
    Py_XDECREF(answers);
    PyMem_Free(answer.buf);
    PyMem_Free(record);
    PyMem_Free(hex);
    release(a, 5);
    return result;
}
