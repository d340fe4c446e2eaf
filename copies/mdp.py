# minirl_lm 0.1.0: a self-contained copy of minirl_lm/core/mdp.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/core/mdp.py -o DIR
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

"""The token MDP: text generation as a (degenerate) Markov decision process.

The dictionary, eq. (token_mdp), with `s_1 = x` and `s_{t+1} = s_t ∘ y_t`:

```text
prompt x            start state s_1 = x ~ mu_0     a prompt index n in [0, N)
token y_t           action a_t                     a token id in [0, V)
prefix (x, y_<t)    state s_t                      a state id: a row of the policy table
response y          trajectory tau                 a row of the padded (B, T) arrays
EOS / length cap    terminal state                 eos, max_len (T_max)
```

Transitions are concatenation, `s_{t+1} = s_t ∘ y_t`: deterministic, known, probability one
(see `TokenMDP.step`). All randomness is the policy's. The reward is terminal: one scalar
`R(x, y)` per response, from a grader called on `(prompt, response)`.

State ids. A state is (prompt `n`, prefix `y_<t`): `t - 1 < max_len` tokens, and no EOS in
the prefix (a prefix ending in EOS, or of length `max_len`, is terminal and has no row). With
`V_c = V - 1` continuing tokens (`V_c = V` when there is no EOS; the attribute `A`) there are
`V_c^j` prefixes of length `j`, so the tree has

```text
S = N * (1 + V_c + V_c^2 + ... + V_c^(max_len - 1))
```

states: enormous for real vocabularies. Two ways to number them:

- `ids="enumerate"` (small trees): ids are computed arithmetically, level by level,
  prompt-major, the prefix read as a base-`V_c` number, eq. (state_id):
  `id(n, y_<t) = offset[j] + n * V_c^j + rank(y_<t)`, with `j = t - 1` the prefix length.
  No dictionary is stored: `O(max_len)` memory for the map, but the policy table costs
  `S * V * 8` bytes, and `S` must fit (`max_states`, default `2**22`).
- `ids="lazy"` (large trees): ids are handed out on first visit from a dict
  `{(n, prefix): id}`, up to `capacity` states. Memory is proportional to the states actually
  visited (a dict entry plus a table row each); unvisited states have no row. Running out of
  capacity is a ValueError naming `capacity`.

The two schemes are two small classes with one interface, in `minirl_lm/core/_state_ids.py`.

Rollout arrays are `(B, T)` with `T = max_len`, prompt-major: response `k` of prompt `n` is row
`b = n*K + k`, and column `t - 1` holds `y_t` and the id of `s_t`. `mask` is 1.0 on real tokens
(EOS included) and 0.0 on padding; padded positions hold token 0 and state 0 so every id stays
valid.

Demonstrated by `python examples/logprob.py` and the page "The token MDP".
"""

from dataclasses import dataclass
import functools
import inspect
import numbers

import numpy as np


# part 1: from minirl_lm/core/_state_ids.py ----------------------------------------------------
#   The two numberings of the token MDP's states, behind one interface (used by `TokenMDP`).


class EnumeratedIds:
    """Arithmetic ids over the whole prefix tree of `N` prompts, `V` tokens (EOS `eos` or None)
    and `max_len`, for a tree of `S <= max_states` states (else a ValueError naming max_len)."""

    enumerates = True

    def __init__(self, N, V, eos, max_len, max_states):
        self.N, self.eos, self.max_len = N, eos, max_len
        self.A = V - (eos is not None)  # continuing tokens
        # the tree's size, in O(log max_states) steps whatever max_len (no loop to max_len)
        if self.A == 1:
            self.S = N * max_len
        else:
            total, level, t = 0, N, 0
            while t < max_len and total <= max_states:
                total, level, t = total + level, level * self.A, t + 1
            self.S = total if t == max_len else None
        if self.S is None or self.S > max_states:
            size = f"{self.S}" if self.S is not None else "more"
            raise ValueError(
                f"max_len: expected a prefix tree of at most max_states={max_states} "
                f"states, got {size} (max_len={max_len}); use ids='lazy' with a "
                f"capacity"
            )

    def _offset(self, t):
        """Id of the first state of level t (prefixes of length t): O(1)."""
        if self.A == 1:
            return self.N * t
        return self.N * (self.A**t - 1) // (self.A - 1)

    def _cont(self, y):
        # index of token y among the A continuing tokens (EOS removed)
        return y if self.eos is None or y < self.eos else y - 1

    def id(self, n, prefix):
        t = len(prefix)
        rank = 0
        for y in prefix:  # base-A number of the prefix
            rank = rank * self.A + self._cont(y)
        return int(self._offset(t) + n * self.A**t + rank)

    def prefix_of(self, s):
        t = s // self.N if self.A == 1 else 0  # A = 1: N states per level
        while self._offset(t + 1) <= s:  # the level of s (few levels: S is small)
            t += 1
        n, rank = divmod(s - self._offset(t), self.A**t)
        prefix = []
        for _ in range(t):
            rank, c = divmod(rank, self.A)
            prefix.append(c if self.eos is None or c < self.eos else c + 1)
        return n, tuple(reversed(prefix))

    def checkpoint(self):
        return None  # nothing is mutable

    def rollback(self, cp):
        pass

    def walk(self, prompt):
        return _RankWalk(self, prompt)


class _RankWalk:
    """B prefixes growing together, held as base-A ranks: ids vectorized."""

    def __init__(self, ids, prompt):
        self.ids, self.prompt = ids, prompt
        self.rank = np.zeros(prompt.size, np.int64)  # (B,) base-A rank of each prefix

    def states(self, rows, t):  # id(n, y_<t), vectorized
        ids = self.ids
        return ids._offset(t) + self.prompt[rows] * ids.A**t + self.rank[rows]

    def grow(self, rows, y):  # s_{t+1} = s_t . y_t
        eos = self.ids.eos
        self.rank[rows] = self.rank[rows] * self.ids.A + (y - (y > eos) if eos is not None else y)


class LazyIds:
    """Ids handed out on first visit, up to `capacity` states; the `N` prompts get ids 0..N-1."""

    enumerates = False

    def __init__(self, N, capacity):
        self.S = capacity
        self._index = {}  # (n, prefix) -> id
        self._prefix = []  # id -> (n, prefix)
        for n in range(N):
            self.id(n, ())

    def id(self, n, prefix):
        key = (n, prefix)
        if key not in self._index:
            if len(self._prefix) >= self.S:
                raise ValueError(
                    f"capacity: expected a free state id for {key}, got all "
                    f"{self.S} in use; raise capacity or use ids='enumerate'"
                )
            self._index[key] = len(self._prefix)
            self._prefix.append(key)
        return self._index[key]

    def prefix_of(self, s):
        if s >= len(self._prefix):
            raise ValueError(f"s: expected a visited state id < {len(self._prefix)}, got {s}")
        return self._prefix[s]

    def checkpoint(self):
        return len(self._prefix)

    def rollback(self, cp):
        for key in self._prefix[cp:]:
            del self._index[key]
        del self._prefix[cp:]

    def walk(self, prompt):
        return _PrefixWalk(self, prompt)


class _PrefixWalk:
    """B prefixes growing together, held as tuples (lazy ids need the prefixes)."""

    def __init__(self, ids, prompt):
        self.ids, self.prompt = ids, prompt
        self.prefixes = [()] * prompt.size

    def states(self, rows, t):
        return np.array([self.ids.id(int(self.prompt[b]), self.prefixes[b]) for b in rows], np.int64)

    def grow(self, rows, y):
        for b, yb in zip(rows, y):
            self.prefixes[b] = self.prefixes[b] + (int(yb),)  # live prefixes are non-terminal


# minirl_lm/core/mdp.py itself -----------------------------------------------------------------


__all__ = ["Rollout", "TokenMDP"]


def _prompt_list(x, name, dims):
    """A non-empty sequence of prompts (any objects; not a string), as a list."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__len__") or not hasattr(x, "__iter__"):
        raise TypeError(f"{name}: expected a sequence of prompts, got {type(x).__name__}")
    if len(x) == 0:
        raise ValueError(f"{name}: expected at least one prompt, got an empty sequence")
    return list(x)


def _token_tuple(x, name, dims):
    """A sequence of integer token ids (not a string, no bool), as a tuple of Python ints; its
    range and shape in the tree are `_a_prefix`'s."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__len__") or not hasattr(x, "__iter__"):
        raise TypeError(f"{name}: expected a tuple of token ids, got {type(x).__name__}")
    for y in x:
        if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Integral):
            raise TypeError(f"{name}: expected integer token ids, got {y!r} in {x!r}"[:200])
    return tuple(int(y) for y in x)


def _a_tree(V, eos, capacity, ids, prompts):
    """`eos` is a token of a vocabulary of `V >= 2`; a lazy MDP has a `capacity` for at least
    the prompts' roots (checked whatever the mode when given)."""
    if eos is not None and eos >= V:
        return f"eos: expected an integer <= {V - 1} (a token id), got {eos}"
    if eos is not None and V < 2:
        return f"V: expected at least 2 tokens when eos is set, got {V}"
    if ids == "lazy" and capacity is None:
        return "capacity: expected an integer >= the number of prompts for ids='lazy', got None"
    if capacity is not None and capacity < len(prompts):
        return f"capacity: expected an integer >= {len(prompts)} (one row per prompt's root), got {capacity}"
    return None


def _a_prefix(self, prefix):
    """A prefix of this tree: ids in [0, V), at most max_len long, no token after EOS."""
    if len(prefix) > self.max_len:
        return f"prefix: expected at most max_len={self.max_len} tokens, got {len(prefix)}"
    if any(not 0 <= y < self.V for y in prefix):
        return f"prefix: expected token ids in [0, {self.V}), got {prefix!r}"[:200]
    if self.eos is not None and self.eos in prefix[:-1]:
        return f"prefix: expected no token after EOS ({self.eos}), got {prefix}"[:200]
    return None


def _non_terminal(self, prefix):
    """A prefix that has a next token (and a row): not ended by EOS nor at max_len."""
    if _a_prefix(self, prefix) is None and self._terminal(prefix):
        return f"prefix: expected a non-terminal prefix, got {prefix} (eos={self.eos}, max_len={self.max_len})"[
            :200
        ]
    return None


def _a_prompt(self, n):
    """`n` indexes a prompt: `n < N`."""
    return None if n < self.N else f"n: expected an integer <= {self.N - 1}, got {n}"


def _a_token(self, y):
    """`y` is a token id: `y < V`."""
    return None if y < self.V else f"y: expected an integer <= {self.V - 1}, got {y}"


def _a_state(self, s):
    """`s` is a state id: `s < S`."""
    return None if s < self.S else f"s: expected an integer <= {self.S - 1}, got {s}"


def _a_checkpoint(self, cp):
    """`cp` is what `checkpoint()` returned: None in enumerate mode; in lazy mode a count of ids
    between the prompts' roots (never taken back) and the ids handed out now."""
    if self._ids.enumerates:
        return None if cp is None else f"cp: expected None (ids='enumerate' hands out no ids), got {cp!r}"
    low, high = self.N, self._ids.checkpoint()
    if cp is None or not low <= cp <= high:
        return (
            f"cp: expected a checkpoint in [{low}, {high}] (the prompts' roots to the ids handed out), got {cp!r}"
        )
    return None


def _a_policy_of(self, policy):
    """A policy whose table is this MDP's `(S, V)`, a finite entry in every row, no NaN, no +inf."""
    if wrong := policy_table_shape(policy, self.S, self.V, " for this MDP"):
        return wrong
    th = np.asarray(policy.theta)
    if (
        th.dtype.kind != "f"
        or np.isnan(th).any()
        or np.isposinf(th).any()
        or not np.isfinite(th).any(axis=1).all()
    ):
        return "policy: expected a table theta with a finite entry in every row and no NaN or +inf"
    return None


def _a_rollout_of(self, rollout):
    """A `Rollout` of this MDP: (B,) prompt indices in [0, N), (B, T) token ids in [0, V), (B,)
    lengths in [0, max_len]."""
    if not isinstance(rollout, Rollout):
        return f"rollout: expected a Rollout, got {type(rollout).__name__}"
    p, tok, n = (np.asarray(getattr(rollout, a)) for a in ("prompt", "tokens", "lengths"))
    for a, what, high, ndim in (
        (p, "prompt indices", self.N, 1),
        (tok, "token ids", self.V, 2),
        (n, "lengths", self.max_len + 1, 1),
    ):
        if a.dtype.kind not in "iu" or a.ndim != ndim or a.shape[0] != p.shape[0]:
            shape = ("(B,)", "(B, T)")[ndim - 1]
            return f"rollout: expected {what} of integers and shape {shape}, got {a.dtype} {a.shape}"
        if a.size and (a.min() < 0 or a.max() >= high):
            return f"rollout: expected {what} in [0, {high}), got {a.min() if a.min() < 0 else a.max()}"
    return None


def _rollout_size(self, K, prompts):
    """Prompt indices in [0, N); the (B, T) arrays (B = n K, T = max_len) within 2**31 entries,
    before any allocation."""
    n = self.N if prompts is None else prompts.size
    if prompts is not None and (prompts.min() < 0 or prompts.max() >= self.N):
        bad = prompts.min() if prompts.min() < 0 else prompts.max()
        return f"prompts: expected prompt indices in [0, {self.N}), got {bad}"
    for name, cells, what in (
        ("max_len", n * self.max_len, "a length cap"),
        ("K", n * K * self.max_len, "responses per prompt"),
    ):
        if cells > MAX_CELLS:
            return f"{name}: expected {what} whose (B, T) rollout arrays are of at most 2**31 entries, got {cells}"
    return None


@dataclass
class Rollout:
    """K responses per prompt for N prompts, padded, prompt-major (`B = N*K` rows).

    Column `t - 1` of `states`, `tokens` and `mask` belongs to token `y_t`.

    Attributes:
        states: `(B, T)` int64, the id of the state `s_t` before each token (0 at padding).
        tokens: `(B, T)` int64, the token ids `y_t` (0 at padding).
        mask: `(B, T)` float64, 1.0 on real tokens (EOS included), 0.0 on padding.
        prompt: `(B,)` int64, the prompt index of each response.
        lengths: `(B,)` int64, the number of real tokens `|y|` of each response.
    """

    states: np.ndarray  # (B, T) int64 state id of the prefix before each token
    tokens: np.ndarray  # (B, T) int64 token ids (0 at padding)
    mask: np.ndarray  # (B, T) float64, 1.0 on real tokens (EOS included)
    prompt: np.ndarray  # (B,) int64 prompt index of each response
    lengths: np.ndarray  # (B,) int64 number of real tokens

    def responses(self):
        """The responses as tuples of token ids.

        Returns:
            A list of `B` tuples, one per row, each `|y|` token ids long (EOS included when it
            was emitted).
        """
        return [tuple(int(y) for y in row[:n]) for row, n in zip(self.tokens, self.lengths)]


class TokenMDP:
    """Prompts, a vocabulary of `V` tokens, an optional EOS id and a length cap.

    Args:
        prompts: a sequence of `N >= 1` prompts (any objects; the grader receives them).
        V: vocabulary size, an int `>= 1` (`>= 2` when `eos` is set).
        eos: the EOS token id in `[0, V)`, or None for responses that always run to `max_len`.
        max_len: the length cap `T_max >= 1` on `|y|`.
        ids: `"enumerate"` (arithmetic ids over the whole tree) or `"lazy"` (ids handed out
            on first visit).
        capacity: lazy mode only: the number of states that get a row.
        max_states: enumerate mode only: the largest tree accepted (default `2**22`).

    Raises:
        ValueError: an argument out of range, or a tree larger than `max_states`; the message
            starts with the argument's name.
        TypeError: `prompts` is not a sequence, or an argument has the wrong type.
    """

    def __init__(self, prompts, V, eos=None, max_len=1, ids="enumerate", *, capacity=None, max_states=2**22):
        self.prompts, self.V, self.eos, self.max_len, self.ids = prompts, V, eos, max_len, ids
        self.N = len(self.prompts)
        self.A = self.V - (self.eos is not None)  # continuing tokens
        # the numbering of the states: one of two schemes behind one interface (_state_ids.py)
        self._ids = (
            EnumeratedIds(self.N, self.V, self.eos, self.max_len, max_states)
            if self.ids == "enumerate"
            else LazyIds(self.N, capacity)
        )
        self.S = self._ids.S

    # ---- states ---------------------------------------------------------
    def checkpoint(self):
        """The MDP's mutable state: the lazy ids handed out so far (None in enumerate mode).

        Returns:
            A token for `rollback`.
        """
        return self._ids.checkpoint()

    def rollback(self, cp):
        """Take back every lazy id handed out since `checkpoint()` returned `cp` (what
        `grpo_step` does when a step raises).

        Args:
            cp: what `checkpoint()` returned: None in enumerate mode; in lazy mode an int
                between `N` (the prompts' roots, never taken back) and the number of ids
                handed out now.

        Raises:
            ValueError: `cp` is not such a checkpoint (nothing is taken back).
            TypeError: `cp` is not an integer or None.
        """
        self._ids.rollback(cp)

    def is_terminal(self, prefix):
        """Whether a prefix is terminal: it ends in EOS or has reached the length cap.

        Args:
            prefix: a tuple of token ids (the response so far, `y_<t`).

        Returns:
            True if the prefix ends in EOS or has `max_len` tokens.
        """
        return self._terminal(prefix)

    def _terminal(self, prefix):
        return len(prefix) >= self.max_len or (self.eos is not None and len(prefix) > 0 and prefix[-1] == self.eos)

    def step(self, prefix, y):
        """The transition `s_{t+1} = s_t ∘ y_t`: concatenation, deterministic, probability one.

        Args:
            prefix: a non-terminal tuple of token ids (a response that ended in EOS or at
                `max_len` has no next token).
            y: the next token id, in `[0, V)`.

        Returns:
            The tuple `prefix + (y,)`.
        """
        return prefix + (y,)

    def state_id(self, n, prefix):
        """The row of the policy table for the state (prompt `n`, prefix).

        Args:
            n: prompt index in `[0, N)`.
            prefix: a non-terminal tuple of token ids (terminal prefixes have no row).

        Returns:
            The state id, an int in `[0, S)`, eq. (state_id) in enumerate mode.

        Raises:
            ValueError: lazy mode and the capacity is exhausted, or a bad argument.
        """
        return self._ids.id(n, prefix)

    def prefix_of(self, s):
        """The inverse of `state_id`.

        Args:
            s: a state id in `[0, S)`.

        Returns:
            The pair `(n, prefix)`: prompt index and tuple of token ids.
        """
        return self._ids.prefix_of(s)

    def all_states(self):
        """Every non-terminal `(n, prefix)`, in id order (enumerate mode only).

        Returns:
            A list of `S` pairs `(n, prefix)`; entry `s` is the state with id `s`.
        """
        if not self._ids.enumerates:
            raise ValueError("ids: all_states needs ids='enumerate', got 'lazy'")
        return [self._ids.prefix_of(s) for s in range(self.S)]

    def all_responses(self):
        """Every complete response of every prompt, as one padded `Rollout`.

        Rows are prompt-major, depth-first in token order. For exact expectations by
        enumeration on small trees: `sum_y pi(y|x) f(y) = sum over rows of exp(seq_logp) f`.
        Enumerate mode only.

        Returns:
            A `Rollout` with one row per complete response.
        """
        if not self._ids.enumerates:
            raise ValueError("ids: all_responses needs ids='enumerate', got 'lazy'")
        rows = []

        def grow(n, prefix):  # depth-first over the prefix tree
            for y in range(self.V):
                child = prefix + (y,)  # s_{t+1} = s_t . y_t
                if self._terminal(child):
                    rows.append((n, child))
                else:
                    grow(n, child)

        for n in range(self.N):
            grow(n, ())
        B, T = len(rows), self.max_len
        states, tokens, mask = np.zeros((B, T), np.int64), np.zeros((B, T), np.int64), np.zeros((B, T))
        for b, (n, y) in enumerate(rows):
            for t in range(len(y)):
                states[b, t] = self._ids.id(n, y[:t])
                tokens[b, t], mask[b, t] = y[t], 1.0
        prompt = np.array([n for n, _ in rows], np.int64)
        return Rollout(states, tokens, mask, prompt, mask.sum(axis=1).astype(np.int64))

    # ---- rollouts ---------------------------------------------------------
    def rollout(self, policy, K, rng, prompts=None):
        """Sample `K` responses per prompt from `policy` (`B = N*K` rows, prompt-major).

        Token by token: every unfinished response sits in a state `s_t`, the policy draws one
        token `y_t ~ pi(.|s_t)` per response, the prefix grows by concatenation, and a response
        stops at EOS or at `max_len`. A call that raises leaves the generator and the lazy ids
        as they were.

        Args:
            policy: a `TabularPolicy` (anything with `sample(states, rng) -> tokens` and a
                `theta` of shape `(S, V)` matching this MDP).
            K: responses per prompt, an int `>= 1`.
            rng: the `np.random.Generator` every token is drawn from.
            prompts: optional int array of prompt indices (default: all `N` in order).

        Returns:
            A `Rollout` with `(B, T)` arrays, `T = max_len`.

        Raises:
            ValueError: a policy whose table does not match `(S, V)` or has a row without a
                finite entry, a bad `K` or `prompts`, `(B, T)` arrays beyond 2**31 entries
                (naming `max_len`, or `K`), before any allocation; a lazy MDP out of capacity.
        """
        idx = np.arange(self.N) if prompts is None else prompts
        rng_state, cp = rng.bit_generator.state, self.checkpoint()
        try:
            return self._rollout(policy, np.repeat(idx, K), rng)
        except BaseException:
            rng.bit_generator.state = rng_state
            self._ids.rollback(cp)
            raise

    def _rollout(self, policy, prompt, rng):
        """rollout on checked arguments; prompt (B,) the prompt index of each row."""
        draw = getattr(policy, "_sample", None) or policy.sample  # trusted core if it has one
        B, T = prompt.size, self.max_len
        states = np.zeros((B, T), np.int64)
        tokens = np.zeros((B, T), np.int64)
        mask = np.zeros((B, T))
        walk = self._ids.walk(prompt)  # the B prefixes and their ids
        alive = np.ones(B, bool)
        for t in range(T):
            rows = np.nonzero(alive)[0]
            if rows.size == 0:
                break
            s = walk.states(rows, t)  # id(n, y_<t) of every live row
            y = np.asarray(draw(s, rng), np.int64)  # one draw per live response
            states[rows, t], tokens[rows, t], mask[rows, t] = s, y, 1.0
            walk.grow(rows, y)  # s_{t+1} = s_t . y_t: concatenation
            ended = (y == self.eos) if self.eos is not None else np.zeros(rows.size, bool)
            alive[rows] = ~ended  # the loop itself stops at T = max_len
        lengths = mask.sum(axis=1).astype(np.int64)
        return Rollout(states, tokens, mask, prompt, lengths)

    def score(self, grader, rollout):
        """The terminal rewards `R(x, y)`: `grader(prompt, response)` for every response.

        Args:
            grader: a callable `grader(prompt, response)`; `prompt` is `self.prompts[n]`,
                `response` a tuple of token ids, EOS included when it was emitted. It must
                return a finite number (a bool, None, a string, NaN or inf is an error naming
                `grader`).
            rollout: a `Rollout` from this MDP (prompt indices in `[0, N)`, tokens in `[0, V)`,
                lengths in `[0, max_len]`).

        Returns:
            `(B,)` float64 rewards, one per row.
        """
        r = [
            real_result(grader(self.prompts[n], y), "grader", f" (a finite reward) for response {y}")
            for n, y in zip(rollout.prompt, rollout.responses())
        ]  # R(x, y)
        return np.array(r, dtype=np.float64)  # (B,)


# input checks: from minirl_lm/core/validate.py ------------------------------------------------
#   The kinds core's functions share beyond `minirl_lm.boundary`'s: logits that may hold `-inf`


def id_array(*shapes, empty=False):
    """Integer ids: an int64 C-contiguous array of one of `shapes` ("..." first: any leading
    axes)."""

    def read(x, name, dims):
        try:
            nd = np.ndim(x)
        except ValueError:  # ragged: the array kind says so
            nd = 1
        want = [_expand(s, nd).split() for s in shapes]
        if isinstance(x, np.ndarray) and x.dtype == np.int64 and x.flags.c_contiguous and (empty or x.size):
            for s in want:
                if len(s) == x.ndim and all(dims.get(k, n) == n for k, n in zip(s, x.shape)):
                    dims.update(zip(s, x.shape))
                    return x
        if _regular(x) and (np.asarray(x).dtype == bool or _holds_bool(x)):  # True is not an id
            raise TypeError(f"{name}: expected integer ids, got a bool in {_show(x)}"[:200])
        return array(*(" ".join(s) for s in want), integer=True, empty=empty)(x, name, dims)

    return read


def _regular(x):
    try:
        np.asarray(x)
    except (ValueError, TypeError, OverflowError):  # ragged, huge ints: the array kind says what
        return False
    return True


def _holds_bool(x):
    """A sequence (not an array) holding a bool among numbers (NumPy reads True as 1)."""
    if isinstance(x, (np.ndarray, str, bytes)):
        return False
    return any(isinstance(v, (bool, np.bool_)) for v in np.asarray(x, dtype=object).ravel())


def _show_validate(x):
    return f"array of dtype {x.dtype}" if isinstance(x, np.ndarray) else repr(x)


def _expand(shape, ndim):
    """`shape` with its "..." (if any) as the leading letters `_0 _1 ...` that make `ndim` axes."""
    rest = shape.split()
    lead = [f"_{i}" for i in range(max(ndim - len(rest) + 1, 0))] if "..." in rest else []
    return " ".join(a for k in rest for a in (lead if k == "..." else [k]))


MAX_CELLS = 2**31  # entries of one (B, T) array a call may allocate: 16 GiB of float64


def real_result(value, name, context=""):
    """A callable's return value (a grader's reward) as a finite Python float, else an error
    naming `name` (the callable): None, a string, a bool, NaN or inf are rejected."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number{context}, got {_describe(value)}")
    try:
        x = float(value)
    except OverflowError:
        x = np.inf  # an int beyond float64
    if not np.isfinite(x):
        raise ValueError(f"{name}: expected a finite number{context}, got {value}"[:200])
    return x


def policy_table_shape(policy, S, V, context=""):
    """The message refusing a policy whose table `theta` is not `(S, V)`, else None."""
    shape = getattr(policy.theta, "shape", None)
    if shape != (S, V):
        return (
            f"policy: expected a policy with a table of shape (S, V) = ({S}, {V}){context}, "
            f"got {type(policy).__name__} with shape {shape}"
        )
    return None


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


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


COUNT = number(1, integer=True)  # an integer >= 1


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

INDEX = number(0, integer=True)  # an index >= 0; its upper end is a relation's (N, V, S)

TokenMDP.__init__ = boundary(
    prompts=_prompt_list,
    V=COUNT,
    eos=optional(INDEX),
    max_len=COUNT,
    ids=one_of(("enumerate", "lazy")),
    capacity=optional(COUNT),
    max_states=COUNT,
    where=[_a_tree],
    returns=None,
)(TokenMDP.__init__)

TokenMDP.rollback = boundary(cp=optional(INDEX), where=[_a_checkpoint], returns=None)(TokenMDP.rollback)

TokenMDP.is_terminal = boundary(prefix=_token_tuple, where=[_a_prefix], returns=None)(TokenMDP.is_terminal)

TokenMDP.step = boundary(
    prefix=_token_tuple, y=INDEX, where=[_a_prefix, _non_terminal, _a_token], returns=None
)(TokenMDP.step)

TokenMDP.state_id = boundary(
    n=INDEX, prefix=_token_tuple, where=[_a_prompt, _a_prefix, _non_terminal], returns=None
)(TokenMDP.state_id)

TokenMDP.prefix_of = boundary(s=INDEX, where=[_a_state], returns=None)(TokenMDP.prefix_of)

TokenMDP.rollout = boundary(
    policy=has("a TabularPolicy", "sample() theta"),
    K=COUNT,
    rng=generator,
    prompts=optional(id_array("n")),
    where=[_a_policy_of, _rollout_size],
    returns=None,
)(TokenMDP.rollout)

TokenMDP.score = boundary(
    grader=function("grader(prompt, response)", 2),
    rollout=has("a Rollout", "prompt tokens lengths"),
    where=[_a_rollout_of],
    returns=None,
)(TokenMDP.score)
