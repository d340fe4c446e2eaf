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

What `grpo_step` uses of its arguments, checked by name (a missing one is a TypeError naming
the argument and what it lacks), not by type: a class of your own with these works.

```text
mdp.S, mdp.V                 the table shape (S, V) of both policies
mdp.rollout(policy, K, rng)  K responses per prompt drawn from policy with rng: an object with
                             states, tokens (B, T) int ids and mask (B, T) 0/1, right-padded,
                             B = N*K rows prompt-major (rows n*K .. n*K+K-1: prompt n's group)
mdp.score(grader, rollout)   (B,) finite rewards R(x, y)
mdp.checkpoint()             optional, with mdp.rollback(cp): the environment's own state (the
mdp.rollback(cp)             lazy ids of a TokenMDP), taken back when the step raises
policy.theta                 the (S, V) table, updated in place; policy.copy(), policy.logp(
                             states, tokens, mask) -> (logp (B, T), seq (B,)), policy.backward(
                             states, tokens, mask, dlogp) -> (S, V); ref_policy: theta, logp
```

`TokenMDP` (`minirl_lm/core/mdp.py`) and `TabularPolicy` (`minirl_lm/core/policy.py`) are these.

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

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
        ValueError: a non-finite result or a bad argument, named after the argument.
    """
    logp, logp_old, logp_ref, mask, adv, eps, eps_high, beta, max_len = grpo_objective(
        logp, logp_old, logp_ref, adv, mask, eps, eps_high, beta, kl_estimator, agg, max_len, ESTIMATORS, AGGS
    )
    return _loss(
        logp, logp_old, logp_ref, adv_tokens(adv, mask), mask, eps, eps_high, beta, kl_estimator, agg, max_len
    )


def _loss(logp, logp_old, logp_ref, A, mask, eps, eps_high, beta, kl_estimator, agg, max_len, guard=True):
    """`grpo_loss` on checked arguments, A (B, T); `guard=False`: a non-finite result as it is."""
    # eq. (ppo_clip): the body of clipped_surrogate on these checked arguments
    loss_clip, d_clip = clipped_surrogate.core(logp, logp_old, A, mask, eps, eps_high, agg, max_len)
    if guard:
        finite_result((loss_clip, d_clip), "logp", "the clipped surrogate")
    loss_kl, d_kl = _penalty(logp, logp_ref, mask, kl_estimator, agg, max_len, guard)  # eq. (kl_objective)
    with np.errstate(over="ignore", invalid="ignore"):  # a huge beta: named below
        loss = loss_clip + beta * loss_kl  # eq. (grpo)
        dloss_dlogp = d_clip + beta * d_kl  # (B, T) sum rule
    if not guard:
        return loss, dloss_dlogp
    return finite_result((loss, dloss_dlogp), "beta", "the loss clip + beta KL")


def grpo_step(
    policy,
    ref_policy,
    mdp,
    grader,
    rng,
    K,
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
        eps: the clip range `epsilon`.
        eps_high: the upper clip range (default `eps`).
        beta: the KL coefficient.
        kl_estimator: `"k1"`, `"k2"` or `"k3"`.
        agg: the loss aggregation.
        baseline: `"none"`, `"mean"`, `"standardized"` or `"loo"`.
        std_eps: the std stabilizer `xi` of the standardized baseline.
        ddof: 0 (population std) or 1 (Bessel).

    Returns:
        A dict of diagnostics: `mean_reward`; `loss` and `clip_fraction`, lists with one
        entry per epoch; `kl`, the mean per-token estimate against `pi_ref` before the update;
        and the `rollout`, `rewards` `(B,)` and `advantages` `(B,)`.

    Raises:
        ValueError: a bad argument (named), or a non-finite step.
        TypeError: a `grader` that is not callable, or a policy or environment without a method
            or attribute it needs (named).
    """
    K, mu, lr, eps, eps_high, beta, std_eps, ddof = grpo_step_args(
        policy,
        ref_policy,
        mdp,
        grader,
        rng,
        K,
        mu,
        lr,
        eps,
        eps_high,
        beta,
        kl_estimator,
        agg,
        baseline,
        std_eps,
        ddof,
        ESTIMATORS,
        AGGS,
        BASELINES,
    )
    rng_state = rng.bit_generator.state
    mdp_state = mdp.checkpoint() if hasattr(mdp, "checkpoint") else None
    try:  # commit only on success
        work, out = _step(
            policy.copy(),
            ref_policy,
            mdp,
            grader,
            rng,
            K,
            mu,
            lr,
            eps,
            eps_high,
            beta,
            kl_estimator,
            agg,
            baseline,
            std_eps,
            ddof,
        )
    except BaseException:
        rng.bit_generator.state = rng_state  # the generator as it was
        if hasattr(mdp, "rollback"):
            mdp.rollback(mdp_state)  # the environment's state (lazy ids handed out): taken back
        raise
    policy.theta[...] = work.theta  # in place: the caller's array
    return out


def _step(
    policy,
    ref_policy,
    mdp,
    grader,
    rng,
    K,
    mu,
    lr,
    eps,
    eps_high,
    beta,
    kl_estimator,
    agg,
    baseline,
    std_eps,
    ddof,
):
    """grpo_step on checked arguments, updating the work copy ``policy``; returns it and the
    diagnostics."""
    ro = mdp.rollout(policy, K, rng)  # B = N*K responses, prompt-major
    B = env_rollout(ro, K)
    rewards = grader_rewards(env_rewards(mdp.score(grader, ro), B), REWARD_MAX)  # (B,) |R| <= 1e150
    A = _advantages(rewards.reshape(-1, K), baseline, std_eps, ddof).ravel()  # (B,)
    A_tok = A[:, None] * ro.mask  # (B, T) one A on every real token
    logp_old, _ = policy.logp(ro.states, ro.tokens, ro.mask)  # (B, T) fixed for mu epochs
    logp_ref, _ = ref_policy.logp(ro.states, ro.tokens, ro.mask)  # (B, T) frozen reference
    k, _ = _kl_terms(logp_old, logp_ref, ro.mask, kl_estimator)  # (B, T) before the update
    n_tok = max(ro.mask.sum(), 1.0)

    losses, fracs = [], []
    for epoch in range(mu):
        logp, _ = policy.logp(ro.states, ro.tokens, ro.mask)  # (B, T)
        # epoch 0 sees the sampled data (an overflow names its input); after a step, lr moved
        # theta too far: the loss is computed as it is and a non-finite one names lr
        loss, dlogp = _loss(
            logp,
            logp_old,
            logp_ref,
            A_tok,
            ro.mask,
            eps,
            eps_high,
            beta,
            kl_estimator,
            agg,
            None,
            guard=epoch == 0,
        )
        if epoch:
            finite_result(
                (loss, dlogp), "lr", f"the loss of epoch {epoch + 1} (after {epoch} step(s) of lr = {lr:g})"
            )
        fracs.append(clip_fraction.core(logp, logp_old, A_tok, ro.mask, eps, eps_high))
        losses.append(loss)
        dtheta = policy.backward(ro.states, ro.tokens, ro.mask, dlogp)  # (S, V)
        # lr * dtheta may overflow to +-inf; no inf - inf: dtheta is finite and 0 wherever
        # theta is -inf (a zero-probability token is never sampled, and a -inf logp is rejected)
        with np.errstate(over="ignore"):
            new = policy.theta - lr * dtheta  # gradient descent on the loss
        finite_result(new[np.isfinite(policy.theta)], "lr", "theta - lr * dtheta")
        policy.theta[...] = new
    return policy, {
        "mean_reward": float(rewards.mean()),
        "loss": losses,
        "clip_fraction": fracs,
        "kl": float(k.sum() / n_tok),
        "rollout": ro,
        "rewards": rewards,
        "advantages": A,
    }


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


AGGS = ("seq_sum", "token_mean", "seq_mean_token_mean", "constant", "token_sum")


def agg_weights(mask, agg, max_len=None):
    """Per-token weights `w` (B, T) of aggregation `agg` over a checked 0/1 `mask` (B, T), eq.
    (pg_agg).

    Any 0/1 mask: a row's length `|y_b| = sum_t mask[b, t]` counts its trained tokens wherever
    they sit, so a row with holes (untrained positions inside it) gets the weights of its
    compacted row (holes removed, the trained tokens moved left in order), scattered back.
    `max_len` is the `T_max` of `"constant"` (default: the padded width `T`), already checked to
    be at least the largest `|y_b|`; compaction invariance holds at a given `max_len` (the
    default is the same for the compacted rows when they keep the width `T`)."""
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
# part 2: from minirl_lm/pg/advantages.py
#   Baselines: the group of K responses to one prompt is its own baseline.
# ----------------------------------------------------------------------------------------------


BASELINES = ("none", "mean", "standardized", "loo")


REWARD_MAX = 1e150  # |rewards| bound: the standardized baseline squares the spread


def _group_mean(r):
    """Mean of each group, (N, 1); exactly the common value when a group's rewards are equal."""
    mean = r.sum(axis=1, keepdims=True) / r.shape[1]  # (N, 1), r.mean's arithmetic
    equal = (r == r[:, :1]).all(axis=1, keepdims=True)  # (N, 1)
    return np.where(equal, r[:, :1], mean)  # (N, 1)


def _centred(r):
    """`centred` on checked rewards (N, K)."""
    return r - _group_mean(r)  # (N, K)


def _standardized(r, std_eps, ddof):
    """`standardized` on checked arguments."""
    c = r - _group_mean(r)  # (N, K)
    dof = max(r.shape[1] - ddof, 1)  # K = 1, ddof = 1: c == 0, so std = 0
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


def _leave_one_out(r):
    """`leave_one_out` on checked rewards (N, K >= 2)."""
    K = r.shape[1]
    return (K / (K - 1)) * (r - _group_mean(r))  # eq. (pg_loo)


def _advantages(r, baseline, std_eps, ddof):
    """`advantages` on checked arguments."""
    if baseline == "none":
        return r.copy()  # eq. (pg_vanilla)
    if baseline == "mean":
        return _centred(r)
    if baseline == "loo":
        return _leave_one_out(r)
    return _standardized(r, std_eps, ddof)


# ----------------------------------------------------------------------------------------------
# part 3: from minirl_lm/pg/clip.py
#   The token-level clipped ratio (PPO surrogate), as an objective of token log-probs.
# ----------------------------------------------------------------------------------------------


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
    """PPO clipped surrogate loss, eq. (ppo_clip): `loss = -sum_{b,t} w[b,t] f[b,t]`.

    Args:
        logp: `(B, T)` token log-probs under the policy being trained, `pi`.
        logp_old: `(B, T)` token log-probs under `pi_old`, the policy that sampled.
        adv: `(B,)` one advantage per response, or `(B, T)`.
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        eps: the clip range `epsilon`, in `(0, 1]`.
        eps_high: the upper clip range `epsilon_high` (default `eps`).
        agg: the aggregation of `reinforce.token_weights`.
        max_len: the constant `T_max` of `agg="constant"`.

    Returns:
        `(loss, dloss_dlogp)`: a float and the `(B, T)` gradient, `-w rho A` on unclipped real
        tokens, 0 elsewhere.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
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
    """The fraction of real tokens whose gradient the clip zeroes (clipped branch strictly smaller).

    A token with `A = 0` is never counted.

    Args:
        logp: `(B, T)` token log-probs under `pi`.
        logp_old: `(B, T)` token log-probs under `pi_old`.
        adv: `(B,)` or `(B, T)` advantages.
        mask: `(B, T)` 0/1 float mask.
        eps: the clip range `epsilon`.
        eps_high: the upper clip range (default `eps`).

    Returns:
        A float in `[0, 1]`; 0.0 for a batch without real tokens.
    """
    A = adv_tokens(adv, mask)  # (B, T)
    eps_high = eps if eps_high is None else eps_high  # symmetric by default
    _, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)
    clipped = surr2 < surr1  # (B, T); at padding rho = 1: never
    n = mask.sum()
    return float(clipped.sum() / n) if n > 0 else 0.0


# ----------------------------------------------------------------------------------------------
# part 4: from minirl_lm/pg/kl.py
#   KL to the frozen reference: per-token estimators, their two placements, and the exact KL.
# ----------------------------------------------------------------------------------------------


ESTIMATORS = ("k1", "k2", "k3")


WHAT = {"k1": "logp - logp_ref", "k2": "k2 = u^2/2", "k3": "k3 = exp(-u) - 1 + u (u = logp - logp_ref)"}


def _u(logp, logp_ref, mask):
    """u = logp - logp_ref (B, T), 0 at padding; +-inf where the difference overflows."""
    with np.errstate(over="ignore"):  # overflow: rejected by callers
        return log_ratio(logp, logp_ref, mask)


def _kl_terms(logp, logp_ref, mask, estimator, guard=True):
    """`kl_per_token` on checked arguments: (k, dk), finite or a ValueError (or, with
    `guard=False`, as computed)."""
    u = _u(logp, logp_ref, mask)  # (B, T)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: rejected below
        if estimator == "k1":
            k, dk = u, mask.copy()  # eq. (kl_k1); dk1 = 1
        elif estimator == "k2":
            k, dk = 0.5 * u * u, u  # eq. (kl_k2); dk2 = u
        else:
            k = _k3(u)  # eq. (kl_k3)
            dk = -np.expm1(-u) * mask  # dk3 = 1 - exp(-u)
    if not guard:
        return k, dk
    return finite_among((k, dk), WHAT[estimator], {"logp": logp, "logp_ref": logp_ref})


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


def _penalty(logp, logp_ref, mask, estimator, agg, max_len, guard=True):
    """`kl_penalty` on checked arguments (`guard=False`: a non-finite result as it is)."""
    k, dk = _kl_terms(logp, logp_ref, mask, estimator, guard)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    with np.errstate(over="ignore", invalid="ignore"):
        loss = (w * k).sum()  # eq. (kl_objective)
        dloss_dlogp = w * dk  # (B, T) d loss / d logp = w dk
    if not guard:
        return float(loss), dloss_dlogp
    named = {"logp": logp, "logp_ref": logp_ref}  # the overflow's culprit among them
    return finite_among((float(loss), dloss_dlogp), "the KL penalty", named)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/checks.py
#   The boundary of the policy-gradient part, token level: one bundle call per public function
# ----------------------------------------------------------------------------------------------


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
    A = None if adv is _UNSET else advantage_checks(adv, mask, per_token)
    if agg is not _UNSET:
        max_len = aggregation(mask, agg, max_len, aggs)
    return (*arrays, mask, A, max_len)


def advantage_checks(adv, mask, per_token=True):
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


def clip_objective(logp, logp_old, adv, mask, eps, eps_high, agg, max_len, aggs):
    """The arguments of the clipped surrogate: ``(logp, logp_old, mask, adv, eps, eps_high,
    max_len)``."""
    logp, logp_old, mask, adv, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv)
    eps, eps_high = clip_range(eps, eps_high)
    return logp, logp_old, mask, adv, eps, eps_high, aggregation(mask, agg, max_len, aggs)


def grpo_objective(
    logp, logp_old, logp_ref, adv, mask, eps, eps_high, beta, kl_estimator, agg, max_len, estimators, aggs
):
    """The arguments of the GRPO loss: ``(logp, logp_old, logp_ref, mask, adv, eps, eps_high,
    beta, max_len)``."""
    beta = float_scalar(beta, "beta", low=0.0)
    choice(kl_estimator, "kl_estimator", estimators)
    logp, logp_old, mask, adv, eps, eps_high, max_len = clip_objective(
        logp, logp_old, adv, mask, eps, eps_high, agg, max_len, aggs
    )
    logp_ref = float_array(logp_ref, "logp_ref", ndim=2)
    same_shape("logp", logp, "logp_ref", logp_ref)
    return logp, logp_old, logp_ref, mask, adv, eps, eps_high, beta, max_len


def grpo_step_args(
    policy,
    ref_policy,
    mdp,
    grader,
    rng,
    K,
    mu,
    lr,
    eps,
    eps_high,
    beta,
    kl_estimator,
    agg,
    baseline,
    std_eps,
    ddof,
    estimators,
    aggs,
    baselines,
):
    """The arguments of one GRPO step, before any draw: ``(K, mu, lr, eps, eps_high, beta,
    std_eps, ddof)``; the policies and the environment are checked by what the step uses of them
    (``protocol``; grpo.py's docstring lists it), the policies' tables against the MDP's shape."""
    rng_check(rng, "rng")
    K = int_scalar(K, "K", low=1)
    mu = int_scalar(mu, "mu", low=1)
    lr = float_scalar(lr, "lr", low=0.0, low_open=True)
    eps, eps_high = clip_range(eps, eps_high)
    beta = float_scalar(beta, "beta", low=0.0)
    choice(kl_estimator, "kl_estimator", estimators)
    choice(agg, "agg", aggs)
    choice(baseline, "baseline", baselines)
    std_eps = float_scalar(std_eps, "std_eps", low=0.0)
    ddof = int_scalar(ddof, "ddof", low=0, high=1)
    if baseline == "loo" and K < 2:
        raise ValueError(
            f"baseline: 'loo' (leave-one-out) needs K >= 2 (at K = 1 the rewards "
            f"of a group have no others to average), got K = {K}"
        )
    callable_check(grader, "grader", 2, "grader(prompt, response)")
    step_protocol(policy, ref_policy, mdp)
    if np.shape(policy.theta) != (mdp.S, mdp.V):
        raise ValueError(
            f"policy: expected a table of shape (S, V) = ({mdp.S}, {mdp.V}) for mdp, got {policy.theta.shape}"
        )
    if ref_policy.theta.shape != policy.theta.shape:
        raise ValueError(
            f"ref_policy: expected a table of the policy's shape "
            f"{policy.theta.shape}, got {ref_policy.theta.shape}"
        )
    return K, mu, lr, eps, eps_high, beta, std_eps, ddof


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/validate.py
#   The boundary of the policy-gradient part, group level: the bundles of `pg/advantages.py`
# ----------------------------------------------------------------------------------------------


def grader_rewards(R, bound):
    """A grader's finite rewards ``R`` if every ``|R| <= bound`` (the advantages' domain), else a
    ValueError naming the grader (the rewards are its output, not an argument)."""
    if np.abs(R).max() > bound:
        raise ValueError(
            f"grader: expected rewards |R| <= {bound:g} (the advantages' domain), "
            f"got max |R| = {np.abs(R).max():g}"
        )
    return R


def step_protocol(policy, ref_policy, mdp):
    """The objects of one GRPO step, checked by what the step calls (not by type)."""
    protocol(policy, "policy", "a TabularPolicy", ("logp", "backward", "copy"), ("theta",))
    protocol(ref_policy, "ref_policy", "a TabularPolicy", ("logp",), ("theta",))
    protocol(mdp, "mdp", "a TokenMDP or an environment of your own", ("rollout", "score"), ("S", "V"))
    if hasattr(mdp, "checkpoint") != hasattr(mdp, "rollback"):
        raise TypeError(f"mdp: expected both checkpoint() and rollback(cp) or neither, got {type(mdp).__name__}")
    if hasattr(mdp, "checkpoint"):
        protocol(mdp, "mdp", "a TokenMDP or an environment of your own", ("checkpoint", "rollback"), ())


def protocol(obj, name, what, methods, attributes):
    """Raise a TypeError naming ``name`` unless ``obj`` has each of ``methods`` (callable) and
    ``attributes``: what the caller uses of it, whatever its type (``what`` says what fits)."""
    missing = [m for m in methods if not callable(getattr(obj, m, None))]
    missing += [a for a in attributes if not hasattr(obj, a)]
    if missing:
        want = ", ".join(f"{m}()" for m in methods) + "".join(f", {a}" for a in attributes)
        raise TypeError(
            f"{name}: expected {what} (with {want}), got {type(obj).__name__} without {', '.join(missing)}"
        )
    return obj


def env_rollout(ro, K):
    """What an environment's rollout returned to one GRPO step: an object with (B, T)
    ``states``, ``tokens`` and ``mask``, B a multiple of K (prompt-major groups); returns B."""
    missing = [a for a in ("states", "tokens", "mask") if not hasattr(ro, a)]
    if missing:
        raise TypeError(
            f"mdp: expected rollout() to return an object with states, tokens and mask, got "
            f"{type(ro).__name__} without {', '.join(missing)}"
        )
    B = np.shape(ro.mask)[0] if np.ndim(ro.mask) == 2 else -1
    if B < 1 or B % K:
        raise ValueError(
            f"mdp: expected rollout() to return a (B, T) mask with B = N*K rows (K = {K}), got shape "
            f"{np.shape(ro.mask)}"
        )
    return B


def env_rewards(R, B):
    """What an environment's score returned: (B,) finite rewards, as float64."""
    return float_array(R, "mdp", ndim=1, shape=(B,))


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


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
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted).

    Any 0/1 pattern by default: a 0 between 1s is a hole, a position the token-level objectives
    do not train (a tool output; TRL's ``tool_mask``, verl's multi-turn ``response_mask``); on
    such a row they give the loss and gradient of the compacted row (holes removed).
    prefix: ``(what, where)`` for a caller that reads the rows as prefixes (GAE, returns, the
    critic): right padding is required, and the error names ``what`` and ``where`` holes go.
    """
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


def rng_check(rng, name):
    """Raise unless ``rng`` is a ``np.random.Generator``."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), got {_describe(rng)}"
        )
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
        if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_, np.ndarray)):
            try:
                v = float(v)  # an exact number (a Fraction) too
            except OverflowError:
                raise ValueError(
                    f"{name}: expected a value for which {what} is finite in "
                    f"float64, got one beyond float64's range"
                ) from None
        a = _asarray(v, name)
        if isinstance(v, (str, bytes)) or a.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected a number or an array of numbers, got {_describe(v)}")
        if not np.isfinite(a.astype(np.float64, copy=False)).all():
            kind = "NaN" if np.isnan(a).any() else "inf"
            raise ValueError(
                f"{name}: expected a value for which {what} is finite in float64, "
                f"got one that makes it {kind} (overflow)"
            )
    return value


def callable_check(f, name, nargs, call="f(...)"):
    """Raise unless ``f`` is a callable that accepts ``nargs`` positional arguments."""
    if not callable(f) or isinstance(f, type):
        raise TypeError(f"{name}: expected a callable {call}, got {_describe(f)}")
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):  # builtins without a signature
        return f
    try:
        sig.bind(*range(nargs))
    except TypeError:
        raise TypeError(
            f"{name}: expected a callable {call} taking {nargs} positional arguments, got one with signature {sig}"
        ) from None
    return f


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


# ----------------------------------------------------------------------------------------------
# the declared boundary: from minirl_lm/core/boundary.py
#   The declared boundary: a public function states its arguments' contracts beside its signature,
# ----------------------------------------------------------------------------------------------


def boundary(where=(), returns="", **kinds):
    """Declare the kinds of a function's arguments (`name=kind()`), the relations between them
    (`where=[rule, ...]`) and the names of its results (`returns="loss grad"`, for messages)."""

    def declare(f):
        sig, names = inspect.signature(f), returns.split()
        rules = [(r, list(inspect.signature(r).parameters)) for r in where]

        @functools.wraps(f)
        def checked(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a, dims = bound.arguments, {}
            for name, read in kinds.items():
                a[name] = read(a[name], name, dims)
            for rule, params in rules:
                if (msg := rule(*(a[p] for p in params))) is not None:
                    raise ValueError(msg)
            with np.errstate(all="ignore"):
                out = f(*bound.args, **bound.kwargs)
            return finite(out, f.__name__, names, {n: a[n] for n, r in kinds.items() if r.data})

        checked.core = f
        return checked

    return declare


def finite(out, fname, names, inputs):
    """`out` (a number, an array or a tuple of them) if every entry is finite, else the
    ValueError of step 6: `fname`, the results `names` that overflowed, the ranges of `inputs`."""
    leaves = out if isinstance(out, tuple) else (out,)
    bad = [i for i, v in enumerate(leaves) if not np.isfinite(np.asarray(v, dtype=np.float64)).all()]
    if not bad:
        return out
    what = " and ".join(names[i] if i < len(names) else f"result {i}" for i in bad)
    kind = "NaN" if any(np.isnan(np.asarray(leaves[i], dtype=np.float64)).any() for i in bad) else "inf"
    given = ", ".join(
        f"{n} in [{np.min(v):g}, {np.max(v):g}]" if np.ndim(v) else f"{n} = {v:g}"
        for n, v in inputs.items()
        if v is not None
    )
    raise ValueError(f"{fname}: expected a finite {what}, got {kind} (beyond float64) from {given}")


def array(*shapes, values=None, data=True):
    """A float64 array (a fresh copy) of one of `shapes`, each a string of letters ("B T"), its
    entries finite (and among `values` if given)."""
    shapes = [tuple(s.split()) for s in shapes]

    def read(x, name, dims):
        try:
            a = None if isinstance(x, (str, bytes)) else np.asarray(x)
        except (ValueError, TypeError, OverflowError):  # ragged nesting, huge ints
            a = None
        if a is None or a.dtype.kind not in "fiub":  # float, int, uint, bool
            raise TypeError(f"{name}: expected a real-valued array, got {_show(x)}")
        a = np.array(a, dtype=np.float64)  # a copy: the caller's array is never written
        fit = next(
            (s for s in shapes if len(s) == a.ndim and all(dims.get(k, n) == n for k, n in zip(s, a.shape))), None
        )
        if fit is None:
            want = " or ".join(str(tuple(dims.get(k, k) for k in s)).replace("'", "") for s in shapes)
            raise ValueError(f"{name}: expected shape {want}, got {a.shape}")
        if 0 in a.shape:
            raise ValueError(
                f"{name}: expected a non-empty array (every axis of length >= 1), got shape {a.shape}"
            )
        dims.update(zip(fit, a.shape))
        if np.isnan(a).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(a).sum())} NaN entries")
        if np.isinf(a).any():
            raise ValueError(
                f"{name}: expected finite values (no +-inf), got {int(np.isinf(a).sum())} such entries"
            )
        if values is not None and not np.isin(a, values).all():
            want = " and ".join(f"{v:g}" for v in values)
            raise ValueError(f"{name}: expected only {want}, got value {float(a[~np.isin(a, values)][0])!r}")
        return a

    read.data = data
    return read


def number(low=-np.inf, high=np.inf, low_open=False, integer=False):
    """A finite real number as a Python float (an int with `integer`) in `[low, high]`, or
    `(low, high]` with `low_open`."""
    noun = "an integer" if integer else "a number"
    bounds = [f"{'>' if low_open else '>='} {low:g}"] * (low > -np.inf) + [f"<= {high:g}"] * (high < np.inf)

    def read(x, name, dims):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral if integer else numbers.Real):
            raise TypeError(f"{name}: expected {'an integer' if integer else 'a real number'}, got {_show(x)}")
        try:
            v = int(x) if integer else float(x)
        except OverflowError:  # an int beyond float64
            v = np.inf
        if not np.isfinite(v):
            raise ValueError(f"{name}: expected a finite number, got {x}"[:200])
        if (v <= low if low_open else v < low) or v > high:
            raise ValueError(f"{name}: expected {noun} {' and '.join(bounds)}, got {v}")
        return v

    read.data = not integer
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

    read.data = False
    return read


def optional(kind):
    """None, or a value of `kind`."""

    def read(x, name, dims):
        return None if x is None else kind(x, name, dims)

    read.data = kind.data
    return read


def _show(x):
    return (
        f"array of shape {x.shape} and dtype {x.dtype}"
        if isinstance(x, np.ndarray)
        else f"{type(x).__name__} {x!r}"[:120]
    )


def tokens():
    """A `(B, T)` float array: one number per position of each response (log-probs)."""
    return array("B T")


def advantage():
    """`(B,)` one advantage per response, or `(B, T)` one per token."""
    return array("B", "B T")


def mask():
    """A `(B, T)` 0/1 mask of the trained tokens; holes (a 0 between 1s) allowed."""
    return array("B T", values=(0.0, 1.0), data=False)


def interval(low, high, low_open=False):
    """A number in `[low, high]` (`(low, high]` with `low_open`)."""
    return number(low, high, low_open)


def positive():
    """A number `> 0`."""
    return number(0.0, low_open=True)


def count(low=1):
    """An integer `>= low`."""
    return number(low, integer=True)


def longest_response(mask, agg, max_len):
    """`max_len`, the `T_max` of `agg="constant"`, is at least the longest response (its
    trained tokens, holes not counted)."""
    n = int(mask.sum(axis=1).max())
    if agg == "constant" and max_len is not None and max_len < n:
        return f"max_len: expected >= the longest response ({n} trained tokens), got {max_len}"


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)


clipped_surrogate = boundary(
    logp=tokens(),
    logp_old=tokens(),
    adv=advantage(),
    mask=mask(),
    eps=interval(0, 1, low_open=True),
    eps_high=optional(positive()),
    agg=one_of(AGGS),
    max_len=optional(count(1)),
    where=[longest_response],
    returns="loss dloss_dlogp",
)(clipped_surrogate)


clip_fraction = boundary(
    logp=tokens(),
    logp_old=tokens(),
    adv=advantage(),
    mask=mask(),
    eps=interval(0, 1, low_open=True),
    eps_high=optional(positive()),
)(clip_fraction)
