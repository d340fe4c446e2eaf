"""The two numberings of the token MDP's states, behind one interface (used by `TokenMDP`).

A state is (prompt `n`, prefix `y_<t`) with `A` continuing tokens (EOS removed). Both classes
take prefixes already checked by `TokenMDP` (non-terminal tuples of int ids) and offer:

```text
S                    the number of rows of the policy table
id(n, prefix)        the row of a state (lazy: handed out on first visit)
prefix_of(s)         the inverse, (n, prefix), for an s in [0, S)
checkpoint()         the mutable state (lazy ids handed out so far) ...
rollback(cp)         ... and its restoration after a call that failed
walk(prompt)         a cursor over B rows growing token by token: states(rows, t), grow(rows, y)
enumerates           True when every state has a row (all_states, all_responses)
```

- `EnumeratedIds`: arithmetic ids, level by level, prompt-major, the prefix read as a base-`A`
  number, eq. (state_id): `id(n, y_<t) = offset[j] + n * A^j + rank(y_<t)`, `j = t - 1`.
- `LazyIds`: ids handed out on first visit from a dict `{(n, prefix): id}`, up to `capacity`.
"""

import numpy as np

__all__ = ["EnumeratedIds", "LazyIds"]


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
