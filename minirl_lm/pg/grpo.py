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

import numpy as np

from minirl_lm.core.checks import finite_result
from minirl_lm.core.ops import AGGS, adv_tokens
from minirl_lm.pg.advantages import BASELINES, REWARD_MAX, _advantages
from minirl_lm.pg.checks import grpo_objective, grpo_step_args
from minirl_lm.pg.clip import clip_fraction, clipped_surrogate
from minirl_lm.pg.kl import ESTIMATORS, _kl_terms, _penalty
from minirl_lm.pg.validate import env_rewards, env_rollout, grader_rewards


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
