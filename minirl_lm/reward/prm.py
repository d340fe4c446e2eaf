"""Process reward models: a score per step (per turn) of a multi-turn episode, and its use as reward.

An outcome reward model scores a whole episode; a process reward model (PRM) scores each step.
On a `MultiTurnMDP` a step is a turn: the policy tokens up to the one that ends it (a call, EOS
or the length cap), so a step is the pair `(s, a)` of the state before that last token and the
token. The PRM here is tabular, a logit `r_phi(s, a)` per step, and its labels are Math-Shepherd's
hard estimates (Wang et al. 2024): a step is labelled with the outcome `o_b` in [0, 1] of the
episode it was taken in (a verifier's "the final answer is right"). Per episode `b` of weight
`w_b` and its steps `k`:

```text
loss = sum_b w_b sum_k [softplus(r_phi(s_k, a_k)) - o_b r_phi(s_k, a_k)] + l2 |r_phi|^2 / 2    eq. (prm_loss)
dloss/dr_phi(s, a) = sum over steps at (s, a) of w_b (sigma(r_phi(s, a)) - o_b) + l2 r_phi(s, a)
```

The fit is separable, one convex problem per step `(s, a)`: with `n = sum w_b` and
`k = sum w_b o_b` over the steps taken at `(s, a)`, the stationarity is

```text
n sigma(r) - k + l2 r = 0,      at l2 = 0:  p(s, a) = sigma(r) = k / n        eq. (prm_fit)
```

so with episodes weighted by their probability under the sampling policy `pi` the PRM is the
probability that the outcome is right given the step, the outcome's value `Q^pi(s, a)`. A step
never taken (`n = 0`) keeps `r = 0`, `p = 1/2`.

Used as a reward, per turn, eq. (prm_reward):

```text
direct:    r_k = p(s_k, a_k)                        a sum over turns: more turns, more reward
progress:  r_k = p(s_k, a_k) - p(s_{k-1}, a_{k-1}),  p(s_0, a_0) = 0
```

Progress telescopes, `sum_k r_k = p(last step)`, and the last step's label is the outcome's
conditional expectation given the whole observable episode; so with the exact fit (the episode
law in `weights`, `l2 = 0`) the soft optimum under progress rewards is the soft optimum under
the outcome (the rewards differ by a potential, Ng et al. 1999). Direct rewards pay for every
turn and move the optimum toward more turns. `process_env` builds the environment whose turn
rewards are these, so `multiturn/values.py` (`soft_optimum`, `policy_values`) runs on them.

Demonstrated by `python examples/reward_models.py`.

Names in the frameworks: none (TRL's and OpenRLHF's released wheels have outcome reward trainers
only; `docs/next.md`).
"""

import copy

import numpy as np

from minirl_lm.boundary import MASK, NONNEGATIVE, array, boundary, has, one_of, optional
from minirl_lm.core.ops import sigmoid

__all__ = ["prm_data", "prm_loss", "fit_prm", "process_rewards", "process_env"]


def _multiturn_env(env, name, dims):
    """A `MultiTurnMDP` (what is read of it); its table shape `(S, V)` binds the letters S, V."""
    env = has("a MultiTurnMDP", "children is_policy loglik p_obs S V W check()")(env, name, dims)
    dims.update(S=env.S, V=env.V)
    return env


IDS = array("B T", integer=True, low=0)  # a state's or a token's id at each position
STEPS = dict(
    steps=MASK,  # 1 at the steps (prm_data)
    states=IDS,
    tokens=IDS,
    labels=array("B T", low=0.0, high=1.0),
    weights=optional(array("B", low=0.0)),  # episode weights; None: 1/B each
)
P_STEP = dict(env=_multiturn_env, p_step=array("S V", low=0.0, high=1.0), mode=one_of(("direct", "progress")))


EPISODES = has("an Episodes batch (rollout or all_episodes)", "states tokens mask action_mask rewards")


def _episodes_of_env(env, ep):
    """`ep` is a batch of `env`'s episodes: `MultiTurnMDP.check` raises naming what is not."""
    env.check(ep)


def _one_outcome_per_episode(ep, outcome):
    """One outcome label per episode of `ep`."""
    if outcome.shape[0] != ep.mask.shape[0]:
        return f"outcome: expected shape ({ep.mask.shape[0]},), one label per episode of ep, got {outcome.shape}"


def _steps_in_table(states, tokens, r_phi=None, env=None):
    """Every step `(s, a)` is a cell of the `(S, V)` table (`r_phi`'s, or the environment's)."""
    S, V = r_phi.shape if r_phi is not None else (env.S, env.V)
    for name, ids, n, what in (("states", states, S, "states"), ("tokens", tokens, V, "tokens")):
        if ids.max() >= n:
            return f"{name}: expected ids < {n} (the table's {what}), got max {int(ids.max())}"


def _ends_turn(env, s, a):
    kids = env.children[s]  # (reward, kind, next) per token
    _, kind, _ = kids[a]
    return kind != "turn"


@boundary(
    env=_multiturn_env,
    ep=EPISODES,
    outcome=array("B", low=0.0, high=1.0),
    where=[_episodes_of_env, _one_outcome_per_episode],
    returns="steps labels",
)
def prm_data(env, ep, outcome):
    """The steps of each episode and their labels, Math-Shepherd's hard estimates.

    Args:
        env: a `MultiTurnMDP`.
        ep: `Episodes` of `env` (`rollout` or `all_episodes`); `env.check(ep)` must pass.
        outcome: `(B,)` each episode's outcome label in [0, 1].

    Returns:
        `(steps, labels)`, both `(B, T)`: 1.0 at the last policy token of each turn, and
        `outcome[b]` there (0 elsewhere).
    """
    on = ep.action_mask > 0  # (B, T)
    steps = np.zeros(ep.mask.shape)  # (B, T)
    for b, t in zip(*np.nonzero(on)):
        steps[b, t] = float(_ends_turn(env, int(ep.states[b, t]), int(ep.tokens[b, t])))
    return steps, steps * outcome[:, None]  # (B, T) eq. (prm_loss): every step gets the outcome


def _step_weights(steps, weights):
    B = steps.shape[0]
    w = np.full(B, 1.0 / B) if weights is None else weights  # (B,) the mean by default
    return w[:, None] * steps  # (B, T) each step's weight


@boundary(r_phi=array("S V"), **STEPS, where=[_steps_in_table], returns="loss dr_phi")
def prm_loss(r_phi, states, tokens, steps, labels, weights=None):
    """The PRM's cross-entropy on the steps, eq. (prm_loss) at `l2 = 0`, and dloss/dr_phi.

    Args:
        r_phi: `(S, V)` logits, one per step `(s, a)`.
        states: `(B, T)` state ids.
        tokens: `(B, T)` token ids.
        steps: `(B, T)` 0/1, 1 at the steps (`prm_data`).
        labels: `(B, T)` labels in [0, 1] (read at the steps).
        weights: `(B,)` nonnegative episode weights, default `1/B`.

    Returns:
        `(loss, dr_phi)`: a float and the `(S, V)` gradient.
    """
    r = r_phi[states, tokens]  # (B, T)
    c = _step_weights(steps, weights)  # (B, T)
    loss = float((c * (np.logaddexp(0.0, r) - labels * r)).sum())  # eq. (prm_loss)
    g = c * (sigmoid(r) - labels)  # (B, T) d/dr = sigma(r) - o
    dr_phi = np.zeros_like(r_phi)  # (S, V)
    np.add.at(dr_phi, (states, tokens), g)  # scatter: a step taken twice accumulates
    return loss, dr_phi


@boundary(env=_multiturn_env, **STEPS, l2=NONNEGATIVE, where=[_steps_in_table], returns="p_step")
def fit_prm(env, states, tokens, steps, labels, weights=None, l2=0.0):
    """The minimizer of eq. (prm_loss) over the table, eq. (prm_fit), as probabilities.

    Args:
        env: the `MultiTurnMDP` (its table shape `(S, V)`).
        states: `(B, T)` state ids.
        tokens: `(B, T)` token ids.
        steps: `(B, T)` 0/1 steps (`prm_data`).
        labels: `(B, T)` labels in [0, 1].
        weights: `(B,)` nonnegative episode weights, default `1/B` (the law of the episodes: exact).
        l2: the ridge coefficient `>= 0` on the logits.

    Returns:
        `(S, V)` `p(s, a) = sigma(r_phi(s, a))`; `1/2` where no step was taken.
    """
    c = _step_weights(steps, weights)  # (B, T)
    n, k = np.zeros((env.S, env.V)), np.zeros((env.S, env.V))
    np.add.at(n, (states, tokens), c)  # (S, V) eq. (prm_fit): the weight of each step
    np.add.at(k, (states, tokens), c * labels)  # (S, V) and of its right outcomes
    if l2 == 0.0:
        return np.where(n > 0, k / np.where(n > 0, n, 1.0), 0.5)  # eq. (prm_fit) at l2 = 0
    lo, hi = -n / l2, n / l2  # f(lo) <= 0 <= f(hi) for f(r) = n sigma(r) - k + l2 r
    for _ in range(2200):  # bisection: f increases; 2 n / l2 < 2^1025 halves to neighbours in < 2200
        mid = (lo + hi) / 2
        if np.all((mid == lo) | (mid == hi)):  # every lo, hi adjacent doubles: converged
            break
        up = n * sigmoid(mid) - k + l2 * mid > 0
        lo, hi = np.where(up, lo, mid), np.where(up, mid, hi)
    return sigmoid((lo + hi) / 2)  # n / l2 beyond float64: NaN, reported by the boundary


@boundary(**P_STEP, returns="rewards")
def process_rewards(env, p_step, mode="progress"):
    """Per-step rewards `(S, V)` of eq. (prm_reward) from the PRM's `p_step`; 0 inside turns.

    Args:
        env: a `MultiTurnMDP`.
        p_step: `(S, V)` step scores in [0, 1] (`fit_prm`).
        mode: `"direct"` or `"progress"`.

    Returns:
        `(S, V)` rewards in `[-1, 1]`, nonzero only at the steps `(s, a)` that end a turn.
    """
    prev = np.zeros(env.S)  # p of the step before each policy state, 0 at the root
    out = np.zeros((env.S, env.V))  # (S, V)
    for s in np.flatnonzero(env.is_policy):  # ids: a parent before its children
        for a, (_, kind, nxt) in enumerate(env.children[s]):
            if kind == "turn":
                prev[nxt] = prev[s]
                continue
            out[s, a] = p_step[s, a] - (prev[s] if mode == "progress" else 0.0)  # eq. (prm_reward)
            if kind == "env":
                for _, _, s2 in nxt:
                    prev[s2] = p_step[s, a]
    return out


@boundary(**P_STEP, extra=optional(array("S V")), returns=None)  # returns an environment
def process_env(env, p_step, mode="progress", extra=None):
    """A copy of `env` whose turn rewards are the PRM's, eq. (prm_reward), plus `extra`.

    The PRM sees the observable prefix, not the hidden world: each turn's reward is the same in
    every world. The copy's `children` (what `rollout`, `all_episodes` and `multiturn/values.py`
    read) carry the new rewards; `env` is not changed. The rewards are finite: `extra` plus a
    number in `[-1, 1]`.

    Args:
        env: a `MultiTurnMDP`.
        p_step: `(S, V)` step scores in [0, 1].
        mode: `"direct"` or `"progress"`.
        extra: `(S, V)` a reward added at each step (a call's price), default 0.

    Returns:
        a `MultiTurnMDP`.
    """
    r = process_rewards.core(env, p_step, mode) + (0.0 if extra is None else extra)  # (S, V)
    new = copy.copy(env)
    new.children = {
        s: [
            (np.zeros(env.W) if kind == "turn" else np.full(env.W, r[s, a]), kind, nxt)
            for a, (_, kind, nxt) in enumerate(kids)
        ]
        for s, kids in env.children.items()
    }
    return new
