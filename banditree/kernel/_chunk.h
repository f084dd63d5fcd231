/*
 * A chunk of feedback learned in one call (included by _native.c once, after _learn.h):
 * GradientBandit.learn_batch's per-entry bookkeeping for a single-layer DGT tree under
 * classification feedback (banditree/learners/gradient_bandit/learn.py).  Each entry
 * is checked, folded into the running input statistics, counted, fed to the drift
 * detector and buffered; a window that closes (accumulate, or the first EAGER rounds)
 * flushes the buffer (leaf counts, ridge rounds, Algorithm 2's gradients) and steps
 * RMSprop, serves the ridge and makes the next snapshot's statistics, in the order of
 * the numpy code.  The call stops before an entry the Python path must learn: one
 * that fails a check (the Python path raises the error naming it) or one the detector
 * signals on (the Python path restarts the ridge and the explorer).
 *
 * Asked for, each entry learned gets the served snapshot's predicted reward of its
 * played action before it is learned (what `decide` scores it, the boosted learner's
 * progressive error of the tree): the snapshot the call starts with, then the
 * parameters of each step taken (GradientBase._make_snapshot freezes them).
 */

enum { P_W, P_THETA, P_BIAS, P_LINEAR, N_PARAMS };

/* the int64 state, read and written back */
enum {
    I_LEARNED,      /* feedbacks learned (Learner._n_learned) */
    I_PENDING,      /* entries of the open window */
    I_ACCUM_EMPTY,  /* 1: no gradient summed yet in the open window */
    I_ACCUM_FINITE, /* 0: a flush of the open window was not finite */
    I_REFUSED,      /* entries whose window was dropped for not being finite */
    I_OPT_REFUSED,  /* parameter steps RMSprop refused */
    I_STEPS,        /* steps taken by this call (written) */
    I_COUNT,        /* rows in the running input statistics */
    I_DET_N,        /* the detector's rounds since its last signal */
    I_SQUARES,      /* bit p: parameter p has a running average */
    I_STOP,         /* written: the first chunk row not learned */
    I_TAIL,         /* written: the first buffered row (rows of `buffered` first) */
    N_ISTATE
};

/* the float64 state, read and written back */
enum { F_LOSS_SUM, F_LR, F_DET_MEAN, F_DET_CUM, F_DET_LOW, F_JUMP_CUM, F_JUMP_LOW, N_FSTATE };

/* the settings (read only) */
enum {
    C_ACCUMULATE,
    C_EAGER,
    C_MAX_BUFFERED,
    C_RATE,
    C_DECAY, /* 0: none */
    C_FLOOR,
    C_ALPHA,
    C_EPS,
    C_SCALE,                     /* 4 values: each parameter's step scale */
    C_ADAGRAD = C_SCALE + 4,     /* 4 values: 1 where the average is a sum */
    C_CLIP = C_ADAGRAD + 4,      /* 0: none */
    C_SIGMOID,
    C_CAP, /* <= 0: none */
    C_AWARE,
    C_MIX_RATE,
    C_LOSS_LOW,
    C_LOSS_HIGH,
    C_DETECTOR, /* 0: none */
    C_THRESHOLD,
    C_DELTA,
    C_MIN_ROUNDS,
    C_JUMP_THRESHOLD, /* 0: none */
    C_JUMP_DELTA,
    C_STANDARDIZE,
    N_CONFIG
};

/* A chunk's rows with the buffered rows before them, by one index. */
typedef struct {
    const double *bx, *x, *bprop, *prop, *bloss, *loss;
    const int64_t *bact, *act;
    Py_ssize_t nb, at, d;
} Rows;

static inline Py_ssize_t row_at(const Rows *r, Py_ssize_t v) { return r->at + v - r->nb; }
static inline const double *row_x(const Rows *r, Py_ssize_t v) {
    return v < r->nb ? r->bx + v * r->d : r->x + row_at(r, v) * r->d;
}
static inline int64_t row_action(const Rows *r, Py_ssize_t v) {
    return v < r->nb ? r->bact[v] : r->act[row_at(r, v)];
}
static inline double row_prop(const Rows *r, Py_ssize_t v) {
    return v < r->nb ? r->bprop[v] : r->prop[row_at(r, v)];
}
static inline double row_loss(const Rows *r, Py_ssize_t v) {
    return v < r->nb ? r->bloss[v] : r->loss[row_at(r, v)];
}

typedef struct {
    /* shapes */
    Py_ssize_t d, k, n_int, n_leaves, size[N_PARAMS];
    int height;
    /* the model: parameters, running averages, the open window's sums, the steps' scratch */
    double *param[N_PARAMS], *square[N_PARAMS], *grad[N_PARAMS], *fresh[N_PARAMS];
    double *scratch_grad[N_PARAMS];
    int graded[N_PARAMS];
    /* the ridge (NULL: none) */
    double *inv_gram, *weights, *mix_stats;
    const double *prior;
    /* input statistics: running, and the served snapshot's */
    double *mean, *m2, *snap_mean, *snap_inv;
    /* leaf counts (NULL: none) */
    double *decisions, *feedbacks, *loss_sum, *action_counts;
    /* scratch: standardised rows, their actions, propensities, losses and rewards */
    double *z, *prop, *loss, *reward, *window, *u;
    int64_t *act;
    const double *config;
    int64_t *istate;
    double *fstate;
    /* the served tree's predicted rewards (NULL: not asked): each learned entry's, from
     * the snapshot's weights, leaf rows (theta + bias) and linear term (NULL: none) */
    double *served, *served_z, *served_theta_own;
    const double *served_w, *served_theta, *served_linear;
} Chunk;

/* GradientBase._standardized with the snapshot's statistics, then clipped. */
static void standardise(const Chunk *c, const double *x, double *z) {
    double bound = c->config[C_CLIP];
    for (Py_ssize_t j = 0; j < c->d; j++) {
        z[j] = (x[j] - c->snap_mean[j]) * c->snap_inv[j];
        if (bound > 0.0) {
            z[j] = clip(z[j], bound);
        }
    }
}

/* The served tree's predicted reward of action y for the raw context x: decide's
 * standardisation, walk, leaf output and link, one tree. */
static double served_value(const Chunk *c, const double *x, Py_ssize_t y) {
    standardise(c, x, c->served_z);
    Py_ssize_t leaf = route(c->served_w, c->served_z, c->d, c->height);
    double output = leaf_output(c->served_theta + leaf * c->k, c->served_linear, c->served_z, c->d, y);
    return reward_link(output, c->config[C_SIGMOID] != 0.0);
}

/* After a step: the snapshot serves the parameters (theta + bias as DGTSpec.freeze adds
 * them). */
static void serve_parameters(Chunk *c) {
    c->served_w = c->param[P_W];
    c->served_linear = c->param[P_LINEAR];
    if (c->param[P_BIAS] == NULL) {
        c->served_theta = c->param[P_THETA];
        return;
    }
    for (Py_ssize_t l = 0; l < c->n_leaves; l++) {
        for (Py_ssize_t a = 0; a < c->k; a++) {
            c->served_theta_own[l * c->k + a] = c->param[P_THETA][l * c->k + a] + c->param[P_BIAS][a];
        }
    }
    c->served_theta = c->served_theta_own;
}

/* Learning._flush of the buffered rows [from, to): leaf counts, ridge rounds, gradients
 * added into the window's sums. */
static void flush(Chunk *c, const Rows *rows, Py_ssize_t from, Py_ssize_t to) {
    Py_ssize_t m = to - from, d = c->d;
    if (m <= 0) {
        return;
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        Py_ssize_t v = from + j;
        standardise(c, row_x(rows, v), c->z + j * d);
        c->act[j] = row_action(rows, v);
        c->prop[j] = row_prop(rows, v);
        c->loss[j] = row_loss(rows, v);
        c->reward[j] = 1.0 - c->loss[j];
    }
    if (c->decisions != NULL) { /* the served snapshot's leaves (its W0 is the current one) */
        for (Py_ssize_t j = 0; j < m; j++) {
            Py_ssize_t leaf = route(c->param[P_W], c->z + j * d, d, c->height);
            c->decisions[leaf] += 1.0;
            c->feedbacks[leaf] += 1.0;
            c->loss_sum[leaf] += c->loss[j];
            c->action_counts[leaf * c->k + c->act[j]] += 1.0;
        }
    }
    if (c->inv_gram != NULL) {
        ridge_core(c->z, c->act, c->reward, m, d, c->inv_gram, c->weights, c->mix_stats, c->prior,
                   c->config[C_MIX_RATE] > 0.0, c->u);
    }
    int first = c->istate[I_ACCUM_EMPTY] != 0;
    double **into = first ? c->grad : c->scratch_grad;
    for (int p = 0; p < N_PARAMS; p++) {
        if (c->graded[p]) {
            memset(into[p], 0, (size_t)c->size[p] * sizeof(double));
        }
    }
    window_rows(c->z, c->act, c->prop, c->loss, m, d, c->height, c->k, c->param[P_W],
                c->param[P_THETA], c->param[P_BIAS], c->param[P_LINEAR],
                c->config[C_SIGMOID] != 0.0, c->config[C_CAP], c->config[C_AWARE] != 0.0,
                into[P_W], into[P_THETA], c->graded[P_BIAS] ? into[P_BIAS] : NULL,
                c->graded[P_LINEAR] ? into[P_LINEAR] : NULL, c->window);
    /* a sum is finite only if every term is, in the gradients' order (theta, bias,
     * linear, W0) */
    static const int order[N_PARAMS] = {P_THETA, P_BIAS, P_LINEAR, P_W};
    double total = 0.0;
    for (int i = 0; i < N_PARAMS; i++) {
        int p = order[i];
        if (c->graded[p]) {
            total += pairwise(into[p], c->size[p]);
        }
    }
    if (!isfinite(total)) {
        c->istate[I_ACCUM_FINITE] = 0;
    }
    if (!first) {
        for (int p = 0; p < N_PARAMS; p++) {
            if (c->graded[p]) {
                add_into(c->grad[p], into[p], c->size[p]);
            }
        }
    }
    c->istate[I_ACCUM_EMPTY] = 0;
}

/* PerActionRidge.served into the fresh bias and linear term. */
static void serve_ridge(Chunk *c) {
    Py_ssize_t k = c->k, d = c->d, dim = d + 1;
    double *bias = c->fresh[P_BIAS], *linear = c->fresh[P_LINEAR], *stats = c->mix_stats;
    double mix_rate = c->config[C_MIX_RATE];
    int alone = mix_rate == 0.0;
    if (!alone) {
        double low = stats[0];
        for (Py_ssize_t a = 1; a < k; a++) {
            low = stats[a * 3] < low ? stats[a * 3] : low;
        }
        alone = low >= (double)d;
    }
    if (alone) {
        for (Py_ssize_t a = 0; a < k; a++) {
            memcpy(linear + a * d, c->weights + a * dim, (size_t)d * sizeof(double));
            bias[a] = c->weights[a * dim + d];
        }
        return;
    }
    /* the evidence summed as numpy sums the column (pairwise), clipped to +-50 */
    for (Py_ssize_t a = 0; a < k; a++) {
        c->reward[a] = stats[a * 3 + 2]; /* scratch of at least K (see learn_chunk) */
    }
    double evidence = clip(mix_rate * pairwise(c->reward, k), 50.0);
    double mixed = 1.0 / (1.0 + exp(-evidence));
    for (Py_ssize_t a = 0; a < k; a++) {
        const double *st = stats + a * 3, *w = c->weights + a * dim;
        double alpha = st[0] >= (double)d ? 1.0 : mixed;
        double mean = (1.0 * c->prior[a] + st[1]) / (1.0 + st[0]);
        for (Py_ssize_t j = 0; j < d; j++) {
            linear[a * d + j] = w[j] * alpha;
        }
        bias[a] = alpha * w[d] + (1.0 - alpha) * mean;
    }
}

/* The end of Learning._learn_checked once a window closes: 1 when a step was taken
 * (the parameters replaced), 0 when the window was dropped. */
static int close_window(Chunk *c) {
    int64_t *is = c->istate;
    const double *cf = c->config;
    int finite = is[I_ACCUM_FINITE] != 0;
    int64_t window = is[I_PENDING];
    is[I_ACCUM_EMPTY] = 1;
    is[I_ACCUM_FINITE] = 1;
    is[I_PENDING] = 0;
    if (!finite) {
        is[I_REFUSED] += window;
        return 0;
    }
    if (cf[C_DECAY] > 0.0) {
        double decay = 1.0 / (1.0 + (double)is[I_LEARNED] / cf[C_DECAY]);
        c->fstate[F_LR] = cf[C_RATE] * (cf[C_FLOOR] > decay ? cf[C_FLOOR] : decay);
    }
    /* RMSprop.step: each parameter with a gradient, into the fresh arrays */
    int changed[N_PARAMS] = {0, 0, 0, 0};
    for (int p = 0; p < N_PARAMS; p++) {
        if (!c->graded[p]) {
            continue;
        }
        int64_t bit = (int64_t)1 << p;
        if (rmsprop_core(c->param[p], c->grad[p], c->square[p], c->fresh[p], c->size[p],
                         cf[C_ALPHA], cf[C_EPS], c->fstate[F_LR] * cf[C_SCALE + p],
                         cf[C_ADAGRAD + p] != 0.0, (is[I_SQUARES] & bit) == 0)) {
            is[I_SQUARES] |= bit;
            changed[p] = 1;
        } else {
            is[I_OPT_REFUSED] += 1;
        }
    }
    if (c->inv_gram != NULL) {
        serve_ridge(c);
        changed[P_BIAS] = changed[P_LINEAR] = 1;
    }
    /* never let a model hold NaN: a step that is not finite is dropped */
    for (int p = 0; p < N_PARAMS; p++) {
        if (changed[p] && !all_finite(c->fresh[p], c->size[p])) {
            is[I_REFUSED] += window;
            return 0;
        }
    }
    for (int p = 0; p < N_PARAMS; p++) {
        if (changed[p]) {
            memcpy(c->param[p], c->fresh[p], (size_t)c->size[p] * sizeof(double));
        }
    }
    is[I_STEPS] += 1;
    /* the next snapshot's statistics (GradientBase._make_snapshot) */
    if (cf[C_STANDARDIZE] != 0.0) {
        int64_t count = is[I_COUNT];
        for (Py_ssize_t j = 0; j < c->d; j++) {
            c->snap_mean[j] = c->mean[j];
            double std = count < 2 ? 1.0 : sqrt(c->m2[j] / (double)(count - 1));
            c->snap_inv[j] = 1.0 / (std > 1e-12 ? std : 1.0);
        }
    }
    return 1;
}

/* The chunk's entries from `at` on, until its end or an entry the Python path learns. */
static void learn_rows(Chunk *c, const Rows *rows, Py_ssize_t n, int64_t *learned) {
    int64_t *is = c->istate;
    double *fs = c->fstate;
    const double *cf = c->config;
    Py_ssize_t d = c->d, tail = 0, v = rows->nb, r = rows->at;
    for (; r < n; r++, v++) {
        const double *x = rows->x + r * d;
        int64_t y = rows->act[r];
        double prop = rows->prop[r], loss = rows->loss[r];
        /* Learning.check; a row that fails goes to the Python path, which names it */
        if (y < 0 || y >= c->k || !(prop > 0.0 && prop <= 1.0) || !isfinite(loss) ||
            !(loss >= cf[C_LOSS_LOW] && loss <= cf[C_LOSS_HIGH])) {
            break;
        }
        int finite = 1;
        for (Py_ssize_t j = 0; j < d; j++) {
            finite &= isfinite(x[j]) != 0;
        }
        if (!finite) {
            break;
        }
        /* LossRiseDetector.update; a signal goes to the Python path (Learning._on_drift) */
        if (cf[C_DETECTOR] != 0.0) {
            int64_t seen = is[I_DET_N] + 1;
            double mean = fs[F_DET_MEAN] + (loss - fs[F_DET_MEAN]) / (double)seen;
            double cum = fs[F_DET_CUM] + (loss - mean - cf[C_DELTA]);
            double low = cum < fs[F_DET_LOW] ? cum : fs[F_DET_LOW];
            double jump_cum = fs[F_JUMP_CUM] + (loss - mean - cf[C_JUMP_DELTA]);
            double jump_low = jump_cum < fs[F_JUMP_LOW] ? jump_cum : fs[F_JUMP_LOW];
            int jumped = cf[C_JUMP_THRESHOLD] > 0.0 && jump_cum - jump_low > cf[C_JUMP_THRESHOLD];
            if ((double)seen >= cf[C_MIN_ROUNDS] && (cum - low > cf[C_THRESHOLD] || jumped)) {
                break;
            }
            is[I_DET_N] = seen;
            fs[F_DET_MEAN] = mean;
            fs[F_DET_CUM] = cum;
            fs[F_DET_LOW] = low;
            fs[F_JUMP_CUM] = jump_cum;
            fs[F_JUMP_LOW] = jump_low;
        }
        if (c->served != NULL) { /* before the entry changes anything */
            c->served[r] = served_value(c, x, (Py_ssize_t)y);
        }
        if (cf[C_STANDARDIZE] != 0.0) {
            is[I_COUNT] += 1;
            welford_row(c->mean, c->m2, x, d, (double)is[I_COUNT]);
        }
        is[I_LEARNED] += 1;
        fs[F_LOSS_SUM] += loss;
        is[I_PENDING] += 1;
        learned[r] = 0;
        if ((double)is[I_PENDING] < cf[C_ACCUMULATE] && (double)is[I_LEARNED] > cf[C_EAGER]) {
            if ((double)(v + 1 - tail) >= cf[C_MAX_BUFFERED]) {
                flush(c, rows, tail, v + 1);
                tail = v + 1;
            }
            continue;
        }
        flush(c, rows, tail, v + 1);
        tail = v + 1;
        learned[r] = close_window(c);
        if (learned[r] && c->served != NULL) {
            serve_parameters(c);
        }
    }
    is[I_STOP] = r;
    is[I_TAIL] = tail;
}

/* Take a tuple of `n` items (None where `optional` allows), each to be taken by the
 * caller; returns the items or NULL with an error naming `name`. */
static PyObject *const *items(PyObject *obj, const char *name, Py_ssize_t n) {
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != n) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple of %zd items", name, n);
        return NULL;
    }
    return &PyTuple_GET_ITEM(obj, 0);
}

PyDoc_STRVAR(learn_chunk_doc,
             "learn_chunk(x, actions, propensity, loss, at, buffered, learned, params,\n"
             "            squares, grads, ridge, stats, snapshot, leaves, istate, fstate,\n"
             "            config, served=None)\n--\n\n"
             "GradientBandit.learn_batch's entries of a chunk from `at` on, in place;\n"
             "served (out (n,), weights, theta, linear or None): the served tree's\n"
             "predicted reward of each learned entry's action, before it is learned.\n"
             "See banditree.learners.gradient_bandit.kernel_calls.learn_run.");

/* the arrays of learn_chunk, by position in `a` */
enum {
    A_X, A_ACT, A_PROP, A_LOSS, A_BX, A_BACT, A_BPROP, A_BLOSS, A_LEARNED,
    A_PARAM, A_SQUARE = A_PARAM + N_PARAMS, A_GRAD = A_SQUARE + N_PARAMS,
    A_INV = A_GRAD + N_PARAMS, A_WEIGHTS, A_MIX, A_PRIOR, A_MEAN, A_M2, A_SNAP_MEAN,
    A_SNAP_INV, A_DECISIONS, A_FEEDBACKS, A_LOSS_SUM, A_COUNTS, A_ISTATE, A_FSTATE,
    A_CONFIG, A_SERVED, A_SERVED_W, A_SERVED_THETA, A_SERVED_LINEAR, N_ARRAYS
};

/* Whether the settings are in their ranges (each one named when not). */
static int check_config(const double *cf) {
    static const char *names[N_CONFIG] = {
        "accumulate", "eager", "max_buffered", "rate", "decay", "floor", "alpha", "eps",
        "scale[W0]", "scale[theta]", "scale[bias]", "scale[linear]", "adagrad[W0]",
        "adagrad[theta]", "adagrad[bias]", "adagrad[linear]", "clip", "sigmoid", "cap",
        "aware", "mix_rate", "loss_low", "loss_high", "detector", "threshold", "delta",
        "min_rounds", "jump_threshold", "jump_delta", "standardize",
    };
    for (int i = 0; i < N_CONFIG; i++) {
        double v = cf[i];
        int ok = !isnan(v);
        switch (i) {
        case C_ACCUMULATE:
        case C_MAX_BUFFERED:
            ok = ok && v >= 1.0 && v <= 1e15 && v == floor(v);
            break;
        case C_EAGER:
        case C_MIN_ROUNDS:
            ok = ok && v >= 0.0 && v <= 1e15 && v == floor(v);
            break;
        case C_FLOOR:
            ok = ok && v >= 0.0 && v <= 1.0;
            break;
        case C_ALPHA:
            ok = ok && v >= 0.0 && v < 1.0;
            break;
        case C_LOSS_LOW:
        case C_LOSS_HIGH:
            break;
        case C_SIGMOID:
        case C_AWARE:
        case C_DETECTOR:
        case C_STANDARDIZE:
        case C_ADAGRAD:
        case C_ADAGRAD + 1:
        case C_ADAGRAD + 2:
        case C_ADAGRAD + 3:
            ok = ok && (v == 0.0 || v == 1.0);
            break;
        default: /* rates, scales, bounds and thresholds: finite, >= 0 (0: none) */
            ok = ok && isfinite(v) && v >= 0.0;
        }
        if (!ok) {
            PyErr_Format(PyExc_ValueError, "config[%d] (%s) out of range", i, names[i]);
            return -1;
        }
    }
    if (!(cf[C_LOSS_LOW] <= cf[C_LOSS_HIGH])) {
        PyErr_SetString(PyExc_ValueError, "config: loss_low must be <= loss_high");
        return -1;
    }
    return 0;
}

static PyObject *learn_chunk(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[17];
    Py_ssize_t at;
    o[16] = Py_None;
    if (!PyArg_ParseTuple(args, "OOOOnOOOOOOOOOOOO|O:learn_chunk", &o[0], &o[1], &o[2], &o[3],
                          &at, &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12],
                          &o[13], &o[14], &o[15], &o[16])) {
        return NULL;
    }
    Arr a[N_ARRAYS];
    memset(a, 0, sizeof a);
    void *scratch = NULL;
    PyObject *const *buffered = items(o[4], "buffered", 4);
    PyObject *const *params = buffered ? items(o[6], "params", N_PARAMS) : NULL;
    PyObject *const *squares = params ? items(o[7], "squares", N_PARAMS) : NULL;
    PyObject *const *grads = squares ? items(o[8], "grads", N_PARAMS) : NULL;
    PyObject *const *stats = grads ? items(o[10], "stats", 2) : NULL;
    PyObject *const *snap = stats ? items(o[11], "snapshot", 2) : NULL;
    if (snap == NULL) {
        return NULL;
    }
    PyObject *const *ridge = o[9] == Py_None ? NULL : items(o[9], "ridge", 4);
    PyObject *const *leaves = o[12] == Py_None ? NULL : items(o[12], "leaves", 4);
    PyObject *const *served = o[16] == Py_None ? NULL : items(o[16], "served", 4);
    if ((o[9] != Py_None && ridge == NULL) || (o[12] != Py_None && leaves == NULL) ||
        (o[16] != Py_None && served == NULL)) {
        return NULL;
    }
    Py_ssize_t xs[2] = {-1, -1}, is_[1] = {N_ISTATE}, fs_[1] = {N_FSTATE}, cs[1] = {N_CONFIG};
    if (take(o[0], "x", 'd', 2, xs, 0, &a[A_X]) < 0 ||
        take(o[13], "istate", 'q', 1, is_, 1, &a[A_ISTATE]) < 0 ||
        take(o[14], "fstate", 'd', 1, fs_, 1, &a[A_FSTATE]) < 0 ||
        take(o[15], "config", 'd', 1, cs, 0, &a[A_CONFIG]) < 0) {
        goto fail;
    }
    Py_ssize_t n = xs[0], d = xs[1], ns[1] = {n}, bxs[2] = {-1, d};
    if (at < 0 || at > n) {
        PyErr_Format(PyExc_ValueError, "at must be in [0, %zd], got %zd", n, at);
        goto fail;
    }
    if (take(o[1], "actions", 'q', 1, ns, 0, &a[A_ACT]) < 0 ||
        take(o[2], "propensity", 'd', 1, ns, 0, &a[A_PROP]) < 0 ||
        take(o[3], "loss", 'd', 1, ns, 0, &a[A_LOSS]) < 0 ||
        take(o[5], "learned", 'q', 1, ns, 1, &a[A_LEARNED]) < 0 ||
        take(buffered[0], "buffered[0]", 'd', 2, bxs, 0, &a[A_BX]) < 0) {
        goto fail;
    }
    Py_ssize_t nb = bxs[0], nbs[1] = {nb};
    if (take(buffered[1], "buffered[1]", 'q', 1, nbs, 0, &a[A_BACT]) < 0 ||
        take(buffered[2], "buffered[2]", 'd', 1, nbs, 0, &a[A_BPROP]) < 0 ||
        take(buffered[3], "buffered[3]", 'd', 1, nbs, 0, &a[A_BLOSS]) < 0) {
        goto fail;
    }
    const double *cf = f64(&a[A_CONFIG]);
    if (check_config(cf) < 0) {
        goto fail;
    }
    /* the model's shapes, from W0 (2^h - 1, d + 1) and theta (2^h, K) */
    Py_ssize_t ws[2] = {-1, d + 1}, ts[2] = {-1, -1};
    if (take(params[P_W], "params[0]", 'd', 2, ws, 1, &a[A_PARAM + P_W]) < 0 ||
        take(params[P_THETA], "params[1]", 'd', 2, ts, 1, &a[A_PARAM + P_THETA]) < 0) {
        goto fail;
    }
    Py_ssize_t n_int = ws[0], k = ts[1];
    int height = 0;
    while (height <= MAX_HEIGHT && ((Py_ssize_t)1 << height) - 1 < n_int) {
        height++;
    }
    if (height < 1 || height > MAX_HEIGHT || ((Py_ssize_t)1 << height) - 1 != n_int ||
        ts[0] != ((Py_ssize_t)1 << height) || k < 1) {
        PyErr_Format(PyExc_ValueError,
                     "params must be W0 (2^h - 1, d + 1), h in [1, %d], and theta (2^h, K >= 1), "
                     "got (%zd, %zd) and (%zd, %zd)",
                     MAX_HEIGHT, ws[0], ws[1], ts[0], ts[1]);
        goto fail;
    }
    Chunk c;
    memset(&c, 0, sizeof c);
    c.d = d;
    c.k = k;
    c.n_int = n_int;
    c.n_leaves = (Py_ssize_t)1 << height;
    c.height = height;
    Py_ssize_t shapes[N_PARAMS][2] = {{n_int, d + 1}, {c.n_leaves, k}, {k, -1}, {k, d}};
    int ndims[N_PARAMS] = {2, 2, 1, 2};
    static const char *pnames[3][N_PARAMS] = {
        {"params[0]", "params[1]", "params[2]", "params[3]"},
        {"squares[0]", "squares[1]", "squares[2]", "squares[3]"},
        {"grads[0]", "grads[1]", "grads[2]", "grads[3]"},
    };
    for (int p = 0; p < N_PARAMS; p++) {
        Py_ssize_t s0[2] = {shapes[p][0], shapes[p][1]};
        c.size[p] = p == P_BIAS ? k : s0[0] * s0[1];
        if (p >= P_BIAS && params[p] != Py_None &&
            take(params[p], pnames[0][p], 'd', ndims[p], s0, 1, &a[A_PARAM + p]) < 0) {
            goto fail;
        }
        c.graded[p] = grads[p] != Py_None;
        if (c.graded[p] && p >= P_BIAS && params[p] == Py_None) {
            PyErr_Format(PyExc_ValueError, "%s needs %s", pnames[2][p], pnames[0][p]);
            goto fail;
        }
        Py_ssize_t s1[2] = {shapes[p][0], shapes[p][1]}, s2[2] = {shapes[p][0], shapes[p][1]};
        if ((c.graded[p] &&
             (take(squares[p], pnames[1][p], 'd', ndims[p], s1, 1, &a[A_SQUARE + p]) < 0 ||
              take(grads[p], pnames[2][p], 'd', ndims[p], s2, 1, &a[A_GRAD + p]) < 0))) {
            goto fail;
        }
        if (!c.graded[p] && squares[p] != Py_None) {
            PyErr_Format(PyExc_ValueError, "%s must be None without %s", pnames[1][p],
                         pnames[2][p]);
            goto fail;
        }
    }
    if (!c.graded[P_W] || !c.graded[P_THETA]) {
        PyErr_SetString(PyExc_ValueError, "grads[0] and grads[1] (W0, theta) are required");
        goto fail;
    }
    Py_ssize_t ds[1] = {d}, ks[1] = {k}, dim = d + 1;
    if (ridge != NULL) {
        Py_ssize_t gs[3] = {k, dim, dim}, kw[2] = {k, dim}, km[2] = {k, 3};
        if (take(ridge[0], "ridge[0]", 'd', 3, gs, 1, &a[A_INV]) < 0 ||
            take(ridge[1], "ridge[1]", 'd', 2, kw, 1, &a[A_WEIGHTS]) < 0 ||
            take(ridge[2], "ridge[2]", 'd', 2, km, 1, &a[A_MIX]) < 0 ||
            take(ridge[3], "ridge[3]", 'd', 1, ks, 0, &a[A_PRIOR]) < 0) {
            goto fail;
        }
        if (c.graded[P_BIAS] || c.graded[P_LINEAR] || params[P_BIAS] == Py_None ||
            params[P_LINEAR] == Py_None) {
            PyErr_SetString(PyExc_ValueError,
                            "with a ridge, params[2] and params[3] are served by it (no grads)");
            goto fail;
        }
    }
    if (take(stats[0], "stats[0]", 'd', 1, ds, 1, &a[A_MEAN]) < 0 ||
        take(stats[1], "stats[1]", 'd', 1, ds, 1, &a[A_M2]) < 0 ||
        take(snap[0], "snapshot[0]", 'd', 1, ds, 1, &a[A_SNAP_MEAN]) < 0 ||
        take(snap[1], "snapshot[1]", 'd', 1, ds, 1, &a[A_SNAP_INV]) < 0) {
        goto fail;
    }
    if (leaves != NULL) {
        Py_ssize_t ls[1] = {c.n_leaves}, lk[2] = {c.n_leaves, k};
        if (take(leaves[0], "leaves[0]", 'd', 1, ls, 1, &a[A_DECISIONS]) < 0 ||
            take(leaves[1], "leaves[1]", 'd', 1, ls, 1, &a[A_FEEDBACKS]) < 0 ||
            take(leaves[2], "leaves[2]", 'd', 1, ls, 1, &a[A_LOSS_SUM]) < 0 ||
            take(leaves[3], "leaves[3]", 'd', 2, lk, 1, &a[A_COUNTS]) < 0) {
            goto fail;
        }
    }
    if (served != NULL) {
        Py_ssize_t os[1] = {n}, sws[2] = {n_int, d + 1}, sts[2] = {c.n_leaves, k}, sls[2] = {k, d};
        if (take(served[0], "served[0]", 'd', 1, os, 1, &a[A_SERVED]) < 0 ||
            take(served[1], "served[1]", 'd', 2, sws, 0, &a[A_SERVED_W]) < 0 ||
            take(served[2], "served[2]", 'd', 2, sts, 0, &a[A_SERVED_THETA]) < 0 ||
            (served[3] != Py_None &&
             take(served[3], "served[3]", 'd', 2, sls, 0, &a[A_SERVED_LINEAR]) < 0)) {
            goto fail;
        }
    }
    int64_t *is = i64(&a[A_ISTATE]);
    for (int i = 0; i < N_ISTATE; i++) {
        if (i != I_STOP && i != I_TAIL && (is[i] < 0 || is[i] > ((int64_t)1 << 53))) {
            PyErr_Format(PyExc_ValueError, "istate[%d] must be in [0, 2^53], got %lld", i,
                         (long long)is[i]);
            goto fail;
        }
    }
    if (is[I_SQUARES] > 15 || is[I_ACCUM_EMPTY] > 1 || is[I_ACCUM_FINITE] > 1 ||
        is[I_PENDING] < nb) {
        PyErr_SetString(PyExc_ValueError,
                        "istate: squares is a 4-bit mask, accum flags 0 or 1, pending >= buffered");
        goto fail;
    }
    /* the buffered rows are read again at their flush: checked as the chunk's are */
    const int64_t *bact = i64(&a[A_BACT]);
    const double *bprop = f64(&a[A_BPROP]), *bloss = f64(&a[A_BLOSS]), *bx = f64(&a[A_BX]);
    for (Py_ssize_t b = 0; b < nb; b++) {
        if (bact[b] < 0 || bact[b] >= k || !(bprop[b] > 0.0 && bprop[b] <= 1.0) ||
            !isfinite(bloss[b])) {
            PyErr_Format(PyExc_ValueError,
                         "buffered row %zd: action in [0, %zd], propensity in (0, 1] and a "
                         "finite loss",
                         b, k - 1);
            goto fail;
        }
        for (Py_ssize_t j = 0; j < d; j++) {
            if (!isfinite(bx[b * d + j])) {
                PyErr_Format(PyExc_ValueError, "buffered[0][%zd][%zd] must be finite", b, j);
                goto fail;
            }
        }
    }
    /* scratch: the standardised rows and their columns, the window's and the ridge's,
     * then per parameter a step's values and, past a window's first flush, its sums */
    Py_ssize_t cap_rows = nb + (n - at);
    cap_rows = cap_rows > k ? cap_rows : k;
    Py_ssize_t total = cap_rows * (d + 4) + window_scratch(n_int, c.n_leaves, k) + 2 * dim;
    total += served != NULL ? d + c.n_leaves * k : 0; /* the served row and leaf rows */
    for (int p = 0; p < N_PARAMS; p++) {
        total += 2 * c.size[p];
    }
    if (cap_rows > PY_SSIZE_T_MAX / 16 / (d + 8) || total > PY_SSIZE_T_MAX / 16) {
        PyErr_NoMemory();
        goto fail;
    }
    scratch = PyMem_Malloc((size_t)total * sizeof(double) + (size_t)cap_rows * sizeof(int64_t));
    if (scratch == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    double *next = scratch;
    c.z = next, next += cap_rows * d;
    c.prop = next, next += cap_rows;
    c.loss = next, next += cap_rows;
    c.reward = next, next += cap_rows;
    next += cap_rows; /* spare */
    c.window = next, next += window_scratch(n_int, c.n_leaves, k);
    c.u = next, next += 2 * dim;
    if (served != NULL) {
        c.served_z = next, next += d;
        c.served_theta_own = next, next += c.n_leaves * k;
        c.served = f64(&a[A_SERVED]);
        c.served_w = f64(&a[A_SERVED_W]);
        c.served_theta = f64(&a[A_SERVED_THETA]);
        c.served_linear = a[A_SERVED_LINEAR].held ? f64(&a[A_SERVED_LINEAR]) : NULL;
    }
    for (int p = 0; p < N_PARAMS; p++) {
        c.fresh[p] = next, next += c.size[p];
        c.scratch_grad[p] = next, next += c.size[p];
        c.param[p] = a[A_PARAM + p].held ? f64(&a[A_PARAM + p]) : NULL;
        c.square[p] = c.graded[p] ? f64(&a[A_SQUARE + p]) : NULL;
        c.grad[p] = c.graded[p] ? f64(&a[A_GRAD + p]) : NULL;
    }
    c.act = (int64_t *)next;
    if (ridge != NULL) {
        c.inv_gram = f64(&a[A_INV]);
        c.weights = f64(&a[A_WEIGHTS]);
        c.mix_stats = f64(&a[A_MIX]);
        c.prior = f64(&a[A_PRIOR]);
    }
    c.mean = f64(&a[A_MEAN]);
    c.m2 = f64(&a[A_M2]);
    c.snap_mean = f64(&a[A_SNAP_MEAN]);
    c.snap_inv = f64(&a[A_SNAP_INV]);
    if (leaves != NULL) {
        c.decisions = f64(&a[A_DECISIONS]);
        c.feedbacks = f64(&a[A_FEEDBACKS]);
        c.loss_sum = f64(&a[A_LOSS_SUM]);
        c.action_counts = f64(&a[A_COUNTS]);
    }
    c.config = cf;
    c.istate = is;
    c.fstate = f64(&a[A_FSTATE]);
    is[I_STEPS] = 0;
    Rows rows = {bx, f64(&a[A_X]), bprop, f64(&a[A_PROP]), bloss, f64(&a[A_LOSS]),
                 bact, i64(&a[A_ACT]), nb, at, d};
    Py_BEGIN_ALLOW_THREADS;
    learn_rows(&c, &rows, n, i64(&a[A_LEARNED]));
    Py_END_ALLOW_THREADS;
    PyMem_Free(scratch);
    release(a, N_ARRAYS);
    Py_RETURN_NONE;
fail:
    PyMem_Free(scratch);
    release(a, N_ARRAYS);
    return NULL;
}
