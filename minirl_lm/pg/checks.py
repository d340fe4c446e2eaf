"""The boundary of the policy-gradient part, token level: one bundle call per public function
of `pg/entropy.py`, `entropy_knobs.py` and the exact KL of `kl.py` (the other estimators
declare theirs with `boundary.py`), checking the whole
argument set once (in the order a reader passes it) and returning the arrays the math trusts.
Built on `core/checks.py`; NumPy only."""

import numpy as np

from minirl_lm.core.checks import (
    choice,
    finite_result,
    float_array,
    float_scalar,
    int_array,
    int_scalar,
    mask_array,
    nonempty,
    same_shape,
)

_UNSET = object()  # an argument the bundle was not given (None is an input to reject)


def token_batch(logps, mask, adv=_UNSET, agg=_UNSET, max_len=None, aggs=(), per_token=True):
    """Check a token-level batch; returns ``(*arrays, mask, adv, max_len)``.

    logps: ``{name: array}`` of ``(B, T)`` arrays (log-probs, weights), the first one the
        shape the others and the 0/1 ``mask`` (holes allowed) must have;
    adv: ``(B,)``, or ``(B, T)`` too if ``per_token`` (returned as given, None if not passed);
    agg: one of ``aggs`` (unchecked if not passed); max_len: None or an int >= 1, and for
        ``"constant"`` at least the longest response (the most trained tokens in a row).
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
    n = mask.sum(axis=1).max()  # the most trained tokens in a row (holes not counted)
    if agg == "constant" and max_len is not None and max_len < n:
        raise ValueError(f"max_len: expected >= the longest response ({int(n)} trained tokens), got {max_len}")
    return max_len


def clip_range(eps, eps_high):
    """``(eps, eps_high)``: eps in (0, 1], eps_high > 0 (default eps)."""
    eps = float_scalar(eps, "eps", low=0.0, low_open=True, high=1.0)
    return eps, (eps if eps_high is None else float_scalar(eps_high, "eps_high", low=0.0, low_open=True))


def clip_objective(logp, logp_old, adv, mask, eps, eps_high, agg, max_len, aggs):
    """The arguments of the clipped surrogate: ``(logp, logp_old, mask, adv, eps, eps_high,
    max_len)``."""
    logp, logp_old, mask, adv, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv)
    eps, eps_high = clip_range(eps, eps_high)
    return logp, logp_old, mask, adv, eps, eps_high, aggregation(mask, agg, max_len, aggs)


def kl_tables(theta, theta_ref, weights, support):
    """Two ``(S, V)`` logit tables (-inf allowed, a finite entry in every row, each row's
    spread finite), the state weights ``d`` (default ones), and a finite KL: ``support`` names
    the table that must have a finite logit wherever the other has one."""
    theta = float_array(theta, "theta", ndim=2, allow_neginf=True)
    theta_ref = float_array(theta_ref, "theta_ref", ndim=2, allow_neginf=True)
    same_shape("theta", theta, "theta_ref", theta_ref)
    nonempty(theta, "theta")
    d = (
        np.ones(theta.shape[0])
        if weights is None
        else float_array(weights, "weights", ndim=1, shape=(theta.shape[0],))
    )
    for name, t in (("theta", theta), ("theta_ref", theta_ref)):
        m = t.max(axis=1, keepdims=True)  # (S, 1)
        if not np.isfinite(m).all():
            raise ValueError(f"{name}: expected a finite entry in every row, got an all -inf row")
        with np.errstate(over="ignore"):
            z = t - m  # (S, V), <= 0
        finite_result(z[np.isfinite(t)], name, f"{name} - its row maximum")
    if support == "theta_ref" and ((theta > -np.inf) & (theta_ref == -np.inf)).any():
        raise ValueError(
            "theta_ref: expected a finite logit wherever theta has one "
            "(pi_ref > 0 wherever pi > 0, else the KL is infinite)"
        )
    if support == "theta" and ((theta_ref > -np.inf) & (theta == -np.inf)).any():
        raise ValueError(
            "theta: expected a finite logit wherever theta_ref has one "
            "(pi > 0 wherever pi_ref > 0, else the KL is infinite)"
        )
    return theta, theta_ref, d


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
