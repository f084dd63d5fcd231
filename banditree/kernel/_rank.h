/*
 * rank_decide: one ranking decision (banditree.ranking.served.ServedScorer.scores and
 * banditree.ranking.learner.RankingLearner.pick) in one call.  Included by _native.c after
 * take(), argmax(), clip(), explore(), sample() and blake2b_16().
 *
 * The served scorer's terms (served.py's module docstring): the standardised, clipped
 * context z gives one context matrix M(z) = z G + M0 of shape (da + 1, cols), column 0 the
 * ridge term, columns 1 .. nodes the tree's node activations, the last a constant 1.
 * G comes as its columns that hold a weight (g_columns; most are 0: a node's candidate
 * part does not depend on the context), so M costs dc times those, not dc (da + 1) cols.
 * A candidate's cached row is [a (da), 1, id weight]; its score is
 *
 *     [a, 1] . M[:, 0] + id weight * theta[leaf],
 *
 * the leaf reached by walking the tree on the activations [a, 1] . M[:, 1 + node], right
 * when above 0 (served.py's path scores pick the same leaf; a NaN goes left in both).
 * Then the explorer's pmf over the candidates at the learner's round, and the inverse-CDF
 * draw with the event id's uniform (or a given one).  Sums run in index order, where
 * numpy's BLAS products use other orders: scores agree within rounding (1e-12 in the
 * tests), decisions are the same but within rounding of a tie.
 */

#define RANK_MAX_CANDIDATES 100000

PyDoc_STRVAR(rank_decide_doc,
             "rank_decide(c, c_mean, c_scale, clip, rows, g, g_columns, m0, height, theta,\n"
             "            explorer, param, prefix, event_id, u, scores)\n--\n\n"
             "One ranking decision: (chosen, greedy, probabilities as a list of floats).\n"
             "See banditree.kernel.rank_decide.");

static PyObject *rank_decide(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_c, *o_mean, *o_scale, *o_rows, *o_g, *o_cols, *o_m0, *o_theta, *o_eid, *o_scores;
    double clip_bound, param, u;
    int height, explorer;
    Py_buffer prefix;
    if (!PyArg_ParseTuple(args, "OOOdOOOOiOidy*OdO:rank_decide", &o_c, &o_mean, &o_scale,
                          &clip_bound, &o_rows, &o_g, &o_cols, &o_m0, &height, &o_theta,
                          &explorer, &param, &prefix, &o_eid, &u, &o_scores)) {
        return NULL;
    }
    Arr a[9];
    memset(a, 0, sizeof a);
    double *scratch = NULL;
    PyObject *probabilities = NULL;
    if (!(clip_bound > 0.0) || !isfinite(clip_bound)) {
        PyErr_Format(PyExc_ValueError, "clip must be finite and > 0, got %R",
                     PyTuple_GET_ITEM(args, 3));
        goto fail;
    }
    if (height < 0 || height > MAX_HEIGHT) {
        PyErr_Format(PyExc_ValueError, "height must be in [0, %d] (0: no tree), got %d",
                     MAX_HEIGHT, height);
        goto fail;
    }
    if (explorer < EPSILON_GREEDY || explorer > FASTCB) {
        PyErr_Format(PyExc_ValueError, "explorer must be in [0, 3], got %d", explorer);
        goto fail;
    }
    if (!isfinite(param) || param < 0.0 || (explorer == SOFTMAX && param <= 0.0) ||
        (explorer == EPSILON_GREEDY && param > 1.0)) {
        PyErr_Format(PyExc_ValueError, "param out of range for explorer %d: %R", explorer,
                     PyTuple_GET_ITEM(args, 11));
        goto fail;
    }
    int hashed = o_eid != Py_None;
    if (hashed && !PyUnicode_Check(o_eid)) {
        PyErr_Format(PyExc_TypeError, "event_id must be str or None, got %.80s",
                     Py_TYPE(o_eid)->tp_name);
        goto fail;
    }
    if (!hashed && !(u >= 0.0 && u < 1.0)) {
        PyErr_Format(PyExc_ValueError, "u must be in [0, 1) without an event_id, got %R",
                     PyTuple_GET_ITEM(args, 14));
        goto fail;
    }
    Py_ssize_t cs[1] = {-1};
    if (take(o_c, "c", 'd', 1, cs, 0, &a[0]) < 0) {
        goto fail;
    }
    Py_ssize_t dc = cs[0];
    Py_ssize_t rs[2] = {-1, -1};
    if (take(o_mean, "c_mean", 'd', 1, cs, 0, &a[1]) < 0 ||
        take(o_scale, "c_scale", 'd', 1, cs, 0, &a[2]) < 0 ||
        take(o_rows, "rows", 'd', 2, rs, 0, &a[3]) < 0) {
        goto fail;
    }
    Py_ssize_t n = rs[0], width = rs[1];
    if (n < 1 || n > RANK_MAX_CANDIDATES) {
        PyErr_Format(PyExc_ValueError, "rows must hold 1 to %d candidates, got %zd",
                     RANK_MAX_CANDIDATES, n);
        goto fail;
    }
    if (width < 2) {
        PyErr_Format(PyExc_ValueError, "rows must have da + 2 >= 2 columns, got %zd", width);
        goto fail;
    }
    Py_ssize_t da1 = width - 1; /* [a, 1] */
    Py_ssize_t nodes = height > 0 ? ((Py_ssize_t)1 << height) - 1 : 0;
    Py_ssize_t cols = height > 0 ? nodes + 2 : 1;
    if (da1 > PY_SSIZE_T_MAX / 8 / cols) {
        PyErr_Format(PyExc_ValueError, "rows has too many columns: %zd", width);
        goto fail;
    }
    Py_ssize_t p = da1 * cols;
    Py_ssize_t gs[2] = {dc, -1};
    Py_ssize_t ms[1] = {p};
    if (take(o_g, "g", 'd', 2, gs, 0, &a[4]) < 0 || take(o_m0, "m0", 'd', 1, ms, 0, &a[5]) < 0) {
        goto fail;
    }
    Py_ssize_t q = gs[1];
    Py_ssize_t qs[1] = {q};
    if (take(o_cols, "g_columns", 'q', 1, qs, 0, &a[8]) < 0) {
        goto fail;
    }
    const int64_t *columns = i64(&a[8]);
    for (Py_ssize_t j = 0; j < q; j++) {
        if (columns[j] < (j ? columns[j - 1] + 1 : 0) || columns[j] >= p) {
            PyErr_Format(PyExc_ValueError,
                         "g_columns must increase strictly within [0, %zd), got %lld at %zd", p,
                         (long long)columns[j], j);
            goto fail;
        }
    }
    if (height > 0) {
        Py_ssize_t ts[1] = {nodes + 1};
        if (take(o_theta, "theta", 'd', 1, ts, 0, &a[6]) < 0) {
            goto fail;
        }
    } else if (o_theta != Py_None) {
        PyErr_SetString(PyExc_ValueError, "theta must be None without a tree (height 0)");
        goto fail;
    }
    double *scores = NULL;
    if (o_scores != Py_None) {
        Py_ssize_t ss[1] = {n};
        if (take(o_scores, "scores", 'd', 1, ss, 1, &a[7]) < 0) {
            goto fail;
        }
        scores = f64(&a[7]);
    }
    const double *c = f64(&a[0]);
    for (Py_ssize_t i = 0; i < dc; i++) {
        if (!isfinite(c[i])) {
            PyErr_Format(PyExc_ValueError, "c[%zd] must be finite", i);
            goto fail;
        }
    }
    const double *rows = f64(&a[3]);
    for (Py_ssize_t i = 0; i < n * width; i++) {
        if (!isfinite(rows[i])) {
            PyErr_Format(PyExc_ValueError, "rows[%zd][%zd] must be finite", i / width,
                         i % width);
            goto fail;
        }
    }
    const char *text = NULL;
    Py_ssize_t text_size = 0;
    if (hashed) {
        text = PyUnicode_AsUTF8AndSize(o_eid, &text_size);
        if (text == NULL) {
            goto fail; /* a lone surrogate: str.encode() refuses it too */
        }
    }
    /* scratch: z (dc), M (da1 cols), the columns' sums (q), scores (n) unless given, pmf
     * and its sums (2 n); q <= p, n bounded */
    if (dc > PY_SSIZE_T_MAX / 8 - 2 * p - 3 * n) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t size = dc + p + q + 3 * n;
    scratch = PyMem_Malloc((size_t)size * sizeof(double));
    if (scratch == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    double *z = scratch, *m = z + dc, *acc = m + p, *pmf = acc + q, *cumulative = pmf + n;
    if (scores == NULL) {
        scores = cumulative + n;
    }
    const double *mean = f64(&a[1]), *scale = f64(&a[2]), *g = f64(&a[4]), *m0 = f64(&a[5]);
    const double *theta = height > 0 ? f64(&a[6]) : NULL;
    Py_ssize_t chosen, best;
    Py_BEGIN_ALLOW_THREADS;
    if (hashed) {
        uint64_t halves[2];
        blake2b_16(prefix.buf, (size_t)prefix.len, (const uint8_t *)text, (size_t)text_size,
                   halves);
        u = (double)halves[0] * (1.0 / 18446744073709551616.0); /* 2^-64, exact */
    }
    /* the context: standardised, clipped (ServedScorer._context) */
    for (Py_ssize_t i = 0; i < dc; i++) {
        z[i] = clip((c[i] - mean[i]) / scale[i], clip_bound);
    }
    /* M(z) = z G + M0, each entry's product summed over the context in index order; G is
     * given by its columns that hold a weight (g_columns), the others' products are 0 */
    for (Py_ssize_t j = 0; j < p; j++) {
        m[j] = m0[j];
    }
    for (Py_ssize_t j = 0; j < q; j++) {
        acc[j] = 0.0;
    }
    for (Py_ssize_t i = 0; i < dc; i++) {
        const double zi = z[i], *gi = g + i * q;
        for (Py_ssize_t j = 0; j < q; j++) {
            acc[j] += zi * gi[j];
        }
    }
    for (Py_ssize_t j = 0; j < q; j++) {
        m[columns[j]] = acc[j] + m0[columns[j]];
    }
    /* every candidate: the ridge term, the tree's leaf, the ramped leaf value */
    for (Py_ssize_t k = 0; k < n; k++) {
        const double *row = rows + k * width;
        double ridge = 0.0;
        for (Py_ssize_t r = 0; r < da1; r++) {
            ridge += row[r] * m[r * cols];
        }
        if (height == 0) {
            scores[k] = ridge;
            continue;
        }
        Py_ssize_t node = 0;
        for (int level = 0; level < height; level++) {
            double act = 0.0;
            for (Py_ssize_t r = 0; r < da1; r++) {
                act += row[r] * m[r * cols + 1 + node];
            }
            node = 2 * node + (act > 0.0 ? 2 : 1);
        }
        scores[k] = ridge + row[da1] * theta[node - nodes];
    }
    best = argmax(scores, n);
    explore(explorer, param, scores, n, best, pmf);
    chosen = sample(pmf, n, u, cumulative);
    Py_END_ALLOW_THREADS;
    probabilities = PyList_New(n);
    if (probabilities == NULL) {
        goto fail;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *value = PyFloat_FromDouble(pmf[k]);
        if (value == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(probabilities, k, value);
    }
    PyMem_Free(scratch);
    release(a, 9);
    PyBuffer_Release(&prefix);
    return Py_BuildValue("nnN", chosen, best, probabilities);
fail:
    Py_XDECREF(probabilities);
    PyMem_Free(scratch);
    release(a, 9);
    PyBuffer_Release(&prefix);
    return NULL;
}
