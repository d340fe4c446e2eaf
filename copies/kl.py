# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/kl.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/kl.py -o DIR
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

"""KL to the frozen reference: per-token estimators, their two placements, and the exact KL.

Per token, with `u = logp - logp_ref = log(pi(y_t|s_t) / pi_ref(y_t|s_t))` and `y_t ~ pi`:

```text
k1 = u                        dk1/dlogp = 1                                  eq. (kl_k1)
k2 = u^2 / 2                  dk2/dlogp = u                                  eq. (kl_k2)
k3 = exp(-u) - 1 + u          dk3/dlogp = 1 - exp(-u)                        eq. (kl_k3)
```

k3 is computed as `expm1(-u) + u`, and by its Taylor series for `|u| < 0.05` where those two
terms cancel (they keep only about 6 digits of k3 at `u = 1e-10`); relative error `< 1e-14`,
`k3 >= 0`. Each branch is evaluated only where it applies. For `u < -709.78` or so (`pi_ref`
gave the token more than `e^709` times `pi`'s probability) `exp(-u)` overflows float64
(`k3 = +inf`, `dk3 = -inf`): that, like any other non-finite estimate or loss, is a ValueError
naming the function, what overflowed and the range of its inputs, never returned. The
log-ratio is masked before use: finite garbage in `logp` or `logp_ref` at padding gives
`u = 0`, `k = 0` and a gradient of exactly 0 there.

On-policy, `E[k1] = E[k3] = KL(pi || pi_ref)`; `E[k2]` is not the KL in general. As loss terms,
the sample is data and only `logp` carries a gradient; then `E[grad k1] = 0`,
`E[grad k2] = grad KL(pi || pi_ref)` and `E[grad k3] = grad KL(pi_ref || pi)`: k3 in the loss
descends the KL with its arguments swapped. `tests/pg/test_kl.py` checks all of it by enumeration.

Two placements of `beta KL`:

- in the loss (GRPO), eq. (kl_objective): `loss = sum_{b,t} w[b,t] k[b,t]`, gradient `w dk`;
  it is added to the policy loss times `beta`;
- in the reward (the RLHF / PPO habit), eq. (kl_reward): `R~_b = R_b - beta sum_t u[b,t]`,
  treated as data (no gradient flows through it), then used by any estimator.

Exact KL between tables (rows are distributions), eq. (kl_exact), with `0 log 0 = 0` and `inf`
where `p > 0 = q`:

```text
KL(p || q)_s = sum_y p(y|s) log(p(y|s) / q(y|s))
```

Its gradient on `theta` for `pi = softmax(theta)`, `pi_ref = softmax(theta_ref)`, summed over
rows with weights `d_s` (default 1 for every row: the sum over states; pass a state
distribution to weight):

```text
d/dtheta[s, v] KL(pi || pi_ref)_s = pi(v|s) (log pi(v|s) - log pi_ref(v|s) - KL_s)
d/dtheta[s, v] KL(pi_ref || pi)_s = pi(v|s) - pi_ref(v|s)
```

(the second because `d/dtheta[s, v]` of `-sum_y pi_ref(y|s) log pi(y|s)` is
`pi(v|s) - pi_ref(v|s)`).

The aggregation weights are `core.ops.agg_weights`, eq. (pg_agg), the one definition of them
(`reinforce.token_weights` is its checked entry; a standalone copy of this file,
`scripts/standalone.py`, inlines it). Every public function declares its arguments with
`boundary` (the engine checks them, and the result, once); their bodies are the math, and
GRPO calls `kl_per_token.core` and `kl_penalty.core` on its own checked arguments.

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository); in parentheses their defaults, not results of this library.

```text
beta              TRL beta (0.0); verl actor.kl_loss_coef (0.001), algorithm.kl_ctrl.kl_coef
                  (0.001); OpenRLHF --algo.kl.init_coef (0.01)
kl_penalty        TRL GRPO (k3, beta > 0); verl actor.use_kl_loss (False); OpenRLHF
                  --algo.kl.use_loss (False: the KL goes into the reward, per token)
kl_in_reward      TRL RLOOTrainer (k1, summed); verl algorithm.use_kl_in_reward (False)
estimator         verl kl, mse, low_var_kl (or k1, k2, k3); OpenRLHF --algo.kl.estimator (k1)
*_straight_through  verl kl_loss_type k1+, k3+; OpenRLHF --algo.kl.unbiased_gradient (False;
                  with the old log-probs it also weights each token's gradient by rho, clamped
                  at 10: kl_penalty_is's gradient with the unweighted value)
kl_penalty_is     TRL use_bias_correction_kl (True; with importance_sampling_level="sequence" rho
                  is the broadcast sequence ratio, not modelled here)
adaptive_kl_coef  verl kl_ctrl.type=adaptive; OpenRLHF --algo.kl.target, --algo.kl.horizon
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = [
    "ESTIMATORS",
    "ESTIMATOR",
    "KL",
    "kl_per_token",
    "kl_penalty",
    "kl_in_reward",
    "exact_kl",
    "exact_kl_grad_theta",
    "exact_reverse_kl_grad_theta",
    "kl_penalty_straight_through",
    "kl_penalty_is",
    "adaptive_kl_coef",
]

ESTIMATORS = ("k1", "k2", "k3")


def kl_per_token(logp, logp_ref, mask, estimator="k3"):
    """The per-token estimate `k` of `KL(pi || pi_ref)` and its derivative `dk/dlogp`.

    Args:
        logp: `(B, T)` token log-probs under `pi` (the sampling policy).
        logp_ref: `(B, T)` token log-probs under `pi_ref`.
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        estimator: `"k1"`, `"k2"` or `"k3"`.

    Returns:
        `(k, dk)`: both `(B, T)`, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a non-finite estimate (named after the function,
            with the range of its inputs).
    """
    u = log_ratio(logp, logp_ref, mask)  # (B, T) 0 at padding
    if estimator == "k1":
        return u, mask.copy()  # eq. (kl_k1); dk1 = 1
    if estimator == "k2":
        return 0.5 * u * u, u  # eq. (kl_k2); dk2 = u
    return _k3(u), -np.expm1(-u) * mask  # eq. (kl_k3); dk3 = 1 - exp(-u)


def _k3(u):
    """exp(-u) - 1 + u to ~1e-14 relative error: expm1(-u) + u, and near 0 (where the two
    cancel) its Taylor series u^2/2 - u^3/6 + ... to u^8 (truncation below 1e-17 relative)."""
    small = np.abs(u) < 0.05  # (B, T) each branch only where used
    k = np.empty_like(u)  # (B, T)
    us = u[small]
    c = 1.0 / 40320.0
    for n in (5040.0, 720.0, 120.0, 24.0, 6.0, 2.0):  # Horner, innermost term first
        c = 1.0 / n - us * c
    k[small] = us * us * c
    ul = u[~small]
    k[~small] = np.expm1(-ul) + ul  # inf for u < ~-709.78: rejected
    return k


def kl_penalty(logp, logp_ref, mask, estimator="k3", agg="token_mean", max_len=None):
    """The KL penalty as a separate loss term, eq. (kl_objective): `loss = sum_{b,t} w k`.

    The caller multiplies by `beta`.

    Args:
        logp: `(B, T)` token log-probs under `pi`.
        logp_ref: `(B, T)` token log-probs under `pi_ref`.
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        estimator: `"k1"`, `"k2"` or `"k3"`.
        agg: the aggregation of `reinforce.token_weights`.
        max_len: the constant `T_max` of `agg="constant"`.

    Returns:
        `(loss, dloss_dlogp)`: a float and the `(B, T)` gradient `w dk`.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss (named after the function).
    """
    k, dk = kl_per_token.core(logp, logp_ref, mask, estimator)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    return float((w * k).sum()), w * dk  # eq. (kl_objective); d loss / d logp = w dk


def kl_in_reward(rewards, logp, logp_ref, mask, beta):
    """The KL folded into the reward, eq. (kl_reward): `R~ = R - beta sum_t u_t` (k1 summed).

    Data, not an objective: no gradient flows through the shaping.

    Args:
        rewards: `(B,)` sequence rewards `R(x, y)`.
        logp: `(B, T)` token log-probs under `pi`.
        logp_ref: `(B, T)` token log-probs under `pi_ref`.
        mask: `(B, T)` 0/1 float mask.
        beta: the KL coefficient, `>= 0`.

    Returns:
        `(B,)` shaped rewards.
    """
    return rewards - beta * log_ratio(logp, logp_ref, mask).sum(axis=1)  # (B,) eq. (kl_reward)


def _distributions(p, q):
    """The rows of both tables are distributions: `>= 0`, summing to 1 (within `1e-9`)."""
    for name, t in (("p", p), ("q", q)):
        if (t < 0).any() or not np.allclose(t.sum(axis=1), 1.0, rtol=0, atol=1e-9):
            return (
                f"{name}: expected rows of probabilities (>= 0, summing to 1), "
                f"got row sums {t.sum(axis=1)[:4]} and min {t.min()}"
            )


def exact_kl(p, q):
    """Row-wise `KL(p || q)` of probability tables, eq. (kl_exact).

    `0 log 0 = 0`; a row with `q = 0` where `p > 0` has `KL = inf`.

    Args:
        p: `(S, V)` probabilities, rows summing to 1.
        q: `(S, V)` probabilities, rows summing to 1.

    Returns:
        `(S,)` KL of each row.
    """
    pos = p > 0  # (S, V) 0 log 0 = 0
    terms = np.zeros_like(p)  # (S, V)
    terms[pos] = p[pos] * (np.log(p[pos]) - np.log(q[pos]))  # inf where p > 0 = q, never 0 * inf
    return terms.sum(axis=1)  # (S,)


def _softmax_tables(theta, theta_ref):
    """(pi, log pi) of both checked logit tables (S, V)."""
    out = []
    for t in (theta, theta_ref):
        logpi = log_softmax(t)  # (S, V) eq. (log_softmax)
        out.append((np.exp(logpi), logpi))
    return out


def _finite_spreads(theta, theta_ref):
    """In each row the finite logits lie within float64 of its maximum (`theta - max` finite)."""
    for name, t in (("theta", theta), ("theta_ref", theta_ref)):
        with np.errstate(over="ignore"):  # a spread beyond float64: -inf, refused here
            z = t - t.max(axis=1, keepdims=True)  # (S, V) <= 0
        bad = (np.isneginf(z) & np.isfinite(t)).any(axis=1)  # (S,)
        if bad.any():
            return (
                f"{name}: expected the finite logits of each row within float64 of the row's maximum, "
                f"got a spread beyond float64 in row {int(np.argmax(bad))}"
            )


def _support(of, within):
    """The relation "`within` has a finite logit wherever `of` has one" (else the KL is infinite)."""
    pi, pi_w = ("pi", "pi_ref") if of == "theta" else ("pi_ref", "pi")

    def support(theta, theta_ref):
        t = {"theta": theta, "theta_ref": theta_ref}
        if ((t[of] > -np.inf) & (t[within] == -np.inf)).any():
            return (
                f"{within}: expected a finite logit wherever {of} has one "
                f"({pi_w} > 0 wherever {pi} > 0, else the KL is infinite)"
            )

    return support


def exact_kl_grad_theta(theta, theta_ref, weights=None):
    """The gradient of `sum_s d_s KL(pi_s || pi_ref_s)` on `theta`, eq. (kl_exact).

    `pi = softmax(theta)`, `pi_ref = softmax(theta_ref)` row-wise. "`> 0`" and "`= 0`" are read
    on the log scale: a finite logit has a finite log-prob (`log pi > -inf`) even where `pi`
    itself underflows to 0, so `theta_ref = [0, -1e4]` is a finite KL (about `5e3`), not an
    infinite one; only a `-inf` logit makes a probability exactly 0.

    Args:
        theta: `(S, V)` logits of `pi` (`-inf` allowed).
        theta_ref: `(S, V)` logits of `pi_ref` (`-inf` allowed).
        weights: `(S,)` nonnegative state weights `d`, default ones.

    Returns:
        `(S, V)` gradient.

    Raises:
        ValueError: `pi > 0 = pi_ref` somewhere (an infinite KL), named after `theta_ref`; a
            gradient beyond float64, named after the function.
    """
    d = np.ones(theta.shape[0]) if weights is None else weights  # (S,)
    (pi, logpi), (pi_ref, logpi_ref) = _softmax_tables(theta, theta_ref)
    supp = logpi > -np.inf  # (S, V) support of pi
    diff = np.zeros_like(logpi)  # (S, V), 0 off the support
    diff[supp] = logpi[supp] - logpi_ref[supp]  # finite: both in [-max_float, 0] on the support
    kl = (pi * diff).sum(axis=1, keepdims=True)  # (S, 1) KL_s
    return d[:, None] * pi * (diff - kl)  # (S, V) pi (log pi - log pi_ref - KL)


def exact_reverse_kl_grad_theta(theta, theta_ref, weights=None):
    """The gradient of `sum_s d_s KL(pi_ref_s || pi_s)` on `theta`: `d_s (pi - pi_ref)`.

    The KL with its arguments swapped relative to `exact_kl_grad_theta`: this is what k3 in the
    loss descends in expectation. The arguments and the `(S, V)` gradient returned are those of
    `exact_kl_grad_theta`.

    Raises:
        ValueError: `pi_ref > 0 = pi` somewhere (an infinite KL, read on the log scale as in
            `exact_kl_grad_theta`), named after `theta`.
    """
    d = np.ones(theta.shape[0]) if weights is None else weights  # (S,)
    (pi, _), (pi_ref, _) = _softmax_tables(theta, theta_ref)
    return d[:, None] * (pi - pi_ref)  # (S, V) |.| <= |d|: never overflows


# ---- gradient variants of the KL term, and an adaptive coefficient ----------------------------
#
# Straight-through ("k1+", "k3+" in verl): the value of k1 or k3, the gradient of k2,
#     value = sum w k_est,   d/dlogp = w u                                      eq. (kl_straight_through)
# so that E[gradient] is the per-state gradient of KL(pi || pi_ref) (k2's) while the logged value
# stays an unbiased estimate of the KL (k1's or k3's).
#
# Importance-weighted k3 (TRL use_bias_correction_kl), rho = pi / pi_old on the token:
#     value = sum w rho k3,   d/dlogp = w rho (k3 + 1 - exp(-u))                 eq. (kl_is)
# At pi = pi_old (rho = 1) its expected gradient is d/dtheta E_{y~pi}[k3] = the per-state
# gradient of KL(pi || pi_ref): the same as k2's, with a different variance.
#
# Adaptive coefficient (Ziegler et al. 2019; verl kl_ctrl.type = "adaptive"):
#     beta' = beta (1 + clip(KL / KL_target - 1, -0.2, 0.2) n_steps / horizon)  eq. (kl_adaptive)


def kl_penalty_straight_through(logp, logp_ref, mask, estimator="k3", agg="token_mean", max_len=None):
    """KL term with the value of `estimator` and the gradient of k2, eq. (kl_straight_through).

    Args:
        logp (np.ndarray): `(B, T)` log-probs of the policy being trained.
        logp_ref (np.ndarray): `(B, T)` reference log-probs (data).
        mask (np.ndarray): `(B, T)`.
        estimator (str): "k1" or "k3" (verl "k1+" / "k3+"); "k2" is k2 itself.
        agg (str): aggregation weights w, eq. (pg_agg).
        max_len (int or None): the constant of agg="constant".

    Returns:
        result (tuple): `(loss, dloss_dlogp (B, T))`: loss = `sum w k_est` (the caller multiplies by
            beta), dloss_dlogp = `w u` with `u = logp - logp_ref` (0 at padding). The gradient is
            not the derivative of the returned value: that is the point of the construction.
    """
    k, _ = kl_per_token.core(logp, logp_ref, mask, estimator)  # value: k1 or k3
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    return float((w * k).sum()), w * log_ratio(logp, logp_ref, mask)  # k2's, eq. (kl_straight_through)


def kl_penalty_is(logp, logp_old, logp_ref, mask, agg="token_mean", max_len=None):
    """Importance-weighted k3 as a loss term, eq. (kl_is) (TRL `use_bias_correction_kl=True`).

    Args:
        logp (np.ndarray): `(B, T)` log-probs of the policy being trained (carries the gradient).
        logp_old (np.ndarray): `(B, T)` log-probs of the policy that sampled the tokens (data).
        logp_ref (np.ndarray): `(B, T)` reference log-probs (data).
        mask (np.ndarray): `(B, T)` 0/1; holes allowed.
        agg (str): aggregation weights w, eq. (pg_agg): one of `AGGS` (default "token_mean").
        max_len (int or None): the constant of agg="constant", an int >= the longest response
            (None: the padded width T).

    Returns:
        result (tuple): `(loss, dloss_dlogp (B, T))` with loss = `sum w rho k3`,
            `rho = exp(logp - logp_old)`, `d/dlogp = w rho (k3 + 1 - exp(-u))`.

    Raises:
        ValueError: a bad argument (named), or rho or k3 beyond float64 (named after the function).
    """
    k, dk = kl_per_token.core(logp, logp_ref, mask, "k3")  # (B, T) eq. (kl_k3)
    rho = np.exp(log_ratio(logp, logp_old, mask))  # (B, T) 1 at padding, where w = 0
    w = agg_weights(mask, agg, max_len)  # (B, T)
    return float((w * rho * k).sum()), w * rho * (k + dk)  # eq. (kl_is); d(rho k3) = rho k3 + rho dk3


def _error(current_kl, target_kl):
    """The proportional error of eq. (kl_adaptive), clipped to `[-0.2, 0.2]`."""
    return min(max(current_kl / target_kl - 1.0, -0.2), 0.2)


def _beta_stays_nonnegative(current_kl, target_kl, horizon, n_steps):
    """A step larger than `horizon / 0.2` would turn beta negative."""
    if 1.0 + _error(current_kl, target_kl) * n_steps / horizon < 0:
        h = horizon / 0.2
        return f"n_steps: expected n_steps <= horizon / 0.2 = {h:g} (else beta turns negative), got {n_steps:g}"


def adaptive_kl_coef(beta, current_kl, target_kl, horizon, n_steps):
    """One update of the adaptive KL coefficient, eq. (kl_adaptive); returns the new beta.

    Args:
        beta (float): current coefficient, `>= 0`.
        current_kl (float): measured KL (any finite number; verl passes the batch's mean per-token
            KL estimate, averaged per sequence).
        target_kl (float): `> 0`.
        horizon (float): `> 0`.
        n_steps (float): `>= 0` (verl passes the batch size).

    Returns:
        beta (float): `beta (1 + clip(current_kl / target_kl - 1, -0.2, 0.2) n_steps / horizon)`; a
            step larger than `horizon / 0.2` could make it negative, which raises instead.
    """
    return beta * (1.0 + _error(current_kl, target_kl) * n_steps / horizon)  # eq. (kl_adaptive)


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


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# part 2: from minirl_lm/pg/entropy.py ---------------------------------------------------------
#   The entropy bonus: a whole-distribution term, with its own backward on the table.


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
LOGITS = array("S V", neginf=True)  # a logit table: -inf allowed (a token of probability 0)
ESTIMATOR = one_of(ESTIMATORS)
KL = dict(logp=TOKENS, logp_ref=TOKENS, mask=MASK, estimator=ESTIMATOR)  # a per-token estimate
TABLES = dict(theta=LOGITS, theta_ref=LOGITS, weights=optional(array("S", low=0.0)))

kl_per_token = boundary(**KL, returns="k dk")(kl_per_token)

kl_penalty = boundary(**KL, **AGGREGATION, returns="loss dloss_dlogp")(kl_penalty)

kl_in_reward = boundary(
    logp=TOKENS, logp_ref=TOKENS, mask=MASK, rewards=array("B"), beta=NONNEGATIVE, returns="rewards"
)(kl_in_reward)

exact_kl = boundary(p=array("S V"), q=array("S V"), where=[_distributions], returns=None)(exact_kl)  # inf is a KL

exact_kl_grad_theta = boundary(
    **TABLES, where=[_finite_spreads, _support("theta", "theta_ref")], returns="grad"
)(exact_kl_grad_theta)

exact_reverse_kl_grad_theta = boundary(
    **TABLES, where=[_finite_spreads, _support("theta_ref", "theta")], returns="grad"
)(exact_reverse_kl_grad_theta)

kl_penalty_straight_through = boundary(
    **KL, **AGGREGATION, returns="loss dloss_dlogp"
)(kl_penalty_straight_through)

kl_penalty_is = boundary(
    logp=TOKENS, logp_ref=TOKENS, logp_old=TOKENS, mask=MASK, **AGGREGATION, returns="loss dloss_dlogp"
)(kl_penalty_is)

adaptive_kl_coef = boundary(
    beta=NONNEGATIVE,
    current_kl=number(),
    target_kl=POSITIVE,
    horizon=POSITIVE,
    n_steps=NONNEGATIVE,
    where=[_beta_stays_nonnegative],
    returns="beta",
)(adaptive_kl_coef)
