# minirl_lm 0.1.0: a self-contained copy of minirl_lm/multiturn/env.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/multiturn/env.py -o DIR
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

"""Multi-turn episodes: the environment writes tokens too, and the transition becomes stochastic.

The dictionary of the token MDP gains three entries, eq. (multiturn_mdp):

    observation o        a span of tokens the environment appends       drawn from P_env(o | ...)
    action mask          1 on the tokens the policy wrote, 0 elsewhere  `action_mask` (B, T)
    chance node          a prefix where the environment writes next    a state id with kind "env"

A policy turn is a run of policy tokens. It ends at EOS (the episode ends), at a call token (a
tool call or a turn end: the environment appends one observation span, then the policy writes
again), or after `turn_len` tokens (the episode ends, truncated). The episode also ends when a
call closes turn `max_turns` (the turn cap: nobody reads a reply after it). The state is still
the whole prefix s_t = (x, tokens so far), policy's and environment's alike; what is new is
that after a call the next tokens are not the policy's choice.

Hidden world. Before the first token the environment draws a world w ~ prior (for the
calculator: the true answer). The policy never sees it; observations depend on it,
o ~ P(o | w), and so do the per-turn rewards r_k(w, turns). A trajectory's probability is

    P(w, tau) = prior(w) prod_{action tokens} pi(y_t | s_t) prod_{spans} P(o | w)    eq. (traj_prob)

and only the middle product depends on theta: grad log P(w, tau) = sum over action tokens of
grad log pi(y_t | s_t), eq. (score_env). The environment's factors are constants.

Arrays. A batch of episodes (`Episodes`) is padded to T = `env.T` and carries `mask` (every
token of the trajectory, policy and environment, right-padded), `action_mask` (policy tokens
only: holes where the environment wrote), per-turn `rewards` (B, T) placed on the last policy
token of each turn, the hidden `world` (B,) and `log_env` (B,), the log of the environment's
factors of eq. (traj_prob). `states` holds the state id of the prefix before every token,
chance nodes included, so that a policy table has a row there too (a language model computes
log-probs for tool tokens whether or not the loss should use them). `action_view` gathers the
policy tokens into compact right-padded arrays, the form the single-turn library takes.

State ids are handed out depth first over the tree of observable prefixes at construction, a
parent before its children, so the reverse id order visits children first (backward induction
in `minirl_lm.multiturn.values`). The tree is enumerated in full: this is for small tasks.
Demonstrated by `python examples/multi_turn.py`. Imports NumPy and minirl_lm.core.checks only.
"""

from dataclasses import dataclass
import inspect
import numbers

import numpy as np


__all__ = ["Episodes", "MultiTurnMDP", "action_view", "scatter"]


# ----------------------------------------------------------------------------------------------
# minirl_lm/multiturn/env.py itself
# ----------------------------------------------------------------------------------------------


@dataclass
class Episodes:
    """B episodes padded to T tokens (one prompt: row b is episode b)."""

    states: np.ndarray  # (B, T) int64 state id before each token (0 at padding)
    tokens: np.ndarray  # (B, T) int64 token ids (0 at padding)
    mask: np.ndarray  # (B, T) float64 1.0 on every trajectory token, right-padded
    action_mask: np.ndarray  # (B, T) float64 1.0 on the tokens the policy wrote
    rewards: np.ndarray  # (B, T) float64 per-turn reward on each turn's last policy token
    world: np.ndarray  # (B,) int64 the hidden world of each episode
    log_env: np.ndarray  # (B,) float64 log prior(w) + sum of log P(o | w) over spans

    @property
    def R(self):
        """Sequence rewards R = sum of the per-turn rewards, (B,)."""
        return self.rewards.sum(axis=1)


class MultiTurnMDP:
    """A policy that writes turns and an environment that answers calls with observation spans.

    Args:
        V: vocabulary size; policy and observation tokens are ids in `[0, V)`.
        eos: the token that ends the episode.
        calls: token ids that end a turn and hand over to the environment.
        spans: the environment's replies, a sequence of M non-empty tuples of token ids, none a
            prefix of another (a trajectory then parses one way).
        p_obs: `(W, M)` probabilities P(o = spans[m] | w), rows summing to 1.
        prior: `(W,)` probabilities of the hidden world.
        turn_reward: `turn_reward(w, turns, done) -> float`, the reward of the last turn in
            `turns` (a tuple of the policy's turns so far, each a tuple of token ids) in world
            `w`; `done` says whether the episode ends with it.
        max_turns: the turn cap, an integer >= 1.
        turn_len: policy tokens per turn at most, an integer >= 1.

    Raises:
        ValueError: spans with ids outside `[0, V)`, empty or prefix of one another; `max_turns`
            or `turn_len` < 1, or so large that an episode exceeds 900 tokens or the tree 2**24
            states (it is enumerated in full, recursively: refused before it is grown);
            probability tables that are negative or whose rows do not sum to 1 within 1e-9;
            `turn_reward` returning NaN or inf.
        TypeError: spans or calls that are not sequences of integer ids (a bool is not one);
            `turn_reward` not a callable of
            three arguments, or returning something else than a real number (a bool included).
    """

    def __init__(self, V, eos, calls, spans, p_obs, prior, turn_reward, max_turns=3, turn_len=2):
        (self.V, self.eos, self.calls, self.spans, self.p_obs, self.prior, self.max_turns, self.turn_len) = (
            multiturn_args(V, eos, calls, spans, p_obs, prior, turn_reward, max_turns, turn_len)
        )
        self.turn_reward = turn_reward
        self.W, self.M = self.p_obs.shape
        self._index, self.prefixes, self._kinds, self.loglik, self.children = {}, [], [], [], {}
        with np.errstate(divide="ignore"):
            self._grow((), 0, (), (), np.log(self.prior))
        self.S = len(self.prefixes)
        self.is_policy = np.array(self._kinds)  # (S,) True: the policy writes next
        self.T = max(len(p) for p in self.prefixes) + 1

    # ---- the tree of observable prefixes -----------------------------------------------------
    def _id(self, prefix, policy, loglik):
        self._index[prefix] = len(self.prefixes)
        self.prefixes.append(prefix)
        self._kinds.append(policy)
        self.loglik.append(loglik)  # (W,) log prior + log P(spans | w)
        return self._index[prefix]

    def _grow(self, prefix, k, cur, turns, loglik):
        """Add the policy state `prefix` (turn k, current turn `cur`) and everything below it."""
        s = self._id(prefix, True, loglik)
        kids = []
        for a in range(self.V):
            turn = cur + (a,)
            if a != self.eos and a not in self.calls and len(turn) < self.turn_len:
                kids.append((np.zeros(self.W), "turn", self._grow(prefix + (a,), k, turn, turns, loglik)))
                continue
            done = a not in self.calls or k + 1 == self.max_turns  # EOS, length or turn cap
            r = np.array(
                [
                    real_result(
                        self.turn_reward(w, turns + (turn,), done), "turn_reward", f" for turns {turns + (turn,)}"
                    )
                    for w in range(self.W)
                ]
            )
            if done:
                kids.append((r, "end", None))
                continue
            out = []  # chance node: one branch per span
            for m, span in enumerate(self.spans):
                here = prefix + (a,)
                chance = []
                for i in range(len(span)):  # the environment writes span[i] here
                    key = here + span[:i]
                    chance.append(self._index[key] if key in self._index else self._id(key, False, loglik))
                nxt = self._grow(here + span, k + 1, (), turns + (turn,), loglik + np.log(self.p_obs[:, m]))
                out.append((m, tuple(chance), nxt))
            kids.append((r, "env", out))
        self.children[s] = kids
        return s

    # ---- every trajectory, with its environment probability ----------------------------------
    def all_episodes(self):
        """Every (world, trajectory) of positive environment probability as one padded batch.

        Exact expectations: `E f = sum_b exp(log_env_b + seq_logp_b) f_b`, with `seq_logp` the
        policy's log-prob summed over the action tokens, eq. (traj_prob).
        """
        rows = []

        def walk(s, toks, sts, act, rew):
            for a, (r, kind, nxt) in enumerate(self.children[s]):
                t2, s2, a2, r2 = toks + [a], sts + [s], act + [1.0], rew + [r]
                if kind == "turn":
                    walk(nxt, t2, s2, a2, r2)
                elif kind == "end":
                    rows.append((t2, s2, a2, r2, self.loglik[s]))
                else:
                    for m, chance, s_next in nxt:
                        span = list(self.spans[m])
                        walk(
                            s_next,
                            t2 + span,
                            s2 + list(chance),
                            a2 + [0.0] * len(span),
                            r2 + [np.zeros(self.W)] * len(span),
                        )

        walk(0, [], [], [], [])
        out = []
        for toks, sts, act, rew, loglik in rows:
            for w in range(self.W):
                if np.isfinite(loglik[w]):
                    out.append((toks, sts, act, [r[w] for r in rew], w, loglik[w]))
        return self._pack(out)

    def _pack(self, rows):
        B, T = len(rows), self.T
        ep = Episodes(
            np.zeros((B, T), np.int64),
            np.zeros((B, T), np.int64),
            np.zeros((B, T)),
            np.zeros((B, T)),
            np.zeros((B, T)),
            np.zeros(B, np.int64),
            np.zeros(B),
        )
        for b, (toks, sts, act, rew, w, le) in enumerate(rows):
            n = len(toks)
            ep.tokens[b, :n], ep.states[b, :n], ep.mask[b, :n] = toks, sts, 1.0
            ep.action_mask[b, :n], ep.rewards[b, :n] = act, rew
            ep.world[b], ep.log_env[b] = w, le
        return ep

    # ---- sampling ----------------------------------------------------------------------------
    def rollout(self, policy, K, rng):
        """K episodes of `policy` (a TabularPolicy with an (S, V) table), drawn with `rng`.

        Per episode, in order: the world w ~ prior, then token by token the policy's draws at
        policy states and one span o ~ P(o | w) after every call that does not end the episode.
        A `K` whose (K, T) arrays exceed 2**31 entries is a ValueError before the first episode.
        """
        K = multiturn_rollout_args(self, policy, K, rng)
        rows = []
        for _ in range(K):
            w = int(rng.choice(self.W, p=self.prior))
            toks, sts, act, rew, le, s = [], [], [], [], np.log(self.prior[w]), 0
            while True:
                a = int(policy.sample(np.array([s]), rng)[0])
                r, kind, nxt = self.children[s][a]
                toks, sts, act, rew = toks + [a], sts + [s], act + [1.0], rew + [r[w]]
                if kind == "end":
                    break
                if kind == "turn":
                    s = nxt
                    continue
                m = int(rng.choice(self.M, p=self.p_obs[w]))
                _, chance, s = nxt[m]
                toks, sts = toks + list(self.spans[m]), sts + list(chance)
                act, rew = act + [0.0] * len(chance), rew + [0.0] * len(chance)
                le += np.log(self.p_obs[w, m])
            rows.append((toks, sts, act, rew, w, le))
        return self._pack(rows)

    # ---- the action mask ---------------------------------------------------------------------
    def check(self, ep):
        """Validate a batch of episodes against the environment; returns it unchanged.

        Every row must parse as a trajectory of this environment (its tokens and states, the
        chance nodes' ids at observation positions included), and
        `action_mask` must be 1 exactly on the tokens the policy wrote: an observation token
        marked as an action, or a policy token marked 0, is a ValueError naming `action_mask`.
        """
        return episodes(self, ep)  # the parse, in the checks module


def action_view(env, ep):
    """The policy's tokens only, gathered into compact right-padded arrays.

    Returns `(states, tokens, mask, rewards, pos)`, each `(B, Ta)` with Ta the most policy tokens
    in a row: what `TabularPolicy.logp/backward`, `reinforce` and `critic` take. `pos[b, j]` is
    the column of the full row that holds policy token j (0 at padding). Observation spans
    disappear, so a recursion over the compact row carries across them.
    """
    action_view_args(env, ep)  # a MultiTurnMDP and a batch of it
    n = ep.action_mask.sum(axis=1).astype(np.int64)  # (B,) policy tokens per row
    B, Ta = n.size, max(int(n.max(initial=0)), 1)
    pos = np.zeros((B, Ta), np.int64)
    mask = (np.arange(Ta)[None, :] < n[:, None]).astype(np.float64)  # (B, Ta)
    for b in range(B):
        pos[b, : n[b]] = np.flatnonzero(ep.action_mask[b])
    take = lambda x: np.take_along_axis(x, pos, axis=1) * mask.astype(x.dtype)  # noqa: E731
    return take(ep.states), take(ep.tokens), mask, take(ep.rewards), pos


def scatter(x, pos, mask, T):
    """Inverse of `action_view` for a per-token array: compact `(B, Ta)` -> full `(B, T)`.

    Raises:
        ValueError: shapes of `x`, `pos`, `mask` differ, `T < 1`, `pos` outside `[0, T)`, or a
            mask that is not 0/1 and right-padded.
        TypeError: `T` not an integer, `pos` not integer ids.
    """
    x, pos, mask, T = scatter_args(x, pos, mask, T)
    out = np.zeros((x.shape[0], T))  # (B, T)
    rows, cols = np.nonzero(mask > 0)
    out[rows, pos[rows, cols]] = x[rows, cols]
    return out


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/multiturn/checks.py
#   The boundary of the multi-turn part: one bundle call per public function of
# ----------------------------------------------------------------------------------------------


# -- multi-turn episodes (minirl_lm/multiturn/)
# the trajectory mask covers every token of an episode (right-padded); the holes go in action_mask
TRAJECTORY = (
    "the trajectory mask (every token of the episode)",
    "action_mask for the policy's tokens (0 where the environment wrote)",
)
COMPACT_ROWS = ("the compact rows of action_view", "the mask action_view returns")
MT_ATTRS = ("children", "is_policy", "loglik", "p_obs", "S", "V")  # what a MultiTurnMDP has


def _tree_size(c, calls, M, L, max_turns, turn_len, cap):
    """An upper bound on the states of a multi-turn tree (c continuing tokens, calls call tokens,
    M spans of at most L tokens), or None above cap: O(log cap) steps."""
    P, level, j = 0, 1, 0  # policy prefixes within one turn
    while j < turn_len and P <= cap:
        P, level, j = P + level, level * c, j + 1
    roots, level, k = 0, 1, 0  # turn roots: g^k of them at turn k
    while k < max_turns and roots * P <= cap:
        roots, level, k = roots + level, level * P * calls * M, k + 1
    size = P * roots * (1 + calls * M * L)
    return size if size <= cap else None


def _mt_spans(spans, V):
    """The observation spans as a list of non-empty tuples of int ids in [0, V), none a prefix of
    another."""
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
    """MultiTurnMDP.rollout's arguments: returns K, bounded so that the (K, T) arrays stay within
    MAX_CELLS (a clear error before the first episode, not a loop without end)."""
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
    exactly on the policy's tokens."""
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
    """scatter's arguments: x (B, Ta), pos and mask of its shape, T >= 1 with (B, T) cells within
    MAX_CELLS."""
    x = float_array(x, "x", ndim=2)
    T = int_scalar(T, "T", low=1)
    cells(x.shape[0] * T, "T", "a width whose (B, T) output is")
    pos = int_array(pos, "pos", shape=x.shape, low=0, high=T)
    mask = mask_array(mask, "mask", shape=x.shape, prefix=COMPACT_ROWS)
    return x, pos, mask, T


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it. ndim: required number of dimensions
    (None: any). shape: required shape; a None entry matches any length. finite: reject NaN
    and +-inf; with ``allow_neginf`` a -inf entry is allowed (log-probabilities of impossible
    tokens), NaN and +inf never are."""
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


def int_array(x, name, ndim=None, shape=None, low=None, high=None):
    """Return ``x`` as an int64 array of ids in ``[low, high)`` after checking it."""
    arr = _asarray(x, name)
    if arr.dtype.kind not in "iu":  # signed or unsigned integers
        raise TypeError(f"{name}: expected an integer array of ids, got {_describe(arr)}")
    arr = arr.astype(np.int64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: expected ids >= {low}, got min {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: expected ids < {high}, got max {arr.max()}")
    return arr


def mask_array(x, name, shape=None, prefix=None):
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted)."""
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


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


def prob_table(p, name, shape=None, ndim=None):
    """Return ``p`` as float64 probabilities: entries >= 0, each row (last axis) summing to 1
    within 1e-9 absolutely (stricter than ``Generator.choice``'s ~1.5e-8, so a table that
    passes here is accepted by ``rng.choice``), and non-empty."""
    p = float_array(p, name, ndim=ndim, shape=shape)
    nonempty(p, name)
    if (p < 0).any():
        raise ValueError(f"{name}: expected probabilities >= 0, got min {p.min()}")
    s = p.sum(axis=-1)
    if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
        bad = np.abs(s - 1.0).ravel()
        raise ValueError(
            f"{name}: expected rows summing to 1 (within 1e-9), got a row summing "
            f"to {float(s.ravel()[int(np.argmax(bad))])!r}"
        )
    return p


def real_result(value, name, context=""):
    """A callable's return value (a grader's reward) as a finite Python float, else an error
    naming ``name`` (the callable): None, a string, a bool, NaN or inf are rejected."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number{context}, got {_describe(value)}")
    return _float(value, name, f"a finite number{context}")


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


MAX_CELLS = 2**31  # entries of one (B, T) array a call may allocate: 16 GiB of float64


def cells(n, name, what):
    """Raise unless ``n`` entries (the size of an array about to be allocated, driven by the
    argument ``name``) stay within ``MAX_CELLS``: a clear error before any allocation or loop."""
    if n > MAX_CELLS:
        raise ValueError(f"{name}: expected {what} of at most 2**31 entries, got {n}")
    return n


def _no_bool_ids(x, name, what="token ids"):
    """Raise if a sequence (not an array) of ids holds a bool (NumPy would read True as 1)."""
    if not isinstance(x, (np.ndarray, str, bytes)) and hasattr(x, "__iter__"):
        for v in x:
            if isinstance(v, (bool, np.bool_)):
                raise TypeError(f"{name}: expected integer {what}, got {v!r} in {tuple(x)!r}")


def _duck(obj, name, attrs, what):
    if not all(hasattr(obj, a) for a in attrs):
        raise TypeError(f"{name}: expected {what}, got {type(obj).__name__}")
    return obj


def table_policy(policy, S, V, finite_rows=False, what=""):
    """Raise unless ``policy`` has ``sample`` and a float table ``theta`` of shape (S, V) (with
    ``finite_rows``: a finite entry in every row, no NaN, no +inf)."""
    shape = getattr(getattr(policy, "theta", None), "shape", None)
    if not hasattr(policy, "sample") or shape != (S, V):
        raise ValueError(
            f"policy: expected a policy with a table of shape (S, V) = ({S}, {V})"
            f"{what}, got {type(policy).__name__} with shape {shape}"
        )
    th = np.asarray(policy.theta)
    if finite_rows and (
        th.dtype.kind != "f"
        or np.isnan(th).any()
        or np.isposinf(th).any()
        or not np.isfinite(th).any(axis=1).all()
    ):
        raise ValueError("policy: expected a table theta with a finite entry in every row and no NaN or +inf")
    return policy
