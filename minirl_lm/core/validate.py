"""The kinds core's functions share beyond `minirl_lm.boundary`'s: logits that may hold `-inf`
(`log_softmax`, `token_logp`, the policy's table), and int ids read without a copy when they
already are what the policy's kernels read (its per-step calls). NumPy only.

Below them, the overflow-naming helpers and `flag` that other parts' checks still import, until
those parts declare their boundaries.
"""

import numpy as np

from minirl_lm.boundary import array
from minirl_lm.core.checks import _describe, finite_result

__all__ = ["logits", "id_array", "MAX_DRAWS", "largest", "culprit", "finite_stages", "flag"]


def logits(*shapes):
    """Logits: a float64 array (a fresh copy) of one of `shapes` ("..." first: any leading axes),
    the last axis V >= 1; entries finite or `-inf` (an impossible token), every row (last axis)
    with a finite entry (a row of `-inf` only has no softmax)."""

    def read(x, name, dims):
        a = np.asarray(x) if _regular(x) else None  # else: the array kind says what came
        neg = a == -np.inf if a is not None and a.dtype.kind == "f" else np.zeros((), bool)  # the -inf entries
        want = [_expand(s, 0 if a is None else a.ndim) for s in shapes]
        z = array(*want)(np.where(neg, 0.0, x) if neg.any() else x, name, dims)
        z[neg] = -np.inf
        dead = ~np.isfinite(z).any(axis=-1)
        if dead.any():
            idx = tuple(int(i) for i in np.argwhere(dead)[0])
            raise ValueError(
                f"{name}: expected a finite entry in every row (-inf everywhere has no softmax), "
                f"got {int(dead.sum())} all -inf rows, the first at {idx}"
            )
        return z

    return read


def id_array(*shapes, empty=False):
    """Integer ids: an int64 C-contiguous array of one of `shapes` ("..." first: any leading
    axes). One that already is, of a fitting shape, is returned as it is, not copied: the body
    only reads it. Its range is a relation's (it depends on a table)."""

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


def _show(x):
    return f"array of dtype {x.dtype}" if isinstance(x, np.ndarray) else repr(x)


def _expand(shape, ndim):
    """`shape` with its "..." (if any) as the leading letters `_0 _1 ...` that make `ndim` axes."""
    rest = shape.split()
    lead = [f"_{i}" for i in range(max(ndim - len(rest) + 1, 0))] if "..." in rest else []
    return " ".join(a for k in rest for a in (lead if k == "..." else [k]))


# ---- which argument an overflow names, when several enter one expression

# the longest draw a sampler allocates: an int64 array of it is addressable (np.empty(2**63)
# fails inside NumPy with "Maximum allowed dimension exceeded")
MAX_DRAWS = np.iinfo(np.intp).max // 8


def largest(**named):
    """The name of the argument of largest magnitude (the first on a tie): the one that drove an
    overflow of an expression they all enter."""
    best, size = None, -1.0
    for name, value in named.items():
        m = float(np.max(np.abs(value), initial=0.0))
        if best is None or m > size:
            best, size = name, m
    return best


def culprit(*stages):
    """The name of the first `(name, value)` stage whose value is not all finite (a number, an
    array or a tuple of them); the last argument, a bare name, when every stage is."""
    *pairs, last = stages
    for name, value in pairs:
        if not all(np.isfinite(np.asarray(v, dtype=np.float64)).all() for v in _leaves(value)):
            return name
    return last


def finite_stages(*stages):
    """`finite_result` on each `(value, name, what)` stage in turn (the order the values were
    computed in, so the first to overflow is named); returns the last stage's value."""
    for value, name, what in stages:
        finite_result(value, name, what)
    return stages[-1][0]


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves(v)]
    return [value]


def flag(x, name):
    """Return ``x`` if it is a bool (Python or NumPy), else a TypeError naming ``name``."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a bool (True or False), got {_describe(x)}")
    return bool(x)
