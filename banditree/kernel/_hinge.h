/*
 * A random hinge forest's or fern ensemble's forward pass (seed 001, section 3 and its
 * Algorithm 3, HingeTreeTraversal), the numbers of
 * banditree.models.hinge.frozen.FrozenHingeForest.forward_batch_leaves.
 *
 * Decision v of a tree reads input f_v against threshold t_v: the signed margin is
 * r = z[f_v] - t_v and the context goes RIGHT when r > 0 (ties LEFT).  A tree's output
 * is eq. 10 reduced by the traversal, w_l |r*|: the reached leaf's K-vector times the
 * smallest |r| on the path (the shallowest of equals, the strict < of Algorithm 3).  A
 * tree holds 2^D - 1 decisions breadth-first (children of v: 2v+1 LEFT, 2v+2 RIGHT); a
 * fern D, one a level, its leaf the bits of the D decisions, the first the highest.
 * The forest's output is bias + the trees' outputs added in tree order (the leaf rows
 * come divided by T for the mean).  z is the standardised context, or its pooled
 * features P z (one dot product a feature, in index order).
 *
 * A NaN margin (pooled features past the float range) is what the batch reference
 * makes of it: never a tree's smallest (its best starts at +inf), always LEFT; a fern
 * takes numpy's argmin, where the first NaN is the minimum.
 */

/* Deepest hinge tree or fern the kernel walks (the models stop at 12). */
#define HINGE_MAX_DEPTH MAX_HEIGHT

/* A tree's traversal: the leaf reached and |r*| (Algorithm 3). */
static Py_ssize_t hinge_tree(const int64_t *f, const double *thr, const double *z, int depth,
                             double *smallest) {
    Py_ssize_t node = 0;
    double best = INFINITY;
    for (int level = 0; level < depth; level++) {
        double r = z[f[node]] - thr[node];
        if (fabs(r) < best) {
            best = fabs(r);
        }
        node = 2 * node + 1 + (r > 0.0);
    }
    *smallest = best;
    return node - (((Py_ssize_t)1 << depth) - 1);
}

/* A fern's: one decision a level, the leaf their bits (RIGHT = 1), the first highest. */
static Py_ssize_t hinge_fern(const int64_t *f, const double *thr, const double *z, int depth,
                             double *smallest) {
    Py_ssize_t leaf = 0;
    double best = 0.0;
    for (int level = 0; level < depth; level++) {
        double r = z[f[level]] - thr[level];
        double a = fabs(r);
        if (level == 0 || (!isnan(best) && (a < best || isnan(a)))) {
            best = a;
        }
        leaf = 2 * leaf + (r > 0.0);
    }
    *smallest = best;
    return leaf;
}

PyDoc_STRVAR(hinge_decide_doc,
             "hinge_decide(x, mean, inv_scale, clip, pool, features, thresholds, leaf_rows,\n"
             "             bias, ferns, sigmoid, explorer, param, uniforms, action,\n"
             "             propensity, greedy, leaf, output)\n--\n\n"
             "A tick of B contexts x (B, d) through a random hinge forest or fern\n"
             "ensemble, written into the given arrays.  See banditree.kernel.hinge_decide.");

static PyObject *hinge_decide(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[15];
    double clip_bound, param;
    int ferns, sigmoid, explorer;
    if (!PyArg_ParseTuple(args, "OOOdOOOOOiiidOOOOOO:hinge_decide", &o[0], &o[1], &o[2],
                          &clip_bound, &o[3], &o[4], &o[5], &o[6], &o[7], &ferns, &sigmoid,
                          &explorer, &param, &o[8], &o[9], &o[10], &o[11], &o[12], &o[13])) {
        return NULL;
    }
    if (form_scalars(args, 3, 12, clip_bound, explorer, param) < 0) {
        return NULL;
    }
    if ((ferns != 0 && ferns != 1) || (sigmoid != 0 && sigmoid != 1)) {
        return PyErr_Format(PyExc_ValueError, "ferns and sigmoid must be 0 or 1, got %d and %d",
                            ferns, sigmoid);
    }
    Arr a[14];
    memset(a, 0, sizeof a);
    Py_ssize_t xs[2] = {-1, -1}, fs[2] = {-1, -1}, ws[2] = {-1, -1};
    if (take(o[0], "x", 'd', 2, xs, 0, &a[0]) < 0) {
        goto fail;
    }
    Py_ssize_t b_rows = xs[0], d = xs[1], n_inputs = d;
    Py_ssize_t ds[1] = {d};
    if (take(o[1], "mean", 'd', 1, ds, 0, &a[1]) < 0 ||
        take(o[2], "inv_scale", 'd', 1, ds, 0, &a[2]) < 0) {
        goto fail;
    }
    int pooled = o[3] != Py_None;
    if (pooled) {
        Py_ssize_t ps[2] = {-1, d};
        if (take(o[3], "pool", 'd', 2, ps, 0, &a[3]) < 0) {
            goto fail;
        }
        n_inputs = ps[0];
    }
    if (take(o[4], "features", 'q', 2, fs, 0, &a[4]) < 0) {
        goto fail;
    }
    Py_ssize_t n_trees = fs[0], n_dec = fs[1];
    int depth = 0;
    if (ferns) {
        depth = n_dec >= 1 && n_dec <= HINGE_MAX_DEPTH ? (int)n_dec : 0;
    } else {
        while (depth <= HINGE_MAX_DEPTH && ((Py_ssize_t)1 << depth) - 1 < n_dec) {
            depth++;
        }
        if (((Py_ssize_t)1 << depth) - 1 != n_dec) {
            depth = 0;
        }
    }
    if (n_trees < 1 || depth < 1 || depth > HINGE_MAX_DEPTH) {
        PyErr_Format(PyExc_ValueError,
                     "features must be (T >= 1, %s with D in [1, %d]), got (%zd, %zd)",
                     ferns ? "D decisions" : "2^D - 1 decisions", HINGE_MAX_DEPTH, n_trees,
                     n_dec);
        goto fail;
    }
    if (take(o[5], "thresholds", 'd', 2, fs, 0, &a[5]) < 0 ||
        take(o[6], "leaf_rows", 'd', 2, ws, 0, &a[6]) < 0) {
        goto fail;
    }
    Py_ssize_t n_leaves = (Py_ssize_t)1 << depth, k = ws[1];
    if (ws[0] != n_trees * n_leaves || k < 1) {
        PyErr_Format(PyExc_ValueError,
                     "leaf_rows must be (T 2^D = %zd, K >= 1), got (%zd, %zd)",
                     n_trees * n_leaves, ws[0], ws[1]);
        goto fail;
    }
    Py_ssize_t ks[1] = {k}, bs[1] = {b_rows}, bk[2] = {b_rows, k};
    if (take(o[7], "bias", 'd', 1, ks, 0, &a[7]) < 0 ||
        take(o[8], "uniforms", 'd', 1, bs, 0, &a[8]) < 0 ||
        take(o[9], "action", 'q', 1, bs, 1, &a[9]) < 0 ||
        take(o[10], "propensity", 'd', 1, bs, 1, &a[10]) < 0 ||
        take(o[11], "greedy", 'q', 1, bs, 1, &a[11]) < 0 ||
        take(o[12], "leaf", 'q', 1, bs, 1, &a[12]) < 0 ||
        take(o[13], "output", 'd', 2, bk, 1, &a[13]) < 0) {
        goto fail;
    }
    const int64_t *features = i64(&a[4]);
    for (Py_ssize_t i = 0; i < n_trees * n_dec; i++) { /* every index read below, checked */
        if (features[i] < 0 || features[i] >= n_inputs) {
            PyErr_Format(PyExc_ValueError, "features[%zd][%zd] must be in [0, %zd), got %lld",
                         i / n_dec, i % n_dec, n_inputs, (long long)features[i]);
            goto fail;
        }
    }
    const double *x = f64(&a[0]), *u = f64(&a[8]);
    if (form_rows(x, b_rows, d, u) < 0) {
        goto fail;
    }
    /* scratch: the standardised context (d), its pooled features (P), the choice's 3 K */
    double *z = form_scratch(d + (pooled ? n_inputs : 0) + 3 * k);
    if (z == NULL) {
        goto fail;
    }
    double *pz = pooled ? z + d : z, *work = z + d + (pooled ? n_inputs : 0);
    const double *mean = f64(&a[1]), *inv_scale = f64(&a[2]);
    const double *pool = pooled ? f64(&a[3]) : NULL, *thresholds = f64(&a[5]);
    const double *rows = f64(&a[6]), *bias = f64(&a[7]);
    int64_t *action = i64(&a[9]), *greedy = i64(&a[11]), *leaf = i64(&a[12]);
    double *propensity = f64(&a[10]), *output = f64(&a[13]);

    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        form_standardise(x + b * d, mean, inv_scale, clip_bound, d, z);
        for (Py_ssize_t f = 0; pooled && f < n_inputs; f++) {
            pz[f] = dot(pool + f * d, z, d);
        }
        double *ob = output + b * k;
        for (Py_ssize_t t = 0; t < n_trees; t++) {
            const int64_t *ft = features + t * n_dec;
            const double *tt = thresholds + t * n_dec;
            double smallest;
            Py_ssize_t l = ferns ? hinge_fern(ft, tt, pz, depth, &smallest)
                                 : hinge_tree(ft, tt, pz, depth, &smallest);
            if (t == 0) {
                leaf[b] = n_trees == 1 ? (int64_t)l : -1;
            }
            /* the tree's w_l |r*|, added to the trees before it */
            const double *w = rows + (t * n_leaves + l) * k;
            for (Py_ssize_t c = 0; c < k; c++) {
                ob[c] = t == 0 ? w[c] * smallest : ob[c] + w[c] * smallest;
            }
        }
        for (Py_ssize_t c = 0; c < k; c++) {
            ob[c] = bias[c] + ob[c];
        }
        form_choose(explorer, param, sigmoid, ob, k, u[b], work, &action[b], &propensity[b],
                    &greedy[b]);
    }
    Py_END_ALLOW_THREADS;
    PyMem_Free(z);
    release(a, 14);
    Py_RETURN_NONE;
fail:
    release(a, 14);
    return NULL;
}
