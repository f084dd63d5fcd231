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

#ifdef __SIZEOF_INT128__
__extension__ typedef unsigned __int128 json_u128;

/* the powers of ten of the exact path below: 10^0 .. 10^19 (all below 2^64) */
static const uint64_t exact_ten_ints[20] = {1ULL,
                                            10ULL,
                                            100ULL,
                                            1000ULL,
                                            10000ULL,
                                            100000ULL,
                                            1000000ULL,
                                            10000000ULL,
                                            100000000ULL,
                                            1000000000ULL,
                                            10000000000ULL,
                                            100000000000ULL,
                                            1000000000000ULL,
                                            10000000000000ULL,
                                            100000000000000ULL,
                                            1000000000000000ULL,
                                            10000000000000000ULL,
                                            100000000000000000ULL,
                                            1000000000000000000ULL,
                                            10000000000000000000ULL};

/* bits of v > 0 */
static inline int u128_bits(json_u128 v) {
    uint64_t high = (uint64_t)(v >> 64);
    return high ? 128 - __builtin_clzll(high) : 64 - __builtin_clzll((uint64_t)v);
}

/*
 * q * 2^scale, q > 0 rounded to 53 bits, half to even, with `sticky` set when a nonzero
 * remainder lies below q's last bit: one correct rounding of the exact value.
 */
static double round_to_double(json_u128 q, int sticky, int scale) {
    int drop = u128_bits(q) - 53;
    if (drop > 0) {
        json_u128 low = q & ((((json_u128)1) << drop) - 1);
        json_u128 half = ((json_u128)1) << (drop - 1);
        q >>= drop;
        if (low > half || (low == half && (sticky || (q & 1)))) {
            q++; /* 2^53 at most: still exact */
        }
        scale += drop;
    }
    return ldexp((double)(uint64_t)q, scale);
}

/*
 * mantissa * 10^power rounded correctly (exact integer arithmetic in 128 bits), for a
 * mantissa of 1 to 19 digits and |power| <= 19: the numbers Clinger's path leaves, such
 * as the 16 and 17 digits of a double's shortest text.  Results are normal doubles.
 */
static double exact_decimal(uint64_t mantissa, long power) {
    if (power >= 0) { /* an integer of at most 38 digits: below 2^127 */
        json_u128 v = (json_u128)mantissa * exact_ten_ints[power];
        return round_to_double(v, 0, 0);
    }
    uint64_t divisor = exact_ten_ints[-power];
    int shift = 127 - u128_bits(mantissa); /* the dividend in [2^126, 2^127) */
    json_u128 dividend = ((json_u128)mantissa) << shift;
    json_u128 q = dividend / divisor; /* >= 2^126 / 10^19 > 2^62: 10 bits past 53 */
    int sticky = dividend % divisor != 0;
    return round_to_double(q, sticky, -shift);
}
#endif

/*
 * One JSON number (RFC 8259's grammar) at p: its value in *out and the text after it, or
 * NULL where the reference might read it otherwise (not finite; an integer of more than
 * 15 digits, which orjson keeps as an integer).  An integer is converted as an integer
 * is (`-0` is 0.0).  Any other number is rounded correctly, as orjson's parser does: by
 * one multiplication or division when its digits (at most 15, leading zeros aside) and
 * its power of ten (at most 22) are exact doubles (Clinger's fast path: one rounding),
 * by exact 128-bit integer arithmetic for up to 19 digits and a power of ten up to 19
 * either way (`exact_decimal`), else by CPython's conversion.
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
#ifdef __SIZEOF_INT128__
    if (significant <= 19 && power >= -19 && power <= 19) {
        double v = mantissa == 0 ? 0.0 : exact_decimal(mantissa, power);
        *out = negative ? -v : v;
        return p;
    }
#endif
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
