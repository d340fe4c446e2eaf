"""Input checks at the public boundary.

Every public function of minirl_lm validates its arguments with these helpers and
then trusts them inside. A bad argument raises a ``TypeError`` (wrong kind of
object or dtype) or a ``ValueError`` (right kind, wrong shape, range or value)
whose message names the argument, what was expected and what came.

This file needs NumPy only. A reader who copies an estimator file copies this
one beside it (the estimator imports ``from minirl_lm.core.checks import ...``;
change that line to ``from checks import ...``).
"""

import inspect
import numbers

import numpy as np


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it.

    ndim:  required number of dimensions (None: any).
    shape: required shape; a None entry matches any length.
    finite: reject NaN and +-inf; with ``allow_neginf`` a -inf entry is allowed
        (log-probabilities of impossible tokens), NaN and +inf never are.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(x)}")
    arr = _asarray(x, name)
    if arr.dtype.kind not in "fiub":  # float, int, uint, bool
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(arr)}")
    arr = arr.astype(np.float64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if finite and not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(arr).sum())} NaN entries")
        bad = np.isposinf(arr) if allow_neginf else np.isinf(arr)
        if bad.any():
            what = "+inf" if allow_neginf else "+-inf"
            raise ValueError(f"{name}: expected finite values (no {what}), got {int(bad.sum())} such entries")
    return arr


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


# where a mask with holes goes, for the callers that need right padding (mask_array's prefix)
ACTIONS = "(mask: every token of the row, action_mask: the trained ones)"
GAE_HOLES = f"minirl_lm.multiturn.values.gae_actions {ACTIONS}"
RETURNS_HOLES = f"minirl_lm.multiturn.values.returns_actions {ACTIONS}"
COMPACT = "minirl_lm.multiturn.env.action_view to compact the rows (scatter puts results back)"


def mask_array(x, name, shape=None, prefix=None):
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted).

    Any 0/1 pattern by default: a 0 between 1s is a hole, a position the token-level objectives
    do not train (a tool output; TRL's ``tool_mask``, verl's multi-turn ``response_mask``); on
    such a row they give the loss and gradient of the compacted row (holes removed).
    prefix: ``(what, where)`` for a caller that reads the rows as prefixes (GAE, returns, the
    critic): right padding is required, and the error names ``what`` and ``where`` holes go.
    """
    arr = float_array(x, name, ndim=2, shape=shape)
    nonempty(arr, name)  # B >= 1 responses, T >= 1 positions
    binary = (arr == 0.0) | (arr == 1.0)
    if not binary.all():
        bad = arr[~binary]
        raise ValueError(f"{name}: expected only 0 and 1, got value {float(bad.flat[0])!r}")
    if prefix is None:
        return arr
    rises = arr[:, 1:] > arr[:, :-1]  # (B, T - 1): a 1 after a 0
    if rises.any():
        what, where = prefix
        row = int(np.nonzero(rises.any(axis=1))[0][0])
        raise ValueError(
            f"{name}: expected right padding (1s then 0s in each row) for {what}, "
            f"row {row} is {arr[row].astype(int).tolist()}; a mask with holes (tool outputs) "
            f"is accepted by the token-level objectives; here use {where}"
        )
    return arr


def same_shape(name_a, a, name_b, b):
    """Raise unless arrays ``a`` and ``b`` have the same shape (no broadcasting)."""
    for nm, x in ((name_a, a), (name_b, b)):
        if not isinstance(getattr(x, "shape", None), tuple):
            raise TypeError(f"{nm}: expected an array, got {_describe(x)}")
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {a.shape}, got {b.shape}")


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


def float_scalar(x, name, low=None, high=None, low_open=False):
    """Return ``x`` as a finite Python float, ``>= low`` (``> low`` if low_open), ``<= high``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {_describe(x)}")
    x = _float(x, name, "a finite number")
    if low is not None and (x <= low if low_open else x < low):
        raise ValueError(f"{name}: expected a number {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected a number <= {high}, got {x}")
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


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


def prob_table(p, name, shape=None, ndim=None):
    """Return ``p`` as float64 probabilities: entries >= 0, each row (last axis) summing to 1
    within 1e-9 absolutely (stricter than ``Generator.choice``'s ~1.5e-8, so a table that
    passes here is accepted by ``rng.choice``), and non-empty."""
    p = float_array(p, name, ndim=ndim, shape=shape)
    nonempty(p, name)
    if (p < 0).any():
        raise ValueError(f"{name}: expected probabilities >= 0, got min {p.min()}")
    s = p.sum(axis=-1)
    if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
        bad = np.abs(s - 1.0).ravel()
        raise ValueError(
            f"{name}: expected rows summing to 1 (within 1e-9), got a row summing "
            f"to {float(s.ravel()[int(np.argmax(bad))])!r}"
        )
    return p


def finite_result(value, name, what):
    """Return ``value`` (a number, an array, or a tuple of them, nested) if every entry is finite;
    else raise a ValueError naming ``name``, the argument that drove the overflow.

    Call it on what a public function is about to return, computed under
    ``np.errstate(over="ignore", invalid="ignore", divide="ignore")``: an overflow is never
    returned as inf or NaN. ``name`` and ``what`` are strings (a programming error otherwise).
    """
    if not (isinstance(name, str) and isinstance(what, str)):
        raise TypeError(f"finite_result: expected name and what as strings, got {name!r}, {what!r}")
    parts = [value]
    while parts:
        v = parts.pop()
        if isinstance(v, (tuple, list)):
            parts.extend(v)
            continue
        if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_, np.ndarray)):
            try:
                v = float(v)  # an exact number (a Fraction) too
            except OverflowError:
                raise ValueError(
                    f"{name}: expected a value for which {what} is finite in "
                    f"float64, got one beyond float64's range"
                ) from None
        a = _asarray(v, name)
        if isinstance(v, (str, bytes)) or a.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected a number or an array of numbers, got {_describe(v)}")
        if not np.isfinite(a.astype(np.float64, copy=False)).all():
            kind = "NaN" if np.isnan(a).any() else "inf"
            raise ValueError(
                f"{name}: expected a value for which {what} is finite in float64, "
                f"got one that makes it {kind} (overflow)"
            )
    return value


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


def _duck(obj, name, attrs, what):
    if not all(hasattr(obj, a) for a in attrs):
        raise TypeError(f"{name}: expected {what}, got {type(obj).__name__}")
    return obj


_NOT_GIVEN = object()  # an argument the bundle's caller does not take
