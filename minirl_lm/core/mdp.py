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

import numpy as np

from minirl_lm.core._state_ids import EnumeratedIds, LazyIds
from minirl_lm.core.checks import (
    int_scalar,
    real_result,
    token_mdp_args,
    token_prefix,
    token_rollout_args,
    token_score_args,
)


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
