/*
 * boosted_decide: one decision of a boosted regression ensemble on (context, one-hot
 * action), every action in one call (banditree/models/boosted/frozen.py is the
 * specification: FrozenBoostedEnsemble.action_scores, and BoostedBandit.act's blend,
 * optimism and explorer in banditree/learners/boosted/learner.py).
 *
 * Included by _native.c after its shared maths (take, argmax, clip, explore, sample).
 *
 * The trees are complete binary trees of one depth D: internal node i of tree t is
 * row t * N + i of `features` and `thresholds` (N = 2^D - 1, children 2i + 1 LEFT and
 * 2i + 2 RIGHT), RIGHT when input[feature] > threshold; leaf j is column j of the
 * tree's row of `values` and `uncertainty` (T, N + 1).  The input is the context
 * (columns [0, d)) followed by the action's one-hot (columns [d, d + K)).
 *
 * Every action but those an action split on a tree's path names reaches the leaf the
 * all-zero one-hot reaches, so each tree is walked once with no action, then once for
 * each action named on that path (at most D walks more): the same leaves as K walks,
 * each action's leaves then added in the trees' order.
 */

/* The leaf of tree `t` for input (x, one-hot of `action`; -1: all zeros).  The
 * action columns met on the way are written to `named` (at most D) when not NULL. */
static Py_ssize_t boosted_walk(const int64_t *features, const double *thresholds, const double *x,
                               Py_ssize_t d, int depth, Py_ssize_t action, Py_ssize_t *named,
                               int *n_named) {
    Py_ssize_t node = 0;
    for (int level = 0; level < depth; level++) {
        Py_ssize_t f = (Py_ssize_t)features[node];
        double input;
        if (f < d) {
            input = x[f];
        } else {
            input = f - d == action ? 1.0 : 0.0;
            if (named != NULL) {
                named[(*n_named)++] = f - d;
            }
        }
        node = 2 * node + (input > thresholds[node] ? 2 : 1);
    }
    return node - (((Py_ssize_t)1 << depth) - 1);
}

/*
 * The ensemble's arrays for contexts of d features, checked: o[1] features (T, 2^D - 1)
 * in [0, d + K), o[2] thresholds, o[3] values (T, 2^D), o[4] uncertainty like values
 * (NULL: not taken), o[5] offset (d,), o[6] scale (d,), o[7] base (K, d + 1).  Sets
 * shape[] = {d, K, T, 2^D - 1} and *depth.
 */
static int take_ensemble(PyObject *const *o, Arr *a, Py_ssize_t d, Py_ssize_t *shape,
                         int *depth_out) {
    Py_ssize_t fs[2] = {-1, -1};
    Py_ssize_t bs[2] = {-1, -1};
    if (take(o[1], "features", 'q', 2, fs, 0, &a[1]) < 0) {
        return -1;
    }
    Py_ssize_t n_trees = fs[0], n_int = fs[1];
    int depth = 0;
    while (depth <= MAX_HEIGHT && ((Py_ssize_t)1 << depth) - 1 < n_int) {
        depth++;
    }
    if (d < 1 || depth > MAX_HEIGHT || ((Py_ssize_t)1 << depth) - 1 != n_int) {
        PyErr_Format(PyExc_ValueError,
                     "x must have d >= 1 numbers and features (T, 2^D - 1 nodes, D in [0, %d]), "
                     "got d = %zd, features (%zd, %zd)",
                     MAX_HEIGHT, d, n_trees, n_int);
        return -1;
    }
    Py_ssize_t ts[2] = {n_trees, n_int};
    Py_ssize_t vs[2] = {n_trees, n_int + 1};
    Py_ssize_t us[2] = {n_trees, n_int + 1};
    Py_ssize_t ds[1] = {d};
    Py_ssize_t ds2[1] = {d};
    if (take(o[2], "thresholds", 'd', 2, ts, 0, &a[2]) < 0 ||
        take(o[3], "values", 'd', 2, vs, 0, &a[3]) < 0 ||
        (o[4] != NULL && take(o[4], "uncertainty", 'd', 2, us, 0, &a[4]) < 0) ||
        take(o[5], "offset", 'd', 1, ds, 0, &a[5]) < 0 ||
        take(o[6], "scale", 'd', 1, ds2, 0, &a[6]) < 0 ||
        take(o[7], "base", 'd', 2, bs, 0, &a[7]) < 0) {
        return -1;
    }
    Py_ssize_t k = bs[0];
    if (k < 1 || bs[1] != d + 1) {
        PyErr_Format(PyExc_ValueError, "base must be (K >= 1, d + 1 = %zd), got (%zd, %zd)", d + 1,
                     bs[0], bs[1]);
        return -1;
    }
    const int64_t *features = i64(&a[1]);
    for (Py_ssize_t i = 0; i < n_trees * n_int; i++) {
        if (features[i] < 0 || features[i] >= (int64_t)(d + k)) {
            PyErr_Format(PyExc_ValueError, "features[%zd][%zd] must be in [0, %zd], got %lld",
                         i / n_int, i % n_int, d + k - 1, (long long)features[i]);
            return -1;
        }
    }
    shape[0] = d;
    shape[1] = k;
    shape[2] = n_trees;
    shape[3] = n_int;
    *depth_out = depth;
    return 0;
}

/* take_ensemble after o[0], x (d,) finite. */
static int take_boosted(PyObject *const *o, Arr *a, Py_ssize_t *shape, int *depth_out) {
    Py_ssize_t xs[1] = {-1};
    if (take(o[0], "x", 'd', 1, xs, 0, &a[0]) < 0 || take_ensemble(o, a, xs[0], shape, depth_out) < 0) {
        return -1;
    }
    const double *x = f64(&a[0]);
    for (Py_ssize_t j = 0; j < xs[0]; j++) {
        if (!isfinite(x[j])) {
            PyErr_Format(PyExc_ValueError, "x[%zd] must be finite", j);
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(boosted_decide_doc,
             "boosted_decide(x, features, thresholds, values, uncertainty, offset, scale,\n"
             "               base, clip, online, e_online, e_ensemble, optimism, explorer,\n"
             "               param, u, mean, scores)\n--\n\n"
             "One context x (d,) through a boosted ensemble for every action: the\n"
             "(blended) predicted rewards into mean (K,), mean + optimism * std into\n"
             "scores (K,); returns (action, propensity, greedy).  See\n"
             "banditree.kernel.boosted_decide.");

static PyObject *boosted_decide(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[12];
    double clip_bound, e_online, e_ensemble, optimism, param, u;
    int explorer;
    if (!PyArg_ParseTuple(args, "OOOOOOOOdOdddiddOO:boosted_decide", &o[0], &o[1], &o[2], &o[3],
                          &o[4], &o[5], &o[6], &o[7], &clip_bound, &o[8], &e_online, &e_ensemble,
                          &optimism, &explorer, &param, &u, &o[9], &o[10])) {
        return NULL;
    }
    if (!(clip_bound > 0.0)) {
        return PyErr_Format(PyExc_ValueError, "clip must be > 0, got %R",
                            PyTuple_GET_ITEM(args, 8));
    }
    if (!(isfinite(e_online) && e_online >= 0.0 && isfinite(e_ensemble) && e_ensemble >= 0.0)) {
        return PyErr_Format(PyExc_ValueError,
                            "e_online and e_ensemble must be finite and >= 0, got %R and %R",
                            PyTuple_GET_ITEM(args, 10), PyTuple_GET_ITEM(args, 11));
    }
    if (!(isfinite(optimism) && optimism >= 0.0)) {
        return PyErr_Format(PyExc_ValueError, "optimism must be finite and >= 0, got %R",
                            PyTuple_GET_ITEM(args, 12));
    }
    if (explorer < EXPLORE_NONE || explorer > FASTCB) {
        return PyErr_Format(PyExc_ValueError, "explorer must be in [-1, 3], got %d", explorer);
    }
    if (!isfinite(param) || param < 0.0 || (explorer == SOFTMAX && param <= 0.0) ||
        (explorer == EPSILON_GREEDY && param > 1.0)) {
        return PyErr_Format(PyExc_ValueError, "param out of range for explorer %d: %R", explorer,
                            PyTuple_GET_ITEM(args, 14));
    }
    if (!(u >= 0.0 && u < 1.0)) {
        return PyErr_Format(PyExc_ValueError, "u must be in [0, 1), got %R",
                            PyTuple_GET_ITEM(args, 15));
    }
    Arr a[11];
    memset(a, 0, sizeof a);
    Py_ssize_t shape[4];
    int depth;
    if (take_boosted(o, a, shape, &depth) < 0) {
        goto fail;
    }
    Py_ssize_t d = shape[0], k = shape[1], n_trees = shape[2], n_int = shape[3];
    int blended = o[8] != Py_None;
    Py_ssize_t ks[1] = {k};
    if (blended && take(o[8], "online", 'd', 1, ks, 0, &a[8]) < 0) {
        goto fail;
    }
    Py_ssize_t ks2[1] = {k};
    Py_ssize_t ks3[1] = {k};
    if (take(o[9], "mean", 'd', 1, ks2, 1, &a[9]) < 0 ||
        take(o[10], "scores", 'd', 1, ks3, 1, &a[10]) < 0) {
        goto fail;
    }
    const double *x = f64(&a[0]);
    const int64_t *features = i64(&a[1]);
    const double *online = blended ? f64(&a[8]) : NULL;
    if (blended) {
        for (Py_ssize_t c = 0; c < k; c++) {
            if (!isfinite(online[c])) {
                PyErr_Format(PyExc_ValueError, "online[%zd] must be finite", c);
                goto fail;
            }
        }
    }
    /* scratch: z (d), the variances (K), the pmf and its running sums (2 K) */
    Py_ssize_t scratch = d + 3 * k;
    if (scratch > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(double)) {
        PyErr_NoMemory();
        goto fail;
    }
    double *z = PyMem_Malloc((size_t)scratch * sizeof(double));
    Py_ssize_t *leaf = PyMem_Malloc((size_t)k * sizeof(Py_ssize_t));
    if (z == NULL || leaf == NULL) {
        PyMem_Free(z);
        PyMem_Free(leaf);
        PyErr_NoMemory();
        goto fail;
    }
    double *var = z + d, *pmf = var + k, *cumulative = pmf + k;
    const double *thresholds = f64(&a[2]), *values = f64(&a[3]), *uncertainty = f64(&a[4]);
    const double *offset = f64(&a[5]), *scale = f64(&a[6]), *base = f64(&a[7]);
    double *mean = f64(&a[9]), *scores = f64(&a[10]);
    Py_ssize_t n_leaves = n_int + 1;
    Py_ssize_t named[MAX_HEIGHT];
    Py_ssize_t action = 0, greedy = 0;
    double propensity = 1.0;
    int bad = 0;

    Py_BEGIN_ALLOW_THREADS;
    /* the linear base (FrozenBoostedEnsemble.standardized, then base[a] . [1, z]) */
    for (Py_ssize_t j = 0; j < d; j++) {
        z[j] = clip(x[j] * scale[j] - offset[j], clip_bound);
    }
    for (Py_ssize_t c = 0; c < k; c++) {
        mean[c] = 0.0;
        var[c] = 0.0;
    }
    /* the trees, added in order: the no-action walk's leaf for every action, then the
     * actions named on its path walked with their own one-hot */
    for (Py_ssize_t t = 0; t < n_trees; t++) {
        const int64_t *ft = features + t * n_int;
        const double *tt = thresholds + t * n_int;
        const double *vt = values + t * n_leaves, *ut = uncertainty + t * n_leaves;
        int n_named = 0;
        Py_ssize_t common = boosted_walk(ft, tt, x, d, depth, -1, named, &n_named);
        for (Py_ssize_t c = 0; c < k; c++) {
            leaf[c] = common;
        }
        for (int i = 0; i < n_named; i++) {
            Py_ssize_t c = named[i];
            if (leaf[c] == common) { /* not walked yet (an own leaf equal to it: the same) */
                leaf[c] = boosted_walk(ft, tt, x, d, depth, c, NULL, NULL);
            }
        }
        for (Py_ssize_t c = 0; c < k; c++) {
            mean[c] += vt[leaf[c]];
            var[c] += ut[leaf[c]];
        }
    }
    for (Py_ssize_t c = 0; c < k; c++) {
        const double *w = base + c * (d + 1);
        mean[c] += dot(w + 1, z, d);
        mean[c] += w[0];
    }
    /* inverse-error weights: each model weighted by the other's error */
    double total = e_online + e_ensemble;
    for (Py_ssize_t c = 0; c < k; c++) {
        if (blended && total > 0.0) {
            mean[c] = (e_online * mean[c] + e_ensemble * online[c]) / total;
        }
        if (!(isfinite(mean[c]) && var[c] >= 0.0 && isfinite(var[c]))) {
            bad = 1;
            continue;
        }
        scores[c] = mean[c] + optimism * sqrt(var[c]);
        bad |= !isfinite(scores[c]);
    }
    if (!bad) {
        greedy = argmax(mean, k);
        if (explorer == EXPLORE_NONE) {
            action = argmax(scores, k);
        } else {
            Py_ssize_t best = argmax(scores, k);
            explore(explorer, param, scores, k, best, pmf);
            action = sample(pmf, k, u, cumulative);
            propensity = pmf[action];
        }
    }
    Py_END_ALLOW_THREADS;
    PyMem_Free(z);
    PyMem_Free(leaf);
    release(a, 11);
    if (bad) {
        return PyErr_Format(PyExc_ValueError,
                            "the ensemble's predicted rewards, uncertainties and scores must "
                            "be finite, the uncertainties >= 0");
    }
    return Py_BuildValue("ndn", action, propensity, greedy);
fail:
    release(a, 11);
    return NULL;
}

/* FrozenBoostedEnsemble.action_value of x (d,) and `action`: the trees' leaves added in
 * order, then the base (its intercept, then each standardised, clipped feature). */
static double boosted_action_value(const double *x, Py_ssize_t action, const int64_t *features,
                                   const double *thresholds, const double *values,
                                   const double *offset, const double *scale, const double *base,
                                   double clip_bound, Py_ssize_t d, Py_ssize_t n_trees,
                                   Py_ssize_t n_int, int depth) {
    const double *w = base + action * (d + 1);
    double trees = 0.0, linear = w[0];
    for (Py_ssize_t t = 0; t < n_trees; t++) {
        Py_ssize_t leaf = boosted_walk(features + t * n_int, thresholds + t * n_int, x, d, depth,
                                       action, NULL, NULL);
        trees += values[t * (n_int + 1) + leaf];
    }
    for (Py_ssize_t j = 0; j < d; j++) {
        linear += w[1 + j] * clip(x[j] * scale[j] - offset[j], clip_bound);
    }
    return trees + linear;
}

PyDoc_STRVAR(boosted_value_doc,
             "boosted_value(x, features, thresholds, values, offset, scale, base, clip, action)\n"
             "--\n\n"
             "The predicted reward of one action for context x (d,): one walk per tree\n"
             "and the linear base.  See banditree.kernel.boosted_value.");

static PyObject *boosted_value(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[8];
    double clip_bound;
    Py_ssize_t action;
    if (!PyArg_ParseTuple(args, "OOOOOOOdn:boosted_value", &o[0], &o[1], &o[2], &o[3], &o[5],
                          &o[6], &o[7], &clip_bound, &action)) {
        return NULL;
    }
    o[4] = NULL; /* no uncertainty */
    if (!(clip_bound > 0.0)) {
        return PyErr_Format(PyExc_ValueError, "clip must be > 0, got %R",
                            PyTuple_GET_ITEM(args, 7));
    }
    Arr a[8];
    memset(a, 0, sizeof a);
    Py_ssize_t shape[4];
    int depth;
    if (take_boosted(o, a, shape, &depth) < 0) {
        release(a, 8);
        return NULL;
    }
    Py_ssize_t d = shape[0], k = shape[1], n_trees = shape[2], n_int = shape[3];
    if (action < 0 || action >= k) {
        release(a, 8);
        return PyErr_Format(PyExc_ValueError, "action must be in [0, %zd], got %zd", k - 1,
                            action);
    }
    double value = boosted_action_value(f64(&a[0]), action, i64(&a[1]), f64(&a[2]), f64(&a[3]),
                                        f64(&a[5]), f64(&a[6]), f64(&a[7]), clip_bound, d,
                                        n_trees, n_int, depth);
    release(a, 8);
    if (!isfinite(value)) {
        return PyErr_Format(PyExc_ValueError, "the predicted reward must be finite");
    }
    return PyFloat_FromDouble(value);
}

PyDoc_STRVAR(boosted_values_doc,
             "boosted_values(x, actions, features, thresholds, values, offset, scale, base,\n"
             "               clip, out)\n--\n\n"
             "boosted_value of every row of x (B, d) and its action (B,), written into\n"
             "out (B,).  See banditree.kernel.boosted_values.");

static PyObject *boosted_values(PyObject *self, PyObject *args) {
    (void)self;
    /* o[0] (x) and o[4] (uncertainty) are not the ensemble's: taken as x_, out_ */
    PyObject *o[8] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}, *x_, *actions_, *out_;
    double clip_bound;
    if (!PyArg_ParseTuple(args, "OOOOOOOOdO:boosted_values", &x_, &actions_, &o[1], &o[2], &o[3],
                          &o[5], &o[6], &o[7], &clip_bound, &out_)) {
        return NULL;
    }
    if (!(clip_bound > 0.0)) {
        return PyErr_Format(PyExc_ValueError, "clip must be > 0, got %R",
                            PyTuple_GET_ITEM(args, 8));
    }
    Arr a[11];
    memset(a, 0, sizeof a);
    Py_ssize_t xs[2] = {-1, -1};
    if (take(x_, "x", 'd', 2, xs, 0, &a[8]) < 0) {
        goto fail;
    }
    Py_ssize_t b_rows = xs[0], bs[1] = {b_rows}, bs2[1] = {b_rows};
    if (take(actions_, "actions", 'q', 1, bs, 0, &a[9]) < 0 ||
        take(out_, "out", 'd', 1, bs2, 1, &a[10]) < 0) {
        goto fail;
    }
    Py_ssize_t shape[4];
    int depth;
    if (take_ensemble(o, a, xs[1], shape, &depth) < 0) {
        goto fail;
    }
    Py_ssize_t d = shape[0], k = shape[1], n_trees = shape[2], n_int = shape[3];
    const double *x = f64(&a[8]);
    const int64_t *actions = i64(&a[9]);
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        if (actions[b] < 0 || actions[b] >= (int64_t)k) {
            PyErr_Format(PyExc_ValueError, "actions[%zd] must be in [0, %zd], got %lld", b, k - 1,
                         (long long)actions[b]);
            goto fail;
        }
        for (Py_ssize_t j = 0; j < d; j++) {
            if (!isfinite(x[b * d + j])) {
                PyErr_Format(PyExc_ValueError, "x[%zd][%zd] must be finite", b, j);
                goto fail;
            }
        }
    }
    const int64_t *features = i64(&a[1]);
    const double *thresholds = f64(&a[2]), *values = f64(&a[3]), *offset = f64(&a[5]);
    const double *scale = f64(&a[6]), *base = f64(&a[7]);
    double *out = f64(&a[10]);
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        out[b] = boosted_action_value(x + b * d, (Py_ssize_t)actions[b], features, thresholds,
                                      values, offset, scale, base, clip_bound, d, n_trees, n_int,
                                      depth);
        bad |= !isfinite(out[b]);
    }
    Py_END_ALLOW_THREADS;
    release(a, 11);
    if (bad) {
        return PyErr_Format(PyExc_ValueError, "the predicted rewards must be finite");
    }
    Py_RETURN_NONE;
fail:
    release(a, 11);
    return NULL;
}

PyDoc_STRVAR(boosted_leaf_sums_doc,
             "boosted_leaf_sums(leaves, targets, count, squares)\n--\n\n"
             "Per flat leaf (S of them) of leaves (B, T): the rows reaching it into count\n"
             "(S,) and their squared deviations from its mean target into squares (S,).\n"
             "See banditree.kernel.boosted_leaf_sums.");

static PyObject *boosted_leaf_sums(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4];
    if (!PyArg_ParseTuple(args, "OOOO:boosted_leaf_sums", &o[0], &o[1], &o[2], &o[3])) {
        return NULL;
    }
    Arr a[4];
    memset(a, 0, sizeof a);
    Py_ssize_t ls[2] = {-1, -1}, cs[1] = {-1};
    if (take(o[0], "leaves", 'q', 2, ls, 0, &a[0]) < 0 ||
        take(o[2], "count", 'd', 1, cs, 1, &a[2]) < 0) {
        goto fail;
    }
    Py_ssize_t b_rows = ls[0], n_trees = ls[1], size = cs[0], bs[1] = {b_rows}, ss[1] = {size};
    if (take(o[1], "targets", 'd', 1, bs, 0, &a[1]) < 0 ||
        take(o[3], "squares", 'd', 1, ss, 1, &a[3]) < 0) {
        goto fail;
    }
    const int64_t *leaves = i64(&a[0]);
    for (Py_ssize_t i = 0; i < b_rows * n_trees; i++) {
        if (leaves[i] < 0 || leaves[i] >= (int64_t)size) {
            PyErr_Format(PyExc_ValueError, "leaves[%zd][%zd] must be in [0, %zd], got %lld",
                         i / n_trees, i % n_trees, size - 1, (long long)leaves[i]);
            goto fail;
        }
    }
    double *total = PyMem_Malloc((size_t)(size > 0 ? size : 1) * sizeof(double));
    if (total == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    const double *y = f64(&a[1]);
    double *count = f64(&a[2]), *squares = f64(&a[3]);
    Py_BEGIN_ALLOW_THREADS;
    /* leaf_uncertainty's bincounts: each leaf's rows added in the flat order (row, then
     * tree), the mean as numpy divides it, then the squared deviations in that order */
    for (Py_ssize_t f = 0; f < size; f++) {
        count[f] = 0.0;
        total[f] = 0.0;
        squares[f] = 0.0;
    }
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        const int64_t *row = leaves + b * n_trees;
        for (Py_ssize_t t = 0; t < n_trees; t++) {
            count[row[t]] += 1.0;
            total[row[t]] += y[b];
        }
    }
    for (Py_ssize_t f = 0; f < size; f++) {
        total[f] /= count[f] > 1.0 ? count[f] : 1.0; /* now the mean */
    }
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        const int64_t *row = leaves + b * n_trees;
        for (Py_ssize_t t = 0; t < n_trees; t++) {
            double centred = y[b] - total[row[t]];
            squares[row[t]] += centred * centred;
        }
    }
    Py_END_ALLOW_THREADS;
    PyMem_Free(total);
    release(a, 4);
    Py_RETURN_NONE;
fail:
    release(a, 4);
    return NULL;
}

PyDoc_STRVAR(boosted_route_doc,
             "boosted_route(inputs, features, thresholds, leaves)\n--\n\n"
             "The flat leaf (t * 2^D + j) of every row of inputs (B, W) in every tree,\n"
             "written into leaves (B, T).  See banditree.kernel.boosted_route.");

static PyObject *boosted_route(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4];
    if (!PyArg_ParseTuple(args, "OOOO:boosted_route", &o[0], &o[1], &o[2], &o[3])) {
        return NULL;
    }
    Arr a[4];
    memset(a, 0, sizeof a);
    Py_ssize_t is[2] = {-1, -1};
    Py_ssize_t fs[2] = {-1, -1};
    if (take(o[0], "inputs", 'd', 2, is, 0, &a[0]) < 0 ||
        take(o[1], "features", 'q', 2, fs, 0, &a[1]) < 0) {
        goto fail;
    }
    Py_ssize_t b_rows = is[0], width = is[1], n_trees = fs[0], n_int = fs[1];
    int depth = 0;
    while (depth <= MAX_HEIGHT && ((Py_ssize_t)1 << depth) - 1 < n_int) {
        depth++;
    }
    if (depth > MAX_HEIGHT || ((Py_ssize_t)1 << depth) - 1 != n_int) {
        PyErr_Format(PyExc_ValueError, "features must be (T, 2^D - 1 nodes, D in [0, %d]), got "
                     "(%zd, %zd)", MAX_HEIGHT, n_trees, n_int);
        goto fail;
    }
    Py_ssize_t ts[2] = {n_trees, n_int};
    Py_ssize_t ls[2] = {b_rows, n_trees};
    if (take(o[2], "thresholds", 'd', 2, ts, 0, &a[2]) < 0 ||
        take(o[3], "leaves", 'q', 2, ls, 1, &a[3]) < 0) {
        goto fail;
    }
    const int64_t *features = i64(&a[1]);
    for (Py_ssize_t i = 0; i < n_trees * n_int; i++) {
        if (features[i] < 0 || features[i] >= (int64_t)width) {
            PyErr_Format(PyExc_ValueError, "features[%zd][%zd] must be in [0, %zd], got %lld",
                         i / n_int, i % n_int, width - 1, (long long)features[i]);
            goto fail;
        }
    }
    const double *inputs = f64(&a[0]), *thresholds = f64(&a[2]);
    int64_t *leaves = i64(&a[3]);
    Py_BEGIN_ALLOW_THREADS;
    /* FrozenBoostedEnsemble.route: RIGHT when input[feature] > threshold */
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        const double *row = inputs + b * width;
        for (Py_ssize_t t = 0; t < n_trees; t++) {
            const int64_t *ft = features + t * n_int;
            const double *tt = thresholds + t * n_int;
            Py_ssize_t node = 0;
            for (int level = 0; level < depth; level++) {
                node = 2 * node + 1 + (row[ft[node]] > tt[node]);
            }
            leaves[b * n_trees + t] = (int64_t)(t * (n_int + 1) + node - n_int);
        }
    }
    Py_END_ALLOW_THREADS;
    release(a, 4);
    Py_RETURN_NONE;
fail:
    release(a, 4);
    return NULL;
}
