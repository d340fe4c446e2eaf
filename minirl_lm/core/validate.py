"""The kinds core's functions share beyond `minirl_lm.boundary`'s: logits that may hold `-inf`
(`log_softmax`, `token_logp`, the policy's table), and int ids read without a copy when they
already are what the policy's kernels read (its per-step calls). NumPy only.

Below them, the bounds of what a call may allocate, the reading of a callable's return value
(a grader's reward), and the shape of a policy's table (an MDP's or an environment's rollout).
"""

import numbers

import numpy as np

from minirl_lm.boundary import array

__all__ = ["logits", "id_array", "MAX_DRAWS", "MAX_CELLS", "real_result", "policy_table_shape"]


def logits(*shapes):
    """Logits: a float64 array (a fresh copy) of one of `shapes` ("..." first: any leading axes),
    the last axis V >= 1; entries finite or `-inf` (an impossible token), every row (last axis)
    with a finite entry (a row of `-inf` only has no softmax): `array`'s `neginf`."""

    def read(x, name, dims):
        ndim = np.ndim(x) if _regular(x) else 0  # else: the array kind says what came
        return array(*[_expand(s, ndim) for s in shapes], neginf=True)(x, name, dims)

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


# ---- the bounds of what a call may allocate, and a callable's return value

# the longest draw a sampler allocates: an int64 array of it is addressable (np.empty(2**63)
# fails inside NumPy with "Maximum allowed dimension exceeded")
MAX_DRAWS = np.iinfo(np.intp).max // 8
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
