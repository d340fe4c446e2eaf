"""The boundary of the multi-turn part: one bundle call per public function of
`multiturn/env.py`, `multiturn/values.py` and `multiturn/calculator.py`, each checking the
whole argument set once and returning what the math trusts. Built on `core/checks.py`; NumPy
only."""

import numpy as np

from minirl_lm.core.checks import (
    _duck,
    _no_bool_ids,
    callable_check,
    cells,
    float_array,
    float_scalar,
    int_array,
    int_scalar,
    mask_array,
    prob_table,
    rng_check,
    table_policy,
)

# -- multi-turn episodes (minirl_lm/multiturn/)
# the trajectory mask covers every token of an episode (right-padded); the holes go in action_mask
TRAJECTORY = (
    "the trajectory mask (every token of the episode)",
    "action_mask for the policy's tokens (0 where the environment wrote)",
)
COMPACT_ROWS = ("the compact rows of action_view", "the mask action_view returns")
MT_ATTRS = ("children", "is_policy", "loglik", "p_obs", "S", "V")  # what a MultiTurnMDP has


def _tree_size(c, calls, M, L, max_turns, turn_len, cap):
    """An upper bound on the states of a multi-turn tree (c continuing tokens, calls call
    tokens, M spans of at most L tokens), or None above cap: O(log cap) steps."""
    P, level, j = 0, 1, 0  # policy prefixes within one turn
    while j < turn_len and P <= cap:
        P, level, j = P + level, level * c, j + 1
    roots, level, k = 0, 1, 0  # turn roots: g^k of them at turn k
    while k < max_turns and roots * P <= cap:
        roots, level, k = roots + level, level * P * calls * M, k + 1
    size = P * roots * (1 + calls * M * L)
    return size if size <= cap else None


def _mt_spans(spans, V):
    """The observation spans as a list of non-empty tuples of int ids in [0, V), none a prefix
    of another."""
    if isinstance(spans, (str, bytes)) or not hasattr(spans, "__iter__"):
        raise TypeError(f"spans: expected a sequence of tuples of token ids, got {type(spans).__name__}")
    out = []
    for span in spans:
        if isinstance(span, (str, bytes)) or not hasattr(span, "__iter__"):
            raise TypeError(f"spans: expected each span a tuple of token ids, got {span!r}")
        span = tuple(span)
        _no_bool_ids(span, "spans")
        a = int_array(np.asarray(span) if span else np.zeros(0, np.int64), "spans", ndim=1)
        if a.size == 0 or a.min() < 0 or a.max() >= V:
            raise ValueError(f"spans: expected non-empty spans of token ids in [0, {V}), got {span}")
        out.append(tuple(int(o) for o in a))
    for i, a in enumerate(out):
        for j, b in enumerate(out):
            if i != j and b[: len(a)] == a:
                raise ValueError(f"spans: expected no span to be a prefix of another, got {a} and {b}")
    return out


def multiturn_args(V, eos, calls, spans, p_obs, prior, turn_reward, max_turns, turn_len):
    """MultiTurnMDP's arguments: (V, eos, calls, spans, p_obs, prior, max_turns, turn_len)."""
    V = int_scalar(V, "V", low=2)
    eos = int_scalar(eos, "eos", low=0, high=V - 1)
    _no_bool_ids(calls, "calls")
    calls = tuple(int(c) for c in int_array(np.asarray(calls), "calls", ndim=1, low=0, high=V))
    if eos in calls:
        raise ValueError(f"calls: expected call tokens other than eos={eos}, got {calls}")
    max_turns = int_scalar(max_turns, "max_turns", low=1)
    turn_len = int_scalar(turn_len, "turn_len", low=1)
    spans = _mt_spans(spans, V)
    L, M = max(len(o) for o in spans) if spans else 0, len(spans)
    for name, turns in (("turn_len", 1), ("max_turns", max_turns)):  # turn_len alone, then both
        if turns * (turn_len + L) > 900:  # the tree is grown recursively
            raise ValueError(
                f"{name}: expected max_turns * (turn_len + the longest span) <= 900 "
                f"tokens per episode, got {turns} * ({turn_len} + {L})"
            )
        if _tree_size(V - 1 - len(calls), len(calls), M, L, turns, turn_len, 2**24) is None:
            raise ValueError(
                f"{name}: expected a tree of at most 2**24 states, got a bound above "
                f"it (max_turns={max_turns}, turn_len={turn_len}); the tree is "
                f"enumerated in full"
            )
    prior = prob_table(prior, "prior", ndim=1)  # rows summing to 1 within 1e-9
    p_obs = prob_table(p_obs, "p_obs", shape=(prior.size, len(spans)), ndim=2)
    callable_check(turn_reward, "turn_reward", 3, "turn_reward(w, turns, done)")
    return V, eos, calls, spans, p_obs, prior, max_turns, turn_len


def multiturn_rollout_args(env, policy, K, rng):
    """MultiTurnMDP.rollout's arguments: returns K, bounded so that the (K, T) arrays stay
    within MAX_CELLS (a clear error before the first episode, not a loop without end)."""
    K = int_scalar(K, "K", low=1)
    rng_check(rng, "rng")
    table_policy(policy, env.S, env.V)
    cells(K * env.T, "K", "episodes whose (K, T) arrays are")
    return K


def _episode_row(env, b, tokens, states, n):
    """Parse row b (its n real tokens) as a trajectory of env: the (T,) policy-token mask."""
    want, s, t = np.zeros(tokens.size), 0, 0
    while t < n:
        a = int(tokens[t])
        if states[t] != s:
            raise ValueError(f"states: row {b}, position {t}: expected state {s}, got {states[t]}")
        want[t] = 1.0
        _, kind, nxt = env.children[s][a]
        t += 1
        if kind == "end":
            break
        if kind == "turn":
            s = nxt
            continue
        hit = [(chance, s2) for m, chance, s2 in nxt if tuple(tokens[t : t + len(chance)]) == env.spans[m]]
        if not hit or t + len(hit[0][0]) > n:
            raise ValueError(
                f"tokens: row {b}, position {t}: expected an observation "
                f"span {env.spans} after the call, got {tokens[t:n].tolist()}"
            )
        (chance, s), got = hit[0], states[t : t + len(hit[0][0])]
        for i in np.flatnonzero(got != np.array(chance)):  # the chance nodes' ids
            raise ValueError(f"states: row {b}, position {t + i}: expected state {chance[i]}, got {got[i]}")
        t += len(chance)
    if t != n:
        raise ValueError(f"mask: row {b}: the episode ends at position {t}, but the mask has {n} real tokens")
    return want


def episodes(env, ep, attrs=("states", "tokens", "mask", "action_mask", "rewards")):
    """Validate a batch of episodes against the environment (MultiTurnMDP.check): every row
    parses as a trajectory (tokens and states, chance nodes included), and action_mask is 1
    exactly on the policy's tokens. Returns ep unchanged."""
    if not all(hasattr(ep, a) for a in attrs):  # an Episodes (duck-typed: copies)
        raise TypeError(f"ep: expected an Episodes batch (from rollout or all_episodes), got {type(ep).__name__}")
    mask = mask_array(ep.mask, "mask", prefix=TRAJECTORY)
    B, T = mask.shape
    tokens = int_array(ep.tokens, "tokens", shape=(B, T), low=0, high=env.V)
    states = int_array(ep.states, "states", shape=(B, T), low=0, high=env.S)
    act = float_array(ep.action_mask, "action_mask", shape=(B, T))
    float_array(ep.rewards, "rewards", shape=(B, T))
    for b in range(B):
        n = int(mask[b].sum())
        if n == 0:
            raise ValueError(f"mask: row {b} is empty; every episode has at least one token")
        want = _episode_row(env, b, tokens[b], states[b], n)
        bad = np.flatnonzero(act[b] != want)
        if bad.size:
            t = int(bad[0])
            what = (
                "holds an observation token (written by the environment)"
                if mask[b, t] and not want[t]
                else "holds a policy token"
                if want[t]
                else "is padding"
            )
            raise ValueError(
                f"action_mask: row {b}, position {t} {what}, expected {int(want[t])}, got {float(act[b, t])!r}"
            )
    return ep


def action_view_args(env, ep):
    """action_view's arguments: a MultiTurnMDP (duck-typed) and a batch that parses in it."""
    _duck(env, "env", MT_ATTRS + ("check", "spans"), "a MultiTurnMDP")
    return episodes(env, ep)


def scatter_args(x, pos, mask, T):
    """scatter's arguments: x (B, Ta), pos and mask of its shape, T >= 1 with (B, T) cells
    within MAX_CELLS. Returns (x, pos, mask, T)."""
    x = float_array(x, "x", ndim=2)
    T = int_scalar(T, "T", low=1)
    cells(x.shape[0] * T, "T", "a width whose (B, T) output is")
    pos = int_array(pos, "pos", shape=x.shape, low=0, high=T)
    mask = mask_array(mask, "mask", shape=x.shape, prefix=COMPACT_ROWS)
    return x, pos, mask, T


def mt_table(env, p, name):
    """An (S, V) probability table of a MultiTurnMDP (duck-typed), rows summing to 1."""
    _duck(env, "env", MT_ATTRS, "a MultiTurnMDP")
    return prob_table(p, name, shape=(env.S, env.V))  # rows summing to 1 within 1e-9


def mt_kl_args(env, probs, pi_ref, beta):
    """(probs, pi_ref, beta >= 0) of the multi-turn KL objective."""
    probs = mt_table(env, probs, "probs")
    return probs, mt_table(env, pi_ref, "pi_ref"), float_scalar(beta, "beta", low=0.0)


def mt_soft_args(env, pi_ref, beta):
    """(pi_ref, beta > 0) of the multi-turn soft optimum."""
    pi_ref = mt_table(env, pi_ref, "pi_ref")
    return pi_ref, float_scalar(beta, "beta", low=0.0, low_open=True)


def _bool_arg(x, name):
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {type(x).__name__} {x!r}")
    return bool(x)


def _action_mask(action_mask, mask):
    act = float_array(action_mask, "action_mask", shape=mask.shape)
    if ((act != 0) & (act != 1)).any() or (act > mask).any():
        raise ValueError("action_mask: expected 0/1 entries, 1 only where mask is 1")
    return act


def _action_rewards(rewards, mask, action_mask):
    mask = mask_array(mask, "mask", prefix=TRAJECTORY)
    act = _action_mask(action_mask, mask)
    rewards = float_array(rewards, "rewards", shape=mask.shape)
    if (rewards * (1 - act) != 0).any():
        raise ValueError("rewards: expected rewards on policy tokens only (0 where action_mask is 0)")
    return rewards, mask, act


def action_returns_args(rewards, mask, action_mask, gamma, carry):
    """returns_actions' arguments: (rewards, act, gamma, carry), rewards 0 off the action mask."""
    rewards, mask, act = _action_rewards(rewards, mask, action_mask)
    gamma = float_scalar(gamma, "gamma", low=0.0, high=1.0)
    return rewards, act, gamma, _bool_arg(carry, "carry")


def action_gae_args(values, rewards, mask, action_mask, gamma, lam, carry):
    """gae_actions' arguments: (values, rewards, act, gamma, lam, carry)."""
    rewards, mask, act = _action_rewards(rewards, mask, action_mask)
    values = float_array(values, "values", shape=mask.shape)
    gamma = float_scalar(gamma, "gamma", low=0.0, high=1.0)
    lam = float_scalar(lam, "lam", low=0.0, high=1.0)
    return values, rewards, act, gamma, lam, _bool_arg(carry, "carry")


def turn_values_args(values, states, mask, action_mask):
    """turn_values' arguments: values (S,), states, mask, action_mask (B, T)."""
    values = float_array(values, "values", ndim=1)
    mask = mask_array(mask, "mask", prefix=TRAJECTORY)
    states = int_array(states, "states", shape=mask.shape, low=0, high=values.size)
    return values, states, mask, _action_mask(action_mask, mask)


def calculator_args(q, cost):
    return float_scalar(q, "q", low=0.0, high=1.0), float_scalar(cost, "cost", low=0.0)


def calculator_reference_args(env, env_type, eq, stop):
    if not isinstance(env, env_type) or env.V != 5:
        raise TypeError(f"env: expected the calculator's MultiTurnMDP, got {type(env).__name__}")
    return float_scalar(eq, "eq"), float_scalar(stop, "stop")
