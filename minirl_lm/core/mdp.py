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

import numbers
from dataclasses import dataclass

import numpy as np

from minirl_lm.boundary import COUNT, boundary, function, generator, has, number, one_of, optional
from minirl_lm.core._state_ids import EnumeratedIds, LazyIds
from minirl_lm.core.validate import MAX_CELLS, id_array, policy_table_shape, real_result

__all__ = ["Rollout", "TokenMDP"]

INDEX = number(0, integer=True)  # an index >= 0; its upper end is a relation's (N, V, S)


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

    @boundary(
        prompts=_prompt_list,
        V=COUNT,
        eos=optional(INDEX),
        max_len=COUNT,
        ids=one_of(("enumerate", "lazy")),
        capacity=optional(COUNT),
        max_states=COUNT,
        where=[_a_tree],
        returns=None,
    )
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

    @boundary(cp=optional(INDEX), where=[_a_checkpoint], returns=None)
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

    @boundary(prefix=_token_tuple, where=[_a_prefix], returns=None)
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

    @boundary(prefix=_token_tuple, y=INDEX, where=[_a_prefix, _non_terminal, _a_token], returns=None)
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

    @boundary(n=INDEX, prefix=_token_tuple, where=[_a_prompt, _a_prefix, _non_terminal], returns=None)
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

    @boundary(s=INDEX, where=[_a_state], returns=None)
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
    @boundary(
        policy=has("a TabularPolicy", "sample() theta"),
        K=COUNT,
        rng=generator,
        prompts=optional(id_array("n")),
        where=[_a_policy_of, _rollout_size],
        returns=None,
    )
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

    @boundary(
        grader=function("grader(prompt, response)", 2),
        rollout=has("a Rollout", "prompt tokens lengths"),
        where=[_a_rollout_of],
        returns=None,
    )
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
