"""Values with chance nodes: backward induction, the soft optimum, returns and GAE over actions.

Backward induction on the tree of a `MultiTurnMDP`. At a policy state s the world is unknown; its
posterior given the prefix is P(w | s) proportional to prior(w) prod_{spans in s} P(o | w) (the
policy's factors cancel). For an action a that ends a turn with reward r(w), eq. (chance_bellman):

    q(s, a) = sum_w P(w | s) r(w) + C(s, a)
    C(s, a) = v(s.a)                        if the turn goes on
            = 0                             if the episode ends
            = sum_o P(o | s.a) v(s.a.o)     after a call: a chance node, an expectation
    P(o | s.a) = sum_w P(w | s) P(o | w)

and the policy state backs up its actions one of two ways:

    v^pi(s) = sum_a pi(a | s) q(s, a)                                       policy evaluation
    v*(s)   = beta log sum_a pi_ref(a | s) exp(q(s, a) / beta)             eq. (soft_bellman)
    pi*(a | s) = pi_ref(a | s) exp((q(s, a) - v*(s)) / beta)

The soft optimum maximizes `J(pi) = E[R - beta sum_{action tokens} log(pi / pi_ref)]`; at a
chance node nothing is chosen, so the max becomes an expectation. The gap

```text
J(pi*) - J(pi) = beta KL(P_pi(tau) || P_pi*(tau)) >= 0
```

holds with the environment's factors cancelling in the ratio: it is the distance to the optimum
the example prints.

Returns and GAE over action tokens. Rewards sit on policy tokens; the recursion runs over the
action mask and skips the environment's tokens, carrying the running return, the next value and
the running advantage across an observation span, eq. (gae_carry):

    delta_t = r_t + gamma v(s_t') - v(s_t),   A_t = delta_t + gamma lam A_t'

where t' is the next *policy* token of the row. `carry=False` is the bug: the recursion restarts
(running return, next value and running advantage set to 0) at every masked position, so a turn
before an observation never sees the rewards or values after it. Both return 0 off the action
mask. Imports NumPy, minirl_lm.boundary, minirl_lm.multiturn.env (its kinds) and
minirl_lm.values.optimum (the tilt of one state's row).
"""

import numpy as np

from minirl_lm.boundary import NONNEGATIVE, POSITIVE, TOKENS, array, boundary, finite, flag, number, simplex
from minirl_lm.multiturn.env import ACTION_MASK, MULTITURN_MDP, TRAJECTORY, actions_on_the_trajectory, ids
from minirl_lm.values.optimum import tilt

__all__ = ["policy_values", "soft_optimum", "kl_objective", "gae_actions", "returns_actions", "turn_values"]

UNIT = number(0.0, 1.0)  # gamma, lam
TABLE = simplex("S V")  # a policy's probabilities, a row per state of the environment


def _rewards_on_actions(rewards, action_mask):
    """Rewards sit on the policy's tokens: 0 where `action_mask` is 0."""
    if (rewards * (1 - action_mask) != 0).any():
        return "rewards: expected rewards on policy tokens only (0 where action_mask is 0)"


def _states_within(values, states):
    """Every state id indexes `values`."""
    if states.max() >= values.size:
        return f"states: expected ids < {values.size} (the states of values), got max {states.max()}"


ACTIONS = [actions_on_the_trajectory, _rewards_on_actions]  # returns' and GAE's relations


def _posterior(loglik):
    """P(w | s) from log prior + log likelihood (W,); an unreachable prefix gets the uniform."""
    if not np.isfinite(loglik).any():
        return np.full(loglik.size, 1.0 / loglik.size)
    p = np.exp(loglik - loglik.max())  # (W,)
    return p / p.sum()


def _induction(env, backup):
    """Q (S, V) and V (S,) over the policy states, children first; chance rows stay 0."""
    values, q = np.zeros(env.S), np.zeros((env.S, env.V))
    for s in range(env.S - 1, -1, -1):  # ids: parents before children
        if not env.is_policy[s]:
            continue
        post = _posterior(env.loglik[s])  # (W,) P(w | s)
        for a, (r, kind, nxt) in enumerate(env.children[s]):
            qa = post @ r  # expected reward of the turn
            if kind == "turn":
                qa += values[nxt]
            elif kind == "env":  # eq. (chance_bellman): expectation
                for m, _, s2 in nxt:
                    qa += (post @ env.p_obs[:, m]) * values[s2]
            q[s, a] = qa
        values[s] = backup(s, q[s])
    return values, q


@boundary(env=MULTITURN_MDP, probs=TABLE, returns="values q")
def policy_values(env, probs):
    """v^pi and q^pi of the per-state policy `probs`, eq. (chance_bellman).

    Args:
        env: a `MultiTurnMDP`.
        probs: `(S, V)` the policy's probabilities, a row per state of `env` (entries >= 0, rows
            summing to 1 within 1e-9; rows of chance states are not read).

    Returns:
        `(values (S,), q (S, V))`; values and q at chance states are 0 (unused); `values[0]`
        is the expected return E R.
    """
    return _induction(env, lambda s, q_s: probs[s] @ q_s)


@boundary(env=MULTITURN_MDP, pi_ref=TABLE, beta=POSITIVE, returns="values q pi_star")
def soft_optimum(env, pi_ref, beta):
    """Soft-optimal policy by backward induction with chance nodes, eq. (soft_bellman).

    Args:
        env: a `MultiTurnMDP`.
        pi_ref: `(S, V)` reference probabilities.
        beta: KL coefficient > 0.

    Returns:
        `(values (S,), q (S, V), pi_star (S, V))`; `values[0]` is `J(pi*)`. Rows of chance states
        of `pi_star` are copies of `pi_ref` (the policy never writes there).
    """
    backup = lambda s, q_s: tilt.core(pi_ref[s][None], q_s[None], beta)[1][0]  # noqa: E731
    values, q = _induction(env, backup)  # eq. (soft_bellman)
    pi_star = pi_ref.copy()
    for s in np.flatnonzero(env.is_policy):
        pi_star[s] = np.exp(tilt.core(pi_ref[s][None], q[s][None], beta)[0][0])  # pi_ref e^{(Q-V)/beta}
    return values, q, pi_star


@boundary(env=MULTITURN_MDP, probs=TABLE, pi_ref=TABLE, beta=NONNEGATIVE, returns=None)
def kl_objective(env, probs, pi_ref, beta):
    """J(pi) = E[R - beta sum over action tokens of log(pi / pi_ref)], by induction.

    Args:
        env: a `MultiTurnMDP`.
        probs: `(S, V)` the policy pi's probabilities, a row per state of `env` (entries >= 0,
            rows summing to 1 within 1e-9).
        pi_ref: `(S, V)` the reference's probabilities, likewise.
        beta: the KL coefficient, `>= 0`.

    Returns:
        J, a float. A token pi writes where pi_ref is 0 makes J = -inf (at `beta = 0`, J = E R
        whatever the supports), the one infinite result returned.

    Raises:
        ValueError: a bad argument (named), or any other overflow (a huge beta), naming
            `kl_objective`.
    """
    lr = np.log(probs) - np.log(pi_ref)  # -inf or NaN where probs is 0: the backup reads probs > 0 only
    pen = beta * lr if beta > 0 else np.zeros_like(lr)  # beta = 0: J = E R, supports aside

    def backup(s, q_s):
        return np.where(probs[s] > 0, probs[s] * (q_s - pen[s]), 0.0).sum()

    J = float(_induction(env, backup)[0][0])
    if J == -np.inf and ((probs > 0) & (pi_ref == 0)).any():  # pi writes where pi_ref cannot
        return J  # the documented -inf: returns=None, and the engine's one check for the rest
    return finite(J, "kl_objective", ["J"], dict(probs=probs, pi_ref=pi_ref, beta=beta))


# ---- returns and GAE over the action mask -------------------------------------------------------
def _recursion(values, rewards, action_mask, c_next, c_acc, carry):
    """Right to left: A_t = r_t + c_next V' - V_t + c_acc A', primes over the next policy token."""
    B, T = action_mask.shape
    out = np.zeros((B, T))
    nxt, acc = np.zeros(B), np.zeros(B)  # (B,) V(s_t'), A_t'
    for t in range(T - 1, -1, -1):
        on = action_mask[:, t] > 0
        new = rewards[:, t] + c_next * nxt - values[:, t] + c_acc * acc  # eq. (gae_carry)
        keep = 1.0 if carry else 0.0  # carry: skip; bug: restart at 0
        acc = np.where(on, new, keep * acc)
        nxt = np.where(on, values[:, t], keep * nxt)
        out[:, t] = np.where(on, acc, 0.0)
    return out


@boundary(
    values=TOKENS,
    rewards=TOKENS,
    mask=TRAJECTORY,
    action_mask=ACTION_MASK,
    gamma=UNIT,
    lam=UNIT,
    carry=flag,
    where=ACTIONS,
    returns="advantages",
)
def gae_actions(values, rewards, mask, action_mask, gamma=1.0, lam=1.0, carry=True):
    """GAE over the policy tokens of multi-turn rows, eq. (gae_carry): (B, T).

    Args:
        values: `(B, T)` critic value v(s_t) at every position (read on policy tokens only).
        rewards: `(B, T)` per-token rewards, 0 off the action mask.
        mask: `(B, T)` trajectory tokens, right-padded.
        action_mask: `(B, T)` policy tokens.
        gamma: in [0, 1].
        lam: see `gamma`.
        carry: True carries across observation spans; False restarts at every masked
            position (the bug this module measures).
    """
    return _recursion(values, rewards, action_mask, gamma, gamma * lam, carry)


@boundary(
    rewards=TOKENS, mask=TRAJECTORY, action_mask=ACTION_MASK, gamma=UNIT, carry=flag, where=ACTIONS, returns="G"
)
def returns_actions(rewards, mask, action_mask, gamma=1.0, carry=True):
    """Reward to go G_t over the policy tokens, eq. (gae_carry) with no values and `lam = 1`.

    Args:
        rewards: `(B, T)` per-token rewards, 0 off the action mask.
        mask: `(B, T)` 0/1 trajectory tokens, right-padded.
        action_mask: `(B, T)` 0/1 policy tokens, 1 only where `mask` is 1.
        gamma: the discount, in [0, 1].
        carry: True carries across observation spans; False restarts at every masked position
            (the bug this module measures).

    Returns:
        G, `(B, T)`: the reward to go on policy tokens, 0 elsewhere.
    """
    return _recursion(np.zeros(action_mask.shape), rewards, action_mask, 0.0, gamma, carry)


@boundary(
    values=array("S"),
    states=ids("B T", low=0),
    mask=TRAJECTORY,
    action_mask=ACTION_MASK,
    where=[_states_within, actions_on_the_trajectory],
    returns="turn_values",
)
def turn_values(values, states, mask, action_mask):
    """V at the first policy state of each token's turn, on every policy token.

    A turn starts at the first policy token of a row and at the first policy token after an
    observation span.

    Args:
        values: `(S,)` a value per state (as `policy_values` returns).
        states: `(B, T)` integer state ids before each token, each in `[0, S)`.
        mask: `(B, T)` 0/1 trajectory tokens, right-padded.
        action_mask: `(B, T)` 0/1 policy tokens, 1 only where `mask` is 1.

    Returns:
        turn_values, `(B, T)`: 0 off the policy tokens.
    """
    out, cur = np.zeros(mask.shape), np.zeros(mask.shape[0])
    prev = np.zeros(mask.shape[0])  # action_mask at t - 1 (0 before t = 0)
    for t in range(mask.shape[1]):
        start = (action_mask[:, t] > 0) & (prev == 0)
        cur = np.where(start, values[states[:, t]], cur)
        out[:, t] = cur * action_mask[:, t]
        prev = action_mask[:, t]
    return out
