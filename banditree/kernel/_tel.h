/*
 * The Tree Ensemble Layer's forward pass (seed 003, sections 2 and 3.1), the numbers of
 * banditree.models.tel.frozen.FrozenTEL: m perfect soft trees of depth d whose outputs
 * add up (eq. 1).  A tree's output is sum_l P(x -> l) o_l over its leaves (eq. 3),
 * P(x -> l) the product of the routing probabilities on the path (eq. 2): node i sends
 * x LEFT with probability S(<w_i, x>) and RIGHT with 1 - S, S the smooth step (eq. 4),
 *
 *     S(t) = -2 t^3 / gamma^3 + 3 t / (2 gamma) + 1/2 on [-gamma/2, gamma/2],
 *            0 below, 1 above;  with u = t / gamma clipped to [-1/2, 1/2]:
 *     S    = u (3/2 - 2 u^2) + 1/2,  exactly 0 or 1 outside the fractional region.
 *
 * The walk is Algorithm 1, the conditional forward pass: depth first from each root, a
 * child reached with probability 0 (a hard node's other side) is never visited, nor is
 * anything below it.  The weights come as the parameters are stored, tree-major and
 * breadth-first (children of node i: 2i+1 LEFT, 2i+2 RIGHT), divided by gamma; the
 * numpy form's position order of the levels is a layout for whole-array products and
 * plays no part here.
 *
 * The reference has two arithmetics of the same maths (FrozenTEL.dense picks one, as
 * the caller does here):
 *   dense:       v = 2u clipped to [-1, 1], 4 S = 2 + v (3 - v^2), 4 (1 - S) = 2 - v (3 -
 *                v^2), the probabilities carried times 4^level and the leaves divided
 *                by 4^d (FrozenTEL._odd_steps; every scaling a power of two);
 *   conditional: S as above, LEFT = S P and RIGHT = P - LEFT
 *                (FrozenTEL.forward_one_conditional).
 * Each row's operations are the reference's, in its order, but for the dot products
 * (index order here, BLAS's order there) and the sum over the leaves.
 */

/* Deepest TEL tree the kernel walks (the model stops at 12). */
#define TEL_MAX_DEPTH MAX_HEIGHT

/* The dot products of two nodes' weights a and b with z, each added in index order (the
 * numbers of dot), side by side: two independent sums the processor overlaps. */
static inline void dot_pair(const double *a, const double *b, const double *z, Py_ssize_t p,
                            double *out) {
    double sa = 0.0, sb = 0.0;
    for (Py_ssize_t j = 0; j < p; j++) {
        sa += a[j] * z[j];
        sb += b[j] * z[j];
    }
    out[0] = sa;
    out[1] = sb;
}

/* A level's reachable nodes: each one's index within the level (node 2^l - 1 + i of
 * its tree, breadth-first; its children are entries 2i and 2i + 1 of the next level) and
 * P(z -> node), in left-to-right order. */
typedef struct {
    Py_ssize_t *node;
    double *prob;
} TelLevel;

/*
 * One tree's share of eq. 3 at the standardised context z (p,), added to out (K,).
 * `w` (2^d - 1, p) holds the tree's node weights divided by gamma, `o` (2^d, K) its
 * leaves (divided by 4^d for the dense arithmetic); `a` and `b` have room for 2^d
 * entries each, `t` for 2^(d-1).  Returns the leaves reached (P(z -> l) != 0; a NaN
 * probability counts, as numpy's count_nonzero and flatnonzero count it).
 *
 * Algorithm 1 a level at a time, over the reachable nodes only: a child reached with
 * probability 0 (a hard node's other side) never enters the next level, so neither it
 * nor anything under it is visited.
 */
static Py_ssize_t tel_tree(const double *w, const double *o, const double *z, Py_ssize_t p,
                           Py_ssize_t k, int depth, int dense, TelLevel a, TelLevel b,
                           double *t, double *out) {
    Py_ssize_t n = 1; /* reachable nodes of the level */
    a.node[0] = 0;
    a.prob[0] = 1.0;
    for (int level = 0; level < depth; level++) {
        const double *wl = w + (((Py_ssize_t)1 << level) - 1) * p; /* the level's first node */
        Py_ssize_t next = 0, e = 0;
        for (; e + 1 < n; e += 2) { /* <w_i, z> / gamma of the level's reachable nodes */
            dot_pair(wl + a.node[e] * p, wl + a.node[e + 1] * p, z, p, t + e);
        }
        if (e < n) {
            t[e] = dot(wl + a.node[e] * p, z, p);
        }
        for (e = 0; e < n; e++) {
            Py_ssize_t i = a.node[e];
            double at = a.prob[e], left, right;
            if (dense) {
                double v = clip(2.0 * t[e], 1.0);
                double odd = (3.0 - v * v) * v;
                left = (odd + 2.0) * at;  /* 4 S P */
                right = (2.0 - odd) * at; /* 4 (1 - S) P */
            } else {
                double u = clip(t[e], 0.5);
                left = ((u * u * -2.0 + 1.5) * u + 0.5) * at; /* S P */
                right = at - left;                            /* (1 - S) P */
            }
            if (left != 0.0) {
                b.node[next] = 2 * i;
                b.prob[next++] = left;
            }
            if (right != 0.0) {
                b.node[next] = 2 * i + 1;
                b.prob[next++] = right;
            }
        }
        TelLevel swap = a;
        a = b;
        b = swap;
        n = next;
    }
    for (Py_ssize_t e = 0; e < n; e++) { /* the reached leaves' terms of eq. 3 */
        const double *leaf = o + a.node[e] * k;
        double at = a.prob[e];
        for (Py_ssize_t c = 0; c < k; c++) {
            out[c] += leaf[c] * at;
        }
    }
    return n;
}

PyDoc_STRVAR(tel_decide_doc,
             "tel_decide(x, mean, inv_scale, clip, nodes, leaves, dense, sigmoid, explorer,\n"
             "           param, uniforms, action, propensity, greedy, output, reached)\n--\n\n"
             "A tick of B contexts x (B, d) through a Tree Ensemble Layer, written into\n"
             "the given arrays.  See banditree.kernel.tel_decide.");

static PyObject *tel_decide(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[11];
    double clip_bound, param;
    int dense, sigmoid, explorer;
    if (!PyArg_ParseTuple(args, "OOOdOOiiidOOOOOO:tel_decide", &o[0], &o[1], &o[2],
                          &clip_bound, &o[3], &o[4], &dense, &sigmoid, &explorer, &param, &o[5],
                          &o[6], &o[7], &o[8], &o[9], &o[10])) {
        return NULL;
    }
    if (form_scalars(args, 3, 9, clip_bound, explorer, param) < 0) {
        return NULL;
    }
    if ((dense != 0 && dense != 1) || (sigmoid != 0 && sigmoid != 1)) {
        return PyErr_Format(PyExc_ValueError, "dense and sigmoid must be 0 or 1, got %d and %d",
                            dense, sigmoid);
    }
    Arr a[11];
    memset(a, 0, sizeof a);
    Py_ssize_t xs[2] = {-1, -1}, ns[3] = {-1, -1, -1}, ls[3] = {-1, -1, -1};
    if (take(o[0], "x", 'd', 2, xs, 0, &a[0]) < 0) {
        goto fail;
    }
    Py_ssize_t b_rows = xs[0], d = xs[1];
    Py_ssize_t ds[1] = {d};
    if (take(o[1], "mean", 'd', 1, ds, 0, &a[1]) < 0 ||
        take(o[2], "inv_scale", 'd', 1, ds, 0, &a[2]) < 0 ||
        take(o[3], "nodes", 'd', 3, ns, 0, &a[3]) < 0 ||
        take(o[4], "leaves", 'd', 3, ls, 0, &a[4]) < 0) {
        goto fail;
    }
    Py_ssize_t m = ns[0], n_int = ns[1], k = ls[2];
    int depth = 0;
    while (depth <= TEL_MAX_DEPTH && ((Py_ssize_t)1 << depth) - 1 < n_int) {
        depth++;
    }
    if (m < 1 || depth < 1 || depth > TEL_MAX_DEPTH || ((Py_ssize_t)1 << depth) - 1 != n_int ||
        ns[2] != d) {
        PyErr_Format(PyExc_ValueError,
                     "nodes must be (m >= 1 trees, 2^d - 1 nodes with d in [1, %d], %zd "
                     "features), got (%zd, %zd, %zd)",
                     TEL_MAX_DEPTH, d, m, n_int, ns[2]);
        goto fail;
    }
    if (ls[0] != m || ls[1] != n_int + 1 || k < 1) {
        PyErr_Format(PyExc_ValueError,
                     "leaves must be (%zd trees, %zd leaves, K >= 1), got (%zd, %zd, %zd)", m,
                     n_int + 1, ls[0], ls[1], ls[2]);
        goto fail;
    }
    Py_ssize_t bs[1] = {b_rows}, bk[2] = {b_rows, k};
    if (take(o[5], "uniforms", 'd', 1, bs, 0, &a[5]) < 0 ||
        take(o[6], "action", 'q', 1, bs, 1, &a[6]) < 0 ||
        take(o[7], "propensity", 'd', 1, bs, 1, &a[7]) < 0 ||
        take(o[8], "greedy", 'q', 1, bs, 1, &a[8]) < 0 ||
        take(o[9], "output", 'd', 2, bk, 1, &a[9]) < 0 ||
        take(o[10], "reached", 'q', 1, bs, 1, &a[10]) < 0) {
        goto fail;
    }
    const double *x = f64(&a[0]), *u = f64(&a[5]);
    if (form_rows(x, b_rows, d, u) < 0) {
        goto fail;
    }
    /* scratch: the standardised context (d), the choice's 3 K, two levels' reachable
     * nodes (2 x 2^h probabilities, 2 x 2^h indices) and a level's dot products */
    double *z = form_scratch(d + 3 * k + 3 * (n_int + 1));
    Py_ssize_t *index = PyMem_Malloc(2 * (size_t)(n_int + 1) * sizeof(Py_ssize_t));
    if (z == NULL || index == NULL) {
        PyMem_Free(z);
        PyMem_Free(index);
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        goto fail;
    }
    TelLevel first = {index, z + d + 3 * k};
    TelLevel second = {index + (n_int + 1), first.prob + (n_int + 1)};
    const double *mean = f64(&a[1]), *inv_scale = f64(&a[2]);
    const double *nodes = f64(&a[3]), *leaves = f64(&a[4]);
    int64_t *action = i64(&a[6]), *greedy = i64(&a[8]), *reached = i64(&a[10]);
    double *propensity = f64(&a[7]), *output = f64(&a[9]);

    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        form_standardise(x + b * d, mean, inv_scale, clip_bound, d, z);
        double *ob = output + b * k;
        for (Py_ssize_t c = 0; c < k; c++) {
            ob[c] = 0.0;
        }
        Py_ssize_t total = 0;
        for (Py_ssize_t t = 0; t < m; t++) { /* eq. 1: the trees' outputs added */
            total += tel_tree(nodes + t * n_int * d, leaves + t * (n_int + 1) * k, z, d, k,
                              depth, dense, first, second, second.prob + (n_int + 1), ob);
        }
        reached[b] = (int64_t)total;
        form_choose(explorer, param, sigmoid, ob, k, u[b], z + d, &action[b], &propensity[b],
                    &greedy[b]);
    }
    Py_END_ALLOW_THREADS;
    PyMem_Free(z);
    PyMem_Free(index);
    release(a, 11);
    Py_RETURN_NONE;
fail:
    release(a, 11);
    return NULL;
}
