/*
 * The served forms beyond DGT: a tick of the Tree Ensemble Layer (_tel.h) and of a
 * random hinge forest or fern ensemble (_hinge.h), each one call that standardises the
 * contexts, runs the model's forward pass for every action and explores, as decide
 * does for DGT trees (GradientBandit's act and act_columns on the numpy reference:
 * GradientBase._standardized, the model's forward_one / forward_batch, then
 * classification_columns or explore_and_sample).
 *
 * What the two share lives here: the tick's scalar checks, a standardised context and
 * a row's choice from the model's outputs.  Included by _native.c after decide, whose
 * helpers (take, clip, dot, argmax, reward_link, explore, sample) it uses.
 */

/* The scalars of a tick: clip >= 0 (0: none), an explorer code (-1: none, regression)
 * and its parameter in range, as decide checks them; args[clip_at] and args[param_at]
 * are the arguments, named in the message. */
static int form_scalars(PyObject *args, int clip_at, int param_at, double clip_bound,
                        int explorer, double param) {
    if (isnan(clip_bound) || clip_bound < 0.0) {
        PyErr_Format(PyExc_ValueError, "clip must be >= 0 (0: none), got %R",
                     PyTuple_GET_ITEM(args, clip_at));
        return -1;
    }
    if (explorer < EXPLORE_NONE || explorer > FASTCB) {
        PyErr_Format(PyExc_ValueError, "explorer must be in [-1, 3], got %d", explorer);
        return -1;
    }
    if (!isfinite(param) || param < 0.0 || (explorer == SOFTMAX && param <= 0.0) ||
        (explorer == EPSILON_GREEDY && param > 1.0)) {
        PyErr_Format(PyExc_ValueError, "param out of range for explorer %d: %R", explorer,
                     PyTuple_GET_ITEM(args, param_at));
        return -1;
    }
    return 0;
}

/* The contexts (b, d) finite, the uniforms (b,) in [0, 1). */
static int form_rows(const double *x, Py_ssize_t b, Py_ssize_t d, const double *u) {
    for (Py_ssize_t i = 0; i < b * d; i++) {
        if (!isfinite(x[i])) {
            PyErr_Format(PyExc_ValueError, "x[%zd][%zd] must be finite", i / d, i % d);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < b; i++) {
        if (!(u[i] >= 0.0 && u[i] < 1.0)) {
            PyErr_Format(PyExc_ValueError, "uniforms[%zd] must be in [0, 1)", i);
            return -1;
        }
    }
    return 0;
}

/* (x - mean) * inv_scale, clipped to [-bound, bound] when bound > 0
 * (GradientBase._standardized: the same two operations, then the clip ufunc). */
static void form_standardise(const double *x, const double *mean, const double *inv_scale,
                             double bound, Py_ssize_t d, double *z) {
    for (Py_ssize_t j = 0; j < d; j++) {
        z[j] = (x[j] - mean[j]) * inv_scale[j];
        if (bound > 0.0) {
            z[j] = clip(z[j], bound);
        }
    }
}

/*
 * One row's decision from the model's outputs o (K,): the scores (the outputs, or
 * their sigmoid), the greedy action (their first maximum) and, without an explorer, that
 * action at probability 1, else the explorer's pmf sampled with u.  `work` holds 3 K.
 */
static void form_choose(int explorer, double param, int sigmoid, const double *o, Py_ssize_t k,
                        double u, double *work, int64_t *action, double *propensity,
                        int64_t *greedy) {
    double *s = work, *pmf = work + k, *cumulative = work + 2 * k;
    for (Py_ssize_t c = 0; c < k; c++) {
        s[c] = reward_link(o[c], sigmoid);
    }
    Py_ssize_t best = argmax(s, k);
    *greedy = (int64_t)best;
    if (explorer == EXPLORE_NONE) {
        *action = (int64_t)best;
        *propensity = 1.0;
        return;
    }
    explore(explorer, param, s, k, best, pmf);
    Py_ssize_t chosen = sample(pmf, k, u, cumulative);
    *action = (int64_t)chosen;
    *propensity = pmf[chosen];
}

/* Scratch of a tick: n doubles (at least one), or NULL with MemoryError set. */
static double *form_scratch(Py_ssize_t n) {
    if (n < 1) {
        n = 1;
    }
    if (n > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(double)) {
        PyErr_NoMemory();
        return NULL;
    }
    double *out = PyMem_Malloc((size_t)n * sizeof(double));
    if (out == NULL) {
        PyErr_NoMemory();
    }
    return out;
}

/* ---- the Tree Ensemble Layer (banditree.models.tel.frozen) ----------------------- */

#include "_tel.h"

/* ---- a random hinge forest or fern ensemble (banditree.models.hinge.frozen) ------- */

#include "_hinge.h"
