"""The boundary of the policy-gradient part, token level: one bundle call per public function
of `pg/seqclip.py`, `offpolicy.py`, `trust.py` and `klsequence.py` (the other modules of the
part declare theirs with `boundary.py`), checking the whole
argument set once (in the order a reader passes it) and returning the arrays the math trusts.
Built on `core/checks.py`; NumPy only."""

import numpy as np

from minirl_lm.core.checks import (
    choice,
    finite_result,
    float_array,
    float_scalar,
    int_scalar,
    mask_array,
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


def finite_among(value, what, arrays):
    """``finite_result(value, name, what)`` for a value (or a flat tuple) computed from several
    ``arrays`` (``{name: array}``), the ``name`` picked only on failure: the array of largest
    magnitude, the input that drove the overflow (a log-prob of 1e308, not the ordinary one it
    was subtracted from; the first name on a tie)."""
    if all(np.isfinite(v).all() for v in (value if isinstance(value, tuple) else (value,))):
        return value
    big = {n: float(np.abs(a).max(initial=0.0)) for n, a in arrays.items()}
    return finite_result(value, max(big, key=big.get), what)


def dual_clip_args(logp, logp_old, adv, mask, eps, eps_high, c, agg, max_len, aggs):
    """The arguments of the dual-clip surrogate: the clipped surrogate's and a finite ``c`` (its domain
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
    logp, logp_old, mask, A, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv, per_token=False)
    eps, eps_high = clip_range(eps, eps_high)
    choice(ratio, "ratio", ratios)
    return logp, logp_old, mask, A, eps, eps_high


def cispo_args(logp, logp_old, adv, mask, rho_min, rho_max, agg, max_len, aggs):
    """The arguments of CISPO: ``(logp, logp_old, mask, adv, rho_min, rho_max, max_len)``."""
    logp, logp_old, mask, adv, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv)
    rho_max = float_scalar(rho_max, "rho_max", low=1.0)
    rho_min = None if rho_min is None else float_scalar(rho_min, "rho_min", low=0.0, high=1.0)
    return logp, logp_old, mask, adv, rho_min, rho_max, aggregation(mask, agg, max_len, aggs)


def trust_args(logp, logp_old, adv, mask, agg, max_len, aggs, domains, values, per_token=True):
    """The arguments of a trust-region objective (trust.py): ``(logp, logp_old, mask, adv,
    max_len, *values)``; ``domains`` maps each number's name to ``(low, low_open, optional)``,
    ``values`` the numbers in that order (an optional one may be None: off); ``aggs=()``: no agg."""
    logp, logp_old, mask, adv, _ = token_batch(
        {"logp": logp, "logp_old": logp_old}, mask, adv, per_token=per_token
    )
    vals = [
        None if v is None and o else float_scalar(v, n, low=lo, low_open=op)
        for (n, (lo, op, o)), v in zip(domains.items(), values)
    ]
    return (logp, logp_old, mask, adv, aggregation(mask, agg, max_len, aggs) if aggs else None, *vals)


def is_weight_args(logp_old, logp_mu, mask, level, mode, c_max, c_min, levels, modes):
    """The arguments of the importance weights: ``(logp_old, logp_mu, mask, c_max, c_min)``."""
    logp_old, logp_mu, mask, _, _ = token_batch({"logp_old": logp_old, "logp_mu": logp_mu}, mask)
    choice(level, "level", levels)
    choice(mode, "mode", modes)
    c_max = None if c_max is None else float_scalar(c_max, "c_max", low=1.0)
    c_min = None if c_min is None else float_scalar(c_min, "c_min", low=0.0, high=1.0, low_open=mode == "mask")
    return logp_old, logp_mu, mask, c_max, c_min


def opsm_args(logp, logp_mu, adv, mask, delta):
    """The arguments of the off-policy sequence mask: ``(logp, logp_mu, mask, adv (B,), delta)``."""
    logp, logp_mu, mask, A, _ = token_batch({"logp": logp, "logp_mu": logp_mu}, mask, adv, per_token=False)
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
    lo = 1.0 / hi if lo is None else float_scalar(lo, "lo", low=0.0, low_open=True, high=1.0)
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
    B = int_scalar(B, "B", low=1, high=2**31)
    M = int_scalar(M, "M", low=1, high=B)
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy.random.Generator or None, got {type(rng).__name__}")
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
        raise ValueError(f"max_len: expected >= the longest response (its trained tokens), got {L}")
    return mask, G, L


def kl_is_args(logp, logp_old, logp_ref, mask, agg, max_len, aggs):
    """The arguments of the importance-weighted k3 (logp_ref checked before logp_old)."""
    logp, logp_ref, logp_old, mask, _, max_len = token_batch(
        {"logp": logp, "logp_ref": logp_ref, "logp_old": logp_old}, mask, agg=agg, max_len=max_len, aggs=aggs
    )
    return logp, logp_old, logp_ref, mask, max_len
