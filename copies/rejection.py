# minirl_lm 0.1.0: a self-contained copy of minirl_lm/select/rejection.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/select/rejection.py -o DIR
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

"""Rejection sampling fine-tuning: expert iteration, RAFT, STaR, and what its step ascends.

Sample `K` responses per prompt, keep the accepted ones, take a maximum-likelihood step on them
(expert iteration, Anthony et al. 2017; STaR, Zelikman et al. 2022, keeps the verified
rationales; RAFT, Dong et al. 2023, keeps the best of each group). `accepted` marks the kept
rows, eq. (rft_accept):

```text
rule "verified":  a_k = 1[R(x, y_k) >= threshold]          (a verifier: threshold 1)
rule "best":      a_k = 1 for the first draw of the group with the group's largest reward
```

The loss, for `N` groups of `K` rows (row `n*K + k` is draw `k` of prompt `n`), with
`A_n = sum_k a_k` the number kept:

```text
L = -(1/N) sum_n c_n sum_k a_k sum_t mask[k, t] logp[k, t]                       eq. (rft_loss)
c_n = 1/A_n   (norm "accepted": a mean over the kept responses; 0 when A_n = 0)
c_n = 1/K     (norm "group": a mean over the whole group)
dL/dlogp[k, t] = -(1/N) c_n a_k mask[k, t]
```

What the step ascends. Write `s(y) = grad log pi(y|x)` and, for a binary verifier, `p(x) =
P_pi(R = 1 | x)` the prompt's success. Since `grad p = E_pi[R s]`,

```text
E_{y ~ pi | R = 1}[s(y)] = E_pi[R s] / p = grad p / p = grad log p(x)            eq. (rft_identity)
```

so a step on accepted responses ascends the log of each prompt's success, not the success: per
prompt it is REINFORCE's `grad p` weighted by `1/p`, the hard prompts most (DAPO's dynamic
sampling reweights by `1 / P(mixed group)` instead, `pg/shaping.py`). With `K` draws and the
mean over the kept ones the identity holds given `A_n = m >= 1` (the kept draws are then `m`
i.i.d. draws of `pi | R = 1`), and the step is 0 when `A_n = 0`, so exactly

```text
E[-grad_x L] = (1/N) (1 - (1 - p)^K) grad log p = (1/N) f_K(p) grad p,
f_K(p) = (1 - (1 - p)^K) / p = sum_{j<K} (1 - p)^j                              eq. (rft_finite_k)
```

short of `grad log p` by the probability that no draw is accepted, and finite at `p = 0`. The
norm "group" gives `(1/N) grad p` exactly, at every `K` (it is REINFORCE with the 0/1 reward and
no baseline), eq. (rft_group). The rule "best" keeps one draw a group, the best-of-K draw, so its
step is the score at a best-of-K sample: `(1/N) (pi_K - pi)` on the softmax logits of a finite
response set (`pi_K` of eq. (bon_law), `best_of_n`), a cross-entropy step towards best-of-K,
eq. (raft_top1) (divided by `K` with the norm "group").

`expected_update` computes the exact expectation for any rule, norm and reward through the
multinomial law of a group (`minirl_lm.exact.groups`, eq. (exact_multinomial)): the update is
linear in the per-slot coefficients, and the slots of a sorted multiset stand for every order of
its draws, so "the first best draw" puts `1/(number of tied best slots)` on each of them.
`closed_form_update` is eqs. (rft_finite_k), (rft_group) and (raft_top1); the tests check both
against a brute-force sum over every ordered tuple of draws.

    $ python examples/best_of_n.py    # the identity, then RFT against GRPO and REINFORCE

Names in the frameworks: see the page "Best-of-N and rejection sampling".
"""

import functools
import inspect
import itertools
import math
import numbers

import numpy as np


__all__ = ["GROUPS_MAX", "accepted", "rejection_loss", "expected_update", "closed_form_update"]

GROUPS_MAX = 200_000  # the exact update enumerates C(Y + K - 1, K) multisets per prompt
CELLS_MAX = 2 * 10**7  # and holds their (M, K, Y) scores at once: 160 MB


def _groups_of_k(K, reward=None, mask=None):
    """`K` divides the rows (of `reward`, or of `mask`): whole groups of K draws."""
    name, B = ("reward", reward.shape[0]) if reward is not None else ("mask", mask.shape[0])
    if B % K:
        return f"K: expected a group size dividing the {B} rows of {name}, got {K}"


def _few_multisets(pi, K):
    """The exact update enumerates a prompt's multisets, `M = C(Y + K - 1, K) <= GROUPS_MAX`, and
    holds `M * K * Y <= CELLS_MAX` scores at once (counted without building the big integer)."""
    Y = pi.shape[1]
    n, r = Y + K - 1, min(K, Y - 1)
    M = 1
    for j in range(1, r + 1):  # M = C(n - r + j, j), rising to C(n, r) = C(Y + K - 1, K)
        M = M * (n - r + j) // j
        if M > GROUPS_MAX:
            sign = "=" if j == r else ">="
            return f"K: expected at most {GROUPS_MAX} groups of K a prompt, got C({Y} + {K} - 1, {K}) {sign} {M}"
    if M * K * Y > CELLS_MAX:
        return (
            f"K: expected at most {CELLS_MAX} scores of a prompt's groups at once (M * K * Y, "
            f"M = C({Y} + {K} - 1, {K})), got {M} * {K} * {Y} = {M * K * Y}"
        )


def accepted(reward, K, rule="verified", threshold=1.0):
    """Which responses a rejection-sampling step keeps, eq. (rft_accept).

    Args:
        reward: `(B,)` rewards, `B = N*K`, grouped prompt-major.
        K: responses per prompt, dividing `B`.
        rule: `"verified"` (`R >= threshold`) or `"best"` (the first draw of each group with the
            group's largest reward: one per group).
        threshold: the verifier's pass mark (rule `"verified"`).

    Returns:
        `(B,)` float64 0/1.
    """
    if rule == "verified":
        return (reward >= threshold).astype(np.float64)
    r = reward.reshape(-1, K)  # (N, K)
    a = np.zeros(r.shape)  # (N, K)
    a[np.arange(r.shape[0]), r.argmax(axis=1)] = 1.0  # argmax: the first of the tied best
    return a.ravel()


def rejection_loss(logp, mask, accept, K, norm="accepted"):
    """The maximum-likelihood loss on the kept responses and its gradient, eq. (rft_loss).

    Args:
        logp: `(B, T)` token log-probs `log pi(y_t | s_t)`.
        mask: `(B, T)` 0/1 mask of the trained tokens (holes allowed).
        accept: `(B,)` 0/1, from `accepted`.
        K: responses per prompt, dividing `B` (row `n*K + k` is draw `k` of prompt `n`).
        norm: `"accepted"` (mean over the kept responses of a group, 0 if none) or `"group"`
            (sum over the kept ones divided by K).

    Returns:
        `(loss, dloss_dlogp)`: the float loss and its `(B, T)` gradient.
    """
    a = accept.reshape(-1, K)  # (N, K)
    N = a.shape[0]
    if norm == "accepted":
        n_kept = a.sum(axis=1, keepdims=True)  # (N, 1) A_n
        c = np.divide(1.0, n_kept, out=np.zeros_like(n_kept), where=n_kept > 0)  # (N, 1) 1/A_n
    else:
        c = np.full((N, 1), 1.0 / K)  # (N, 1)
    w = (c * a).reshape(-1, 1) / N  # (B, 1) (1/N) c_n a_k
    dlogp = -w * mask  # (B, T) eq. (rft_loss): dL/dlogp = -(1/N) c_n a_k mask
    loss = float((dlogp * logp).sum())  # L = sum dL/dlogp * logp: the loss is linear in logp
    return loss, dlogp


def _slot_coefs(rv, K, rule, norm, threshold):
    """Per-slot coefficients (M, K) of the ascent update for every multiset's rewards rv (M, K)."""
    if rule == "verified":
        a = (rv >= threshold).astype(np.float64)  # (M, K)
    else:
        best = rv == rv.max(axis=1, keepdims=True)  # (M, K) the tied best slots
        a = best / best.sum(axis=1, keepdims=True)  # (M, K) the first of them, in law: 1/ties each
    if norm == "group":
        return a / K
    n_kept = (rv >= threshold).sum(axis=1, keepdims=True) if rule == "verified" else 1  # (M, 1) A_n
    return np.divide(a, n_kept, out=np.zeros_like(a), where=np.broadcast_to(n_kept, a.shape) > 0)


def expected_update(pi, reward, K, rule="verified", norm="accepted", threshold=1.0):
    """The exact `E[-grad_theta L]` of eq. (rft_loss) on softmax logits over a finite response set.

    `pi(.|x) = softmax(theta[x])` over `Y` responses, one group of `K` i.i.d. draws a prompt,
    every multiset of the group weighted by its multinomial probability, eq. (exact_multinomial).

    Args:
        pi: `(N, Y)` the policy, rows summing to 1.
        reward: `(N, Y)` rewards `R(x, y)`.
        K: responses per prompt, `M = C(Y + K - 1, K) <= 200000` multisets with
            `M * K * Y <= 2 * 10**7` (the scores the enumeration holds at once).
        rule: `"verified"` or `"best"`, as in `accepted`.
        norm: `"accepted"` or `"group"`, as in `rejection_loss`.
        threshold: the verifier's pass mark.

    Returns:
        `(N, Y)` the expected ascent direction on `theta`.
    """
    N, Y = pi.shape
    out = np.zeros((N, Y))
    for n in range(N):
        Yg, P = group_law.core(pi[n], K)  # (M, K) multisets, (M,) eq. (exact_multinomial)
        coef = _slot_coefs(reward[n, Yg], K, rule, norm, threshold)[:, :, None]  # (M, K, 1)
        scores = (np.eye(Y) - pi[n])[:, None, :]  # (Y, 1, Y) grad log pi(y) = e_y - pi, T = 1
        g = group_updates.core(Yg, [coef], [scores])[0]  # (M, Y) each multiset's update
        out[n] = P @ g / N  # (Y,)
    return out


def closed_form_update(pi, reward, K, rule="verified", norm="accepted", threshold=1.0):
    """Eqs. (rft_finite_k), (rft_group), (raft_top1): the exact expected update in closed form.

    Rule `"verified"`: `(1/N) f_K(p) pi (s - p)` with `s = 1[R >= threshold]`, `p = E_pi s` and
    `f_K(p) = sum_{j<K} (1 - p)^j` (norm `"accepted"`) or `f_K = 1` (norm `"group"`). Rule
    `"best"`: `(1/N) (pi_K - pi)`, divided by `K` with the norm `"group"`.

    Args:
        pi: `(N, Y)` the policy, rows summing to 1.
        reward: `(N, Y)` rewards.
        K: responses per prompt.
        rule: `"verified"` or `"best"`.
        norm: `"accepted"` or `"group"`.
        threshold: the verifier's pass mark.

    Returns:
        `(N, Y)` the expected ascent direction on `theta`, equal to `expected_update`.
    """
    N = pi.shape[0]
    if rule == "best":
        q = best_of_n.core(pi, reward, K)  # (N, Y) eq. (bon_law) at N = K
        return (q - pi) / (N * (K if norm == "group" else 1))  # eq. (raft_top1)
    s = (reward >= threshold).astype(np.float64)  # (N, Y)
    p = (pi * s).sum(axis=1, keepdims=True)  # (N, 1) success
    grad_p = pi * (s - p)  # (N, Y) d p / d theta = pi (s - p)
    if norm == "group":
        return grad_p / N  # eq. (rft_group)
    f = sum((1.0 - p) ** j for j in range(K))  # (N, 1) f_K(p) = (1 - (1 - p)^K) / p
    return f * grad_p / N  # eq. (rft_finite_k)


# part 1: from minirl_lm/exact/groups.py -------------------------------------------------------
#   Groups of K i.i.d. responses: the multinomial law of a group and the moments of its update.


MAX_ENTRIES = 10**7  # entries of the _arrays a listing builds: beyond this it would not end soon


def _arrays(shape):
    """A non-empty list of _arrays, each of `shape` (its letters shared across the list)."""
    each = array(shape)

    def read(x, name, dims):
        if not isinstance(x, (list, tuple)) or not x:
            got = f"{type(x).__name__} {x!r}"[:120]  # only when raising: a repr of big arrays is slow
            raise TypeError(f"{name}: expected a non-empty list of arrays, got {got}")
        return [each(a, name, dims) for a in x]

    return read


def _count(n):
    """A count for a message, however large (no float overflow, no giant decimal string)."""
    return f"{n:.3g}" if n < 10**300 else f"~1e{int(n.bit_length() * 0.30103)}"


def _listing_size(R, K, N=1):
    """None if the multisets of K out of R (and their probabilities under N laws) fit in
    `MAX_ENTRIES` entries, else the message (blaming K): `M = C(R + K - 1, K)` multisets, each
    with K ids, R counts and N probabilities."""
    bounded = R > MAX_ENTRIES and K > 1  # C(R + K - 1, K) > R: a huge R's binomial is not computed
    M = R if bounded else math.comb(R + K - 1, K)
    if M * (K + R + N * K) > MAX_ENTRIES:
        return (
            f"K: expected at most {MAX_ENTRIES:.0e} entries in the multisets of K out of R "
            f"(C(R + K - 1, K) of them, times K + R + N K), got {'>= ' * bounded}{_count(M)} multisets "
            f"(R = {_count(R)}, K = {K}, N = {N})"
        )


def _law_count(p, K):
    return _listing_size(p.shape[-1], K, p.shape[0] if p.ndim == 2 else 1)


@functools.lru_cache(maxsize=64)
def _multisets(R, K):
    Y = np.array(list(itertools.combinations_with_replacement(range(R), K)), dtype=np.int64)  # (M, K)
    counts = np.stack([(Y == y).sum(1) for y in range(R)], 1)  # (M, R)
    coef = np.array([math.factorial(K) / np.prod([math.factorial(c) for c in row]) for row in counts])  # (M,)
    for a in (Y, counts, coef):
        a.setflags(write=False)  # cached: shared by every caller
    return Y, counts, coef


def group_law(p, K):
    """The multisets of K i.i.d. draws from each row of `p`, and their probabilities."""
    Y, _, coef = _multisets(p.shape[-1], K)
    return Y, coef * np.prod(p[..., Y], axis=-1)  # (M,) or (N, M), eq. (exact_multinomial)


def _ids_in_basis(Y, bases):
    """Response ids index the basis' rows."""
    R = bases[0].shape[0]
    if Y.max() >= R:
        return f"Y: expected ids < {R} (the rows of bases), got max {Y.max()}"


def _one_per_basis(coefs, bases):
    if len(coefs) != len(bases):
        return f"coefs: expected one array per basis ({len(bases)}), got {len(coefs)}"


GROUP_RULES = [_ids_in_basis, _one_per_basis]


def group_updates(Y, coefs, bases):
    """Every multiset's update on each basis family: `(F, M, D)`, eq. (exact_group)."""
    return np.stack([np.einsum("mkt,mktd->md", c, b[Y]) for c, b in zip(coefs, bases)])  # (F, M, D)


# part 2: from minirl_lm/select/bestofn.py -----------------------------------------------------
#   Best-of-N over a finite response set: its exact law, reward, win rate, KL, and the frontier.


N_MAX = 10**6  # best-of-N: beyond it F^N underflows to the top level for any row worth printing


def _levels(pi, reward):
    """F(y), F(y-) and p(y) = F(y) - F(y-) of every response, row-wise: (P, Y) each."""
    F_minus, p_level = np.empty(pi.shape), np.empty(pi.shape)  # (P, Y)
    for n in range(pi.shape[0]):
        order = np.argsort(reward[n], kind="stable")  # (Y,)
        rs = reward[n, order]  # (Y,) sorted rewards
        new = np.r_[True, rs[1:] != rs[:-1]]  # (Y,) first of its level
        level = np.cumsum(new) - 1  # (Y,) the level of each sorted response
        mass = np.add.reduceat(pi[n, order], np.flatnonzero(new))  # (L,) P(R = level)
        below = np.r_[0.0, np.cumsum(mass)[:-1]]  # (L,) P(R < level)
        F_minus[n, order], p_level[n, order] = below[level], mass[level]
    return F_minus + p_level, F_minus, p_level


def _level_ratio(F, p_level, N):
    """log[(F^N - F-^N) / p] on the support (p > 0), eq. (bon_law) / pi; -inf elsewhere."""
    out = np.full(F.shape, -np.inf)  # (P, Y)
    on = p_level > 0
    if N == 1:  # pi_1 = pi exactly (the formula gives it to rounding)
        out[on] = 0.0
        return out
    with np.errstate(divide="ignore"):  # F- = 0: log1p(-1) = -inf, expm1(-inf) = -1
        gap = -np.expm1(N * np.log1p(-p_level[on] / F[on]))  # 1 - (F-/F)^N
    out[on] = N * np.log(F[on]) + np.log(gap) - np.log(p_level[on])
    return out


def _bon(pi, reward, N):
    """Trusted core of `best_of_n`: (pi_N (P, Y), log ratio (P, Y), F- (P, Y), p (P, Y))."""
    F, F_minus, p_level = _levels(pi, reward)
    log_ratio = _level_ratio(F, p_level, N)  # (P, Y) log pi_N / pi on a level
    q = np.where(pi > 0, pi * np.exp(log_ratio), 0.0)  # (P, Y) eq. (bon_law)
    return q, log_ratio, F_minus, p_level


def best_of_n(pi, reward, N):
    """The law of best-of-N, ties broken uniformly at random, eq. (bon_law)."""
    return _bon(pi, reward, N)[0]


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


def simplex(*shapes):
    """Probabilities: a float64 array of one of `shapes`, entries >= 0, each row (last axis)
    summing to 1 within 1e-9 (stricter than `Generator.choice`'s ~1.5e-8, so a table that
    passes here is one `rng.choice` accepts)."""
    entries = array(*shapes, low=0.0)

    def read(x, name, dims):
        p = entries(x, name, dims)
        s = p.sum(axis=-1)
        if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
            worst = float(s.ravel()[int(np.argmax(np.abs(s - 1.0)))])
            raise ValueError(f"{name}: expected rows summing to 1 (within 1e-9), got a row summing to {worst!r}")
        return p

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


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


COUNT = number(1, integer=True)  # an integer >= 1


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

GROUP_SIZE = number(1, 64, integer=True)  # K
GROUP = dict(Y=array("M K", integer=True, low=0), bases=_arrays("R T D"), coefs=_arrays("M K T"))
TABLES = dict(pi=simplex("P Y"), reward=array("P Y"))  # a base policy, rewards of its shape
DRAWS = number(1, N_MAX, integer=True)  # N
RULE = one_of(("verified", "best"))
NORM = one_of(("accepted", "group"))
THRESHOLD = number()  # the verifier's pass mark: any finite number
UPDATE = dict(
    pi=simplex("N Y"),
    reward=array("N Y"),
    K=number(1, N_MAX, integer=True),
    rule=RULE,
    norm=NORM,
    threshold=THRESHOLD,
)

accepted = boundary(
    reward=array("B"), K=COUNT, rule=RULE, threshold=THRESHOLD, where=[_groups_of_k], returns="accepted"
)(accepted)

rejection_loss = boundary(
    logp=TOKENS,
    mask=MASK,
    accept=array("B", values=(0.0, 1.0)),
    K=COUNT,
    norm=NORM,
    where=[_groups_of_k],
    returns="loss dloss_dlogp",
)(rejection_loss)

expected_update = boundary(**UPDATE, where=[_few_multisets], returns="update")(expected_update)

closed_form_update = boundary(**UPDATE, returns="update")(closed_form_update)

group_law = boundary(p=simplex("R", "N R"), K=GROUP_SIZE, where=[_law_count], returns="Y P")(group_law)

group_updates = boundary(**GROUP, where=GROUP_RULES, returns="updates")(group_updates)

best_of_n = boundary(**TABLES, N=DRAWS, returns="pi_N")(best_of_n)
