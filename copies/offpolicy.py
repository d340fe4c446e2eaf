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

Each public function declares its arguments with `boundary`; a non-finite result from finite
input (an untruncated weight beyond float64, say) is a ValueError naming the function and the
range of its inputs.

Names in the frameworks (`docs/next.md` in the minirl_lm repository has their versions, files
and defaults); the values in parentheses are their defaults, not results of this library.

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

import functools
import inspect
import numbers

import numpy as np


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


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


# minirl_lm/pg/offpolicy.py itself -------------------------------------------------------------


__all__ = [
    "LEVELS",
    "MODES",
    "REJECTION",
    "ACCUM",
    "is_weights",
    "off_policy_sequence_mask",
    "rejection_mask",
    "corrected_pg_loss",
    "minibatch_rows",
    "accumulation_weights",
]

LEVELS = ("token", "sequence")
MODES = ("truncate", "mask")
REJECTION = tuple(
    f"{a}_{k}"
    for a in ("token", "seq_sum", "seq_mean", "seq_max")
    for k in ("k1", "k2", "k3")
    if (a, k) != ("seq_max", "k1")
)
ACCUM = ("dapo", "bnpo", "grpo", "dr_grpo", "sum")
ROWS_MAX = 2**20  # a batch beyond is no batch: 2**31 rows exhausted memory (and np.arange(2**63) is empty)


def _generator_or_none(rng, name, dims):
    """None, or a `np.random.Generator`; a wrong one is named by its type alone (the engine's
    `generator` shows its repr, which for a `RandomState` holds a memory address: a message that
    differs from run to run)."""
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name}: expected a numpy.random.Generator or None, got {type(rng).__name__}")
    return rng


def _floor_of_a_mask(mode, c_min):
    """`mode="mask"` drops the tokens below `c_min`: a floor of 0 drops none, so it is > 0."""
    if mode == "mask" and c_min == 0.0:
        return "c_min: expected a number > 0 and <= 1 for mode='mask' (None: no floor), got 0.0"


def _ratio_bounds(option, hi, lo):
    """k1 bounds are ratio bounds `lo <= 1 <= hi` (lo default 1/hi); k2, k3 an upper bound alone."""
    if option.endswith("k1") and hi < 1.0:
        return f"hi: expected a number >= 1 (a ratio bound of {option}), got {hi}"
    if not option.endswith("k1") and lo is not None:
        return f"lo: expected None for a k2/k3 option (upper bound only), got {lo}"


def _rows_to_split(B, M):
    """`M <= B <= 2**20` rows."""
    if B > ROWS_MAX:
        return f"B: expected an integer <= {ROWS_MAX} (2**20 rows), got {B}"
    if M > B:
        return f"M: expected an integer <= {B} (B, the rows to split), got {M}"


def _micro_batches(mask, G, max_len):
    """`G` divides the batch's `B` rows; `max_len` (the `L` of dr_grpo) covers every response."""
    B = mask.shape[0]
    if B % G:
        return f"G: expected a divisor of the batch size B = {B}, got {G}"
    n = int(mask.sum(axis=1).max())
    if max_len is not None and max_len < n:
        return f"max_len: expected >= the longest response ({n} trained tokens), got {max_len}"


def is_weights(logp_old, logp_mu, mask, *, level="sequence", mode="truncate", c_max=None, c_min=None):
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
        ValueError: a bad argument (named; a bound excluding 1), or a weight beyond float64
            (named after the function: truncate it with `c_max`).
    """
    u = log_ratio(logp_old, logp_mu, mask)  # (B, T) log r_t, 0 at padding
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
        (B, T) 0/1 weights (the kept sequences' real tokens); an infinite or NaN mean log-ratio
        (beyond float64) is not `<= delta`.

    Raises:
        ValueError: a bad argument (named).
    """
    kl = log_ratio(logp_mu, logp, mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)  # (B,)
    keep = (adv >= 0) | (kl <= delta)  # (B,) eq. (opsm)
    return keep[:, None] * mask  # (B, T)


def rejection_mask(logp_old, logp_mu, mask, *, option="seq_mean_k1", hi=2.0, lo=None):
    """verl's rollout rejection mask, eq. (rejection): 0 where the statistic is out of bounds.

    Args:
        logp_old: (B, T) log-probs under pi_old.
        logp_mu: (B, T) log-probs under the sampler.
        mask: (B, T) 0/1; holes allowed (untrained positions inside a row).
        option: one of REJECTION, e.g. "token_k1", "seq_sum_k3", "seq_mean_k1", "seq_max_k2".
        hi: upper bound `> 0` (a ratio bound for k1, `>= 1`; a divergence bound for k2, k3).
        lo: k1 only, the lower ratio bound in `(0, 1]` (default 1/hi).

    Returns:
        (B, T) 0/1 weights, a sequence option keeping or dropping whole rows; a statistic beyond
        float64 (inf, or NaN from inf - inf) is out of bounds: the row is dropped.

    Raises:
        ValueError: a bad argument (named): `hi < 1` for k1, a `lo` for k2/k3.
    """
    k1 = option.endswith("k1")
    lo = 1.0 / hi if lo is None else lo
    lr = log_ratio(logp_old, logp_mu, mask)  # (B, T) log r
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

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
    A = adv_tokens(adv, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len) * weights  # (B, T) w_agg w
    loss = -(w * A * logp).sum()  # eq. (pg_is)
    return float(loss), -w * A  # (B, T) weights are data


def minibatch_rows(B, M, rng=None):
    """Split rows 0..B-1 into M mini-batches (a list of int64 arrays), in order or shuffled.

    Args:
        B: the rows, `1 <= B <= 2**20` (a million rows split in about a second).
        M: the mini-batches, `1 <= M <= B`; their sizes differ by at most one (np.array_split).
        rng: None (in order), or a Generator: the rows are permuted first (one draw of
            `rng.permutation`; a call that raises draws nothing).

    Returns:
        A list of `M` int64 arrays.

    Raises:
        ValueError: `B` or `M` out of range (named).
        TypeError: an `rng` that is not a Generator.
    """
    rows = np.arange(B) if rng is None else rng.permutation(B)
    return [r.astype(np.int64) for r in np.array_split(rows, M)]


def accumulation_weights(mask, G, mode="dapo", max_len=None):
    """Per-token weight in the gradient summed over G micro-batches, eq. (accum).

    Args:
        mask: (B, T) the whole generation batch; holes allowed (a row's `|y_b|` counts its
            trained tokens, so a row with holes weighs as its compacted row).
        G: number of micro-batches (consecutive blocks of B/G rows), a divisor of B.
        mode: one of ACCUM ("dapo", "bnpo", "grpo", "dr_grpo", "sum").
        max_len: the constant L of "dr_grpo" (default T), at least the longest response.

    Returns:
        (B, T) weights; a big batch's token mean is `mask / mask.sum()`.

    Raises:
        ValueError: a bad argument (named): a `G` not dividing B, a `max_len` shorter than a
            response.
    """
    B, T = mask.shape
    L = T if max_len is None else max_len
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


# the declared boundary: from minirl_lm/boundary.py --------------------------------------------
#   The declared boundary: one engine applies the contracts each function declares beside it.
#   A declared function binds its arguments by keyword, reads each with its kind (a valid form
#   comes back converted, arrays as fresh float64 copies; anything else raises a TypeError or
#   ValueError starting with the argument's name), checks the relations, runs the body, and
#   refuses a non-finite result with one ValueError naming the function. `f.core` is the body.


def boundary(where=(), returns="", args=None, **kinds):
    """Declare the kinds of a function's arguments (`name=kind`), the relations between them
    (`where=[rule, ...]`) and the names of its results (`returns="loss grad"`)."""
    kinds = {**kinds, **(args or {})}

    def declare(f):
        sig = inspect.signature(f)
        rules = [(r, list(inspect.signature(r).parameters)) for r in where]

        @functools.wraps(f)
        def checked(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a, dims = bound.arguments, {}
            for name, read in kinds.items():
                a[name] = read(a[name], name, dims)
            for rule, params in rules:
                if (msg := rule(**{p: a[p] for p in params if p in a})) is not None:
                    raise ValueError(msg)
            with np.errstate(all="ignore"):
                out = f(*bound.args, **bound.kwargs)
            if returns is None:
                return out
            numeric = {n: a[n] for n in kinds if isinstance(a[n], (float, np.ndarray))}  # not ints, options
            return finite(out, f.__name__, returns.split(), numeric)

        checked.core, checked.kinds = f, dict(kinds)  # the body, and what it declares
        checked.returns = returns.split() if returns else None  # the results' names, if declared
        return checked

    return declare


def finite(out, fname, names, inputs):
    """`out` (a number, an array or a tuple of them) if every entry is finite, else the
    ValueError of step 6: `fname`, the results `names` that overflowed, the ranges of
    `inputs`."""
    leaves = [_flat(v) for v in (out if isinstance(out, tuple) else (out,))]  # one per result
    bad = [i for i, v in enumerate(leaves) if not np.isfinite(v).all()]
    if not bad:
        return out
    what = " and ".join(names[i] if i < len(names) else f"result {i}" for i in bad)
    kind = "NaN" if any(np.isnan(leaves[i]).any() for i in bad) else "inf"
    given = ", ".join(
        f"{n} in [{np.min(v):g}, {np.max(v):g}]" if np.ndim(v) else f"{n} = {v:g}"
        for n, v in inputs.items()
        if v is not None
    )
    raise ValueError(f"{fname}: expected a finite {what}, got {kind} (beyond float64) from {given}")


def _flat(v):
    """Every number of a result (a number, an array, or a tuple of them, nested) as one array."""
    if isinstance(v, (tuple, list)):
        return np.concatenate([_flat(u) for u in v]) if v else np.zeros(0)
    return np.asarray(v, dtype=np.float64).ravel()


def array(*shapes, values=None, low=None, high=None, low_open=False, integer=False, empty=False, neginf=False):
    """A float64 array (a fresh copy) of one of `shapes`, each a string of letters ("B T") or
    fixed lengths ("B 2"), its entries finite, among `values` if given, in `[low, high]` (or
    `(low, high]` with `low_open`)."""
    shapes = [s.split() for s in shapes]

    def fits(s, shape, dims):
        return len(s) == len(shape) and all(
            (int(k) == n) if k.isdigit() else dims.get(k, n) == n for k, n in zip(s, shape)
        )

    def read(x, name, dims):
        try:
            a = None if isinstance(x, (str, bytes)) else np.asarray(x)
        except (ValueError, TypeError, OverflowError):  # ragged nesting, huge ints
            a = None
        if a is None or a.dtype.kind not in ("iub" if integer else "fiub"):  # float, int, uint, bool
            noun = "an integer array" if integer else "a real-valued array"
            raise TypeError(f"{name}: expected {noun}, got {_show(x)}")
        a = np.array(a, dtype=np.int64 if integer else np.float64)  # a copy: the caller's is never written
        ok = [s for s in shapes if fits(s, a.shape, dims)]
        if not ok:
            want = " or ".join(str(tuple(dims.get(k, int(k) if k.isdigit() else k) for k in s)) for s in shapes)
            raise ValueError(f"{name}: expected shape {want.replace(chr(39), '')}, got {a.shape}")
        if 0 in a.shape and not empty:
            raise ValueError(
                f"{name}: expected a non-empty array (every axis of length >= 1), got shape {a.shape}"
            )
        dims.update((k, n) for k, n in zip(ok[0], a.shape) if not k.isdigit())
        all_finite = integer or np.isfinite(a).all()  # one pass on the good path
        if not all_finite and np.isnan(a).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(a).sum())} NaN entries")
        if not all_finite and (inf := np.isposinf(a) if neginf else np.isinf(a)).any():
            want = "finite values or -inf (no +inf)" if neginf else "finite values (no +-inf)"
            raise ValueError(f"{name}: expected {want}, got {int(inf.sum())} such entries")
        if neginf and not all_finite and (dead := np.isneginf(a).all(axis=-1)).any():  # -inf entries
            raise ValueError(
                f"{name}: expected a finite entry in every row (-inf everywhere has no softmax), got "
                f"{int(dead.sum())} all -inf rows, the first at {tuple(int(i) for i in np.argwhere(dead)[0])}"
            )
        if values is not None and not (among := functools.reduce(np.logical_or, [a == v for v in values])).all():
            want = " and ".join(f"{v:g}" for v in values)
            raise ValueError(f"{name}: expected only {want}, got value {a[~among].flat[0].item()!r}")
        if low is not None and a.size and ((a <= low) if low_open else (a < low)).any():
            raise ValueError(
                f"{name}: expected entries {'>' if low_open else '>='} {low:g}, got min {a.min().item()!r}"
            )
        if high is not None and a.size and (a > high).any():
            raise ValueError(f"{name}: expected entries <= {high:g}, got max {a.max().item()!r}")
        return a

    return read


def number(low=-np.inf, high=np.inf, low_open=False, integer=False, high_open=False):
    """A finite real number as a Python float (an int with `integer`) in `[low, high]`; an end is
    excluded with `low_open` or `high_open`."""
    noun = "an integer" if integer else "a number"
    show = lambda b: f"{b}" if isinstance(b, int) else f"{b:g}"  # noqa: E731  an int bound in full
    bounds = [f"{'>' if low_open else '>='} {show(low)}"] if low > -np.inf else []
    bounds += [f"{'<' if high_open else '<='} {show(high)}"] if high < np.inf else []

    def read(x, name, dims):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral if integer else numbers.Real):
            raise TypeError(f"{name}: expected {'an integer' if integer else 'a real number'}, got {_show(x)}")
        try:
            v = int(x) if integer else float(x)
        except OverflowError:  # an int beyond float64
            v = np.inf
        if not integer and not np.isfinite(v):  # an int is finite however large
            raise ValueError(f"{name}: expected a finite number, got {x}"[:200])
        if (v <= low if low_open else v < low) or (v >= high if high_open else v > high):
            raise ValueError(f"{name}: expected {noun} {' and '.join(bounds)}, got {v}")
        return v

    return read


def one_of(options):
    """One of `options` (compared by equality; True is not 1)."""

    def read(x, name, dims):
        try:
            ok = not isinstance(x, bool) and x in set(options)
        except TypeError:
            raise TypeError(f"{name}: expected one of {list(options)}, got unhashable {_show(x)}") from None
        if not ok:
            raise ValueError(f"{name}: expected one of {list(options)}, got {x!r}"[:200])
        return x

    return read


def optional(of):
    """None, or a value of the kind `of`."""
    return lambda x, name, dims: None if x is None else of(x, name, dims)


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)
ADVANTAGE = array("B", "B T")  # one advantage per response, or one per token
MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


POSITIVE = number(0.0, low_open=True)
NONNEGATIVE = number(0.0)
COUNT = number(1, integer=True)  # an integer >= 1
MAX_LEN = optional(COUNT)  # T_max of agg="constant": None or an int >= 1


def longest_response(mask, agg, max_len):
    """`max_len`, the `T_max` of `agg="constant"`, is at least the longest response (its trained
    tokens, holes not counted)."""
    n = int(mask.sum(axis=1).max())
    if agg == "constant" and max_len is not None and max_len < n:
        return f"max_len: expected >= the longest response ({n} trained tokens), got {max_len}"


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

AGGREGATION = dict(agg=one_of(AGGS), max_len=MAX_LEN, where=[longest_response])  # eq. (pg_agg)

is_weights = boundary(
    logp_old=TOKENS,
    logp_mu=TOKENS,
    mask=MASK,
    level=one_of(LEVELS),
    mode=one_of(MODES),
    c_max=optional(number(1.0)),
    c_min=optional(number(0.0, 1.0)),
    where=[_floor_of_a_mask],
    returns="weight",
)(is_weights)

off_policy_sequence_mask = boundary(
    logp=TOKENS, logp_mu=TOKENS, adv=array("B"), mask=MASK, delta=NONNEGATIVE, returns="keep"
)(off_policy_sequence_mask)

rejection_mask = boundary(
    logp_old=TOKENS,
    logp_mu=TOKENS,
    mask=MASK,
    option=one_of(REJECTION),
    hi=POSITIVE,
    lo=optional(number(0.0, 1.0, low_open=True)),
    where=[_ratio_bounds],
    returns="keep",
)(rejection_mask)

corrected_pg_loss = boundary(
    logp=TOKENS,
    adv=ADVANTAGE,
    mask=MASK,
    weights=array("B T", low=0.0),
    **AGGREGATION,
    returns="loss dloss_dlogp",
)(corrected_pg_loss)

minibatch_rows = boundary(
    B=COUNT, M=COUNT, rng=_generator_or_none, where=[_rows_to_split], returns=None
)(minibatch_rows)  # ints

accumulation_weights = boundary(
    mask=MASK, G=COUNT, mode=one_of(ACCUM), max_len=MAX_LEN, where=[_micro_batches], returns="weight"
)(accumulation_weights)
