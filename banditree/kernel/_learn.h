/*
 * The learning half of banditree.kernel._native (included by _native.c once): one
 * accumulation window's gradients of a single-layer DGT tree under classification
 * feedback, banditree.models.dgt.spec.dgt_gradients_batch with the estimator's
 * upstream (banditree.estimators.classification.gradient_value) in one pass.
 */

/* eq. 8 with reward = 1 - loss: g = 2 w (s - reward) s', w = 1/p truncated at `cap`
 * (cap <= 0: none) or saturating (importance-aware), s = sigmoid(o) or o itself. */
static double eq8(double o, double propensity, double loss, double cap, int aware,
                  int sigmoid) {
    double weight = 1.0 / propensity;
    if (cap > 0.0) {
        weight = aware ? cap * -expm1(-weight / cap) : fmin(weight, cap);
    }
    if (!sigmoid) {
        return 2.0 * weight * (o - (1.0 - loss));
    }
    double s = 1.0 / (1.0 + exp(-o));
    return 2.0 * weight * (loss - (1.0 - s)) * s * (1.0 - s);
}

/* numpy's pairwise sum of a contiguous run (np.add.reduce along its last axis): below
 * 8 terms in order; up to 128, eight running sums combined as a tree, then the tail;
 * above, the two halves (cut at a multiple of 8) summed apart.  The same order gives
 * the same bits (tests/kernel/test_learn.py). */
static double pairwise(const double *a, Py_ssize_t n) {
    if (n < 8) {
        double res = 0.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            res += a[i];
        }
        return res;
    }
    if (n <= 128) {
        double r[8];
        memcpy(r, a, sizeof r);
        Py_ssize_t i = 8;
        for (; i < n - (n % 8); i += 8) {
            for (int j = 0; j < 8; j++) {
                r[j] += a[i + j];
            }
        }
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) {
            res += a[i];
        }
        return res;
    }
    Py_ssize_t half = n / 2;
    half -= half % 8;
    return pairwise(a, half) + pairwise(a + half, n - half);
}

/* A dot product as a BLAS kernel accumulates it: one fused multiply-add per term, in
 * order (the products of the reference's matrix products, the linear term's here). */
static inline double fused_dot(const double *a, const double *b, Py_ssize_t n) {
    double s = 0.0;
    for (Py_ssize_t j = 0; j < n; j++) {
        s = fma(a[j], b[j], s);
    }
    return s;
}

/* `x` where `keep`, else +0.0: a select of bits, no branch (the choice is the data's,
 * so a branch on it is mispredicted often) and no arithmetic (x * 0.0 is -0.0 or NaN
 * for some x) */
static inline double kept(int keep, double x) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits &= (uint64_t)0 - (uint64_t)(keep != 0);
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* scratch doubles window_rows needs: activations and node deltas (2 n_int), the
 * leaves' softmax, adjoint and products (3 L), the leaves' outputs theta + bias (L K),
 * then the nodes a row's gradient reaches (n_int indices, 8 bytes each) */
static Py_ssize_t window_scratch(Py_ssize_t n_int, Py_ssize_t n_leaves, Py_ssize_t k) {
    return 3 * n_int + 3 * n_leaves + n_leaves * k;
}

/* Where the compiler can build a copy for processors with a fused multiply-add
 * instruction, chosen at load time (GCC's function multiversioning): the explicit fma()
 * calls become that instruction instead of a call into libm; the same exactly rounded
 * results (ISO C mode: no other expression is contracted).  The choice is a glibc
 * ifunc: elsewhere (clang, musl, other processors) one portable copy is built. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define FMA_CLONES \
    __attribute__((target_clones("fma", "default"), optimize("-fvect-cost-model=cheap")))
#else
#define FMA_CLONES
#endif

/* Where GCC builds the copies of FMA_CLONES: a copy for processors with AVX besides the
 * portable one, its loops vectorised (the cheap cost model: loops of any length; the
 * build's -fno-math-errno lets sqrt be one instruction).  Only loops whose values are
 * independent are vectorised (never a sum: ISO C mode reassociates nothing), so both
 * copies give the same bits. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define VECTOR_CLONES                                                                          \
    __attribute__((target_clones("avx", "default"), optimize("-fvect-cost-model=cheap")))
#else
#define VECTOR_CLONES
#endif

/* Algorithm 2 with eq. 8 over B standardised rows (the arguments checked by the caller),
 * added into the gradient arrays (g_bias, g_linear NULL: not graded). */
FMA_CLONES static void window_rows(const double *x, const int64_t *actions, const double *prop,
                        const double *loss, Py_ssize_t b_rows, Py_ssize_t d, int height,
                        Py_ssize_t k, const double *w, const double *theta, const double *bias,
                        const double *linear, int sigmoid, double cap, int aware, double *g_w,
                        double *g_theta, double *g_bias, double *g_linear, double *act) {
    Py_ssize_t n_leaves = (Py_ssize_t)1 << height, n_int = n_leaves - 1;
    int has_bias = bias != NULL, has_linear = linear != NULL;
    double *delta = act + n_int, *p = delta + n_int, *dq = p + n_leaves;
    double *pu_terms = dq + n_leaves, *outputs = pu_terms + n_leaves;
    int64_t *reached = (int64_t *)(void *)(outputs + n_leaves * k);
    for (Py_ssize_t l = 0; l < n_leaves; l++) { /* by leaf and action: no division */
        for (Py_ssize_t c = 0; c < k; c++) {
            outputs[l * k + c] = has_bias ? theta[l * k + c] + bias[c] : theta[l * k + c];
        }
    }
    double leaf_exp[MAX_HEIGHT + 1];
    for (int m = 0; m <= height; m++) {
        leaf_exp[m] = exp((double)(-2 * m));
    }
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        const double *xb = x + b * d;
        /* node activations a = W [x; 1] and the reached leaf (q = h); four nodes' sums
         * run side by side (each still added in index order: the same bits as dot())
         * so that one's additions wait for another's less */
        Py_ssize_t i = 0;
        for (; i + 4 <= n_int; i += 4) {
            const double *r0 = w + i * (d + 1), *r1 = r0 + (d + 1), *r2 = r1 + (d + 1);
            const double *r3 = r2 + (d + 1);
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
            for (Py_ssize_t j = 0; j < d; j++) {
                s0 += r0[j] * xb[j];
                s1 += r1[j] * xb[j];
                s2 += r2[j] * xb[j];
                s3 += r3[j] * xb[j];
            }
            act[i] = s0 + r0[d];
            act[i + 1] = s1 + r1[d];
            act[i + 2] = s2 + r2[d];
            act[i + 3] = s3 + r3[d];
        }
        for (; i < n_int; i++) {
            const double *row = w + i * (d + 1);
            act[i] = dot(row, xb, d) + row[d];
        }
        Py_ssize_t node = 0;
        for (int level = 0; level < height; level++) {
            node = 2 * node + (act[node] > 0.0 ? 2 : 1);
        }
        Py_ssize_t leaf = node - n_int, y = (Py_ssize_t)actions[b];
        /* the played action's output: the leaf's row plus the linear term */
        double o = outputs[leaf * k + y];
        if (has_linear) {
            o += fused_dot(linear + y * d, xb, d);
        }
        double g = eq8(o, prop[b], loss[b], cap, aware, sigmoid);
        /* Theta gets the hard choice's gradient e_{l*} g; bias and linear g and g x */
        g_theta[leaf * k + y] += g;
        if (g_bias != NULL) {
            g_bias[y] += g;
        }
        if (g_linear != NULL) {
            for (Py_ssize_t j = 0; j < d; j++) {
                g_linear[y * d + j] = fma(g, xb[j], g_linear[y * d + j]);
            }
        }
        /* W: the soft surrogate sum_l softmax(q)_l theta_l (Algorithm 2, Remark 2):
         * q_l the sum-form path score (eq. 4), dq = p (u - p.u) with u_l = theta_l . g */
        /* q_l = sum over leaf l's ancestors i of S(i, l) sign(a_i), top down: a node's
         * sum is its parent's plus its own step (+sign on the right, -sign on the
         * left), whole numbers held in `delta` until the deltas below replace them */
        double *path = delta;
        path[0] = 0.0;
        for (Py_ssize_t i = 1; i < n_int; i++) { /* i odd: its parent's left child */
            Py_ssize_t parent = (i - 1) / 2;
            double step = act[parent] > 0.0 ? 1.0 : -1.0;
            path[i] = (i & 1) ? path[parent] - step : path[parent] + step;
        }
        for (Py_ssize_t l = 0; l < n_leaves; l++) { /* leaf l: node n_int + l */
            Py_ssize_t parent = n_int / 2 + l / 2;
            double step = act[parent] > 0.0 ? 1.0 : -1.0;
            int score = (int)((l & 1) ? path[parent] + step : path[parent] - step);
            p[l] = leaf_exp[(height - score) / 2]; /* exp(q - h), q - h in {0, -2, ..} */
        }
        /* softmax over the leaves, then p . u (each a pairwise sum, as numpy adds) */
        double total = pairwise(p, n_leaves);
        for (Py_ssize_t l = 0; l < n_leaves; l++) {
            p[l] /= total;
            dq[l] = g * outputs[l * k + y];
        }
        for (Py_ssize_t l = 0; l < n_leaves; l++) {
            pu_terms[l] = p[l] * dq[l];
        }
        double pu = pairwise(pu_terms, n_leaves);
        double *v = pu_terms; /* summed: now each leaf's p_l (dq_l - p.u) */
        for (Py_ssize_t l = 0; l < n_leaves; l++) {
            v[l] = p[l] * (dq[l] - pu);
        }
        /* dq S: node i gets S(i, l) v_l of each leaf l below it, added in the leaves'
         * order from 0.0 (-v_l from its left subtree's leaves, then +v_l from its
         * right's): the sums a walk from each leaf up to the root adds, in its order */
        for (int level = 0; level < height; level++) {
            Py_ssize_t first = ((Py_ssize_t)1 << level) - 1;
            Py_ssize_t span = n_leaves >> level, half = span / 2;
            for (Py_ssize_t i = first; i <= 2 * first; i++) {
                const double *under = v + (i - first) * span;
                double sum = 0.0;
                for (Py_ssize_t l = 0; l < half; l++) {
                    sum += -under[l];
                }
                for (Py_ssize_t l = half; l < span; l++) {
                    sum += under[l];
                }
                delta[i] = sum;
            }
        }
        /* the straight-through sign: d sign(a) / da = 1{|a| <= 1}; a node that gets
         * nothing adds nothing (fma(0, x, s) = s for a finite x) */
        int finite_row = 1;
        for (Py_ssize_t j = 0; j < d; j++) {
            finite_row &= isfinite(xb[j]) != 0;
        }
        /* the nodes the row's gradient reaches, listed without a branch */
        Py_ssize_t n_reached = 0;
        for (Py_ssize_t i = 0; i < n_int; i++) {
            double di = kept(fabs(act[i]) <= 1.0, delta[i]);
            delta[i] = di;
            reached[n_reached] = (int64_t)i;
            n_reached += (di != 0.0) | (finite_row == 0);
        }
        for (Py_ssize_t t = 0; t < n_reached; t++) {
            Py_ssize_t i = (Py_ssize_t)reached[t];
            double di = delta[i];
            double *restrict gi = g_w + i * (d + 1); /* not the row's memory */
            const double *restrict xr = xb;
            for (Py_ssize_t j = 0; j < d; j++) {
                gi[j] = fma(di, xr[j], gi[j]);
            }
            gi[d] += di;
        }
    }
}

PyDoc_STRVAR(window_gradients_doc,
             "window_gradients(x, actions, propensity, loss, weights, theta, bias, linear,\n"
             "                 sigmoid, cap, aware, grad_weights, grad_theta, grad_bias, "
             "grad_linear)\n--\n\n"
             "Algorithm 2 summed over a window of B standardised contexts, written into\n"
             "the zeroed gradient arrays.  See banditree.kernel.window_gradients.");

static PyObject *window_gradients(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[12];
    int sigmoid, aware;
    double cap;
    if (!PyArg_ParseTuple(args, "OOOOOOOOidiOOOO:window_gradients", &o[0], &o[1], &o[2], &o[3],
                          &o[4], &o[5], &o[6], &o[7], &sigmoid, &cap, &aware, &o[8], &o[9],
                          &o[10], &o[11])) {
        return NULL;
    }
    if (isnan(cap)) {
        return PyErr_Format(PyExc_ValueError, "cap must be a number (<= 0: none)");
    }
    Arr a[12];
    memset(a, 0, sizeof a);
    Py_ssize_t xs[2] = {-1, -1}, ws[2] = {-1, -1}, ts[2] = {-1, -1};
    if (take(o[0], "x", 'd', 2, xs, 0, &a[0]) < 0) {
        goto fail;
    }
    Py_ssize_t b_rows = xs[0], d = xs[1], bs[1] = {b_rows};
    if (take(o[1], "actions", 'q', 1, bs, 0, &a[1]) < 0 ||
        take(o[2], "propensity", 'd', 1, bs, 0, &a[2]) < 0 ||
        take(o[3], "loss", 'd', 1, bs, 0, &a[3]) < 0 ||
        take(o[4], "weights", 'd', 2, ws, 0, &a[4]) < 0 ||
        take(o[5], "theta", 'd', 2, ts, 0, &a[5]) < 0) {
        goto fail;
    }
    Py_ssize_t n_int = ws[0], k = ts[1];
    int height = 0;
    while (height <= MAX_HEIGHT && ((Py_ssize_t)1 << height) - 1 < n_int) {
        height++;
    }
    if (height < 1 || height > MAX_HEIGHT || ((Py_ssize_t)1 << height) - 1 != n_int ||
        ws[1] != d + 1) {
        PyErr_Format(PyExc_ValueError,
                     "weights must be (2^h - 1 nodes, h in [1, %d], d + 1 = %zd), got (%zd, %zd)",
                     MAX_HEIGHT, d + 1, ws[0], ws[1]);
        goto fail;
    }
    Py_ssize_t n_leaves = (Py_ssize_t)1 << height;
    if (ts[0] != n_leaves || k < 1) {
        PyErr_Format(PyExc_ValueError, "theta must be (%zd leaves, K >= 1), got (%zd, %zd)",
                     n_leaves, ts[0], ts[1]);
        goto fail;
    }
    Py_ssize_t ks[1] = {k}, kd[2] = {k, d};
    Py_ssize_t gw[2] = {n_int, d + 1}, gt[2] = {n_leaves, k};
    int has_bias = o[6] != Py_None, has_linear = o[7] != Py_None;
    int grad_bias = o[10] != Py_None, grad_linear = o[11] != Py_None;
    if ((has_bias && take(o[6], "bias", 'd', 1, ks, 0, &a[6]) < 0) ||
        (has_linear && take(o[7], "linear", 'd', 2, kd, 0, &a[7]) < 0) ||
        take(o[8], "grad_weights", 'd', 2, gw, 1, &a[8]) < 0 ||
        take(o[9], "grad_theta", 'd', 2, gt, 1, &a[9]) < 0 ||
        (grad_bias && take(o[10], "grad_bias", 'd', 1, ks, 1, &a[10]) < 0) ||
        (grad_linear && take(o[11], "grad_linear", 'd', 2, kd, 1, &a[11]) < 0)) {
        goto fail;
    }
    if ((grad_bias && !has_bias) || (grad_linear && !has_linear)) {
        PyErr_SetString(PyExc_ValueError, "grad_bias / grad_linear need bias / linear");
        goto fail;
    }
    const int64_t *actions = i64(&a[1]);
    const double *prop = f64(&a[2]), *loss = f64(&a[3]), *x = f64(&a[0]);
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        if (actions[b] < 0 || actions[b] >= k) {
            PyErr_Format(PyExc_ValueError, "actions[%zd] must be in [0, %zd], got %lld", b, k - 1,
                         (long long)actions[b]);
            goto fail;
        }
        if (!(prop[b] > 0.0 && prop[b] <= 1.0)) {
            PyErr_Format(PyExc_ValueError, "propensity[%zd] must be in (0, 1]", b);
            goto fail;
        }
        if (!isfinite(loss[b])) {
            PyErr_Format(PyExc_ValueError, "loss[%zd] must be finite", b);
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < b_rows * d; i++) {
        if (isnan(x[i])) {
            PyErr_Format(PyExc_ValueError, "x[%zd][%zd] must not be NaN", i / d, i % d);
            goto fail;
        }
    }
    Py_ssize_t scratch = window_scratch(n_int, n_leaves, k);
    double *act = PyMem_Malloc((size_t)scratch * sizeof(double));
    if (act == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    const double *w = f64(&a[4]), *theta = f64(&a[5]);
    const double *bias = has_bias ? f64(&a[6]) : NULL, *linear = has_linear ? f64(&a[7]) : NULL;
    double *g_w = f64(&a[8]), *g_theta = f64(&a[9]);
    double *g_bias = grad_bias ? f64(&a[10]) : NULL, *g_linear = grad_linear ? f64(&a[11]) : NULL;

    Py_BEGIN_ALLOW_THREADS;
    window_rows(x, actions, prop, loss, b_rows, d, height, k, w, theta, bias, linear, sigmoid, cap,
                aware, g_w, g_theta, g_bias, g_linear, act);
    Py_END_ALLOW_THREADS;
    PyMem_Free(act);
    release(a, 12);
    Py_RETURN_NONE;
fail:
    release(a, 12);
    return NULL;
}

/* ---- the per-action ridge: Sherman-Morrison rounds (banditree.learners.ridge) ---- */

/* PerActionRidge.update_rows (defer 0) over B rows (checked by the caller); `u` is
 * scratch of 2 (d + 1) doubles.  Returns the rows applied. */
static Py_ssize_t ridge_core(const double *x, const int64_t *actions, const double *rewards,
                             Py_ssize_t b_rows, Py_ssize_t d, double *inv_gram, double *weights,
                             double *stats, const double *prior, int mixing, double *u) {
    Py_ssize_t dim = d + 1;
    double *iu = u + dim;
    Py_ssize_t applied = 0;
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        Py_ssize_t y = (Py_ssize_t)actions[b];
        double *inv = inv_gram + y * dim * dim, *w = weights + y * dim, *st = stats + y * 3;
        memcpy(u, x + b * d, (size_t)d * sizeof(double)); /* u = (x, 1) */
        u[d] = 1.0;
        for (Py_ssize_t i = 0; i < dim; i++) {
            iu[i] = dot(inv + i * dim, u, dim);
        }
        double denom = 1.0 + dot(u, iu, dim);
        double residual = rewards[b] - dot(w, u, dim);
        if (!(isfinite(denom) && isfinite(residual))) {
            continue; /* an update that would not be finite is skipped whole */
        }
        /* w += A^-1 u r / (1 + u A^-1 u); A^-1 -= (A^-1 u)(A^-1 u)^T / (1 + u A^-1 u) */
        for (Py_ssize_t i = 0; i < dim; i++) {
            double gain = iu[i] / denom;
            w[i] += gain * residual;
            for (Py_ssize_t j = 0; j < dim; j++) {
                inv[i * dim + j] -= gain * iu[j];
            }
        }
        applied++;
        if (mixing && st[0] < (double)d) { /* the mix's evidence (MIX_MEAN_PRIOR = 1) */
            double mean = (1.0 * prior[y] + st[1]) / (1.0 + st[0]);
            double gap = rewards[b] - mean;
            st[0] += 1.0;
            st[1] += rewards[b];
            st[2] += gap * gap - residual * residual;
        }
    }
    return applied;
}

PyDoc_STRVAR(ridge_rows_doc,
             "ridge_rows(x, actions, rewards, inv_gram, weights, mix_stats, prior, mixing)\n"
             "--\n\n"
             "PerActionRidge.update_rows (defer 0) in place; returns the rows applied.");

static PyObject *ridge_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[7];
    int mixing;
    if (!PyArg_ParseTuple(args, "OOOOOOOi:ridge_rows", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &mixing)) {
        return NULL;
    }
    Arr a[7];
    memset(a, 0, sizeof a);
    Py_ssize_t xs[2] = {-1, -1}, gs[3] = {-1, -1, -1};
    if (take(o[0], "x", 'd', 2, xs, 0, &a[0]) < 0 ||
        take(o[3], "inv_gram", 'd', 3, gs, 1, &a[3]) < 0) {
        goto fail;
    }
    Py_ssize_t b_rows = xs[0], d = xs[1], k = gs[0], dim = d + 1;
    Py_ssize_t bs[1] = {b_rows}, ks[1] = {k}, kw[2] = {k, dim}, km[2] = {k, 3};
    if (gs[1] != dim || gs[2] != dim || k < 1) {
        PyErr_Format(PyExc_ValueError, "inv_gram must be (K >= 1, %zd, %zd), got (%zd, %zd, %zd)",
                     dim, dim, gs[0], gs[1], gs[2]);
        goto fail;
    }
    if (take(o[1], "actions", 'q', 1, bs, 0, &a[1]) < 0 ||
        take(o[2], "rewards", 'd', 1, bs, 0, &a[2]) < 0 ||
        take(o[4], "weights", 'd', 2, kw, 1, &a[4]) < 0 ||
        take(o[5], "mix_stats", 'd', 2, km, 1, &a[5]) < 0 ||
        take(o[6], "prior", 'd', 1, ks, 0, &a[6]) < 0) {
        goto fail;
    }
    const int64_t *actions = i64(&a[1]);
    for (Py_ssize_t b = 0; b < b_rows; b++) {
        if (actions[b] < 0 || actions[b] >= k) {
            PyErr_Format(PyExc_ValueError, "actions[%zd] must be in [0, %zd], got %lld", b, k - 1,
                         (long long)actions[b]);
            goto fail;
        }
    }
    double *u = PyMem_Malloc((size_t)(2 * dim) * sizeof(double));
    if (u == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    const double *x = f64(&a[0]), *rewards = f64(&a[2]), *prior = f64(&a[6]);
    double *inv_gram = f64(&a[3]), *weights = f64(&a[4]), *stats = f64(&a[5]);
    Py_ssize_t applied;
    Py_BEGIN_ALLOW_THREADS;
    applied = ridge_core(x, actions, rewards, b_rows, d, inv_gram, weights, stats, prior, mixing, u);
    Py_END_ALLOW_THREADS;
    PyMem_Free(u);
    release(a, 7);
    return PyLong_FromSsize_t(applied);
fail:
    release(a, 7);
    return NULL;
}

/* ---- RMSprop / AdaGrad, one parameter (banditree.learners.optim.RMSprop._step) ---- */

/* Whether each of the n values is finite (one comparison a value, vectorised). */
VECTOR_CLONES static int all_finite(const double *a, Py_ssize_t n) {
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        bad |= !(fabs(a[i]) <= DBL_MAX); /* NaN compares false */
    }
    return !bad;
}

/* a += b, value by value (a and b apart). */
VECTOR_CLONES static void add_into(double *restrict a, const double *restrict b, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        a[i] += b[i];
    }
}

/* RMSprop._step of one parameter of n values into `out`; 0 (nothing written) when a
 * squared gradient is not finite.  Each loop is one operation a value, with no branch
 * (AdaGrad's v + g^2 is v * 1 + g^2 * 1, the same bits): built for processors with
 * AVX too (VECTOR_CLONES), its square roots and divisions four at a time, each as
 * exactly rounded as one at a time (no expression contracted: ISO C mode). */
VECTOR_CLONES static int rmsprop_core(const double *restrict p, const double *restrict g,
                                      double *restrict v, double *restrict out, Py_ssize_t n,
                                      double alpha, double eps, double rate, int adagrad,
                                      int first) {
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        bad |= !(g[i] * g[i] <= DBL_MAX); /* not finite (NaN compares false) */
    }
    if (bad) {
        return 0;
    }
    /* v = alpha v + (1 - alpha) g^2; AdaGrad: v = v + g^2 */
    double keep = adagrad ? 1.0 : alpha, add = adagrad ? 1.0 : 1.0 - alpha;
    if (first) {
        for (Py_ssize_t i = 0; i < n; i++) {
            v[i] = (g[i] * g[i]) * add;
        }
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            v[i] = v[i] * keep + (g[i] * g[i]) * add;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = p[i] - g[i] / (sqrt(v[i]) + eps) * rate; /* p - lr g / (sqrt(v) + eps) */
    }
    return 1;
}

PyDoc_STRVAR(rmsprop_doc,
             "rmsprop(param, grad, square_avg, new, alpha, eps, rate, adagrad, first)\n--\n\n"
             "One step of one parameter into `new`; False (nothing written) when a\n"
             "squared gradient is not finite.");

static PyObject *rmsprop(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4];
    double alpha, eps, rate;
    int adagrad, first;
    if (!PyArg_ParseTuple(args, "OOOOdddii:rmsprop", &o[0], &o[1], &o[2], &o[3], &alpha, &eps,
                          &rate, &adagrad, &first)) {
        return NULL;
    }
    Arr a[4];
    memset(a, 0, sizeof a);
    Py_ssize_t n[1] = {-1};
    /* any shape: the parameter read as its flat C-order buffer, the rest of its size */
    if (take(o[0], "param", 'd', 1, n, 0, &a[0]) < 0) {
        goto fail;
    }
    if (take(o[1], "grad", 'd', 1, n, 0, &a[1]) < 0 ||
        take(o[2], "square_avg", 'd', 1, n, 1, &a[2]) < 0 ||
        take(o[3], "new", 'd', 1, n, 1, &a[3]) < 0) {
        goto fail;
    }
    int stepped = rmsprop_core(f64(&a[0]), f64(&a[1]), f64(&a[2]), f64(&a[3]), n[0], alpha, eps,
                               rate, adagrad, first);
    release(a, 4);
    if (!stepped) {
        Py_RETURN_FALSE; /* refused whole: the running average only sees finite values */
    }
    Py_RETURN_TRUE;
fail:
    release(a, 4);
    return NULL;
}

/* ---- the running input statistics (banditree.learners.standardize) -------------- */

/* Welford with one row, `seen` rows counted with it: mean += (x - mean) / n;
 * m2 += (x - new mean)(x - old mean) (RunningStandardizer.update). */
static inline void welford_row(double *mean, double *m2, const double *x, Py_ssize_t d,
                               double seen) {
    for (Py_ssize_t j = 0; j < d; j++) {
        double delta = x[j] - mean[j];
        double moved = delta / seen + mean[j];
        m2[j] = (x[j] - moved) * delta + m2[j];
        mean[j] = moved;
    }
}

PyDoc_STRVAR(welford_doc,
             "welford(mean, m2, count, rows, mean_out, m2_out)\n--\n\n"
             "RunningStandardizer.update with each row in turn, from `count` rows seen.");

static PyObject *welford(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[5];
    long long count;
    if (!PyArg_ParseTuple(args, "OOLOOO:welford", &o[0], &o[1], &count, &o[2], &o[3], &o[4])) {
        return NULL;
    }
    if (count < 0) {
        return PyErr_Format(PyExc_ValueError, "count must be >= 0, got %lld", count);
    }
    Arr a[5];
    memset(a, 0, sizeof a);
    Py_ssize_t ds[1] = {-1}, rs[2] = {-1, -1};
    if (take(o[0], "mean", 'd', 1, ds, 0, &a[0]) < 0 ||
        take(o[1], "m2", 'd', 1, ds, 0, &a[1]) < 0) {
        goto fail;
    }
    rs[1] = ds[0];
    if (take(o[2], "rows", 'd', 2, rs, 0, &a[2]) < 0 ||
        take(o[3], "mean_out", 'd', 1, ds, 1, &a[3]) < 0 ||
        take(o[4], "m2_out", 'd', 1, ds, 1, &a[4]) < 0) {
        goto fail;
    }
    Py_ssize_t d = ds[0], n = rs[0];
    const double *rows = f64(&a[2]);
    double *mean = f64(&a[3]), *m2 = f64(&a[4]);
    memmove(mean, f64(&a[0]), (size_t)d * sizeof(double));
    memmove(m2, f64(&a[1]), (size_t)d * sizeof(double));
    for (Py_ssize_t r = 0; r < n; r++) {
        welford_row(mean, m2, rows + r * d, d, (double)(count + r + 1));
    }
    release(a, 5);
    Py_RETURN_NONE;
fail:
    release(a, 5);
    return NULL;
}
