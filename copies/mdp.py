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
import inspect
import numbers

import numpy as np


__all__ = ["Rollout", "TokenMDP"]


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/_state_ids.py
#   The two numberings of the token MDP's states, behind one interface (used by `TokenMDP`).
# ----------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------
# minirl_lm/core/mdp.py itself
# ----------------------------------------------------------------------------------------------


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

    def __init__(self, prompts, V, eos=None, max_len=1, ids="enumerate", capacity=None, max_states=2**22):
        (self.prompts, self.V, self.eos, self.max_len, self.ids, capacity, max_states) = token_mdp_args(
            prompts, V, eos, max_len, ids, capacity, max_states
        )
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
            cp: what `checkpoint()` returned.
        """
        self._ids.rollback(cp)

    def is_terminal(self, prefix):
        """Whether a prefix is terminal: it ends in EOS or has reached the length cap.

        Args:
            prefix: a tuple of token ids (the response so far, `y_<t`).

        Returns:
            True if the prefix ends in EOS or has `max_len` tokens.
        """
        return self._terminal(token_prefix(self, prefix)[1])

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
        _, prefix, y = token_prefix(self, prefix, terminal_ok=False, y=y)
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
        n, prefix, _ = token_prefix(self, prefix, terminal_ok=False, n=n)
        return self._ids.id(n, prefix)

    def prefix_of(self, s):
        """The inverse of `state_id`.

        Args:
            s: a state id in `[0, S)`.

        Returns:
            The pair `(n, prefix)`: prompt index and tuple of token ids.
        """
        s = int_scalar(s, "s", low=0, high=self.S - 1)
        return self._ids.prefix_of(s)

    def all_states(self):
        """Every non-terminal `(n, prefix)`, in id order (enumerate mode only).

        Returns:
            A list of `S` pairs `(n, prefix)`; entry `s` is the state with id `s`.
        """
        if not self._ids.enumerates:
            raise ValueError("ids: all_states needs ids='enumerate', got 'lazy'")
        return [self.prefix_of(s) for s in range(self.S)]

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
        K, idx = token_rollout_args(self, policy, K, rng, prompts)
        rng_state, cp = rng.bit_generator.state, self.checkpoint()
        try:
            return self._rollout(policy, np.repeat(idx, K), rng)
        except BaseException:
            rng.bit_generator.state = rng_state
            self.rollback(cp)
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
            alive[rows] = ~ended & (t + 1 < T)
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
        prompt = token_score_args(self, grader, rollout, Rollout)
        r = [
            real_result(grader(self.prompts[n], y), "grader", f" (a finite reward) for response {y}")
            for n, y in zip(prompt, rollout.responses())
        ]  # R(x, y)
        return np.array(r, dtype=np.float64)  # (B,)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


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


def _id_tuple(x, name, V, what="token ids"):
    """A checked sequence of Python or NumPy integers (no bool) in [0, V), as a tuple of ints."""
    for y in x:
        if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Integral):
            raise TypeError(f"{name}: expected integer {what}, got {y!r} in {x!r}")
        if not 0 <= y < V:
            raise ValueError(f"{name}: expected {what} in [0, {V}), got {y} in {tuple(x)!r}")
    return tuple(int(y) for y in x)


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


_NOT_GIVEN = object()  # an argument the bundle's caller does not take


# -- the token MDP (minirl_lm/core/mdp.py)
def token_mdp_args(prompts, V, eos, max_len, ids, capacity, max_states):
    """TokenMDP's arguments: (prompts list, V, eos, max_len, ids, capacity, max_states)."""
    if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__len__"):
        raise TypeError(f"prompts: expected a sequence of prompts, got {type(prompts).__name__}")
    if len(prompts) == 0:
        raise ValueError("prompts: expected at least one prompt, got an empty sequence")
    V = int_scalar(V, "V", low=1)
    eos = None if eos is None else int_scalar(eos, "eos", low=0, high=V - 1)
    if eos is not None and V < 2:
        raise ValueError(f"V: expected at least 2 tokens when eos is set, got {V}")
    max_len = int_scalar(max_len, "max_len", low=1)
    ids = choice(ids, "ids", {"enumerate", "lazy"})
    max_states = int_scalar(max_states, "max_states", low=1)
    if capacity is not None or ids == "lazy":  # checked whatever the ids mode
        capacity = int_scalar(capacity, "capacity", low=len(prompts))
    return list(prompts), V, eos, max_len, ids, capacity, max_states


def token_prefix(mdp, prefix, terminal_ok=True, n=_NOT_GIVEN, y=_NOT_GIVEN):
    """A prefix of ``mdp`` as a tuple of ints: ids in [0, V), no EOS before its last position, at
    most max_len long, non-terminal unless ``terminal_ok``; with ``n`` a prompt index in [0,
    N) and with ``y`` a next token in [0, V) (both checked too)."""
    n = n if n is _NOT_GIVEN else int_scalar(n, "n", low=0, high=mdp.N - 1)
    if isinstance(prefix, (str, bytes)) or not hasattr(prefix, "__len__"):
        raise TypeError(f"prefix: expected a tuple of token ids, got {type(prefix).__name__}")
    if len(prefix) > mdp.max_len:
        raise ValueError(f"prefix: expected at most max_len={mdp.max_len} tokens, got {len(prefix)}")
    out = _id_tuple(prefix, "prefix", mdp.V)
    eos = mdp.eos
    if eos is not None and eos in out[:-1]:
        raise ValueError(f"prefix: expected no token after EOS ({eos}), got {out}")
    ended = len(out) >= mdp.max_len or (eos is not None and len(out) > 0 and out[-1] == eos)
    if not terminal_ok and ended:
        raise ValueError(f"prefix: expected a non-terminal prefix, got {out} (eos={eos}, max_len={mdp.max_len})")
    y = y if y is _NOT_GIVEN else int_scalar(y, "y", low=0, high=mdp.V - 1)
    return n, out, y


def token_rollout_args(mdp, policy, K, rng, prompts):
    """TokenMDP.rollout's arguments: returns (K, prompt indices (n,) int64); the (B, T) arrays (B
    = n K, T = max_len) within MAX_CELLS."""
    K = int_scalar(K, "K", low=1)
    rng_check(rng, "rng")
    table_policy(policy, mdp.S, mdp.V, finite_rows=True, what=" for this MDP")
    _no_bool_ids(prompts, "prompts", "prompt indices")
    idx = np.arange(mdp.N) if prompts is None else int_array(prompts, "prompts", ndim=1, low=0, high=mdp.N)
    if idx.size == 0:
        raise ValueError("prompts: expected at least one prompt index, got shape (0,)")
    cells(idx.size * mdp.max_len, "max_len", "a length cap whose (B, T) rollout arrays are")
    cells(idx.size * K * mdp.max_len, "K", "responses per prompt whose (B, T) rollout arrays are")
    return K, idx


def token_score_args(mdp, grader, rollout, rollout_type):
    """TokenMDP.score's arguments: returns the (B,) prompt indices of the rollout."""
    callable_check(grader, "grader", 2, "grader(prompt, response)")
    if not isinstance(rollout, rollout_type):
        raise TypeError(f"rollout: expected a Rollout, got {type(rollout).__name__}")
    prompt = int_array(rollout.prompt, "rollout", ndim=1, low=0, high=mdp.N)
    B = prompt.size
    int_array(rollout.tokens, "rollout", shape=(B, None), low=0, high=mdp.V)
    int_array(rollout.lengths, "rollout", shape=(B,), low=0, high=mdp.max_len + 1)
    return prompt
