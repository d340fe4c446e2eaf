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
Demonstrated by `python examples/multi_turn.py`. Imports NumPy and minirl_lm.boundary only.
"""

import numbers
from dataclasses import dataclass

import numpy as np

from minirl_lm.boundary import COUNT, array, boundary, function, generator, has, number, right_padded, simplex
from minirl_lm.core.validate import policy_table_shape

__all__ = [
    "Episodes",
    "MultiTurnMDP",
    "action_view",
    "scatter",
    "MULTITURN_MDP",
    "EPISODES",
    "TRAJECTORY",
    "ACTION_MASK",
    "ids",
    "episodes_of",
    "actions_on_the_trajectory",
]

# ---- the kinds of the multi-turn part (values.py reads its arguments with them too) -----------


# every token of an episode, right-padded; the holes (the environment's tokens) go in action_mask
TRAJECTORY = right_padded(
    "B T",
    "the trajectory mask (every token of the episode)",
    "action_mask for the policy's tokens (0 where the environment wrote)",
)
ACTION_MASK = array("B T", values=(0.0, 1.0))  # 1 on the policy's tokens: holes where the env wrote


def ids(shape, **bounds):
    """An int64 array of token or state ids of `shape` (`array(shape, integer=True, **bounds)`);
    a bool array is not one (NumPy would read True as 1)."""

    def kind(x, name, dims):
        if getattr(x, "dtype", None) == np.bool_:
            raise TypeError(f"{name}: expected an integer array of ids, got an array of dtype bool")
        return array(shape, integer=True, **bounds)(x, name, dims)

    return kind


def _env_kind(what, members):
    """An environment with `members` (what the body reads of it); it fixes the letters S (its
    states) and V (its vocabulary) for the later arguments: a policy table is `(S, V)`."""

    def kind(x, name, dims):
        env = has(what, members)(x, name, dims)
        dims.update(S=env.S, V=env.V)
        return env

    return kind


MULTITURN_MDP = _env_kind("a MultiTurnMDP", "children is_policy loglik p_obs spans S V")
EPISODES = has("an Episodes batch (from rollout or all_episodes)", "states tokens mask action_mask rewards")


def _vocabulary(x, name, dims):
    """The vocabulary size, an integer >= 2; it fixes the letter V for the later arguments."""
    dims["V"] = number(2, integer=True)(x, name, dims)
    return dims["V"]


def _token(x, name, dims):
    """One token id in [0, V)."""
    return number(0, dims["V"] - 1, integer=True)(x, name, dims)


def _token_ids(x, name, V, what="token ids"):
    """A sequence of integer token ids in [0, V) as a tuple of ints (a bool is not an id)."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__iter__"):
        raise TypeError(f"{name}: expected a sequence of integer {what}, got {type(x).__name__}")
    x = tuple(x)
    for y in x:
        if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Integral):
            raise TypeError(f"{name}: expected integer token ids, got {y!r} in {x!r}"[:200])
        if not 0 <= y < V:
            raise ValueError(f"{name}: expected {what} in [0, {V}), got {y} in {x!r}"[:200])
    return tuple(int(y) for y in x)


def _call_tokens(x, name, dims):
    """The call tokens: integer ids in [0, V)."""
    return _token_ids(x, name, dims["V"])


def _observation_spans(x, name, dims):
    """The environment's replies: non-empty tuples of ids in [0, V), none a prefix of another (a
    trajectory then parses one way); their number fixes the letter M."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__iter__"):
        raise TypeError(f"{name}: expected a sequence of tuples of token ids, got {type(x).__name__}")
    what, out = "non-empty spans of token ids", []
    for span in x:
        if isinstance(span, (str, bytes)) or not hasattr(span, "__iter__"):
            raise TypeError(f"{name}: expected each span a tuple of token ids, got {span!r}"[:200])
        out.append(_token_ids(span, name, dims["V"], what))
        if not out[-1]:
            raise ValueError(f"{name}: expected {what} in [0, {dims['V']}), got an empty span")
    if not out:
        raise ValueError(f"{name}: expected at least one span (the environment's replies), got none")
    ordered = sorted(out)  # a prefix sorts right before the spans it starts (or a copy of itself)
    for a, b in zip(ordered, ordered[1:]):
        if b[: len(a)] == a:
            raise ValueError(f"{name}: expected no span to be a prefix of another, got {a} and {b}")
    dims["M"] = len(out)
    return out


TURN_REWARD = number()  # what turn_reward returns: a finite real number (a bool is not one)


def _calls_other_than_eos(eos, calls):
    """The call tokens and EOS are different tokens."""
    if eos in calls:
        return f"calls: expected call tokens other than eos={eos}, got {calls}"


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


def _enumerable(V, calls, spans, prior, max_turns, turn_len):
    """The tree is grown recursively and in full: at most 900 tokens per episode and 2**24
    states (`turn_len` is blamed if it alone is too much, else `max_turns`), and at most 2**28
    (state, token, world) rewards (a state has V children, each a reward per world: `V`, then
    `prior` blamed)."""
    L, M = max(map(len, spans)), len(spans)  # spans: at least one (the kind refuses none)
    for name, turns in (("turn_len", 1), ("max_turns", max_turns)):  # turn_len alone, then both
        if turns * (turn_len + L) > 900:
            return (
                f"{name}: expected max_turns * (turn_len + the longest span) <= 900 "
                f"tokens per episode, got {turns} * ({turn_len} + {L})"
            )
        size = _tree_size(V - 1 - len(calls), len(calls), M, L, turns, turn_len, 2**24)
        if size is None:
            return (
                f"{name}: expected a tree of at most 2**24 states, got a bound above "
                f"it (max_turns={max_turns}, turn_len={turn_len}); the tree is enumerated in full"
            )
    for name, n in (("V", V), ("prior", V * prior.size)):  # size: the last pass's, turns = max_turns
        if size * n > 2**28:
            return (
                f"{name}: expected at most 2**28 (state, token, world) rewards in the tree, got a "
                f"bound of {size} states x {V} tokens x {prior.size} worlds; the tree is enumerated in full"
            )


def _trajectory_row(env, b, tokens, states, n):
    """Row `b` (its `n` real tokens) parsed as a trajectory of `env`: the `(T,)` policy-token
    mask, or the message naming the field that does not parse."""
    want, s, t = np.zeros(tokens.size), 0, 0
    while t < n:
        a = int(tokens[t])
        if states[t] != s:
            return f"states: row {b}, position {t}: expected state {s}, got {states[t]}"
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
            return (
                f"tokens: row {b}, position {t}: expected an observation "
                f"span {env.spans} after the call, got {tokens[t:n].tolist()}"
            )
        (chance, s), got = hit[0], states[t : t + len(hit[0][0])]
        for i in np.flatnonzero(got != np.array(chance)):  # the chance nodes' ids
            return f"states: row {b}, position {t + i}: expected state {chance[i]}, got {got[i]}"
        t += len(chance)
    if t != n:
        return f"mask: row {b}: the episode ends at position {t}, but the mask has {n} real tokens"
    if kind != "end":  # the mask ends, but the episode goes on
        return (
            f"mask: row {b}: expected the whole episode (to its EOS, turn length or turn cap), "
            f"got a mask that stops at position {n}, mid-episode"
        )
    return want


def episodes_of(env, ep):
    """Every row of `ep` parses as a whole trajectory of `env`, to its end (tokens and states,
    chance nodes included), and `action_mask` is 1 exactly on the policy's tokens. Names the field."""
    dims = {}
    mask = TRAJECTORY(ep.mask, "mask", dims)
    tokens = ids("B T", low=0, high=env.V - 1)(ep.tokens, "tokens", dims)
    states = ids("B T", low=0, high=env.S - 1)(ep.states, "states", dims)
    act = array("B T")(ep.action_mask, "action_mask", dims)
    array("B T")(ep.rewards, "rewards", dims)
    for b in range(mask.shape[0]):
        n = int(mask[b].sum())
        if n == 0:
            return f"mask: row {b} is empty; every episode has at least one token"
        want = _trajectory_row(env, b, tokens[b], states[b], n)
        if isinstance(want, str):
            return want
        if (bad := np.flatnonzero(act[b] != want)).size:
            t = int(bad[0])
            what = (
                "holds an observation token (written by the environment)"
                if mask[b, t] and not want[t]
                else "holds a policy token"
                if want[t]
                else "is padding"
            )
            return f"action_mask: row {b}, position {t} {what}, expected {int(want[t])}, got {float(act[b, t])!r}"


def _policy_table(self, policy):
    """The policy's table is `(S, V)`, a row per state of the environment."""
    return policy_table_shape(policy, self.S, self.V)


def _rollout_cells(self, K):
    """The `(K, T)` arrays of a rollout stay within 2**31 entries (refused before any draw)."""
    if K * self.T > 2**31:
        return f"K: expected episodes whose (K, T) arrays are of at most 2**31 entries, got {K * self.T}"


def _output_cells(x, T):
    """`scatter`'s `(B, T)` output stays within 2**31 entries (refused before allocating)."""
    if x.shape[0] * T > 2**31:
        return f"T: expected a width whose (B, T) output is of at most 2**31 entries, got {x.shape[0] * T}"


def _positions_within(pos, T):
    """Every position is a column of the full row: `pos < T`."""
    if pos.max() >= T:
        return f"pos: expected positions < T={T}, got max {pos.max()}"


def _own_episodes(self, ep):
    """`episodes_of` for a method: `self` is the environment."""
    return episodes_of(self, ep)


def actions_on_the_trajectory(mask, action_mask):
    """The policy writes tokens of the trajectory only: `action_mask <= mask`."""
    if (action_mask > mask).any():
        b, t = np.argwhere(action_mask > mask)[0]
        return f"action_mask: expected 1 only where mask is 1, got 1 at row {b}, position {t} where mask is 0"


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
            states, or `V` or the worlds of `prior` so many that the tree holds more than 2**28
            (state, token, world) rewards (it is enumerated in full, recursively: refused before
            it is grown); probability tables that are negative or whose rows do not sum to 1
            within 1e-9; `turn_reward` returning NaN or inf.
        TypeError: spans or calls that are not sequences of integer ids (a bool is not one);
            `turn_reward` not a callable of
            three arguments, or returning something else than a real number (a bool included).
    """

    @boundary(
        V=_vocabulary,
        eos=_token,
        calls=_call_tokens,
        spans=_observation_spans,
        prior=simplex("W"),
        p_obs=simplex("W M"),
        turn_reward=function("turn_reward(w, turns, done)", 3),
        max_turns=COUNT,
        turn_len=COUNT,
        where=[_calls_other_than_eos, _enumerable],
        returns=None,
    )
    def __init__(self, V, eos, calls, spans, p_obs, prior, turn_reward, max_turns=3, turn_len=2):
        self.V, self.eos, self.calls, self.spans, self.p_obs, self.prior = V, eos, calls, spans, p_obs, prior
        self.turn_reward, self.max_turns, self.turn_len = turn_reward, max_turns, turn_len
        self.W, self.M = self.p_obs.shape
        self._index, self.prefixes, self._kinds, self.loglik, self.children = {}, [], [], [], {}
        self._grow((), 0, (), (), np.log(self.prior))  # log 0 = -inf: a world the prior excludes
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
                [TURN_REWARD(self.turn_reward(w, turns + (turn,), done), "turn_reward", {}) for w in range(self.W)]
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
    @boundary(
        policy=has("a policy", "sample() theta"),
        K=COUNT,
        rng=generator,
        where=[_policy_table, _rollout_cells],
        returns=None,
    )
    def rollout(self, policy, K, rng):
        """K episodes of `policy`, drawn with `rng`.

        Per episode, in order: the world w ~ prior, then token by token the policy's draws at
        policy states and one span o ~ P(o | w) after every call that does not end the episode.

        Args:
            policy: a policy with a `sample()` method and an `(S, V)` table `theta`, a row per
                state of the environment (a `TabularPolicy`).
            K: the number of episodes, an int >= 1 whose `(K, T)` arrays stay within 2**31
                entries (else a ValueError before the first episode).
            rng: a `np.random.Generator`, the source of every draw.

        Returns:
            An `Episodes` batch of K rows padded to `T = env.T`.
        """
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
    @boundary(ep=EPISODES, where=[_own_episodes], returns=None)
    def check(self, ep):
        """Validate a batch of episodes against the environment; returns it unchanged.

        Args:
            ep: an `Episodes` batch (from `rollout` or `all_episodes`, or built by hand). Every
                row must parse as a whole trajectory of this environment, from its first token to
                its end (EOS, the turn length or the turn cap: a row cut short is refused), its
                tokens and states (the chance nodes' ids at observation positions included), and
                its `action_mask` must be 1 exactly on the tokens the policy wrote: an observation
                token marked as an action, or a policy token marked 0, is a ValueError naming
                `action_mask`.

        Returns:
            `ep`, unchanged.

        Raises:
            ValueError: a row that does not parse, naming the field (`states`, `tokens`, `mask`,
                `action_mask`) and the position.
        """
        return ep  # the parse is the declaration's: own_episodes


@boundary(env=MULTITURN_MDP, ep=EPISODES, where=[episodes_of], returns="states tokens mask rewards pos")
def action_view(env, ep):
    """The policy's tokens only, gathered into compact right-padded arrays.

    Observation spans disappear, so a recursion over the compact row carries across them.

    Args:
        env: the `MultiTurnMDP` the episodes come from.
        ep: an `Episodes` batch `(B, T)` of `env`: every row parses as one of its trajectories,
            `action_mask` 1 exactly on the policy's tokens (as `MultiTurnMDP.check`).

    Returns:
        `(states, tokens, mask, rewards, pos)`, each `(B, Ta)` with Ta the most policy tokens in
        a row (at least 1): what `TabularPolicy.logp/backward`, `reinforce` and `critic` take.
        `mask` is 0/1, right-padded; `pos[b, j]` is the column of the full row that holds policy
        token j (0 at padding).
    """
    n = ep.action_mask.sum(axis=1).astype(np.int64)  # (B,) policy tokens per row
    B, Ta = n.size, max(int(n.max(initial=0)), 1)
    pos = np.zeros((B, Ta), np.int64)
    mask = (np.arange(Ta)[None, :] < n[:, None]).astype(np.float64)  # (B, Ta)
    for b in range(B):
        pos[b, : n[b]] = np.flatnonzero(ep.action_mask[b])
    take = lambda x: np.take_along_axis(x, pos, axis=1) * mask.astype(x.dtype)  # noqa: E731
    return take(ep.states), take(ep.tokens), mask, take(ep.rewards), pos


@boundary(
    x=array("B J"),
    pos=ids("B J", low=0),
    mask=right_padded("B J", "the compact rows of action_view", "the mask action_view returns"),
    T=COUNT,
    where=[_output_cells, _positions_within],
    returns="full",
)
def scatter(x, pos, mask, T):
    """Inverse of `action_view` for a per-token array: compact `(B, Ta)` -> full `(B, T)`.

    Args:
        x: `(B, Ta)` a per-token array on the compact rows (its entries at padding are dropped).
        pos: `(B, Ta)` integer ids >= 0, the column of the full row of each compact entry, the
            `pos` that `action_view` returns; each `< T`.
        mask: `(B, Ta)` 0/1, right-padded: the mask `action_view` returns.
        T: the width of the full rows, an int >= 1 (`env.T`); `(B, T)` within 2**31 entries.

    Returns:
        full, `(B, T)`: `x` at the columns `pos` of its real entries, 0 elsewhere.

    Raises:
        ValueError: shapes of `x`, `pos`, `mask` differ, `T < 1`, `pos` outside `[0, T)`, or a
            mask that is not 0/1 and right-padded.
        TypeError: `T` not an integer, `pos` not integer ids.
    """
    out = np.zeros((x.shape[0], T))  # (B, T)
    rows, cols = np.nonzero(mask > 0)
    out[rows, pos[rows, cols]] = x[rows, cols]
    return out
