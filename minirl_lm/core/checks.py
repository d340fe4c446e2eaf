"""Input checks at the public boundary.

Every public function of minirl_lm validates its arguments with these helpers and
then trusts them inside. A bad argument raises a ``TypeError`` (wrong kind of
object or dtype) or a ``ValueError`` (right kind, wrong shape, range or value)
whose message names the argument, what was expected and what came.

This file needs NumPy only. A reader who copies an estimator file copies this
one beside it (the estimator imports ``from minirl_lm.core.checks import ...``;
change that line to ``from checks import ...``).
"""

import inspect
import numbers

import numpy as np


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it.

    ndim:  required number of dimensions (None: any).
    shape: required shape; a None entry matches any length.
    finite: reject NaN and +-inf; with ``allow_neginf`` a -inf entry is allowed
        (log-probabilities of impossible tokens), NaN and +inf never are.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(x)}")
    arr = _asarray(x, name)
    if arr.dtype.kind not in "fiub":                          # float, int, uint, bool
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(arr)}")
    arr = arr.astype(np.float64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if finite and not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(arr).sum())} NaN entries")
        bad = np.isposinf(arr) if allow_neginf else np.isinf(arr)
        if bad.any():
            what = "+inf" if allow_neginf else "+-inf"
            raise ValueError(f"{name}: expected finite values (no {what}), got {int(bad.sum())} such entries")
    return arr


def int_array(x, name, ndim=None, shape=None, low=None, high=None):
    """Return ``x`` as an int64 array of ids in ``[low, high)`` after checking it."""
    arr = _asarray(x, name)
    if arr.dtype.kind not in "iu":                            # signed or unsigned integers
        raise TypeError(f"{name}: expected an integer array of ids, got {_describe(arr)}")
    arr = arr.astype(np.int64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: expected ids >= {low}, got min {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: expected ids < {high}, got max {arr.max()}")
    return arr


def mask_array(x, name, shape=None):
    """Return a (B, T) float64 mask of 0.0/1.0, right-padded (no 1 after a 0 in a row)."""
    arr = float_array(x, name, ndim=2, shape=shape)
    nonempty(arr, name)                                  # B >= 1 responses, T >= 1 positions
    binary = (arr == 0.0) | (arr == 1.0)
    if not binary.all():
        bad = arr[~binary]
        raise ValueError(f"{name}: expected only 0 and 1, got value {float(bad.flat[0])!r}")
    rises = arr[:, 1:] > arr[:, :-1]                           # (B, T - 1): a 1 after a 0
    if rises.any():
        row = int(np.nonzero(rises.any(axis=1))[0][0])
        raise ValueError(f"{name}: expected right padding (1s then 0s in each row), "
                         f"row {row} is {arr[row].astype(int).tolist()}")
    return arr


def same_shape(name_a, a, name_b, b):
    """Raise unless arrays ``a`` and ``b`` have the same shape (no broadcasting)."""
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {a.shape}, got {b.shape}")


def rng_check(rng, name):
    """Raise unless ``rng`` is a ``np.random.Generator``."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), "
                        f"got {_describe(rng)}")
    return rng


def int_scalar(x, name, low=None, high=None):
    """Return ``x`` as a Python int in ``[low, high]`` (bounds inclusive)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {_describe(x)}")
    x = int(x)
    if low is not None and x < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected an integer <= {high}, got {x}")
    return x


def float_scalar(x, name, low=None, high=None, low_open=False):
    """Return ``x`` as a finite Python float, ``>= low`` (``> low`` if low_open), ``<= high``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {_describe(x)}")
    x = float(x)
    if not np.isfinite(x):
        raise ValueError(f"{name}: expected a finite number, got {x}")
    if low is not None and (x <= low if low_open else x < low):
        raise ValueError(f"{name}: expected a number {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected a number <= {high}, got {x}")
    return x


def choice(x, name, options):
    """Raise unless ``x`` is one of ``options`` (an unhashable ``x`` is a TypeError naming it)."""
    try:
        hash(x)
    except TypeError:
        raise TypeError(f"{name}: expected one of {sorted(options, key=str)}, got unhashable "
                        f"{_describe(x)}") from None
    if isinstance(x, bool) or x not in options:          # True == 1 must not pick option 1
        raise ValueError(f"{name}: expected one of {sorted(options, key=str)}, got {x!r}")
    return x


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), "
                         f"got shape {arr.shape}")
    return arr


def prob_table(p, name, shape=None, ndim=None):
    """Return ``p`` as float64 probabilities: entries >= 0, each row (last axis) summing to 1
    within 1e-9 absolutely (stricter than ``Generator.choice``'s ~1.5e-8, so a table that
    passes here is accepted by ``rng.choice``), and non-empty."""
    p = float_array(p, name, ndim=ndim, shape=shape)
    nonempty(p, name)
    if (p < 0).any():
        raise ValueError(f"{name}: expected probabilities >= 0, got min {p.min()}")
    s = p.sum(axis=-1)
    if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
        bad = np.abs(s - 1.0).ravel()
        raise ValueError(f"{name}: expected rows summing to 1 (within 1e-9), got a row summing "
                         f"to {float(s.ravel()[int(np.argmax(bad))])!r}")
    return p


def finite_result(value, name, what):
    """Return ``value`` (a number, an array, or a tuple of them, nested) if every entry is finite;
    else raise a ValueError naming ``name``, the argument that drove the overflow.

    Call it on what a public function is about to return, computed under
    ``np.errstate(over="ignore", invalid="ignore", divide="ignore")``: an overflow is never
    returned as inf or NaN. ``name`` and ``what`` are strings (a programming error otherwise).
    """
    if not (isinstance(name, str) and isinstance(what, str)):
        raise TypeError(f"finite_result: expected name and what as strings, got {name!r}, {what!r}")
    parts = [value]
    while parts:
        v = parts.pop()
        if isinstance(v, (tuple, list)):
            parts.extend(v)
            continue
        a = np.asarray(v, dtype=np.float64)
        if not np.isfinite(a).all():
            kind = "NaN" if np.isnan(a).any() else "inf"
            raise ValueError(f"{name}: expected a value for which {what} is finite in float64, "
                             f"got one that makes it {kind} (overflow)")
    return value


def real_result(value, name, context=""):
    """A callable's return value (a grader's reward) as a finite Python float, else an error
    naming ``name`` (the callable): None, a string, a bool, NaN or inf are rejected."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number{context}, got {_describe(value)}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name}: expected a finite number{context}, got {value}")
    return value


def callable_check(f, name, nargs, call="f(...)"):
    """Raise unless ``f`` is a callable that accepts ``nargs`` positional arguments."""
    if not callable(f) or isinstance(f, type):
        raise TypeError(f"{name}: expected a callable {call}, got {_describe(f)}")
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):                      # builtins without a signature
        return f
    try:
        sig.bind(*range(nargs))
    except TypeError:
        raise TypeError(f"{name}: expected a callable {call} taking {nargs} positional "
                        f"arguments, got one with signature {sig}") from None
    return f


def _asarray(x, name):
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:         # ragged nesting, huge ints
        raise TypeError(f"{name}: expected an array, got {_describe(x)} ({e})") from None


def _check_shape(arr, name, ndim, shape):
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, "
                         f"got shape {arr.shape}")
    if shape is not None:
        ok = len(shape) == arr.ndim and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = ", ".join("any" if s is None else str(s) for s in shape)
            want = f"({want},)" if len(shape) == 1 else f"({want})"    # as Python prints a tuple
            raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")


# ---- bundles: direct and values
# One call per public function of direct/dpo.py, direct/preferences.py, values/critic.py and
# values/optimum.py: the argument set checked in the order the messages have always come in,
# returned as the arrays and numbers the math trusts. `largest` and `culprit` pick the argument
# an overflow names when several enter one expression.

# the longest draw a sampler allocates: an int64 array of it is addressable (np.empty(2**63)
# fails inside NumPy with "Maximum allowed dimension exceeded")
MAX_DRAWS = np.iinfo(np.intp).max // 8


def largest(**named):
    """The name of the argument of largest magnitude (the first on a tie): the one that drove an
    overflow of an expression they all enter."""
    best, size = None, -1.0
    for name, value in named.items():
        m = float(np.max(np.abs(value), initial=0.0))
        if best is None or m > size:
            best, size = name, m
    return best


def culprit(*stages):
    """The name of the first `(name, value)` stage whose value is not all finite (a number, an
    array or a tuple of them); the last argument, a bare name, when every stage is."""
    *pairs, last = stages
    for name, value in pairs:
        if not all(np.isfinite(np.asarray(v, dtype=np.float64)).all() for v in _leaves(value)):
            return name
    return last


def finite_stages(*stages):
    """`finite_result` on each `(value, name, what)` stage in turn (the order the values were
    computed in, so the first to overflow is named); returns the last stage's value."""
    for value, name, what in stages:
        finite_result(value, name, what)
    return stages[-1][0]


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves(v)]
    return [value]


def finite_loss(loss, grads, name):
    """The preference losses' guard: a log-prob argument `name` gets the log-prob message, any
    other (a coefficient, the weights) `finite_result`'s."""
    if not name.startswith("logp"):
        return finite_result((loss, grads), name, "the loss")
    if not (np.isfinite(loss) and all(np.isfinite(g).all() for g in grads)):
        raise ValueError(f"{name}: expected log-probs for which the loss is finite, got a "
                         f"non-finite loss or gradient (loss {loss})")
    return loss, grads


def bt_pairs(r_chosen, r_rejected):
    """`(P,)` rewards of the chosen and the rejected responses, `P >= 1`."""
    r_c = float_array(r_chosen, "r_chosen", ndim=1)
    r_r = float_array(r_rejected, "r_rejected", ndim=1)
    same_shape("r_chosen", r_c, "r_rejected", r_r)
    if r_c.size == 0:
        raise ValueError("r_chosen: expected at least one pair, got shape (0,)")
    return r_c, r_r


def reward_table_pairs(r_phi, prompt, chosen, rejected):
    """An `(N, Y)` reward table and `P >= 1` pairs of ids into it."""
    r_phi = float_array(r_phi, "r_phi", ndim=2)
    N, Y = r_phi.shape
    prompt = int_array(prompt, "prompt", ndim=1, low=0, high=N)
    chosen = int_array(chosen, "chosen", shape=prompt.shape, low=0, high=Y)
    rejected = int_array(rejected, "rejected", shape=prompt.shape, low=0, high=Y)
    if prompt.size == 0:
        raise ValueError("prompt: expected at least one pair, got shape (0,)")
    return r_phi, prompt, chosen, rejected


def pair_weights(weights, P, what="pair weights"):
    """`(P,)` nonnegative weights, `1/P` each (the mean) by default."""
    if weights is None:
        return np.full(P, 1.0 / P)
    w = float_array(weights, "weights", shape=(P,))
    if (w < 0).any():
        raise ValueError(f"weights: expected nonnegative {what}, got min {w.min()}")
    return w


def dpo_args(seq_logp_c, seq_logp_r, seq_logp_ref_c, seq_logp_ref_r, beta, variant,
             label_smoothing, weights):
    """`dpo_loss`'s arguments: four `(P,)` sequence log-probs, beta, the variant, alpha, w."""
    lc = float_array(seq_logp_c, "seq_logp_c", ndim=1)
    lr = float_array(seq_logp_r, "seq_logp_r", ndim=1)
    lrc = float_array(seq_logp_ref_c, "seq_logp_ref_c", ndim=1)
    lrr = float_array(seq_logp_ref_r, "seq_logp_ref_r", ndim=1)
    for name, a in (("seq_logp_r", lr), ("seq_logp_ref_c", lrc), ("seq_logp_ref_r", lrr)):
        same_shape("seq_logp_c", lc, name, a)
    if lc.size == 0:
        raise ValueError("seq_logp_c: expected at least one pair, got shape (0,)")
    beta = float_scalar(beta, "beta", low=0.0, low_open=True)
    choice(variant, "variant", {"dpo", "ipo", "conservative"})
    ls = float_scalar(label_smoothing, "label_smoothing", low=0.0, high=0.5)
    if ls != 0.0 and variant != "conservative":
        raise ValueError(f"label_smoothing: expected 0 unless variant='conservative', got {ls} "
                         f"with variant={variant!r}")
    return lc, lr, lrc, lrr, beta, ls, pair_weights(weights, lc.size)


def token_grad_args(dseq, mask):
    """A `(B,)` sequence gradient and its `(B, T)` mask."""
    dseq = float_array(dseq, "dseq", ndim=1)
    return dseq, mask_array(mask, "mask", shape=(dseq.size, None))


def bt_sample_args(reward, mu, n_pairs, rng, mu0):
    """`bt_sample_preferences`' arguments; `n_pairs` bounded before anything is allocated."""
    reward = float_array(reward, "reward", ndim=2)
    mu = prob_table(mu, "mu", shape=reward.shape)
    N = reward.shape[0]
    n_pairs = int_scalar(n_pairs, "n_pairs", low=1, high=MAX_DRAWS)
    rng = rng_check(rng, "rng")
    mu0 = np.full(N, 1.0 / N) if mu0 is None else prob_table(mu0, "mu0", shape=(N,))
    return reward, mu, n_pairs, rng, mu0


def response_batch(logp, mask, lname, mname, rows=None):
    """`(B, T)` token log-probs (`<= 0` on real tokens) and their right-padded mask."""
    logp = float_array(logp, lname, ndim=2)
    if rows is not None and logp.shape[0] != rows:
        raise ValueError(f"{lname}: expected {rows} rows (one per pair), got shape {logp.shape}")
    mask = mask_array(mask, mname, shape=logp.shape)
    real = mask > 0                                            # (B, T)
    if (logp[real] > 0).any():
        raise ValueError(f"{lname}: expected log-probs <= 0 on real tokens, "
                         f"got max {logp[real].max()}")
    return logp, mask


def pair_batch(logp_c, mask_c, logp_r, mask_r, weights):
    """Chosen and rejected token log-probs and masks of `P` pairs, and the pair weights."""
    logp_c, mask_c = response_batch(logp_c, mask_c, "logp_c", "mask_c")
    P = logp_c.shape[0]
    logp_r, mask_r = response_batch(logp_r, mask_r, "logp_r", "mask_r", rows=P)
    return logp_c, mask_c, logp_r, mask_r, pair_weights(weights, P, "weights")


def ipo_args(logp_c, mask_c, logp_r, mask_r, seq_logp_ref_c, seq_logp_ref_r, beta, average,
             weights):
    """`ipo_loss`'s arguments."""
    logp_c, mask_c, logp_r, mask_r, w = pair_batch(logp_c, mask_c, logp_r, mask_r, weights)
    P = (logp_c.shape[0],)
    ref_c = float_array(seq_logp_ref_c, "seq_logp_ref_c", shape=P)
    ref_r = float_array(seq_logp_ref_r, "seq_logp_ref_r", shape=P)
    beta = float_scalar(beta, "beta", low=0.0, low_open=True)
    if not isinstance(average, (bool, np.bool_)):
        raise TypeError(f"average: expected True or False, got {average!r}")
    return logp_c, mask_c, logp_r, mask_r, ref_c, ref_r, beta, w


def simpo_args(logp_c, mask_c, logp_r, mask_r, beta, gamma, weights):
    """`simpo_loss`'s arguments."""
    batch = pair_batch(logp_c, mask_c, logp_r, mask_r, weights)
    return (*batch, float_scalar(beta, "beta", low=0.0, low_open=True),
            float_scalar(gamma, "gamma", low=0.0))


def orpo_args(logp_c, mask_c, logp_r, mask_r, lam, weights):
    """`orpo_loss`'s arguments; each response nonempty, of mean log-prob < 0 (finite odds)."""
    batch = pair_batch(logp_c, mask_c, logp_r, mask_r, weights)
    lam = float_scalar(lam, "lam", low=0.0)
    for name, logp, mask in (("logp_c", batch[0], batch[1]), ("logp_r", batch[2], batch[3])):
        n = mask.sum(axis=1)                                   # (P,)
        if (n == 0).any():
            raise ValueError(f"{name}: expected nonempty responses for ORPO (an empty response "
                             f"has probability 1), got an empty one at pair {int(np.argmin(n))}")
        one = ((logp == 0) | (mask == 0)).all(axis=1)          # (P,) log pi(y) = 0: s >= 0
        if one.any():
            raise ValueError(f"{name}: expected a mean log-prob < 0 for ORPO (probability 1 has "
                             f"infinite odds), got 0 at pair {int(np.argmax(one))}")
    return (*batch, lam)


def kto_args(logp, mask, seq_logp_ref, desirable, beta, z0, lambda_d, lambda_u, weights):
    """`kto_loss`'s arguments; the weights lambda_D / lambda_U as one `(B,)` array."""
    logp, mask = response_batch(logp, mask, "logp", "mask")
    B = logp.shape[0]
    ref = float_array(seq_logp_ref, "seq_logp_ref", shape=(B,))
    d = _asarray(desirable, "desirable")                 # ragged nesting: a TypeError naming it
    if d.dtype != np.bool_ or d.shape != (B,):
        raise TypeError(f"desirable: expected a bool array of shape ({B},), got "
                        f"{d.dtype} array of shape {d.shape}")
    beta = float_scalar(beta, "beta", low=0.0, low_open=True)
    z0 = float_scalar(z0, "z0", low=0.0)
    lam_d = float_scalar(lambda_d, "lambda_d", low=0.0)
    lam_u = float_scalar(lambda_u, "lambda_u", low=0.0)
    return logp, mask, ref, d, beta, z0, lam_d, lam_u, pair_weights(weights, B, "weights")


def probability_result(p, name):
    """A judge's answer as a float probability in [0, 1] (a bool counts: True = 1.0)."""
    if not isinstance(p, numbers.Real):
        raise TypeError(f"{name}: expected a probability (a real number), got {p!r}")
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"{name}: expected a probability in [0, 1], got {p}")
    return float(p)


def online_dpo_args(mdp, policy, ref, judge, beta, lr, rng, pairs_per_prompt):
    """`online_dpo_step`'s arguments: a TokenMDP, two policies of its table shape, a judge."""
    if not (hasattr(mdp, "rollout") and hasattr(mdp, "prompts")):
        raise TypeError(f"mdp: expected a TokenMDP, got {type(mdp).__name__}")
    callable_check(judge, "judge", 3, "judge(prompt, y_a, y_b)")
    shape = getattr(getattr(policy, "theta", None), "shape", None)
    if shape != (getattr(mdp, "S", None), getattr(mdp, "V", None)) or not all(
            hasattr(policy, m) for m in ("logp", "backward", "sample")):
        raise ValueError(f"policy: expected a policy with a table of shape (S, V) = "
                         f"({getattr(mdp, 'S', None)}, {getattr(mdp, 'V', None)}), got "
                         f"{type(policy).__name__} with shape {shape}")
    if getattr(getattr(ref, "theta", None), "shape", None) != shape or not hasattr(ref, "logp"):
        raise ValueError(f"ref: expected a policy with the table shape of policy {shape}, got "
                         f"{type(ref).__name__}")
    beta = float_scalar(beta, "beta", low=0.0, low_open=True)
    lr = float_scalar(lr, "lr", low=0.0, low_open=True)
    rng_check(rng, "rng")
    N = max(len(mdp.prompts), 1)                          # 2 N k responses are drawn
    k = int_scalar(pairs_per_prompt, "pairs_per_prompt", low=1, high=MAX_DRAWS // (2 * N))
    return beta, lr, k


def critic_batch(values, states, per_token, mask, name):
    """An `(S,)` value table, `(B, T)` state ids into it, a `(B, T)` array `name`, the mask."""
    values = float_array(values, "values", ndim=1)
    nonempty(values, "values")
    mask = mask_array(mask, "mask")
    states = int_array(states, "states", shape=mask.shape, low=0, high=values.size)
    per_token = float_array(per_token, name, shape=mask.shape)
    return values, states, per_token, mask


def reward_args(terminal_reward, logp, logp_ref, mask, beta):
    """`per_token_rewards`' arguments."""
    mask = mask_array(mask, "mask")
    R = float_array(terminal_reward, "terminal_reward", shape=(mask.shape[0],))
    logp = float_array(logp, "logp", shape=mask.shape)
    logp_ref = float_array(logp_ref, "logp_ref", shape=mask.shape)
    return R, logp, logp_ref, mask, float_scalar(beta, "beta", low=0.0)


def squared_error_finite(l1, l2, loss, vpreds, values_old, returns):
    """`clipped_value_loss`'s guard: the unclipped squares `l1`, the clipped `l2` and their mean
    `loss` finite, else an error naming the largest input of the first to overflow."""
    if np.isfinite(l1).all() and np.isfinite(l2).all() and np.isfinite(loss):
        return
    name = culprit((largest(vpreds=vpreds, returns=returns), l1),
                   largest(vpreds=vpreds, values_old=values_old, returns=returns))
    raise ValueError(f"{name}: the squared value error overflows float64")


def discounted_args(x, mask, name, gamma, lam=1.0):
    """A `(B, T)` array `name` to sum backwards under its mask, gamma and lam in [0, 1]."""
    mask = mask_array(mask, "mask")
    x = float_array(x, name, shape=mask.shape)
    return (x, mask, float_scalar(gamma, "gamma", low=0.0, high=1.0),
            float_scalar(lam, "lam", low=0.0, high=1.0))


def td_args(values, states, rewards, mask, gamma):
    """`td_errors`' arguments."""
    batch = critic_batch(values, states, rewards, mask, "rewards")
    return (*batch, float_scalar(gamma, "gamma", low=0.0, high=1.0))


def fit_values_args(values, states, rewards, mask, gamma, lr, target):
    """`fit_values`' arguments."""
    batch = td_args(values, states, rewards, mask, gamma)
    lr = float_scalar(lr, "lr", low=0.0, low_open=True)
    return (*batch, lr, choice(target, "target", {"mc", "td0"}))


def clipped_value_args(vpreds, values_old, returns, mask, clip):
    """`clipped_value_loss`' arguments."""
    mask = mask_array(mask, "mask")
    v = float_array(vpreds, "vpreds", shape=mask.shape)
    v_old = float_array(values_old, "values_old", shape=mask.shape)
    G = float_array(returns, "returns", shape=mask.shape)
    return v, v_old, G, mask, float_scalar(clip, "clip", low=0.0, low_open=True)


def mu0_weights(weights, N):
    """`(N,)` prompt weights mu_0, rows of a distribution, uniform by default."""
    if weights is None:
        return np.full(N, 1.0 / N)
    return prob_table(weights, "weights", shape=(N,), ndim=1)


def bandit_args(pi_ref, reward, beta, weights=None):
    """An `(N, Y)` probability table, rewards of its shape, beta `> 0`, the prompt weights."""
    pi_ref = prob_table(pi_ref, "pi_ref", ndim=2)
    reward = float_array(reward, "reward", shape=pi_ref.shape)
    beta = float_scalar(beta, "beta", low=0.0, low_open=True)
    return pi_ref, reward, beta, mu0_weights(weights, pi_ref.shape[0])


def objective_args(pi, pi_ref, reward, beta, weights):
    """Two `(N, Y)` probability tables, rewards of their shape, beta `>= 0`, the weights."""
    pi = prob_table(pi, "pi", ndim=2)
    pi_ref = prob_table(pi_ref, "pi_ref", shape=pi.shape, ndim=2)
    reward = float_array(reward, "reward", shape=pi.shape)
    beta = float_scalar(beta, "beta", low=0.0)
    return pi, pi_ref, reward, beta, mu0_weights(weights, pi.shape[0])


def tree_args(mdp, pi_ref, grader, beta, beta_zero=False):
    """An enumerated TokenMDP, an `(S, V)` table on its states, a grader, beta (`>= 0` with
    `beta_zero`, else `> 0`)."""
    if getattr(mdp, "ids", None) != "enumerate":
        raise TypeError(f"mdp: expected a TokenMDP with ids='enumerate', got {type(mdp).__name__}"
                        f" with ids={getattr(mdp, 'ids', None)!r}")
    callable_check(grader, "grader", 2, "grader(prompt, response)")
    pi_ref = prob_table(pi_ref, "pi_ref", shape=(mdp.S, mdp.V), ndim=2)
    return pi_ref, float_scalar(beta, "beta", low=0.0, low_open=not beta_zero)


def tree_objective_args(mdp, pi, pi_ref, grader, beta, weights):
    """`kl_objective_tree`'s arguments: `tree_args` with beta `>= 0`, then pi and the weights."""
    pi_ref, beta = tree_args(mdp, pi_ref, grader, beta, beta_zero=True)
    pi = prob_table(pi, "pi", shape=pi_ref.shape, ndim=2)
    return pi, pi_ref, beta, mu0_weights(weights, mdp.N)


def threshold_args(gap, log_odds):
    """The reward gap and the reference log-odds of the exploit threshold, both `> 0`."""
    return (float_scalar(gap, "gap", low=0.0, low_open=True),
            float_scalar(log_odds, "log_odds", low=0.0, low_open=True))


def odds_args(gap, log_odds, beta):
    """The reward gap and the reference log-odds (any real numbers), beta `> 0`."""
    return (float_scalar(gap, "gap"), float_scalar(log_odds, "log_odds"),
            float_scalar(beta, "beta", low=0.0, low_open=True))
