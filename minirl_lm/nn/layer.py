"""What the layers share: the activations' kind, the cache a forward keeps for its backward, and
the relations of widths and positions.

Every layer's `*_forward` returns `(y, cache)` and its `*_backward(dy, cache)` reads the cache,
as llm.c's layers do. A `Cache` reads as a tuple `(layer, output shape, arrays...)`; the declared
result check reads the layer's output `y` and passes over the cache (its arrays are the
intermediates the output was computed from). A dict of gradients is an `Arrays`, which the check
reads through its extremes. `cache_of(layer)` is the kind of a backward's
`cache`: it fixes the shape letters of `dy` from the forward's output.

(A result the check skips, and a dict of arrays, are features the engine of `minirl_lm.boundary`
could have; here a `Cache` converts to an empty array, which is finite, and `Arrays` to its
extremes.)
"""

import numpy as np

from minirl_lm.boundary import array, number

__all__ = [
    "ACTS",
    "KV",
    "START",
    "Cache",
    "Arrays",
    "cache_of",
    "heads_divide_width",
    "ids_in",
    "kv_fits",
    "start_before_end",
]

ACTS = array("B L D")  # (B, L, d): the residual stream and every layer's input and output
START = number(0, integer=True)  # the first position whose output is computed


class Cache:
    """What a forward keeps for its backward: `(layer, output shape, arrays...)`, read as a tuple."""

    def __init__(self, items):
        self.items = tuple(items)

    def __iter__(self):
        return iter(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)

    def __array__(self, dtype=None, copy=None):
        return np.empty(0, dtype=dtype)  # nothing for the result check to read


class Arrays(dict):
    """Arrays by name (gradients, parameters). As an array (what the result check reads) it is
    the smallest and the largest entry of each: NaN or inf anywhere shows in them."""

    def __array__(self, dtype=None, copy=None):
        return np.array([f(g) for g in self.values() for f in (np.min, np.max) if np.size(g)], dtype=dtype)


def cache_of(layer, output="B L D"):
    """The kind of the cache returned by `{layer}_forward`, whose output has the shape letters
    `output` (a later `dy` of those letters must match it)."""
    letters = output.split()

    def read(c, name, dims):
        if not (isinstance(c, Cache) and len(c) > 2 and c[0] == layer):
            got = f"a cache of {c[0]}_forward" if isinstance(c, Cache) and c else f"{type(c).__name__}"
            raise TypeError(f"{name}: expected the cache returned by {layer}_forward, got {got}")
        dims.update(zip(letters, c[1]))
        return c

    return read


def heads_divide_width(x, n_head):
    """`n_head` divides the width `d` of `x` (heads of `d / n_head` columns each)."""
    if x.shape[-1] % n_head:
        return f"n_head: expected a divisor of d = {x.shape[-1]}, got {n_head}"


def start_before_end(x, start):
    """`start` is a position of `x` (B, L, d): at least one output is computed."""
    if start >= x.shape[1]:
        return f"start: expected a position < L = {x.shape[1]}, got {start}"


def KV(kv, name, dims):
    """The key/value cache, written in place: a writable float64 array (not copied)."""
    if not (isinstance(kv, np.ndarray) and kv.dtype == np.float64 and kv.ndim == 5 and kv.flags.writeable):
        got = f"shape {kv.shape}, {kv.dtype}" if isinstance(kv, np.ndarray) else type(kv).__name__
        raise TypeError(f"{name}: expected a writable float64 array (2, B, H, max_len, e), got {got}")
    return kv


def kv_fits(x, n_head, kv, pos):
    """`kv` holds `(K, V)` of `x`'s rows and heads, with room for positions pos .. pos + L - 1."""
    (B, L, d), n = x.shape, kv.shape[3]
    if kv.shape != (2, B, n_head, n, d // n_head):
        return f"kv: expected shape (2, B, H, max_len, e) = {(2, B, n_head, n, d // n_head)}, got {kv.shape}"
    if pos + L > n:
        return f"pos: expected pos + L <= {n} (the cache's positions), got {pos} + {L}"


def ids_in(name, ids, V):
    """None if every id of `ids` is below the vocabulary size `V`, else the message naming `name`."""
    if ids.size and ids.max() >= V:
        return f"{name}: expected ids < {V}, got max {ids.max()}"
