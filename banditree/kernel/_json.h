/*
 * JSON's whitespace and numbers, read as orjson reads them (included by _native.c, before
 * _stored.h and _rows.h, which both read JSON numbers: a feedback's loss, a batch's
 * contexts).
 */

/* JSON's whitespace */
static inline int json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static inline const char *skip_space(const char *p, const char *end) {
    while (p < end && json_space(*p)) {
        p++;
    }
    return p;
}

/* the longest number text read (a longer one declines: the reference reads it) */
#define MAX_NUMBER_TEXT 400

/* the powers of ten a double holds exactly */
static const double exact_tens[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/*
 * One JSON number (RFC 8259's grammar) at p: its value in *out and the text after it, or
 * NULL where the reference might read it otherwise (not finite; an integer of more than
 * 15 digits, which orjson keeps as an integer).  An integer is converted as an integer
 * is (`-0` is 0.0).  Any other number is rounded correctly, as orjson's parser does: by
 * one multiplication or division when its digits (at most 15, leading zeros aside) and
 * its power of ten (at most 22) are exact doubles (Clinger's fast path: one rounding),
 * else by CPython's conversion.
 */
static const char *read_number(const char *p, const char *end, double *out) {
    const char *start = p;
    int negative = 0;
    if (p < end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= end) {
        return NULL;
    }
    uint64_t mantissa = 0;
    int significant = 0; /* digits of the mantissa, its leading zeros aside */
    int shift = 0;       /* the power of ten the fraction's digits give */
    const char *digits = p;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') {
            if (significant < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*p - '0');
            }
            significant++;
            p++;
        }
    } else {
        return NULL;
    }
    Py_ssize_t n_digits = p - digits;
    int integer = 1;
    if (p < end && *p == '.') {
        integer = 0;
        p++;
        const char *frac = p;
        while (p < end && *p >= '0' && *p <= '9') {
            if (significant > 0 || *p != '0') {
                if (significant < 19) {
                    mantissa = mantissa * 10 + (uint64_t)(*p - '0');
                }
                significant++;
            }
            shift--;
            p++;
        }
        if (p == frac) {
            return NULL;
        }
    }
    long exponent = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        integer = 0;
        p++;
        int minus = 0;
        if (p < end && (*p == '+' || *p == '-')) {
            minus = *p == '-';
            p++;
        }
        const char *exp = p;
        while (p < end && *p >= '0' && *p <= '9') {
            if (exponent < 100000) {
                exponent = exponent * 10 + (*p - '0');
            }
            p++;
        }
        if (p == exp) {
            return NULL;
        }
        if (minus) {
            exponent = -exponent;
        }
    }
    if (integer) {
        if (n_digits > 15) {
            return NULL;
        }
        /* as an integer: exact below 10^15, and -0 is 0 */
        *out = (double)(negative ? -(int64_t)mantissa : (int64_t)mantissa);
        return p;
    }
    long power = exponent + shift;
    if (significant <= 15 && power >= -22 && power <= 22) {
        double v = (double)mantissa;
        v = power < 0 ? v / exact_tens[-power] : v * exact_tens[power];
        *out = negative ? -v : v;
        return p;
    }
    Py_ssize_t length = p - start;
    if (length > MAX_NUMBER_TEXT) {
        return NULL;
    }
    char text[MAX_NUMBER_TEXT + 1];
    memcpy(text, start, (size_t)length);
    text[length] = '\0';
    char *stop = NULL;
    double v = PyOS_string_to_double(text, &stop, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (stop != text + length || !isfinite(v)) {
        return NULL;
    }
    *out = v;
    return p;
}
