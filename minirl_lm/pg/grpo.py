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

import numpy as np

from minirl_lm.boundary import (
    COUNT,
    DDOF,
    EPS,
    EPS_HIGH,
    NONNEGATIVE,
    POSITIVE,
    REFERENCE,
    TOKENS,
    array,
    boundary,
    finite,
    function,
    generator,
    has,
    one_of,
)
from minirl_lm.core.ops import AGGREGATION, AGGS, adv_tokens
from minirl_lm.pg.advantages import BASELINES, REWARD_MAX, advantages
from minirl_lm.pg.clip import CLIP, clip_fraction, clipped_surrogate
from minirl_lm.pg.kl import ESTIMATOR, kl_penalty, kl_per_token

__all__ = ["grpo_loss", "grpo_step"]


@boundary(
    **CLIP, logp_ref=TOKENS, beta=NONNEGATIVE, kl_estimator=ESTIMATOR, **AGGREGATION, returns="loss dloss_dlogp"
)
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


@boundary(
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
)
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
