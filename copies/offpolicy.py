# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/offpolicy.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/offpolicy.py -o DIR
# Files named below (tests/, examples/, docs/, scripts/) are files of the minirl_lm repository,
# and a page named below (the page "...") is a page of the minirl_lm documentation site.
#
# MIT License
#
# Copyright (c) 2026 the minirl_lm authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.

"""Off the policy: importance weights for a sampler mu that is not pi_old, and the normalizers.

Three policies: the sampler mu (the inference engine) drew the responses; pi_old is the trainer's
copy of the weights when they were drawn; pi_theta is being optimized. `logp_mu` and `logp_old`
are data, (B, T) like `logp`. With `r_t = pi_old(y_t | s_t) / mu(y_t | s_t)`:

```text
token IS        w_t = r_t                                          eq. (is_token)
sequence IS     w_t = W_b = prod_{t' <= |y_b|} r_t'  (every token)  eq. (is_seq)
truncated IS    w = min(max(r, c_min), c_max)    (TIS)              eq. (tis)
masked IS       w = r * 1[c_min <= r <= c_max]   (MIS, IcePop)      eq. (mis)
```

Only the sequence weight is exact: `E_{y ~ mu}[W(y) g(y)] = E_{y ~ pi_old}[g(y)]` for any g,
so untruncated sequence IS is unbiased. Token IS reweights the choice of each token and nothing
else: the prefix y_<t (the state the token is chosen in) and the continuation y_>t (the reward
its advantage credits it with) are still drawn from mu, so it is biased whenever mu != pi_old at
any position, the last included. Truncation and masking bound
the weight (lower variance) and give up exactness (bias). A bound that excludes 1 is rejected
(`c_max >= 1 >= c_min`): then mu = pi_old would not be the identity.

Two masks that drop whole sequences (weights 0/1 on data):

```text
TRL  keep_b = 1[A_b >= 0  or  (1/|y_b|) sum_t (logp_mu - logp) <= delta]      eq. (opsm)
verl keep   = 1[lo <= stat <= hi],  stat of k1 = log mu - log pi_old,
              k2 = (log r)^2 / 2, k3 = r - 1 - log r, per token or per
              sequence (sum, mean or max over its tokens)                      eq. (rejection)
```

(TRL's `off_policy_mask_threshold`, after DeepSeek-V3.2, compares mu with the current pi_theta
(`logp`, detached); verl's `rollout_rs` compares mu with pi_old; for k1 the bounds are ratio
bounds `lo, hi` applied as `log lo <= stat <= log hi`, hi alone meaning lo = 1/hi.)

The weights enter any objective as data. In REINFORCE (`corrected_pg_loss`):

```text
loss = -sum_{b,t} w_agg[b,t] w[b,t] A[b,t] logp[b,t],   dloss/dlogp = -w_agg w A    eq. (pg_is)
```

and in the clipped surrogate as `adv = w * A` (w >= 0, so `min(rho w A, clip(rho) w A)` is
`w min(rho A, clip(rho) A)`: verl and TRL multiply the per-token loss by the weight). With
mu = pi_old every weight is exactly 1.0, so the corrected loss and gradient are the uncorrected
ones bit for bit.

Mini-batches and gradient accumulation (`accumulation_weights`): a generation batch of B rows split
into G micro-batches of B/G rows, one backward each, summed. The weight each token gets in the
summed gradient, M = real tokens of the whole batch, M_g of micro-batch g (`n_g` in the code),
B_g = B/G rows:

```text
dapo   1/M                               (TRL: num_items_in_batch, the global count)  eq. (accum)
bnpo   1/(G M_g)                         (TRL: local token mean / G)
grpo   1/(G B_g |y_b|) = 1/(B |y_b|)     (per-sequence token mean / G)
dr_grpo 1/(G B_g L) = 1/(B L)            (constant L = max_len)
sum    1/M_g                             (local token mean, no / G: G times too large)
```

Each mode is compared with its own big-batch loss: dapo, grpo and dr_grpo reproduce it for any G
(the token mean 1/M, `seq_mean_token_mean`, `constant`); only bnpo, off the token mean by
M/(G M_g), a factor that differs between micro-batches, and the dropped 1/G are artefacts of
accumulation. Demonstrated by `python examples/off_policy.py` and `examples/confusions.py`.

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

```text
is_weights                   TRL vllm_importance_sampling_correction (True), _mode, _clip_max
                             (3.0); verl algorithm.rollout_correction.rollout_is (null in the yaml,
                              "sequence" in the dataclass),
                             rollout_is_threshold (2.0); OpenRLHF
                             --algo.advantage.is_correction_level (off), _mode (mask), _gating
                             (ratio), _threshold (0.5 5.0)
rejection_mask               verl algorithm.rollout_correction.rollout_rs (null),
                             rollout_rs_threshold
off_policy_sequence_mask     TRL off_policy_mask_threshold (None)
accumulation_weights "dapo"  TRL loss_type="dapo"; verl loss_agg_mode="token-mean" (global token
                             count)
corrected_pg_loss agg        as in reinforce.py
```
"""

import numbers

import numpy as np


__all__ = ["is_weights", "off_policy_sequence_mask", "rejection_mask", "corrected_pg_loss",
    "minibatch_rows", "accumulation_weights"]


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


AGGS = ("seq_sum", "token_mean", "seq_mean_token_mean", "constant", "token_sum")


def agg_weights(mask, agg, max_len=None):
    """Per-token weights `w` (B, T) of aggregation `agg` over a checked 0/1 `mask` (B, T), eq.
    (pg_agg)."""
    B, T = mask.shape
    if agg == "token_sum":
        return mask.copy()  # (B, T) no normalizer at all
    if agg == "seq_sum":
        return mask / B  # (B, T)
    lengths = mask.sum(axis=1, keepdims=True)  # (B, 1) |y_b|
    if agg == "token_mean":
        return mask / max(lengths.sum(), 1.0)  # (B, T)
    if agg == "seq_mean_token_mean":
        return mask / (B * np.maximum(lengths, 1.0))  # (B, T) length 0: 0 / 1
    return mask / (B * (T if max_len is None else max_len))  # (B, T) "constant"


def adv_tokens(adv, mask):
    """A checked advantage of shape (B,) or (B, T) as (B, T): a (B,) advantage is put on every
    column (padding is weighted 0 by the caller's `w`, or multiply by `mask`)."""
    if adv.ndim == 1:
        return np.broadcast_to(adv[:, None], mask.shape)  # (B, T)
    return adv


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


# ----------------------------------------------------------------------------------------------
# minirl_lm/pg/offpolicy.py itself
# ----------------------------------------------------------------------------------------------


LEVELS = ("token", "sequence")
MODES = ("truncate", "mask")
REJECTION = tuple(
    f"{a}_{k}"
    for a in ("token", "seq_sum", "seq_mean", "seq_max")
    for k in ("k1", "k2", "k3")
    if (a, k) != ("seq_max", "k1")
)
ACCUM = ("dapo", "bnpo", "grpo", "dr_grpo", "sum")


def _log_ratio(a, b, mask):
    """a - b (B, T), exactly 0 at padding; +-inf where the difference overflows float64."""
    with np.errstate(over="ignore"):
        return log_ratio(a, b, mask)


def is_weights(logp_old, logp_mu, mask, level="sequence", mode="truncate", c_max=None, c_min=None):
    """Importance weights pi_old/mu on data, eqs. (is_token), (is_seq), (tis), (mis).

    Args:
        logp_old: (B, T) token log-probs under pi_old (the trainer).
        logp_mu: (B, T) token log-probs under the sampler mu.
        mask: (B, T) 0/1; holes allowed (untrained positions inside a row).
        level: "token" (one ratio per token) or "sequence" (the product over the trained tokens,
            holes skipped, on every trained token).
        mode: "truncate" (clip into `[c_min, c_max]`) or "mask" (0 outside it).
        c_max: upper bound `>= 1`, or None (none). Both None: plain, untruncated IS.
        c_min: lower bound in `(0, 1]` for "mask", `[0, 1]` for "truncate", or None.

    Returns:
        (B, T) weights, 0 at padding, exactly 1.0 on every real token when logp_old == logp_mu.

    Raises:
        ValueError: bad shapes, a bound excluding 1, or an untruncated weight that overflows.
    """
    logp_old, logp_mu, mask, c_max, c_min = is_weight_args(
        logp_old, logp_mu, mask, level, mode, c_max, c_min, LEVELS, MODES
    )
    u = _log_ratio(logp_old, logp_mu, mask)  # (B, T) log r_t, 0 at padding
    with np.errstate(over="ignore", invalid="ignore"):  # inf, NaN: rejected below
        if level == "sequence":
            u = np.broadcast_to(u.sum(axis=1, keepdims=True), u.shape)  # (B, T) eq. (is_seq)
        r = np.exp(u)  # (B, T) eq. (is_token); inf if huge
    if mode == "truncate":
        w = r if c_max is None else np.minimum(r, c_max)  # eq. (tis)
        w = w if c_min is None else np.maximum(w, c_min)
    else:
        keep = np.ones(r.shape, bool) if c_max is None else r <= c_max
        keep = keep if c_min is None else keep & (r >= c_min)
        w = np.where(keep, r, 0.0)  # eq. (mis)
    if not np.isfinite(w).all():
        raise ValueError(
            f"logp_mu: expected log(pi_old / mu) small enough for a finite "
            f"{level} weight, got one beyond exp(~709.78); truncate it (c_max)"
        )
    return w * mask  # (B, T)


def off_policy_sequence_mask(logp, logp_mu, adv, mask, delta):
    """TRL's off-policy sequence mask, eq. (opsm): 0 on sequences with A < 0 and a large KL.

    Args:
        logp: (B, T) log-probs under the current pi_theta (treated as data).
        logp_mu: (B, T) log-probs under the sampler.
        adv: (B,) one advantage per response.
        mask: (B, T) 0/1; holes allowed (untrained positions inside a row).
        delta: the threshold `>= 0` on the mean of `logp_mu - logp` over the response.

    Returns:
        (B, T) 0/1 weights (the kept sequences' real tokens).
    """
    logp, logp_mu, mask, A, delta = opsm_args(logp, logp_mu, adv, mask, delta)
    with np.errstate(over="ignore", invalid="ignore"):  # inf or NaN kl: not <= delta
        kl = _log_ratio(logp_mu, logp, mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)  # (B,)
    keep = (A >= 0) | (kl <= delta)  # (B,) eq. (opsm)
    return keep[:, None] * mask  # (B, T)


def rejection_mask(logp_old, logp_mu, mask, option="seq_mean_k1", hi=2.0, lo=None):
    """verl's rollout rejection mask, eq. (rejection): 0 where the statistic is out of bounds.

    Args:
        logp_old: (B, T) log-probs under pi_old and the sampler.
        logp_mu: see `logp_old`.
        mask: (B, T) 0/1; holes allowed (untrained positions inside a row).
        option: one of REJECTION, e.g. "token_k1", "seq_sum_k3", "seq_mean_k1", "seq_max_k2".
        hi: upper bound `> 0` (a ratio bound for k1, `>= 1`; a divergence bound for k2, k3).
        lo: k1 only, the lower ratio bound in `(0, 1]` (default 1/hi).

    Returns:
        (B, T) 0/1 weights, a sequence option keeping or dropping whole rows.
    """
    logp_old, logp_mu, mask, hi, lo = rejection_args(logp_old, logp_mu, mask, option, hi, lo, REJECTION)
    k1 = option.endswith("k1")
    lr = _log_ratio(logp_old, logp_mu, mask)  # (B, T) log r
    # a statistic beyond float64 (inf, or NaN from inf - inf) is out of bounds: the row is dropped
    with np.errstate(over="ignore", invalid="ignore"):
        stat = {"k1": -lr, "k2": 0.5 * lr**2, "k3": np.expm1(lr) - lr}[option[-2:]]  # (B, T)
        agg = option[:-3]
        n = np.maximum(mask.sum(axis=1, keepdims=True), 1.0)  # (B, 1)
        if agg == "seq_sum":
            stat = np.broadcast_to((stat * mask).sum(axis=1, keepdims=True), mask.shape)
        elif agg == "seq_mean":
            stat = np.broadcast_to((stat * mask).sum(axis=1, keepdims=True) / n, mask.shape)
        elif agg == "seq_max":
            stat = np.broadcast_to(
                np.where(mask > 0, stat, -np.inf).max(axis=1, keepdims=True, initial=-np.inf), mask.shape
            )
        keep = (stat >= np.log(lo)) & (stat <= np.log(hi)) if k1 else stat <= hi  # eq. (rejection)
    return keep * mask  # (B, T)


def corrected_pg_loss(logp, adv, mask, weights, agg="token_mean", max_len=None):
    """REINFORCE with importance weights on data, eq. (pg_is).

    Args:
        logp: (B, T) token log-probs under pi_theta.
        adv: (B,) or (B, T) advantages.
        mask: (B, T) 0/1; holes allowed (untrained positions inside a row).
        weights: (B, T) nonnegative finite weights (from is_weights, the masks, or their product).
        agg: the aggregation of eq. (pg_agg).
        max_len: see `agg`.

    Returns:
        `(loss, dloss_dlogp)`; with weights equal to 1.0 on real tokens, bitwise the values of
        `reinforce.reinforce_loss`.
    """
    logp, mask, W, adv, max_len = corrected_pg_args(logp, adv, mask, weights, agg, max_len, AGGS)
    A = adv_tokens(adv, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len) * W  # (B, T) w_agg w
    with np.errstate(over="ignore", invalid="ignore"):  # inf: rejected below
        loss = -(w * A * logp).sum()  # eq. (pg_is)
        dloss_dlogp = -w * A  # (B, T) weights are data
    if not (np.isfinite(loss) and np.isfinite(dloss_dlogp).all()):
        raise ValueError(
            "weights: expected weights small enough for a finite loss, got a non-finite loss or gradient"
        )
    return float(loss), dloss_dlogp


def minibatch_rows(B, M, rng=None):
    """Split rows 0..B-1 into M mini-batches (a list of int64 arrays), in order or shuffled.

    2**31 >= B >= M >= 1; sizes differ by at most one (np.array_split). rng: optional Generator; with
    one, the rows are permuted first (one draw of `rng.permutation`).
    """
    B, M, rng = minibatch_args(B, M, rng)
    rows = np.arange(B) if rng is None else rng.permutation(B)
    return [r.astype(np.int64) for r in np.array_split(rows, M)]


def accumulation_weights(mask, G, mode="dapo", max_len=None):
    """Per-token weight in the gradient summed over G micro-batches, eq. (accum).

    Args:
        mask: (B, T) the whole generation batch, right-padded; B divisible by G.
        G: number of micro-batches (consecutive blocks of B/G rows).
        mode: one of ACCUM ("dapo", "bnpo", "grpo", "dr_grpo", "sum").
        max_len: the constant L of "dr_grpo" (default T).

    Returns:
        (B, T) weights; a big batch's token mean is `mask / mask.sum()`.
    """
    mask, G, L = accumulation_args(mask, G, mode, max_len, ACCUM)
    B = mask.shape[0]
    N = max(mask.sum(), 1.0)
    out = np.zeros_like(mask)
    for g in range(G):  # one backward per micro-batch
        m = mask[g * B // G : (g + 1) * B // G]  # (B/G, T)
        n_g = max(m.sum(), 1.0)
        if mode == "dapo":
            w = m / N  # global token count
        elif mode == "bnpo":
            w = m / n_g / G  # local token mean, / G
        elif mode == "grpo":
            w = m / (m.shape[0] * np.maximum(m.sum(axis=1, keepdims=True), 1.0)) / G
        elif mode == "dr_grpo":
            w = m / (m.shape[0] * L) / G
        else:
            w = m / n_g  # forgot / G
        out[g * B // G : (g + 1) * B // G] = w  # eq. (accum)
    return out


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/checks.py
#   The boundary of the policy-gradient part, token level: one bundle call per public function
# ----------------------------------------------------------------------------------------------


_UNSET = object()  # an argument the bundle was not given (None is an input to reject)


def token_batch(logps, mask, adv=_UNSET, agg=_UNSET, max_len=None, aggs=(), per_token=True):
    """Check a token-level batch; returns ``(*arrays, mask, adv, max_len)``. logps: ``{name:
    array}`` of ``(B, T)`` arrays (log-probs, weights), the first one the shape the others and
    the 0/1 ``mask`` (holes allowed) must have; adv: ``(B,)``, or ``(B, T)`` too if
    ``per_token`` (returned as given, None if not passed); agg: one of ``aggs`` (unchecked if
    not passed); max_len: None or an int >= 1, and for ``"constant"`` at least the longest
    response (the most trained tokens in a row)."""
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


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it. ndim: required number of dimensions
    (None: any). shape: required shape; a None entry matches any length. finite: reject NaN
    and +-inf; with ``allow_neginf`` a -inf entry is allowed (log-probabilities of impossible
    tokens), NaN and +inf never are."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(x)}")
    arr = _asarray(x, name)
    if arr.dtype.kind not in "fiub":  # float, int, uint, bool
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


def mask_array(x, name, shape=None, prefix=None):
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted)."""
    arr = float_array(x, name, ndim=2, shape=shape)
    nonempty(arr, name)  # B >= 1 responses, T >= 1 positions
    binary = (arr == 0.0) | (arr == 1.0)
    if not binary.all():
        bad = arr[~binary]
        raise ValueError(f"{name}: expected only 0 and 1, got value {float(bad.flat[0])!r}")
    if prefix is None:
        return arr
    rises = arr[:, 1:] > arr[:, :-1]  # (B, T - 1): a 1 after a 0
    if rises.any():
        what, where = prefix
        row = int(np.nonzero(rises.any(axis=1))[0][0])
        raise ValueError(
            f"{name}: expected right padding (1s then 0s in each row) for {what}, "
            f"row {row} is {arr[row].astype(int).tolist()}; a mask with holes (tool outputs) "
            f"is accepted by the token-level objectives; here use {where}"
        )
    return arr


def same_shape(name_a, a, name_b, b):
    """Raise unless arrays ``a`` and ``b`` have the same shape (no broadcasting)."""
    for nm, x in ((name_a, a), (name_b, b)):
        if not isinstance(getattr(x, "shape", None), tuple):
            raise TypeError(f"{nm}: expected an array, got {_describe(x)}")
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {a.shape}, got {b.shape}")


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
    x = _float(x, name, "a finite number")
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
        raise TypeError(
            f"{name}: expected one of {sorted(options, key=str)}, got unhashable {_describe(x)}"
        ) from None
    if isinstance(x, bool) or x not in options:  # True == 1 must not pick option 1
        raise ValueError(f"{name}: expected one of {sorted(options, key=str)}, got {x!r}")
    return x


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


def _asarray(x, name):
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:  # ragged nesting, huge ints
        raise TypeError(f"{name}: expected an array, got {_describe(x)} ({e})") from None


def _check_shape(arr, name, ndim, shape):
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, got shape {arr.shape}")
    if shape is not None:
        ok = len(shape) == arr.ndim and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = ", ".join("any" if s is None else str(s) for s in shape)
            want = f"({want},)" if len(shape) == 1 else f"({want})"  # as Python prints a tuple
            raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")


def _float(x, name, expected):
    """A checked real number as a finite Python float (an int beyond float64 is not finite)."""
    try:
        x = float(x)
    except OverflowError:
        raise ValueError(
            f"{name}: expected {expected}, got an integer of {int(x).bit_length()} bits, beyond float64"
        ) from None
    if not np.isfinite(x):
        raise ValueError(f"{name}: expected {expected}, got {x}")
    return x
