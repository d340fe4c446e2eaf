# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/advantages.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/advantages.py -o DIR
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

"""Baselines: the group of K responses to one prompt is its own baseline.

Rewards come as an `(N, K)` array: `N` prompts, `K` sampled responses each (row `n` of the array
is the group of prompt `n`; flattened prompt-major it is rows `n*K .. n*K + K - 1` of a `(B,)`
batch). With `R_k` the reward of member `k`:

```text
none          A_k = R_k                                               eq. (pg_vanilla)
mean          A_k = R_k - mean(R)                                     eq. (pg_centred)
standardized  A_k = (R_k - mean(R)) / (std(R) + xi)                   eq. (pg_normalized)
loo           A_k = R_k - (1/(K-1)) sum_{j != k} R_j                  eq. (pg_loo)
                  = (K / (K-1)) (R_k - mean(R))
```

The stabilizer `xi` is the argument `std_eps` of every function here (`eps` is the clip range
`epsilon` of `clip.py`, never this one).

The update these weights feed is `(1/K) sum_k A_k grad log pi(y_k | x)`. Over the draws of a
group, `E[centred update] = ((K-1)/K) grad J`: `R_k` is part of its own baseline, so the term
`R_k grad log pi(y_k)` is shrunk by `1/K` (self-inclusion bias); leave-one-out removes `R_k`
from its baseline and is unbiased. Standardizing divides by a random spread and is not a scaled
gradient in general.

Defined edge cases (no gradient here: rewards are data):

- a group of equal rewards gives `A = 0` exactly (the mean of such a group is taken as the
  common value itself, because `np.mean` of identical floats can differ from them in the last
  bit);
- `K = 1` is a group of equal rewards: centred and standardized advantages are bitwise 0, so the
  update vanishes identically. With the Bessel std (`ddof=1`) the `K = 1` spread is `0/0`; it is
  defined as 0 here, so the advantage is `0 / (0 + xi) = 0` as well;
- leave-one-out at `K = 1` has no "others" and raises ValueError.

Deviation from the textbook form: leave-one-out is computed as `(K/(K-1)) (R_k - mean)`, the
same number algebraically (to rounding), so that equal rewards give exactly 0.

Population std (`ddof=0`) is the default; `ddof=1` is what TRL and verl use (TRL's `nanstd`,
verl's `torch.std` in `compute_grpo_outcome_advantage`). `ddof` is the int 0 or 1 (not a bool,
not a float).

Domain: rewards are `(N, K)` with `K >= 1` and every `|R| <= 1e150` (`REWARD_MAX`), for all four
baselines; anything else raises ValueError naming `rewards`. The bound keeps the arithmetic
finite: the standardized baseline squares the spread `(R - mean)^2`, which overflows float64
(max about `1.8e308`) for spreads beyond about `1e154`, and a group mean sums `K` rewards; at
`1e150` both stay finite for any practical `K` (up to about `4e7`). Inside the domain, a group
whose squared spread underflows (sum of `(R - mean)^2 < 1e-290`, i.e. `|R - mean| < 1e-145` or
so) has its std computed on the rescaled deviations, so a tiny spread with `std_eps = 0` still
standardizes to unit scale instead of to 0. Neither guard changes the arithmetic of ordinary
inputs.

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository); in parentheses their defaults, not results of this library.

```text
K                         TRL num_generations (8); verl rollout.n (1); OpenRLHF
                          --rollout.n_samples_per_prompt (1; rloo, reinforce_baseline, group_norm
                          and dr_grpo assert it is > 1)
"standardized"            TRL scale_rewards="group"; verl adv_estimator=grpo; OpenRLHF
                          --algo.advantage.estimator group_norm
std_eps (1e-8)            TRL 1e-4; verl epsilon=1e-6; OpenRLHF 1e-9 (none is a setting)
ddof (0)                  TRL, verl and OpenRLHF: 1 (Bessel)
"mean"                    TRL scale_rewards="none"; verl norm_adv_by_std_in_grpo=False; OpenRLHF
                          dr_grpo (reinforce_baseline: then whitened over the batch)
"loo"                     TRL RLOOTrainer; verl adv_estimator=rloo (or rloo_vectorized); OpenRLHF
                          rloo
reinforce_pp              verl adv_estimator=reinforce_plus_plus; OpenRLHF reinforce
batch_std (1e-4, ddof=1)  TRL scale_rewards="batch"
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["BASELINES", "REWARD_MAX", "bounded_rewards", "group_mean"]
__all__ += ["no_baseline", "centred", "standardized", "leave_one_out", "advantages"]
__all__ += ["broadcast", "reinforce_pp", "reinforce_pp_baseline", "remax", "opo", "batch_std"]

BASELINES = ("none", "mean", "standardized", "loo")
REWARD_MAX = 1e150  # |rewards| bound: the standardized baseline squares the spread


def bounded_rewards(rewards, greedy_rewards=None):
    """Every `|R| <= REWARD_MAX`, the advantages' domain (the standardized baseline squares the
    spread); ReMax's greedy rewards too."""
    if (m := np.abs(rewards).max()) > REWARD_MAX:
        return (
            f"rewards: expected |r| <= {REWARD_MAX:g} (the standardized baseline squares the spread, "
            f"which overflows float64 beyond ~1e154), got max |r| = {m:g}"
        )
    if greedy_rewards is not None and (m := np.abs(greedy_rewards).max()) > REWARD_MAX:
        return f"greedy_rewards: expected |r| <= {REWARD_MAX:g}, got max {m:g}"


def _others(rewards, baseline="loo"):
    """Leave-one-out has `K >= 2` rewards per group to average."""
    if baseline == "loo" and rewards.shape[1] < 2:
        return f"rewards: leave-one-out needs K >= 2 responses per prompt (others to average), got {rewards.shape}"


def group_mean(r):
    """Mean of each group of checked rewards `(N, K)`, `(N, 1)`; exactly the common value when
    a group's rewards are equal (`np.mean` of identical floats can differ from them)."""
    mean = r.sum(axis=1, keepdims=True) / r.shape[1]  # (N, 1), r.mean's arithmetic
    equal = (r == r[:, :1]).all(axis=1, keepdims=True)  # (N, 1)
    return np.where(equal, r[:, :1], mean)  # (N, 1)


def no_baseline(rewards):
    """No baseline, eq. (pg_vanilla): `A = R`.

    Args:
        rewards: `(N, K)` rewards.

    Returns:
        `(N, K)` advantages (a copy of the rewards).
    """
    return rewards  # eq. (pg_vanilla); the engine's copy


def centred(rewards):
    """The group mean as baseline, eq. (pg_centred): `A = R - mean of the group`.

    Args:
        rewards: `(N, K)` rewards.

    Returns:
        `(N, K)` advantages; exactly 0 for a group of equal rewards.
    """
    return advantages.core(rewards, "mean")


def standardized(rewards, std_eps=1e-8, ddof=0):
    """Group-standardized advantages, eq. (pg_normalized): `A = (R - mean) / (std + xi)`.

    Args:
        rewards: `(N, K)` rewards.
        std_eps: the stabilizer `xi >= 0`.
        ddof: 0 for the population std (default), 1 for the Bessel std (defined as 0 at
            `K = 1`).

    Returns:
        `(N, K)` advantages; exactly 0 for a group of equal rewards.
    """
    c = rewards - group_mean(rewards)  # (N, K)
    dof = max(rewards.shape[1] - ddof, 1)  # K = 1, ddof = 1: c == 0, so std = 0
    ss = (c * c).sum(axis=1, keepdims=True)  # (N, 1)
    std = np.sqrt(ss / dof)  # (N, 1)
    # c*c underflows (subnormal or 0) below ~1e-154; rescale groups whose sum of squares is
    # under 1e-290 (|c| < ~1e-145: never an ordinary group), leaving all others bit-identical
    tiny = (ss < 1e-290) & (c != 0).any(axis=1, keepdims=True)  # (N, 1)
    if np.count_nonzero(tiny):
        s = np.where(tiny, np.abs(c).max(axis=1, keepdims=True), 1.0)  # (N, 1)
        cs = c / s  # (N, K)
        std = np.where(tiny, s * np.sqrt((cs * cs).sum(axis=1, keepdims=True) / dof), std)
    denom = std + std_eps  # (N, 1)
    if std_eps > 0:  # denom > 0 everywhere
        return c / denom  # eq. (pg_normalized)
    # eq. (pg_normalized); a zero spread with std_eps = 0 gives 0, not 0/0
    return np.divide(c, denom, out=np.zeros_like(c), where=denom > 0)


def leave_one_out(rewards):
    """Leave-one-out advantages, eq. (pg_loo): `A_k = R_k - mean of the other K - 1 rewards`.

    Args:
        rewards: `(N, K)` rewards with `K >= 2`.

    Returns:
        `(N, K)` advantages.

    Raises:
        ValueError: `K < 2`, naming `rewards`.
    """
    return advantages.core(rewards, "loo")


def advantages(rewards, baseline="standardized", std_eps=1e-8, ddof=0):
    """Group advantages with the chosen baseline.

    Args:
        rewards: `(N, K)` rewards.
        baseline: `"none"`, `"mean"`, `"standardized"` or `"loo"`.
        std_eps: the stabilizer `xi` of `"standardized"` (checked whatever the baseline).
        ddof: 0 or 1, the std of `"standardized"` (checked whatever the baseline).

    Returns:
        `(N, K)` advantages.

    Raises:
        ValueError: an unknown baseline, `"loo"` with `K = 1`, or bad rewards.
    """
    if baseline == "none":
        return rewards.copy()  # eq. (pg_vanilla); not the caller's array (GRPO returns both)
    if baseline == "standardized":
        return standardized.core(rewards, std_eps, ddof)
    c = rewards - group_mean(rewards)  # (N, K) eq. (pg_centred)
    K = rewards.shape[1]
    return c if baseline == "mean" else (K / (K - 1)) * c  # eq. (pg_loo)


def _one_per_row(adv, mask):
    """One advantage per row of the mask."""
    if adv.size != mask.shape[0]:
        return f"adv: expected {mask.shape[0]} advantages (one per row of mask), got shape {adv.shape}"


def broadcast(adv, mask):
    """Put each response's advantage on every one of its real tokens.

    Args:
        adv: `(B,)` advantages, or `(N, K)` (flattened prompt-major to `B = N*K`).
        mask: `(B, T)` 0/1 float mask.

    Returns:
        `(B, T)` per-token advantages, 0 at padding.
    """
    return adv.reshape(-1, 1) * mask  # (B, T)


# ---- the frameworks' other advantages: REINFORCE++, ReMax, OPO, batch std ---------------------
#
#     reinforce_pp           A_{b,t} = whiten_batch(G_{b,t}),  G_{b,t} = sum_{t' >= t} gamma^(t'-t) r_{b,t'}
#                                                                                  eq. (rpp)
#     reinforce_pp_baseline  A_{b,t} = whiten_batch(r_b - mean_group(r))         eq. (rpp_baseline)
#     remax                  A_k = r_k - R(x, y_greedy(x))                         eq. (remax)
#     opo                    A_k = r_k - sum_j |y_j| r_j / sum_j |y_j|             eq. (opo)
#     batch_std              A_k = (r_k - mean_group(r)) / (std_batch(r) + std_eps)    eq. (pg_batch_std)
#
# whiten_batch(x) = (x - m) / sqrt(v + std_eps) with m, v the mean and variance of x over every real
# token of the batch (v with ddof), std_eps inside the square root. Batch statistics couple the
# prompts: the advantage of one response depends on the rewards of every other prompt of the
# batch, so the expected update of one prompt is no longer a function of that prompt alone.


def _whiten_tokens(x, mask, std_eps, ddof):
    """(x - mean) / sqrt(var + std_eps) over the real tokens of a (B, T) array; 0 at padding.

    No real token, or every real value equal: exactly 0 (so past that test M >= 2 > ddof). A
    `var + std_eps` beyond float64 (a spread past ~1e154) is taken on the scale of the largest
    deviation, where it is finite: the whitened values are at most sqrt(M) in size.
    """
    real = mask > 0  # (B, T)
    M = int(real.sum())
    if M == 0 or x[real].max() == x[real].min():
        return np.zeros_like(x)
    m = x[real].sum() / M  # token mean over the batch
    c = np.where(real, x - m, 0.0)  # (B, T)
    s = np.abs(c).max()  # scale: c*c cannot overflow
    var = s * s * ((c / s) ** 2).sum() / (M - ddof)  # eq. (rpp); M >= 2 > ddof here
    if np.isfinite(var + std_eps):
        return c / np.sqrt(var + std_eps)  # (B, T)
    return (c / s) / np.sqrt(((c / s) ** 2).sum() / (M - ddof) + std_eps / s / s)  # on the scale s


def _one_row_per_response(rewards, mask):
    """The mask has one row per response, `B = N*K`, prompt-major."""
    if mask.shape[0] != rewards.size:
        return f"mask: expected {rewards.size} rows (one per response, B = N*K), got shape {mask.shape}"


def reinforce_pp(token_rewards, mask, gamma=1.0, std_eps=1e-8, ddof=1):
    """REINFORCE++ advantages (B, T), eq. (rpp): returns to go, whitened over the batch's tokens.

    ```text
    G_{b,t} = r_{b,t} + gamma G_{b,t+1},  G = 0 after the last real token
    A_{b,t} = (G_{b,t} - m) / sqrt(v + std_eps),  m, v over every real token of the batch
    ```

    Args:
        token_rewards: `(B, T)` per-token rewards, the KL folded per token (for instance
            `critic.per_token_rewards`); values at padding are ignored.
        mask: `(B, T)` 0/1, right-padded (the returns sum over the later tokens).
        gamma: discount in `[0, 1]`.
        std_eps: `>= 0`, added to the variance inside the square root (verl: `1e-8`).
        ddof: 0 or 1; 1 is the Bessel variance verl uses (the default here).

    Returns:
        `(B, T)` advantages, 0 at padding. A batch with no real token, or whose returns are all
        equal, gives exactly 0; a single real token with `ddof=1` has variance 0 (defined here;
        verl raises) and advantage 0.

    Raises:
        ValueError: a bad argument (named; a mask with holes too), or returns to go beyond
            float64 (named after the function, with the range of its inputs).
    """
    G = np.zeros_like(token_rewards)  # (B, T) returns to go
    acc = np.zeros(token_rewards.shape[0])  # (B,)
    for t in range(token_rewards.shape[1] - 1, -1, -1):
        acc = (token_rewards[:, t] + gamma * acc) * mask[:, t]  # eq. (rpp): G_t = r_t + gamma G_{t+1}
        G[:, t] = acc
    return _whiten_tokens(G, mask, std_eps, ddof)  # an inf return: a NaN advantage, reported


def reinforce_pp_baseline(rewards, mask, std_eps=1e-8, ddof=1):
    """REINFORCE++-baseline advantages (B, T), eq. (rpp_baseline): group mean off, then whitened.

    ```text
    A_{b,t} = whiten_batch(r_b - mean_group(r))   on every real token of response b
    ```

    Args:
        rewards: `(N, K)` sequence rewards, prompt-major (row `b = n*K + k` of mask).
        mask: `(B, T)` 0/1 with `B = N*K`; holes allowed (the statistics are over the trained
            tokens, wherever they sit).
        std_eps: as in `reinforce_pp` (verl: `1e-8`, inside the square root).
        ddof: as in `reinforce_pp` (verl: 1, the Bessel variance).

    Returns:
        `(B, T)` advantages, 0 at padding. K = 1 gives exactly 0 (the centred advantage of a
        group of one is 0; verl instead takes the group mean as 0 at K = 1, so its advantage is
        the whitened raw reward); equal rewards in every group give exactly 0.
    """
    c = advantages.core(rewards, "mean").ravel()  # (B,) eq. (pg_centred)
    return _whiten_tokens(c[:, None] * mask, mask, std_eps, ddof)  # eq. (rpp_baseline)


def remax(rewards, greedy_rewards):
    """ReMax advantages (N, K), eq. (remax): the baseline is the reward of the greedy response.

    Args:
        rewards: `(N, K)` rewards of the sampled responses.
        greedy_rewards: `(N,)` reward of each prompt's greedy (argmax-decoded) response.

    Returns:
        `(N, K)` advantages `r - r_greedy`. The baseline does not depend on the samples, so the
        update is unbiased for every K, K = 1 included; a sample equal to the greedy reward gets
        exactly 0.
    """
    return rewards - greedy_rewards[:, None]  # eq. (remax)


def opo(rewards, lengths):
    """OPO advantages (N, K), eq. (opo): the group baseline weighted by response length.

    ```text
    A_k = r_k - sum_j |y_j| r_j / sum_j |y_j|
    ```

    Args:
        rewards: `(N, K)` sequence rewards.
        lengths: `(N, K)` response lengths `|y|` (real tokens), `>= 0`.

    Returns:
        `(N, K)` advantages. K = 1 and equal rewards give exactly 0 (verl takes the baseline as
        0 at K = 1, so its advantage is the raw reward). A group whose responses are all empty
        (total length 0) falls back to the plain group mean; empty responses carry no token, so
        their advantage never reaches the gradient.

    Raises:
        ValueError: a bad argument (named), or lengths so large that the weighted baseline
            overflows (named after the function).
    """
    tot = lengths.sum(axis=1, keepdims=True)  # (N, 1)
    weighted = (lengths * rewards).sum(axis=1, keepdims=True) / np.maximum(tot, 1e-300)  # (N, 1)
    base = np.where(tot > 0, weighted, rewards.mean(axis=1, keepdims=True))  # (N, 1) eq. (opo)
    equal = rewards.max(axis=1, keepdims=True) == rewards.min(axis=1, keepdims=True)
    base = np.where(equal, rewards[:, :1], base)  # exactly the common value
    return rewards - base  # (N, K)


def batch_std(rewards, std_eps=1e-8, ddof=0):
    """Batch-std advantages (N, K), eq. (pg_batch_std): group mean off, one std for the batch.

    ```text
    A_k = (r_k - mean_group(r)) / (std(all N*K rewards) + std_eps)
    ```

    TRL `scale_rewards="batch"` is `std_eps=1e-4, ddof=1`. Every prompt's advantage is divided by
    the same number, so the direction within a batch is the mean-centred one; over the draws the
    divisor depends on every prompt's rewards.

    Args:
        rewards: `(N, K)` rewards, `|r| <= REWARD_MAX`.
        std_eps: the stabilizer `xi >= 0`, added to the batch's std.
        ddof: 0 for the population std (default), 1 for the Bessel std.

    Returns:
        A (np.ndarray): `(N, K)`; K = 1 and equal rewards within every group give exactly 0. A batch
            of one reward with `ddof=1` has std defined as 0 (as TRL does).
    """
    c = rewards - group_mean(rewards)  # (N, K) eq. (pg_centred)
    flat = rewards.ravel()
    if flat.max() == flat.min():  # every reward equal: c == 0
        return np.zeros_like(c)
    dev = flat - flat.mean()  # two rewards differ: some dev != 0
    s = np.abs(dev).max()  # scale > 0: dev*dev cannot overflow
    # flat.size >= 2 > ddof; the largest |dev / s| is 1, so std >= s / sqrt(N K) > 0
    std = s * np.sqrt(((dev / s) ** 2).sum() / (flat.size - ddof))
    return c / (std + std_eps)  # eq. (pg_batch_std)


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


def right_padded(shape, what, where):
    """A 0/1 float mask of `shape` whose rows are prefixes (1s then 0s), as `what` reads them; a
    mask with holes is refused, and the message says `where` such a mask goes."""
    mask = array(shape, values=(0.0, 1.0))

    def read(x, name, dims):
        m = mask(x, name, dims)
        rises = (m[:, 1:] > m[:, :-1]).any(axis=1)  # (B,) a 1 after a 0
        if rises.any():
            row = int(np.flatnonzero(rises)[0])
            col = int(np.flatnonzero(m[row, 1:] > m[row, :-1])[0]) + 1  # its first 1 after a 0
            shown = (
                f"is {m[row].astype(int).tolist()}" if m.shape[1] <= 20 else f"has a 1 after a 0 at column {col}"
            )
            raise ValueError(
                f"{name}: expected right padding (1s then 0s in each row) for {what}, row {row} {shown}; a "
                f"mask with holes (tool outputs) is accepted by the token-level objectives; here use {where}"
            )
        return m

    return read


def padded(what, where):
    """The relation form of `right_padded`, on an argument `mask` (B, T) already read."""
    read = right_padded("B T", what, where)

    def rule(mask):
        read(mask, "mask", {})  # raises, or the mask is right-padded

    return rule


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


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


NONNEGATIVE = number(0.0)


DDOF = number(0, 1, integer=True)  # a std's delta degrees of freedom: population 0, Bessel 1


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

_returns_to_go = padded(  # the returns to go sum over the later tokens of a row
    "REINFORCE++'s returns to go (a sum over the later tokens)",
    "minirl_lm.multiturn.values.returns_actions (mask: every token of the row, action_mask: the trained ones)",
)

no_baseline = boundary(rewards=array("N K"), where=[bounded_rewards])(no_baseline)

centred = boundary(rewards=array("N K"), where=[bounded_rewards])(centred)

standardized = boundary(
    rewards=array("N K"), std_eps=NONNEGATIVE, ddof=DDOF, where=[bounded_rewards]
)(standardized)

leave_one_out = boundary(rewards=array("N K"), where=[bounded_rewards, _others])(leave_one_out)

advantages = boundary(
    rewards=array("N K"),
    baseline=one_of(BASELINES),
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    where=[bounded_rewards, _others],
)(advantages)

broadcast = boundary(mask=MASK, adv=array("B", "N K"), where=[_one_per_row])(broadcast)

reinforce_pp = boundary(
    mask=MASK,
    token_rewards=array("B T"),
    gamma=number(0.0, 1.0),
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    where=[_returns_to_go],
    returns="A",
)(reinforce_pp)

reinforce_pp_baseline = boundary(
    rewards=array("N K"),
    mask=MASK,
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    where=[bounded_rewards, _one_row_per_response],
    returns="A",
)(reinforce_pp_baseline)

remax = boundary(rewards=array("N K"), greedy_rewards=array("N"), where=[bounded_rewards])(remax)

opo = boundary(rewards=array("N K"), lengths=array("N K", low=0.0), where=[bounded_rewards], returns="A")(opo)

batch_std = boundary(rewards=array("N K"), std_eps=NONNEGATIVE, ddof=DDOF, where=[bounded_rewards])(batch_std)
