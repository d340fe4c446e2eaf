# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/grpo.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/grpo.py -o DIR
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

"""GRPO, assembled from owned parts; it adds nothing new.

```text
A_b         = (R_b - mean_group(R)) / (std_group(R) + xi)    advantages.py, eq. (pg_normalized)
f[b,t]      = min(rho A_b, clip(rho, 1-eps, 1+eps_high) A_b)  clip.py, eq. (ppo_clip)
k[b,t]      = exp(-u) - 1 + u,  u = logp - logp_ref           kl.py, eq. (kl_k3)
loss        = -sum w f + beta sum w k                         eq. (grpo)
dloss/dlogp = clip's gradient + beta KL's gradient            (the sum rule)
```

Two other policies at once: the ratio `rho` is against the previous iterate `pi_old` (the
policy that sampled the group; fixed during the `mu` epochs), the penalty against the frozen
reference `pi_ref`. `grpo_step` takes one optimizer step per epoch on the whole sampled batch
(no mini-batches), so with `mu = 1` every token has `rho = 1`, nothing is clipped, and with
`beta = 0` the gradient is REINFORCE's with the group-standardized advantage
(`tests/pg/test_grpo.py` checks it to `1e-12`). With mini-batches, `rho != 1` from the second
optimizer step on, even at `mu = 1`.

One training step on a tabular policy (`grpo_step`): roll out `K` responses per prompt, score
them, standardize within each group, broadcast `A` to every token, compute `logp_old` and
`logp_ref` once, then `mu` epochs of loss, `policy.backward`, `theta -= lr dtheta`.

What `grpo_step` uses of its arguments, checked by name when it is called (a missing one is a
TypeError naming the argument and what it lacks), not by type: a class of your own with these
works.

```text
mdp.S, mdp.V                 the table shape (S, V) of both policies
mdp.rollout(policy, K, rng)  K responses per prompt drawn from policy with rng: an object with
                             states, tokens (B, T) int ids and mask (B, T) 0/1, right-padded,
                             B = N*K rows prompt-major (rows n*K .. n*K+K-1: prompt n's group)
mdp.score(grader, rollout)   (B,) finite rewards R(x, y), |R| <= 1e150
mdp.checkpoint()             optional, with mdp.rollback(cp): the environment's own state (the
mdp.rollback(cp)             lazy ids of a TokenMDP), taken back when the step raises
policy.theta                 the (S, V) table, updated in place; policy.copy(), policy.logp(
                             states, tokens, mask) -> (logp (B, T), seq (B,)), policy.backward(
                             states, tokens, mask, dlogp) -> (S, V); ref_policy: theta, logp
```

Both functions declare their arguments with `boundary`; the options after the batch (after
`K` for `grpo_step`) are keyword-only. An overflow is one ValueError naming the function, what
overflowed and the range of its numeric inputs; `grpo_step` checks each epoch's loss and update
before it commits anything.

`TokenMDP` (`minirl_lm/core/mdp.py`) and `TabularPolicy` (`minirl_lm/core/policy.py`) are these.

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository); in parentheses their defaults, not results of this library.

```text
grpo_loss, grpo_step        TRL GRPOTrainer; verl adv_estimator=grpo with actor.use_kl_loss;
                            OpenRLHF --algo.advantage.estimator group_norm with
                            --algo.kl.use_loss --algo.kl.estimator k3
eps, eps_high, agg          as in clip.py and reinforce.py; beta and kl_estimator as in kl.py
mu (1)                      TRL num_iterations (1); verl actor.ppo_epochs (1); OpenRLHF
                            --train.max_epochs (1)
K, baseline, std_eps, ddof  as in advantages.py
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["grpo_loss", "grpo_step"]


def grpo_loss(
    logp,
    logp_old,
    logp_ref,
    adv,
    mask,
    *,
    eps=0.2,
    eps_high=None,
    beta=0.04,
    kl_estimator="k3",
    agg="token_mean",
    max_len=None,
):
    """GRPO loss, eq. (grpo): the clipped surrogate plus `beta` times the KL penalty.

    Both terms use the same aggregation `agg`.

    Args:
        logp: `(B, T)` token log-probs under the policy being trained.
        logp_old: `(B, T)` token log-probs under `pi_old`, the policy that sampled.
        logp_ref: `(B, T)` token log-probs under the frozen reference `pi_ref`.
        adv: `(B,)` one advantage per response, or `(B, T)`.
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        eps: the clip range `epsilon`, in `(0, 1]`.
        eps_high: the upper clip range `epsilon_high` (default `eps`).
        beta: the KL coefficient, `>= 0`.
        kl_estimator: `"k1"`, `"k2"` or `"k3"`, an estimate of `KL(pi || pi_ref)`.
        agg: the aggregation of `reinforce.token_weights`.
        max_len: the constant `T_max` of `agg="constant"`.

    Returns:
        `(loss, dloss_dlogp)`: a float and the `(B, T)` gradient, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
    A = adv_tokens(adv, mask)  # (B, T)
    loss_clip, d_clip = clipped_surrogate.core(
        logp, logp_old, A, mask, eps, eps_high, agg, max_len
    )  # eq. (ppo_clip)
    loss_kl, d_kl = kl_penalty.core(logp, logp_ref, mask, kl_estimator, agg, max_len)  # eq. (kl_objective)
    return loss_clip + beta * loss_kl, d_clip + beta * d_kl  # eq. (grpo); the sum rule


def _table_shapes(policy, ref_policy, mdp):
    """Both policies hold a table of the environment's shape `(S, V)`."""
    if np.shape(policy.theta) != (mdp.S, mdp.V):
        return (
            f"policy: expected a table of shape (S, V) = ({mdp.S}, {mdp.V}) for mdp, got {np.shape(policy.theta)}"
        )
    if np.shape(ref_policy.theta) != np.shape(policy.theta):
        shape = np.shape(policy.theta)
        return f"ref_policy: expected a table of the policy's shape {shape}, got {np.shape(ref_policy.theta)}"


def _loo_groups(baseline, K):
    """Leave-one-out needs `K >= 2` responses per prompt."""
    if baseline == "loo" and K < 2:
        return (
            f"baseline: 'loo' (leave-one-out) needs K >= 2 (at K = 1 the rewards "
            f"of a group have no others to average), got K = {K}"
        )


def _checkpoints(mdp):
    """An environment has both `checkpoint()` and `rollback(cp)`, or neither (a TypeError)."""
    if hasattr(mdp, "checkpoint") != hasattr(mdp, "rollback"):
        raise TypeError(f"mdp: expected both checkpoint() and rollback(cp) or neither, got {type(mdp).__name__}")


def grpo_step(
    policy,
    ref_policy,
    mdp,
    grader,
    rng,
    K,
    *,
    mu=1,
    lr=0.1,
    eps=0.2,
    eps_high=None,
    beta=0.04,
    kl_estimator="k3",
    agg="token_mean",
    baseline="standardized",
    std_eps=1e-8,
    ddof=0,
):
    """One GRPO iteration on a `TabularPolicy`, updating `policy.theta` in place.

    Every argument is checked before the rollout, and the update is computed on a copy of the
    table: a call that raises (a bad argument, a grader returning garbage, a step that overflows
    in any epoch) leaves `policy.theta` and the generator's state as they were, and the
    environment too when it has `checkpoint()` and `rollback(cp)` (a `TokenMDP` has: its lazy
    ids); an environment without them is taken to keep no state a rollout changes.

    The options `eps`, `eps_high`, `beta`, `kl_estimator` and `agg` are those of `grpo_loss`.

    Args:
        policy: the `TabularPolicy` being trained (or any policy with what the module docstring
            lists).
        ref_policy: the frozen reference, a `TabularPolicy` of the same table shape `(S, V)`.
        mdp: a `TokenMDP`, or an environment of your own with `S`, `V`, `rollout(policy, K,
            rng)` and `score(grader, rollout)` (the module docstring says what they return).
        grader: `grader(prompt, response) -> R(x, y)`, a finite number.
        rng: the `np.random.Generator` the rollout draws from.
        K: responses per prompt (`>= 2` for `baseline="loo"`).
        mu: epochs on the sampled batch, one optimizer step each.
        lr: the step size `eta > 0`.
        baseline: the group baseline of `advantages.advantages`: `"none"`, `"mean"`,
            `"standardized"` (default) or `"loo"`.
        std_eps: the stabilizer `xi >= 0` of `"standardized"`.
        ddof: 0 (default) or 1, the population or the Bessel std of `"standardized"`.

    Returns:
        A dict of diagnostics: `mean_reward`; `loss` and `clip_fraction`, lists with one
        entry per epoch; `kl`, the mean per-token estimate against `pi_ref` before the update;
        and the `rollout`, `rewards` `(B,)` and `advantages` `(B,)`.

    Raises:
        ValueError: a bad argument (named), or a non-finite step (named after the function).
        TypeError: a `grader` that is not callable, or a policy or environment without a method
            or attribute it needs (named).
    """
    rng_state = rng.bit_generator.state
    mdp_state = mdp.checkpoint() if hasattr(mdp, "checkpoint") else None
    inputs = dict(lr=lr, eps=eps, eps_high=eps_high, beta=beta, std_eps=std_eps)  # an overflow's message
    work = policy.copy()  # the update is computed here, committed on success
    try:
        ro = mdp.rollout(work, K, rng)  # B = N*K responses, prompt-major
        rewards = _scored(mdp, grader, ro, K)  # (B,)
        A = advantages.core(rewards.reshape(-1, K), baseline, std_eps, ddof).ravel()  # (B,)
        A_tok = A[:, None] * ro.mask  # (B, T) one A on every real token
        logp_old, _ = work.logp(ro.states, ro.tokens, ro.mask)  # (B, T) fixed for mu epochs
        logp_ref, _ = ref_policy.logp(ro.states, ro.tokens, ro.mask)  # (B, T) frozen reference
        k, _ = kl_per_token.core(logp_old, logp_ref, ro.mask, kl_estimator)  # (B, T) before the update
        losses, fracs = [], []
        for epoch in range(1, mu + 1):
            logp, _ = work.logp(ro.states, ro.tokens, ro.mask)  # (B, T)
            loss, dlogp = grpo_loss.core(
                logp,
                logp_old,
                logp_ref,
                A_tok,
                ro.mask,
                eps=eps,
                eps_high=eps_high,
                beta=beta,
                kl_estimator=kl_estimator,
                agg=agg,
            )
            finite((loss, dlogp), "grpo_step", [f"loss of epoch {epoch}", f"gradient of epoch {epoch}"], inputs)
            fracs.append(clip_fraction.core(logp, logp_old, A_tok, ro.mask, eps, eps_high))
            losses.append(loss)
            # theta is -inf only where no token is ever sampled: dtheta is 0 there, no inf - inf
            new = work.theta - lr * work.backward(ro.states, ro.tokens, ro.mask, dlogp)  # gradient descent
            finite(new[np.isfinite(work.theta)], "grpo_step", [f"theta after epoch {epoch}"], inputs)
            work.theta[...] = new
    except BaseException:
        rng.bit_generator.state = rng_state  # the generator as it was
        if hasattr(mdp, "rollback"):
            mdp.rollback(mdp_state)  # the environment's state (lazy ids handed out): taken back
        raise
    policy.theta[...] = work.theta  # in place: the caller's array
    n_tok = max(ro.mask.sum(), 1.0)
    return dict(
        mean_reward=float(rewards.mean()),
        loss=losses,
        clip_fraction=fracs,
        kl=float(k.sum() / n_tok),
        rollout=ro,
        rewards=rewards,
        advantages=A,
    )


def _scored(mdp, grader, ro, K):
    """The `(B,)` rewards of a rollout, each what `mdp` promises: `(B, T)` rows, `B = N*K`,
    finite rewards within the advantages' domain (errors name the environment or the grader)."""
    has("rollout() to return an object", "states tokens mask")(ro, "mdp", {})
    B = np.shape(ro.mask)[0] if np.ndim(ro.mask) == 2 else 0
    if B < 1 or B % K:
        raise ValueError(
            f"mdp: expected rollout() to return a (B, T) mask with B = N*K rows (K = {K}), got shape "
            f"{np.shape(ro.mask)}"
        )
    R = array("B")(mdp.score(grader, ro), "mdp", {"B": B})  # (B,)
    if np.abs(R).max() > REWARD_MAX:
        raise ValueError(
            f"grader: expected rewards |R| <= {REWARD_MAX:g} (the advantages' domain), "
            f"got max |R| = {np.abs(R).max():g}"
        )
    return R


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


# part 2: from minirl_lm/pg/advantages.py ------------------------------------------------------
#   Baselines: the group of K responses to one prompt is its own baseline.


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
    """Mean of each group of checked rewards `(N, K)`, `(N, 1)`; exactly the common value when a
    group's rewards are equal (`np.mean` of identical floats can differ from them)."""
    mean = r.sum(axis=1, keepdims=True) / r.shape[1]  # (N, 1), r.mean's arithmetic
    equal = (r == r[:, :1]).all(axis=1, keepdims=True)  # (N, 1)
    return np.where(equal, r[:, :1], mean)  # (N, 1)


def standardized(rewards, std_eps=1e-8, ddof=0):
    """Group-standardized advantages, eq. (pg_normalized): `A = (R - mean) / (std + xi)`."""
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


def advantages(rewards, baseline="standardized", std_eps=1e-8, ddof=0):
    """Group advantages with the chosen baseline."""
    if baseline == "none":
        return rewards.copy()  # eq. (pg_vanilla); not the caller's array (GRPO returns both)
    if baseline == "standardized":
        return standardized.core(rewards, std_eps, ddof)
    c = rewards - group_mean(rewards)  # (N, K) eq. (pg_centred)
    K = rewards.shape[1]
    return c if baseline == "mean" else (K / (K - 1)) * c  # eq. (pg_loo)


# part 3: from minirl_lm/pg/clip.py ------------------------------------------------------------
#   The token-level clipped ratio (PPO surrogate), as an objective of token log-probs.


def branches(logp, logp_old, A, mask, eps, eps_high):
    """rho, the unclipped and the clipped branch (B, T) of read arguments, A (B, T); rho = 1 at
    padding, both branches 0 where A = 0 (no 0 * inf), rho = inf where it overflows."""
    with np.errstate(over="ignore"):  # overflow to inf is handled
        u = log_ratio(logp, logp_old, mask)  # (B, T) 0 at padding
        rho = np.exp(u)  # (B, T) rho_t; inf if u > ~709.78
        surr1 = np.multiply(rho, A, out=np.zeros_like(rho), where=A != 0)  # (B, T) unclipped
        surr2 = np.clip(rho, 1.0 - eps, 1.0 + eps_high) * A  # (B, T) clipped
    return rho, surr1, surr2


def clipped_surrogate(logp, logp_old, adv, mask, eps=0.2, eps_high=None, agg="token_mean", max_len=None):
    """PPO clipped surrogate loss, eq. (ppo_clip): `loss = -sum_{b,t} w[b,t] f[b,t]`."""
    A = adv_tokens(adv, mask)  # (B, T)
    eps_high = eps if eps_high is None else eps_high  # symmetric by default
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    rho, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)
    f = np.minimum(surr1, surr2)  # (B, T) eq. (ppo_clip)
    with np.errstate(over="ignore"):  # a sum beyond float64 is inf
        loss = -(w * f).sum()
    # backward: d f / d logp = rho A where the unclipped branch is active (ties included), else 0
    df_dlogp = np.where(surr1 <= surr2, surr1, 0.0)  # (B, T) d rho / d logp = rho
    return float(loss), -w * df_dlogp  # (B, T) 0 at padding


def clip_fraction(logp, logp_old, adv, mask, eps=0.2, eps_high=None):
    """The fraction of real tokens whose gradient the clip zeroes (clipped branch strictly
    smaller)."""
    A = adv_tokens(adv, mask)  # (B, T)
    eps_high = eps if eps_high is None else eps_high  # symmetric by default
    _, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)
    clipped = surr2 < surr1  # (B, T); at padding rho = 1: never
    n = mask.sum()
    return float(clipped.sum() / n) if n > 0 else 0.0


# part 4: from minirl_lm/pg/kl.py --------------------------------------------------------------
#   KL to the frozen reference: per-token estimators, their two placements, and the exact KL.


ESTIMATORS = ("k1", "k2", "k3")


def kl_per_token(logp, logp_ref, mask, estimator="k3"):
    """The per-token estimate `k` of `KL(pi || pi_ref)` and its derivative `dk/dlogp`."""
    u = log_ratio(logp, logp_ref, mask)  # (B, T) 0 at padding
    if estimator == "k1":
        return u, mask.copy()  # eq. (kl_k1); dk1 = 1
    if estimator == "k2":
        return 0.5 * u * u, u  # eq. (kl_k2); dk2 = u
    return _k3(u), -np.expm1(-u) * mask  # eq. (kl_k3); dk3 = 1 - exp(-u)


def _k3(u):
    """exp(-u) - 1 + u to ~1e-14 relative error: expm1(-u) + u, and near 0 (where the two cancel)
    its Taylor series u^2/2 - u^3/6 + ... to u^8 (truncation below 1e-17 relative)."""
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
    """The KL penalty as a separate loss term, eq. (kl_objective): `loss = sum_{b,t} w k`."""
    k, dk = kl_per_token.core(logp, logp_ref, mask, estimator)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    return float((w * k).sum()), w * dk  # eq. (kl_objective); d loss / d logp = w dk


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


def has(what, members):
    """Any object with `members`, a string of names (`"logp() theta"`: `logp()` a method, `theta`
    an attribute), whatever its type: what the body uses of it; `what` says what fits."""
    members = members.split()

    def lacks(x, m):
        return not callable(getattr(x, m[:-2], None)) if m.endswith("()") else not hasattr(x, m)

    def read(x, name, dims):
        if missing := [m.rstrip("()") for m in members if lacks(x, m)]:
            raise TypeError(
                f"{name}: expected {what} (with {', '.join(members)}), "
                f"got {type(x).__name__} without {', '.join(missing)}"
            )
        return x

    return read


def function(call, nargs):
    """A callable `call` (a string saying how it is called) taking `nargs` positional arguments."""

    def read(f, name, dims):
        if not callable(f) or isinstance(f, type):
            raise TypeError(f"{name}: expected a callable {call}, got {_show(f)}")
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):  # a builtin without a signature
            return f
        try:
            sig.bind(*range(nargs))
        except TypeError:
            raise TypeError(
                f"{name}: expected a callable {call} taking {nargs} positional arguments, "
                f"got one with signature {sig}"
            ) from None
        return f

    return read


def generator(rng, name, dims):
    """A `np.random.Generator`, the one source of every draw."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), got {_show(rng)}"
        )
    return rng


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)
ADVANTAGE = array("B", "B T")  # one advantage per response, or one per token
MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed
EPS = number(0.0, 1.0, low_open=True)  # a clip range in (0, 1]
EPS_HIGH = optional(number(0.0, low_open=True))  # an upper clip range > 0, None: the lower one
POSITIVE = number(0.0, low_open=True)
NONNEGATIVE = number(0.0)
COUNT = number(1, integer=True)  # an integer >= 1
MAX_LEN = optional(COUNT)  # T_max of agg="constant": None or an int >= 1
DDOF = number(0, 1, integer=True)  # a std's delta degrees of freedom: population 0, Bessel 1
REFERENCE = has("a TabularPolicy", "logp() theta")  # a frozen reference: what a step reads of it


def longest_response(mask, agg, max_len):
    """`max_len`, the `T_max` of `agg="constant"`, is at least the longest response (its trained
    tokens, holes not counted)."""
    n = int(mask.sum(axis=1).max())
    if agg == "constant" and max_len is not None and max_len < n:
        return f"max_len: expected >= the longest response ({n} trained tokens), got {max_len}"


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

AGGREGATION = dict(agg=one_of(AGGS), max_len=MAX_LEN, where=[longest_response])  # eq. (pg_agg)
CLIP = dict(logp=TOKENS, logp_old=TOKENS, adv=ADVANTAGE, mask=MASK, eps=EPS, eps_high=EPS_HIGH)  # both declare it
ESTIMATOR = one_of(ESTIMATORS)
KL = dict(logp=TOKENS, logp_ref=TOKENS, mask=MASK, estimator=ESTIMATOR)  # a per-token estimate

grpo_loss = boundary(
    **CLIP, logp_ref=TOKENS, beta=NONNEGATIVE, kl_estimator=ESTIMATOR, **AGGREGATION, returns="loss dloss_dlogp"
)(grpo_loss)

grpo_step = boundary(
    policy=has("a TabularPolicy", "logp() backward() copy() theta"),
    ref_policy=REFERENCE,
    mdp=has("a TokenMDP or an environment of your own", "rollout() score() S V"),
    grader=function("grader(prompt, response)", 2),
    rng=generator,
    K=COUNT,
    mu=COUNT,
    lr=POSITIVE,
    eps=EPS,
    eps_high=EPS_HIGH,
    beta=NONNEGATIVE,
    kl_estimator=ESTIMATOR,
    agg=one_of(AGGS),
    baseline=one_of(BASELINES),
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    where=[_loo_groups, _checkpoints, _table_shapes],
    returns=None,
)(grpo_step)

standardized = boundary(
    rewards=array("N K"), std_eps=NONNEGATIVE, ddof=DDOF, where=[bounded_rewards]
)(standardized)

advantages = boundary(
    rewards=array("N K"),
    baseline=one_of(BASELINES),
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    where=[bounded_rewards, _others],
)(advantages)

clipped_surrogate = boundary(**CLIP, **AGGREGATION, returns="loss dloss_dlogp")(clipped_surrogate)

clip_fraction = boundary(**CLIP)(clip_fraction)

kl_per_token = boundary(**KL, returns="k dk")(kl_per_token)

kl_penalty = boundary(**KL, **AGGREGATION, returns="loss dloss_dlogp")(kl_penalty)
