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


# ---- bundles: pg ---------------------------------------------------------------------------
# One call per public function of minirl_lm/pg/ (and tasks.py): the whole argument set is checked
# once, in the order a reader passes it, and returned as the arrays the math trusts.

_UNSET = object()     # an argument the bundle was not given (None is an input to reject)


def token_batch(logps, mask, adv=_UNSET, agg=_UNSET, max_len=None, aggs=(), per_token=True):
    """Check a token-level batch; returns ``(*arrays, mask, adv, max_len)``.

    logps: ``{name: array}`` of ``(B, T)`` arrays (log-probs, weights), the first one the
        shape the others and the 0/1 right-padded ``mask`` must have;
    adv: ``(B,)``, or ``(B, T)`` too if ``per_token`` (returned as given, None if not passed);
    agg: one of ``aggs`` (unchecked if not passed); max_len: None or an int >= 1, and for
        ``"constant"`` at least the longest response.
    """
    names = list(logps)
    arrays = [float_array(logps[n], n, ndim=2) for n in names]
    mask = mask_array(mask, "mask")
    for n, a in zip(names[1:] + ["mask"], arrays[1:] + [mask]):
        same_shape(names[0], arrays[0], n, a)
    A = None if adv is _UNSET else advantage(adv, mask, per_token)
    if agg is not _UNSET:
        max_len = aggregation(mask, agg, max_len, aggs)
    return (*arrays, mask, A, max_len)


def advantage(adv, mask, per_token=True):
    """``adv`` as float64 of shape ``(B,)`` (or ``(B, T)`` if ``per_token``) for a checked mask."""
    A = float_array(adv, "adv")
    if A.shape != (mask.shape[0],) and not (per_token and A.shape == mask.shape):
        want = f"({mask.shape[0]},)" + (f" or {mask.shape}" if per_token else "")
        raise ValueError(f"adv: expected shape {want}, got {A.shape}")
    return A


def aggregation(mask, agg, max_len, aggs):
    """Check ``agg`` (one of ``aggs``) and ``max_len`` for a checked mask; returns max_len."""
    choice(agg, "agg", aggs)
    max_len = None if max_len is None else int_scalar(max_len, "max_len", low=1)  # any agg
    if agg == "constant" and max_len is not None and max_len < mask.sum(axis=1).max():
        raise ValueError(f"max_len: expected >= the longest response "
                         f"({int(mask.sum(axis=1).max())} tokens), got {max_len}")
    return max_len


def clip_range(eps, eps_high):
    """``(eps, eps_high)``: eps in (0, 1], eps_high > 0 (default eps)."""
    eps = float_scalar(eps, "eps", low=0.0, low_open=True, high=1.0)
    return eps, (eps if eps_high is None else float_scalar(eps_high, "eps_high", low=0.0,
                                                           low_open=True))


def whitening(eps, ddof):
    """``(eps, ddof)`` of a std or variance: eps >= 0, ddof the int 0 or 1."""
    return float_scalar(eps, "eps", low=0.0), int_scalar(ddof, "ddof", low=0, high=1)


def group_rewards(rewards, bound, name="rewards"):
    """Rewards ``(N, K)``, N, K >= 1, finite, every ``|r| <= bound`` (the advantages' domain)."""
    r = float_array(rewards, name, ndim=2)
    if r.shape[1] < 1:
        raise ValueError(f"{name}: expected K >= 1 responses per prompt (shape (N, K)), "
                         f"got shape {r.shape}")
    if r.shape[0] < 1:
        raise ValueError(f"{name}: expected N >= 1 prompts (shape (N, K)), got shape {r.shape}")
    if np.abs(r).max() > bound:
        raise ValueError(f"{name}: expected |r| <= {bound:g} (the standardized baseline "
                         f"squares the spread, which overflows float64 beyond ~1e154), got max "
                         f"|r| = {np.abs(r).max():g}")
    return r


def group_advantages(rewards, baseline, eps, ddof, baselines, bound):
    """The arguments of ``advantages.advantages``: ``(r (N, K), eps, ddof)``; leave-one-out
    needs K >= 2."""
    choice(baseline, "baseline", baselines)
    eps, ddof = whitening(eps, ddof)
    r = loo_rewards(rewards, bound) if baseline == "loo" else group_rewards(rewards, bound)
    return r, eps, ddof


def finite_among(value, what, arrays):
    """``finite_result(value, name, what)`` for a value (or a flat tuple) computed from several
    ``arrays`` (``{name: array}``), the ``name`` picked only on failure: the array of largest
    magnitude, the input that drove the overflow (a log-prob of 1e308, not the ordinary one it
    was subtracted from; the first name on a tie)."""
    if all(np.isfinite(v).all() for v in (value if isinstance(value, tuple) else (value,))):
        return value
    big = {n: float(np.abs(a).max(initial=0.0)) for n, a in arrays.items()}
    return finite_result(value, max(big, key=big.get), what)


def sequence_batch(seq_logp, adv):
    """``(seq_logp, adv)``: two non-empty ``(B,)`` float arrays of one shape."""
    s = float_array(seq_logp, "seq_logp", ndim=1)
    a = float_array(adv, "adv", ndim=1)
    same_shape("seq_logp", s, "adv", a)
    return nonempty(s, "seq_logp"), a


def clip_objective(logp, logp_old, adv, mask, eps, eps_high, agg, max_len, aggs):
    """The arguments of the clipped surrogate: ``(logp, logp_old, mask, adv, eps, eps_high,
    max_len)``."""
    logp, logp_old, mask, adv, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv)
    eps, eps_high = clip_range(eps, eps_high)
    return logp, logp_old, mask, adv, eps, eps_high, aggregation(mask, agg, max_len, aggs)


def kl_batch(logp, logp_ref, mask, estimator, estimators, agg=_UNSET, max_len=None, aggs=()):
    """The arguments of a KL term: ``(logp, logp_ref, mask, max_len)``."""
    logp, logp_ref, mask, _, _ = token_batch({"logp": logp, "logp_ref": logp_ref}, mask)
    choice(estimator, "estimator", estimators)
    if agg is not _UNSET:
        max_len = aggregation(mask, agg, max_len, aggs)
    return logp, logp_ref, mask, max_len


def kl_reward_args(rewards, logp, logp_ref, mask, beta):
    """The arguments of the KL folded into the reward: ``(r (B,), logp, logp_ref, mask, beta)``."""
    logp, logp_ref, mask, _, _ = token_batch({"logp": logp, "logp_ref": logp_ref}, mask)
    r = float_array(rewards, "rewards", ndim=1, shape=(mask.shape[0],))
    return r, logp, logp_ref, mask, float_scalar(beta, "beta", low=0.0)


def probability_pair(p, q):
    """Two non-empty ``(S, V)`` tables of one shape whose rows are distributions."""
    p = float_array(p, "p", ndim=2)
    q = float_array(q, "q", ndim=2)
    same_shape("p", p, "q", q)
    nonempty(p, "p")
    for name, t in (("p", p), ("q", q)):
        if (t < 0).any() or not np.allclose(t.sum(axis=1), 1.0, rtol=0, atol=1e-9):
            raise ValueError(f"{name}: expected rows of probabilities (>= 0, summing to 1), "
                             f"got row sums {t.sum(axis=1)[:4]} and min {t.min()}")
    return p, q


def kl_tables(theta, theta_ref, weights, support):
    """Two ``(S, V)`` logit tables (-inf allowed, a finite entry in every row, each row's
    spread finite), the state weights ``d`` (default ones), and a finite KL: ``support`` names
    the table that must have a finite logit wherever the other has one."""
    theta = float_array(theta, "theta", ndim=2, allow_neginf=True)
    theta_ref = float_array(theta_ref, "theta_ref", ndim=2, allow_neginf=True)
    same_shape("theta", theta, "theta_ref", theta_ref)
    nonempty(theta, "theta")
    d = np.ones(theta.shape[0]) if weights is None else float_array(
        weights, "weights", ndim=1, shape=(theta.shape[0],))
    for name, t in (("theta", theta), ("theta_ref", theta_ref)):
        m = t.max(axis=1, keepdims=True)                       # (S, 1)
        if not np.isfinite(m).all():
            raise ValueError(f"{name}: expected a finite entry in every row, got an all -inf row")
        with np.errstate(over="ignore"):
            z = t - m                                          # (S, V), <= 0
        finite_result(z[np.isfinite(t)], name, f"{name} - its row maximum")
    if support == "theta_ref" and ((theta > -np.inf) & (theta_ref == -np.inf)).any():
        raise ValueError("theta_ref: expected a finite logit wherever theta has one "
                         "(pi_ref > 0 wherever pi > 0, else the KL is infinite)")
    if support == "theta" and ((theta_ref > -np.inf) & (theta == -np.inf)).any():
        raise ValueError("theta: expected a finite logit wherever theta_ref has one "
                         "(pi > 0 wherever pi_ref > 0, else the KL is infinite)")
    return theta, theta_ref, d


def scalar_kl(beta, current_kl, target_kl, horizon, n_steps):
    """The arguments of the adaptive KL coefficient, as floats."""
    return (float_scalar(beta, "beta", low=0.0), float_scalar(current_kl, "current_kl"),
            float_scalar(target_kl, "target_kl", low=0.0, low_open=True),
            float_scalar(horizon, "horizon", low=0.0, low_open=True),
            float_scalar(n_steps, "n_steps", low=0.0))


def grpo_objective(logp, logp_old, logp_ref, adv, mask, eps, eps_high, beta, kl_estimator, agg,
                   max_len, estimators, aggs):
    """The arguments of the GRPO loss: ``(logp, logp_old, logp_ref, mask, adv, eps, eps_high,
    beta, max_len)``."""
    beta = float_scalar(beta, "beta", low=0.0)
    choice(kl_estimator, "kl_estimator", estimators)
    logp, logp_old, mask, adv, eps, eps_high, max_len = clip_objective(
        logp, logp_old, adv, mask, eps, eps_high, agg, max_len, aggs)
    logp_ref = float_array(logp_ref, "logp_ref", ndim=2)
    same_shape("logp", logp, "logp_ref", logp_ref)
    return logp, logp_old, logp_ref, mask, adv, eps, eps_high, beta, max_len


def grpo_step_args(policy, ref_policy, mdp, grader, rng, K, mu, lr, eps, eps_high, beta,
                   kl_estimator, agg, baseline, adv_eps, ddof, estimators, aggs, baselines):
    """The arguments of one GRPO step, before any draw: ``(K, mu, lr, eps, eps_high, beta,
    adv_eps, ddof)``; the policies are duck-typed ``TabularPolicy`` objects of the MDP's shape."""
    rng_check(rng, "rng")
    K = int_scalar(K, "K", low=1)
    mu = int_scalar(mu, "mu", low=1)
    lr = float_scalar(lr, "lr", low=0.0, low_open=True)
    eps, eps_high = clip_range(eps, eps_high)
    beta = float_scalar(beta, "beta", low=0.0)
    choice(kl_estimator, "kl_estimator", estimators)
    choice(agg, "agg", aggs)
    choice(baseline, "baseline", baselines)
    adv_eps = float_scalar(adv_eps, "adv_eps", low=0.0)
    ddof = int_scalar(ddof, "ddof", low=0, high=1)
    if baseline == "loo" and K < 2:
        raise ValueError(f"baseline: 'loo' (leave-one-out) needs K >= 2 (at K = 1 the rewards "
                         f"of a group have no others to average), got K = {K}")
    callable_check(grader, "grader", 2, "grader(prompt, response)")
    for name, p in (("policy", policy), ("ref_policy", ref_policy)):
        if not all(hasattr(p, a) for a in ("logp", "backward", "theta", "copy")):
            raise TypeError(f"{name}: expected a TabularPolicy, got {type(p).__name__}")
    if not all(hasattr(mdp, a) for a in ("rollout", "score", "S", "V", "_checkpoint")):
        raise TypeError(f"mdp: expected a TokenMDP, got {type(mdp).__name__}")
    if policy.theta.shape != (mdp.S, mdp.V):
        raise ValueError(f"policy: expected a table of shape (S, V) = ({mdp.S}, {mdp.V}) for "
                         f"mdp, got {policy.theta.shape}")
    if ref_policy.theta.shape != policy.theta.shape:
        raise ValueError(f"ref_policy: expected a table of the policy's shape "
                         f"{policy.theta.shape}, got {ref_policy.theta.shape}")
    return K, mu, lr, eps, eps_high, beta, adv_eps, ddof


def dual_clip_args(logp, logp_old, adv, mask, eps, eps_high, c, agg, max_len, aggs):
    """The arguments of the dual-clip surrogate: clip_objective's and a finite ``c`` (its domain
    ``c > 1`` is the estimator's own rule, checked in seqclip.py)."""
    logp, logp_old, mask, adv, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv)
    eps, eps_high = clip_range(eps, eps_high)
    c = float_scalar(c, "c")
    return logp, logp_old, mask, adv, eps, eps_high, c, aggregation(mask, agg, max_len, aggs)


def ratio_args(logp, logp_old, mask, ratio, ratios):
    """The arguments of a sequence ratio: ``(logp, logp_old, mask)``."""
    logp, logp_old, mask, _, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask)
    choice(ratio, "ratio", ratios)
    return logp, logp_old, mask


def gspo_args(logp, logp_old, adv, mask, eps, eps_high, ratio, ratios):
    """The arguments of GSPO: ``(logp, logp_old, mask, adv (B,), eps, eps_high)``."""
    logp, logp_old, mask, A, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv,
                                             per_token=False)
    eps, eps_high = clip_range(eps, eps_high)
    choice(ratio, "ratio", ratios)
    return logp, logp_old, mask, A, eps, eps_high


def cispo_args(logp, logp_old, adv, mask, rho_min, rho_max, agg, max_len, aggs):
    """The arguments of CISPO: ``(logp, logp_old, mask, adv, rho_min, rho_max, max_len)``."""
    logp, logp_old, mask, adv, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv)
    rho_max = float_scalar(rho_max, "rho_max", low=1.0)
    rho_min = None if rho_min is None else float_scalar(rho_min, "rho_min", low=0.0, high=1.0)
    return logp, logp_old, mask, adv, rho_min, rho_max, aggregation(mask, agg, max_len, aggs)


def is_weight_args(logp_old, logp_mu, mask, level, mode, c_max, c_min, levels, modes):
    """The arguments of the importance weights: ``(logp_old, logp_mu, mask, c_max, c_min)``."""
    logp_old, logp_mu, mask, _, _ = token_batch({"logp_old": logp_old, "logp_mu": logp_mu}, mask)
    choice(level, "level", levels)
    choice(mode, "mode", modes)
    c_max = None if c_max is None else float_scalar(c_max, "c_max", low=1.0)
    c_min = None if c_min is None else float_scalar(c_min, "c_min", low=0.0, high=1.0,
                                                    low_open=mode == "mask")
    return logp_old, logp_mu, mask, c_max, c_min


def opsm_args(logp, logp_mu, adv, mask, delta):
    """The arguments of the off-policy sequence mask: ``(logp, logp_mu, mask, adv (B,), delta)``."""
    logp, logp_mu, mask, A, _ = token_batch({"logp": logp, "logp_mu": logp_mu}, mask, adv,
                                            per_token=False)
    return logp, logp_mu, mask, A, float_scalar(delta, "delta", low=0.0)


def rejection_args(logp_old, logp_mu, mask, option, hi, lo, options):
    """The arguments of the rejection mask: ``(logp_old, logp_mu, mask, hi, lo)``; k1 bounds are
    ratio bounds ``lo <= 1 <= hi`` (lo default 1/hi), k2/k3 an upper bound ``hi > 0`` alone."""
    logp_old, logp_mu, mask, _, _ = token_batch({"logp_old": logp_old, "logp_mu": logp_mu}, mask)
    choice(option, "option", options)
    k1 = option.endswith("k1")
    hi = float_scalar(hi, "hi", low=1.0 if k1 else 0.0, low_open=not k1)
    if lo is not None and not k1:
        raise ValueError(f"lo: expected None for a k2/k3 option (upper bound only), got {lo}")
    lo = (1.0 / hi if lo is None else float_scalar(lo, "lo", low=0.0, low_open=True, high=1.0))
    return logp_old, logp_mu, mask, hi, lo


def corrected_pg_args(logp, adv, mask, weights, agg, max_len, aggs):
    """The arguments of REINFORCE with weights on data: ``(logp, mask, W, adv, max_len)``."""
    logp, mask, _, _ = token_batch({"logp": logp}, mask)
    W = float_array(weights, "weights", shape=mask.shape)
    if (W < 0).any():
        raise ValueError(f"weights: expected values >= 0, got min {W.min()}")
    return logp, mask, W, advantage(adv, mask), aggregation(mask, agg, max_len, aggs)


def minibatch_args(B, M, rng):
    """``(B, M, rng)``: 2**31 >= B >= M >= 1 ints (np.arange(2**63) is silently empty), rng a
    Generator or None."""
    B = int_scalar(B, "B", low=1, high=2 ** 31)
    M = int_scalar(M, "M", low=1, high=B)
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy.random.Generator or None, got "
                        f"{type(rng).__name__}")
    return B, M, rng


def accumulation_args(mask, G, mode, max_len, modes):
    """The arguments of the accumulation weights: ``(mask, G, L)``, G dividing B, L >= every
    response (default T)."""
    mask = mask_array(mask, "mask")
    B, T = mask.shape
    G = int_scalar(G, "G", low=1)
    if B == 0 or B % G:
        raise ValueError(f"G: expected a divisor of the batch size B = {B}, got {G}")
    choice(mode, "mode", modes)
    L = T if max_len is None else int_scalar(max_len, "max_len", low=1)
    if L < mask.sum(axis=1).max():
        raise ValueError(f"max_len: expected >= the longest response, got {L}")
    return mask, G, L


def logit_table(theta, name="theta"):
    """``(S, V)`` logits, non-empty, -inf allowed, a finite entry in every row."""
    theta = nonempty(float_array(theta, name, ndim=2, allow_neginf=True), name)
    if not np.isfinite(theta.max(axis=1)).all():
        raise ValueError(f"{name}: expected a finite entry in every row, got an all -inf row")
    return theta


def entropy_args(theta, states, mask, agg, max_len, aggs):
    """The arguments of the entropy bonus: ``(theta, states (B, T), mask, max_len)``."""
    theta = logit_table(theta)
    mask = mask_array(mask, "mask")
    states = int_array(states, "states", ndim=2, low=0, high=theta.shape[0])
    same_shape("mask", mask, "states", states)
    return theta, states, mask, aggregation(mask, agg, max_len, aggs)


def reward_groups(rewards):
    """Rewards ``(N, K)`` of dynamic sampling: finite, N, K >= 1 (no bound on |r|)."""
    r = float_array(rewards, "rewards", ndim=2)
    if r.shape[1] < 1:
        raise ValueError(f"rewards: expected K >= 1 responses per prompt, got shape {r.shape}")
    return nonempty(r, "rewards")                              # N >= 1 groups


def acceptance_args(p, K):
    """``(p, K)``: a probability in [0, 1] and a group size >= 1."""
    return float_scalar(p, "p", low=0.0, high=1.0), int_scalar(K, "K", low=1)


def overlong_args(lengths, max_len, buffer_len, penalty_factor):
    """``(lengths (B,) int64 in [0, max_len], max_len, buffer_len, penalty_factor)``; max_len
    <= 2**62 so that the lengths' arithmetic stays within int64."""
    max_len = int_scalar(max_len, "max_len", low=1, high=2 ** 62)
    buffer_len = int_scalar(buffer_len, "buffer_len", low=1, high=max_len)
    L = int_array(lengths, "lengths", ndim=1, low=0, high=max_len + 1)
    return L, max_len, buffer_len, float_scalar(penalty_factor, "penalty_factor", low=0.0)


def truncation_args(tokens, mask, eos):
    """``(tokens (B, T) int64 ids >= 0, mask (B, T), eos >= 0)``."""
    mask = mask_array(mask, "mask")
    tokens = int_array(tokens, "tokens", ndim=2, low=0)
    same_shape("mask", mask, "tokens", tokens)
    return tokens, mask, int_scalar(eos, "eos", low=0)


def loo_rewards(rewards, bound):
    """Rewards ``(N, K)`` for leave-one-out: group_rewards' and K >= 2."""
    r = group_rewards(rewards, bound)
    if r.shape[1] < 2:
        raise ValueError(f"rewards: leave-one-out needs K >= 2 responses per prompt "
                         f"(no others to average at K = 1), got shape {r.shape}")
    return r


def standardize_args(rewards, eps, ddof, bound):
    """``(r (N, K), eps, ddof)`` of a standardized baseline."""
    r = group_rewards(rewards, bound)
    return (r, *whitening(eps, ddof))


def broadcast_args(adv, mask):
    """``(adv (B,), mask (B, T))``: adv given as (B,) or (N, K) flattened prompt-major."""
    mask = mask_array(mask, "mask")
    a = float_array(adv, "adv")
    if a.ndim not in (1, 2):
        raise ValueError(f"adv: expected shape (B,) or (N, K), got {a.shape}")
    if a.ravel().shape != (mask.shape[0],):
        raise ValueError(f"adv: expected {mask.shape[0]} advantages (one per row of mask), "
                         f"got shape {np.shape(adv)}")
    return a.ravel(), mask


def rpp_args(token_rewards, mask, gamma, eps, ddof):
    """``(token_rewards (B, T), mask, gamma in [0, 1], eps, ddof)`` of REINFORCE++."""
    mask = mask_array(mask, "mask")
    r = float_array(token_rewards, "token_rewards", shape=mask.shape)
    gamma = float_scalar(gamma, "gamma", low=0.0, high=1.0)
    return (r, mask, gamma, *whitening(eps, ddof))


def rpp_baseline_args(rewards, mask, eps, ddof, bound):
    """``(r (N, K), mask (N*K, T), eps, ddof)`` of REINFORCE++-baseline."""
    r = group_rewards(rewards, bound)
    mask = mask_array(mask, "mask")
    if mask.shape[0] != r.size:
        raise ValueError(f"mask: expected {r.size} rows (one per response, B = N*K), "
                         f"got shape {mask.shape}")
    return (r, mask, *whitening(eps, ddof))


def remax_args(rewards, greedy_rewards, bound):
    """``(r (N, K), g (N,))`` of ReMax, both within ``|r| <= bound``."""
    r = group_rewards(rewards, bound)
    g = float_array(greedy_rewards, "greedy_rewards", ndim=1, shape=(r.shape[0],))
    if np.abs(g).max() > bound:
        raise ValueError(f"greedy_rewards: expected |r| <= {bound:g}, got max "
                         f"{np.abs(g).max():g}")
    return r, g


def opo_args(rewards, lengths, bound):
    """``(r (N, K), lengths (N, K) >= 0)`` of OPO."""
    r = group_rewards(rewards, bound)
    L = float_array(lengths, "lengths", shape=r.shape)
    if L.min() < 0:
        raise ValueError(f"lengths: expected >= 0, got min {L.min()}")
    return r, L


def toy_response(prompt, response, prompts, V):
    """The token id of a one-token ``response`` to one of ``prompts`` (tasks.py's toy)."""
    if not isinstance(prompt, str) or prompt not in prompts:
        raise ValueError(f"prompt: expected one of {list(prompts)}, got {prompt!r}"[:200])
    if (isinstance(response, (str, bytes)) or not hasattr(response, "__len__")
            or len(response) != 1):
        raise ValueError(f"response: expected a tuple of one token id (the toy's responses are "
                         f"one token), got {response!r}"[:200])
    y = response[0]
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Integral):
        raise TypeError(f"response: expected an integer token id, got {y!r}"[:200])
    if not 0 <= y < V:
        raise ValueError(f"response: expected a token id in [0, {V}), got {y}")
    return y


def grader_table(grader, graders, prompts, V, bound=None):
    """The ``(N, V)`` rewards of a grader (a name in ``graders`` or a callable) on every prompt
    and one-token response, each a finite number (``|R| <= bound`` if given)."""
    grader = graders[choice(grader, "grader", set(graders))] if isinstance(grader, str) else grader
    callable_check(grader, "grader", 2, "grader(prompt, response)")
    R = np.array([[real_result(grader(x, (y,)), "grader", f" (a finite reward) for {x!r}, {y}")
                   for y in range(V)] for x in prompts])
    return R if bound is None else grader_rewards(R, bound)


def grader_rewards(R, bound):
    """A grader's finite rewards ``R`` if every ``|R| <= bound`` (the advantages' domain), else a
    ValueError naming the grader (the rewards are its output, not an argument)."""
    if np.abs(R).max() > bound:
        raise ValueError(f"grader: expected rewards |R| <= {bound:g} (the advantages' domain), "
                         f"got max |R| = {np.abs(R).max():g}")
    return R


def toy_policy(policy, shape):
    """Raise unless ``policy`` holds a table ``theta`` of ``shape``."""
    got = getattr(getattr(policy, "theta", None), "shape", None)
    if got != shape:
        raise ValueError(f"policy: expected a TabularPolicy of shape ({shape[0]}, "
                         f"{shape[1]}) for the toy, got {type(policy).__name__} with shape {got}")
    return policy


def train_args(K, n_responses, seed, grader, beta, lr, baseline, record_at):
    """The arguments of tasks.train: ``(K, steps, seed, beta, lr, record_at (a set))``."""
    K = int_scalar(K, "K", low=1)
    n_responses = int_scalar(n_responses, "n_responses", low=K)
    beta = float_scalar(beta, "beta", low=0.0)
    lr = float_scalar(lr, "lr", low=0.0)
    seed = int_scalar(seed, "seed", low=0)
    choice(baseline, "baseline", {"standardized", "mean", "loo"})
    if not (isinstance(grader, str) or callable(grader)):
        raise TypeError(f"grader: expected 'gold', 'sloppy' or a callable, "
                        f"got {type(grader).__name__}")
    if isinstance(record_at, (str, bytes)) or not hasattr(record_at, "__iter__"):
        raise TypeError(f"record_at: expected a collection of step counts, "
                        f"got {type(record_at).__name__}")
    steps = n_responses // K
    record_at = {int_scalar(v, "record_at", low=1, high=steps) for v in record_at}
    if baseline == "loo" and K == 1:
        raise ValueError("baseline: leave-one-out needs K >= 2, got K = 1")
    return K, steps, seed, beta, lr, record_at


def token_agg(mask, agg, max_len, aggs):
    """``(mask, max_len)`` of the aggregation weights."""
    mask = mask_array(mask, "mask")
    return mask, aggregation(mask, agg, max_len, aggs)


def kl_is_args(logp, logp_old, logp_ref, mask, agg, max_len, aggs):
    """The arguments of the importance-weighted k3 (logp_ref checked before logp_old)."""
    logp, logp_ref, logp_old, mask, _, max_len = token_batch(
        {"logp": logp, "logp_ref": logp_ref, "logp_old": logp_old}, mask, agg=agg,
        max_len=max_len, aggs=aggs)
    return logp, logp_old, logp_ref, mask, max_len


def finite_surrogate(f, surr1, logp, logp_old, A):
    """The clipped surrogate's guard: every token's ``f`` (B, T) finite, else a ValueError
    naming logp at the first token whose ``rho A`` overflowed."""
    bad = ~np.isfinite(f)                                      # (B, T) real tokens only
    if bad.any():
        b, t = (int(i[0]) for i in np.nonzero(bad))
        raise ValueError(
            f"logp: expected logp - logp_old small enough that the surrogate is finite; at "
            f"[{b}, {t}] logp - logp_old = {float(logp[b, t]) - float(logp_old[b, t])} with A = "
            f"{float(A[b, t])} gives rho A = {float(surr1[b, t])} (rho = exp(logp - logp_old) "
            f"overflows float64 beyond ~709.78; with A < 0 the unclipped branch -inf is the "
            f"minimum)")
    return f


def resampling(a, p, K):
    """The acceptance probability ``a`` of dynamic sampling if > 0 (else resampling never ends)."""
    if a <= 0:
        raise ValueError(f"p: expected 0 < p < 1 (at p = {p} every group of K = {K} has equal "
                         f"rewards and resampling never ends)")
    return a
