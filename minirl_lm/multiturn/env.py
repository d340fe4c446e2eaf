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

import numpy as np

from minirl_lm.core.checks import real_result
from minirl_lm.multiturn.checks import (
    action_view_args,
    episodes,
    multiturn_args,
    multiturn_rollout_args,
    scatter_args,
)


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
