/*
 * banditree.kernel._native: the arithmetic of a tick's decisions and of a learning
 * window, one call each, against the CPython API alone (no numpy headers).
 *
 * The numpy code is the specification (banditree/models/dgt, banditree/explore,
 * banditree/learners): every function here names the one it mirrors, and the tests
 * (tests/kernel) run both on the same inputs.  Equation numbers are those of
 * algorithms.md (the DGT paper's).
 *
 * Safety: arrays come in through the buffer protocol; every one is checked at the
 * boundary (C-contiguous float64 or int64, its number of dimensions and every length
 * against the others, writable where written) before any loop reads it, and every
 * index read from data (an action) is checked against its bound.  A failed check
 * raises ValueError or TypeError naming the argument; nothing is written then.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_HEIGHT 16
#define MAX_DIMS 3

/* ---- the boundary: buffers checked for type, shape and layout ------------------ */

typedef struct {
    Py_buffer view;
    int held;
} Arr;

static void release(Arr *arrays, int n) {
    for (int i = 0; i < n; i++) {
        if (arrays[i].held) {
            PyBuffer_Release(&arrays[i].view);
            arrays[i].held = 0;
        }
    }
}

/* Whether a struct-module format is a native/little-endian 8-byte float or integer. */
static int format_is(const char *format, char want) {
    if (format == NULL) {
        return 0;
    }
    if (format[0] == '<' || format[0] == '=' || format[0] == '@') {
        format++;
    }
    if (format[0] == '\0' || format[1] != '\0') {
        return 0;
    }
    if (want == 'd') {
        return format[0] == 'd';
    }
    return format[0] == 'q' || format[0] == 'l';
}

/*
 * Take a C-contiguous buffer of `kind` ('d' float64, 'q' int64) with `ndim`
 * dimensions; `shape[i] >= 0` must match, `shape[i] == -1` is read back.
 */
static int take(PyObject *obj, const char *name, char kind, int ndim, Py_ssize_t *shape,
                int writable, Arr *out) {
    out->held = 0;
    if (PyObject_CheckBuffer(obj) == 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a numpy array (a buffer), got %.80s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &out->view, flags) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s must be a %sbuffer of 8-byte numbers", name,
                     writable ? "writable " : "");
        return -1;
    }
    out->held = 1;
    Py_buffer *v = &out->view;
    if (v->itemsize != 8 || !format_is(v->format, kind)) {
        PyErr_Format(PyExc_TypeError, "%s must hold %s, got format %.20s", name,
                     kind == 'd' ? "float64" : "int64", v->format ? v->format : "?");
        return -1;
    }
    if (v->ndim != ndim) {
        PyErr_Format(PyExc_ValueError, "%s must have %d dimension(s), got %d", name, ndim,
                     v->ndim);
        return -1;
    }
    if (!PyBuffer_IsContiguous(v, 'C')) {
        PyErr_Format(PyExc_ValueError, "%s must be C-contiguous", name);
        return -1;
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] >= 0 && v->shape[i] != shape[i]) {
            PyErr_Format(PyExc_ValueError, "%s must have length %zd on axis %d, got %zd", name,
                         shape[i], i, v->shape[i]);
            return -1;
        }
        shape[i] = v->shape[i];
    }
    return 0;
}

static inline double *f64(Arr *a) { return (double *)a->view.buf; }
static inline int64_t *i64(Arr *a) { return (int64_t *)a->view.buf; }

/* ---- the shared maths ------------------------------------------------------------ */

/* numpy's argmax: the first maximum, or the first NaN (numpy/_core argfunc). */
static Py_ssize_t argmax(const double *v, Py_ssize_t n) {
    Py_ssize_t best = 0;
    double top = v[0];
    if (isnan(top)) {
        return 0;
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        if (!(v[i] <= top)) {
            top = v[i];
            best = i;
            if (isnan(top)) {
                break;
            }
        }
    }
    return best;
}

/* numpy's clip ufunc: NaN stays NaN. */
static inline double clip(double v, double bound) {
    if (v < -bound) {
        return -bound;
    }
    return v > bound ? bound : v;
}

static inline double dot(const double *a, const double *b, Py_ssize_t n) {
    double s = 0.0;
    for (Py_ssize_t j = 0; j < n; j++) {
        s += a[j] * b[j];
    }
    return s;
}

/* One action's output of a frozen tree at its reached leaf: the linear term (none: 0)
 * plus the leaf's value (FrozenTree.outputs), as decide adds them. */
static inline double leaf_output(const double *theta_row, const double *linear, const double *z,
                                 Py_ssize_t d, Py_ssize_t c) {
    double lin = linear != NULL ? dot(linear + c * d, z, d) : 0.0;
    return lin + theta_row[c];
}

/* The reward link of a score: the sigmoid, or the output itself. */
static inline double reward_link(double output, int sigmoid) {
    return sigmoid ? 1.0 / (1.0 + exp(-output)) : output;
}

/*
 * Routing (algorithms.md section 1): h dot products, RIGHT when <w_i, [x; 1]> > 0,
 * node i's children 2i+1 (left) and 2i+2 (right).  `w` is (2^h - 1, d + 1), bias last.
 */
static Py_ssize_t route(const double *w, const double *x, Py_ssize_t d, int height) {
    Py_ssize_t node = 0;
    for (int level = 0; level < height; level++) {
        const double *row = w + node * (d + 1);
        double a = dot(row, x, d) + row[d];
        node = 2 * node + (a > 0.0 ? 2 : 1);
    }
    return node - (((Py_ssize_t)1 << height) - 1);
}

/* ---- decide: a tick of contexts -> actions, propensities, leaves, outputs ------- */

enum { EXPLORE_NONE = -1, EPSILON_GREEDY = 0, SOFTMAX = 1, SQUARECB = 2, FASTCB = 3 };
enum { SINGLE = 0, AVERAGE = 1, VOTE = 2 };

/* FastCB's LOSS_FLOOR (banditree/explore/fastcb.py) */
#define LOSS_FLOOR 0.01

/*
 * The explorer's pmf of one row of scores (banditree/explore, the `rows` methods);
 * `param` is the schedule's value at the learner's round: epsilon_t, temperature_t or
 * gamma_t.
 */
static void explore(int explorer, double param, const double *s, Py_ssize_t k, Py_ssize_t best,
                    double *pmf) {
    if (explorer == EPSILON_GREEDY) {
        /* eq. 7: p(k) = (1 - eps) 1[k = argmax] + eps / K */
        for (Py_ssize_t i = 0; i < k; i++) {
            pmf[i] = param / (double)k;
        }
        pmf[best] += 1.0 - param;
        return;
    }
    if (explorer == SOFTMAX) {
        /* p(k) proportional to exp((s_k - max s) / temperature); np.max propagates NaN */
        double top = s[0];
        for (Py_ssize_t i = 1; i < k; i++) {
            if (isnan(top)) {
                break;
            }
            if (isnan(s[i]) || s[i] > top) {
                top = s[i];
            }
        }
        double total = 0.0;
        for (Py_ssize_t i = 0; i < k; i++) {
            pmf[i] = exp((s[i] - top) / param);
            total += pmf[i];
        }
        for (Py_ssize_t i = 0; i < k; i++) {
            pmf[i] /= total;
        }
        return;
    }
    /* SquareCB (Foster and Rakhlin): p(k) = 1 / (K + gamma (s_best - s_k)), the best
     * gets the rest, the others' masses added in index order; FastCB divides gamma by
     * the greedy action's predicted loss, clipped to [LOSS_FLOOR, 1]. */
    double top = s[best];
    double gamma = param;
    if (explorer == FASTCB) {
        double loss = 1.0 - top;
        gamma = param / (isnan(loss) ? loss : fmin(fmax(loss, LOSS_FLOOR), 1.0));
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        pmf[i] = 1.0 / ((double)k + gamma * (top - s[i]));
    }
    pmf[best] = 0.0;
    double rest = pmf[0];
    for (Py_ssize_t i = 1; i < k; i++) {
        rest += pmf[i];
    }
    pmf[best] = 1.0 - rest;
}

/* Inverse-CDF draw (banditree.explore.sample_actions): the count of cumulative masses
 * at or below u times the total, at most K - 1. */
static Py_ssize_t sample(const double *pmf, Py_ssize_t k, double u, double *cumulative) {
    double run = pmf[0];
    cumulative[0] = run;
    for (Py_ssize_t i = 1; i < k; i++) {
        run += pmf[i];
        cumulative[i] = run;
    }
    double target = u * cumulative[k - 1];
    Py_ssize_t below = 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        below += cumulative[i] <= target;
    }
    return below < k - 1 ? below : k - 1;
}

PyDoc_STRVAR(decide_doc,
             "decide(x, mean, inv_scale, clip, weights, theta, linear, aggregate, sigmoid,\n"
             "       explorer, param, uniforms, action, propensity, greedy, leaf, output, "
             "scores)\n--\n\n"
             "A tick of B contexts x (B, d) through T frozen trees, written into the\n"
             "given arrays.  See banditree.kernel.decide_rows.");

static PyObject *decide(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[16];
    double clip_bound, param;
    int aggregate, sigmoid, explorer;
    if (!PyArg_ParseTuple(args, "OOOdOOOiiidOOOOOOO:decide", &o[0], &o[1], &o[2], &clip_bound,
                          &o[3], &o[4], &o[5], &aggregate, &sigmoid, &explorer, &param, &o[6],
                          &o[7], &o[8], &o[9], &o[10], &o[11], &o[12])) {
        return NULL;
    }
    if (isnan(clip_bound) || clip_bound < 0.0) {
        return PyErr_Format(PyExc_ValueError, "clip must be >= 0 (0: none), got %R",
                            PyTuple_GET_ITEM(args, 3));
    }
    if (aggregate < SINGLE || aggregate > VOTE) {
        return PyErr_Format(PyExc_ValueError, "aggregate must be 0, 1 or 2, got %d", aggregate);
    }
    if (explorer < EXPLORE_NONE || explorer > FASTCB) {
        return PyErr_Format(PyExc_ValueError, "explorer must be in [-1, 3], got %d", explorer);
    }
    if (!isfinite(param) || param < 0.0 || (explorer == SOFTMAX && param <= 0.0) ||
        (explorer == EPSILON_GREEDY && param > 1.0)) {
        return PyErr_Format(PyExc_ValueError, "param out of range for explorer %d: %R",
                            explorer, PyTuple_GET_ITEM(args, 10));
    }
    Arr a[13];
    memset(a, 0, sizeof a);
    Py_ssize_t xs[2] = {-1, -1};
    Py_ssize_t ws[3] = {-1, -1, -1};
    Py_ssize_t ts[3] = {-1, -1, -1};
    if (take(o[0], "x", 'd', 2, xs, 0, &a[0]) < 0) {
        goto fail;
    }
    Py_ssize_t b_rows = xs[0], d = xs[1];
    Py_ssize_t ds[1] = {d};
    if (take(o[1], "mean", 'd', 1, ds, 0, &a[1]) < 0 ||
        take(o[2], "inv_scale", 'd', 1, ds, 0, &a[2]) < 0 ||
        take(o[3], "weights", 'd', 3, ws, 0, &a[3]) < 0 ||
        take(o[4], "theta", 'd', 3, ts, 0, &a[4]) < 0) {
        goto fail;
    }
    Py_ssize_t n_trees = ws[0], n_int = ws[1], k = ts[2];
    int height = 0;
    while (height <= MAX_HEIGHT && ((Py_ssize_t)1 << height) - 1 < n_int) {
        height++;
    }
    if (n_trees < 1 || height < 1 || height > MAX_HEIGHT ||
        ((Py_ssize_t)1 << height) - 1 != n_int) {
        PyErr_Format(PyExc_ValueError,
                     "weights must be (T >= 1, 2^h - 1 nodes, h in [1, %d]), got (%zd, %zd, %zd)",
                     MAX_HEIGHT, n_trees, n_int, ws[2]);
        goto fail;
    }
    if (ws[2] != d + 1) {
        PyErr_Format(PyExc_ValueError, "weights must have d + 1 = %zd columns, got %zd", d + 1,
                     ws[2]);
        goto fail;
    }
    if (ts[0] != n_trees || ts[1] != ((Py_ssize_t)1 << height) || k < 1) {
        PyErr_Format(PyExc_ValueError,
                     "theta must be (%zd trees, %zd leaves, K >= 1), got (%zd, %zd, %zd)", n_trees,
                     (Py_ssize_t)1 << height, ts[0], ts[1], ts[2]);
        goto fail;
    }
    if (aggregate == SINGLE && n_trees != 1) {
        PyErr_Format(PyExc_ValueError, "a single tree takes T = 1, got %zd", n_trees);
        goto fail;
    }
    int has_linear = o[5] != Py_None;
    if (has_linear) {
        Py_ssize_t ls[3] = {n_trees, k, d};
        if (take(o[5], "linear", 'd', 3, ls, 0, &a[5]) < 0) {
            goto fail;
        }
    }
    Py_ssize_t bs[1] = {b_rows};
    Py_ssize_t bk[2] = {b_rows, k};
    if (take(o[6], "uniforms", 'd', 1, bs, 0, &a[6]) < 0 ||
        take(o[7], "action", 'q', 1, bs, 1, &a[7]) < 0 ||
        take(o[8], "propensity", 'd', 1, bs, 1, &a[8]) < 0 ||
        take(o[9], "greedy", 'q', 1, bs, 1, &a[9]) < 0 ||
        take(o[10], "leaf", 'q', 1, bs, 1, &a[10]) < 0 ||
        take(o[11], "output", 'd', 2, bk, 1, &a[11]) < 0 ||
        take(o[12], "scores", 'd', 2, bk, 1, &a[12]) < 0) {
        goto fail;
    }
    const double *x = f64(&a[0]);
    for (Py_ssize_t i = 0; i < b_rows * d; i++) {
        if (!isfinite(x[i])) {
            PyErr_Format(PyExc_ValueError, "x[%zd][%zd] must be finite", i / d, i % d);
            goto fail;
        }
    }
    const double *u = f64(&a[6]);
    for (Py_ssize_t i = 0; i < b_rows; i++) {
        if (!(u[i] >= 0.0 && u[i] < 1.0)) {
            PyErr_Format(PyExc_ValueError, "uniforms[%zd] must be in [0, 1)", i);
            goto fail;
        }
    }
    /* scratch: z (d), every tree's outputs (T K), the pmf and its running sums (2 K) */
    Py_ssize_t scratch = d + n_trees * k + 2 * k;
    if (scratch > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(double)) {
        PyErr_NoMemory();
        goto fail;
    }
    double *z = PyMem_Malloc((size_t)(scratch > 0 ? scratch : 1) * sizeof(double));
    if (z == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    double *outs = z + d, *pmf = outs + n_trees * k, *cumulative = pmf + k;
    const double *mean = f64(&a[1]), *inv_scale = f64(&a[2]), *w = f64(&a[3]);
    const double *theta = f64(&a[4]), *linear = has_linear ? f64(&a[5]) : NULL;
    int64_t *action = i64(&a[7]), *greedy = i64(&a[9]), *leaf = i64(&a[10]);
    double *propensity = f64(&a[8]), *output = f64(&a[11]), *scores = f64(&a[12]);
    Py_ssize_t n_leaves = (Py_ssize_t)1 << height;

    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        const double *xb = x + b * d;
        /* standardise with the snapshot's statistics, then clip (GradientBase._standardized) */
        for (Py_ssize_t j = 0; j < d; j++) {
            z[j] = (xb[j] - mean[j]) * inv_scale[j];
            if (clip_bound > 0.0) {
                z[j] = clip(z[j], clip_bound);
            }
        }
        /* each tree: the reached leaf's row plus the linear term (FrozenTree.outputs) */
        for (Py_ssize_t t = 0; t < n_trees; t++) {
            Py_ssize_t l = route(w + t * n_int * (d + 1), z, d, height);
            if (t == 0) {
                leaf[b] = aggregate == SINGLE ? (int64_t)l : -1;
            }
            for (Py_ssize_t c = 0; c < k; c++) {
                outs[t * k + c] = leaf_output(theta + (t * n_leaves + l) * k,
                                              has_linear ? linear + t * k * d : NULL, z, d, c);
            }
        }
        /* the forest's mean (trees added in order) and, voting, the vote shares with
         * ties broken by the mean's sigmoid (DGTForestSpec._combine) */
        double *ob = output + b * k, *sb = scores + b * k;
        for (Py_ssize_t c = 0; c < k; c++) {
            double total = outs[c];
            for (Py_ssize_t t = 1; t < n_trees; t++) {
                total += outs[t * k + c];
            }
            ob[c] = aggregate == SINGLE ? total : total / (double)n_trees;
        }
        int voted = aggregate == VOTE && k > 1;
        if (voted) {
            for (Py_ssize_t c = 0; c < k; c++) {
                sb[c] = 0.0;
            }
            for (Py_ssize_t t = 0; t < n_trees; t++) {
                sb[argmax(outs + t * k, k)] += 1.0;
            }
            for (Py_ssize_t c = 0; c < k; c++) {
                sb[c] = sb[c] / (double)n_trees + 1e-6 / (1.0 + exp(-ob[c]));
            }
        } else {
            for (Py_ssize_t c = 0; c < k; c++) {
                sb[c] = reward_link(ob[c], sigmoid);
            }
        }
        Py_ssize_t best = argmax(sb, k);
        greedy[b] = (int64_t)best;
        if (explorer == EXPLORE_NONE) {
            action[b] = (int64_t)best;
            propensity[b] = 1.0;
            continue;
        }
        explore(explorer, param, sb, k, best, pmf);
        Py_ssize_t chosen = sample(pmf, k, u[b], cumulative);
        action[b] = (int64_t)chosen;
        propensity[b] = pmf[chosen];
    }
    Py_END_ALLOW_THREADS;
    PyMem_Free(z);
    release(a, 13);
    Py_RETURN_NONE;
fail:
    release(a, 13);
    return NULL;
}

/* ---- learn: one window's gradients of a DGT tree (Algorithm 2, eq. 8) ---------- */

#include "_learn.h"

/* ---- learn: a whole chunk of feedback (learn_batch's bookkeeping) ------------- */

#include "_chunk.h"

/* ---- the event ids' uniforms (banditree.explore.event_uniform_rows) ------------- */

#include "_blake2b.h"

/* ---- a boosted ensemble's decision over every action (banditree.models.boosted) -- */

#include "_boosted.h"

/* ---- a ranking decision over a request's candidates (banditree.ranking.served) -- */

#include "_rank.h"

/* ---- JSON's whitespace and numbers, as orjson reads them ------------------------ */

#include "_json.h"

/* ---- a chunk of log entries decoded into learn_chunk's columns ------------------ */

#include "_stored.h"

/* ---- a batch predict's body read and its answer and records written ------------- */

#include "_rows.h"

/* ---- a tick of the TEL and hinge forms (banditree.models.tel, .hinge) ------------ */

#include "_forms.h"

static PyMethodDef methods[] = {
    {"decide", decide, METH_VARARGS, decide_doc},
    {"window_gradients", window_gradients, METH_VARARGS, window_gradients_doc},
    {"learn_chunk", learn_chunk, METH_VARARGS, learn_chunk_doc},
    {"ridge_rows", ridge_rows, METH_VARARGS, ridge_rows_doc},
    {"rmsprop", rmsprop, METH_VARARGS, rmsprop_doc},
    {"welford", welford, METH_VARARGS, welford_doc},
    {"event_uniforms", event_uniforms, METH_VARARGS, event_uniforms_doc},
    {"boosted_decide", boosted_decide, METH_VARARGS, boosted_decide_doc},
    {"boosted_value", boosted_value, METH_VARARGS, boosted_value_doc},
    {"boosted_values", boosted_values, METH_VARARGS, boosted_values_doc},
    {"boosted_leaf_sums", boosted_leaf_sums, METH_VARARGS, boosted_leaf_sums_doc},
    {"boosted_route", boosted_route, METH_VARARGS, boosted_route_doc},
    {"rank_decide", rank_decide, METH_VARARGS, rank_decide_doc},
    {"decode_stored", decode_stored, METH_VARARGS, decode_stored_doc},
    {"parse_rows", parse_rows, METH_VARARGS, parse_rows_doc},
    {"parse_row", parse_row, METH_VARARGS, parse_row_doc},
    {"stack_rows", stack_rows, METH_VARARGS, stack_rows_doc},
    {"write_rows", write_rows, METH_VARARGS, write_rows_doc},
    {"tel_decide", tel_decide, METH_VARARGS, tel_decide_doc},
    {"hinge_decide", hinge_decide, METH_VARARGS, hinge_decide_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "banditree's compiled kernel (see banditree.kernel).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
