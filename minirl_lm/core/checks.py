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
    if arr.dtype.kind not in "fiub":                          # float, int, uint, bool
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
    if arr.dtype.kind not in "iu":                            # signed or unsigned integers
        raise TypeError(f"{name}: expected an integer array of ids, got {_describe(arr)}")
    arr = arr.astype(np.int64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: expected ids >= {low}, got min {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: expected ids < {high}, got max {arr.max()}")
    return arr


def mask_array(x, name, shape=None):
    """Return a (B, T) float64 mask of 0.0/1.0, right-padded (no 1 after a 0 in a row)."""
    arr = float_array(x, name, ndim=2, shape=shape)
    nonempty(arr, name)                                  # B >= 1 responses, T >= 1 positions
    binary = (arr == 0.0) | (arr == 1.0)
    if not binary.all():
        bad = arr[~binary]
        raise ValueError(f"{name}: expected only 0 and 1, got value {float(bad.flat[0])!r}")
    rises = arr[:, 1:] > arr[:, :-1]                           # (B, T - 1): a 1 after a 0
    if rises.any():
        row = int(np.nonzero(rises.any(axis=1))[0][0])
        raise ValueError(f"{name}: expected right padding (1s then 0s in each row), "
                         f"row {row} is {arr[row].astype(int).tolist()}")
    return arr


def same_shape(name_a, a, name_b, b):
    """Raise unless arrays ``a`` and ``b`` have the same shape (no broadcasting)."""
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {a.shape}, got {b.shape}")


def rng_check(rng, name):
    """Raise unless ``rng`` is a ``np.random.Generator``."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), "
                        f"got {_describe(rng)}")
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
    x = float(x)
    if not np.isfinite(x):
        raise ValueError(f"{name}: expected a finite number, got {x}")
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
        raise TypeError(f"{name}: expected one of {sorted(options, key=str)}, got unhashable "
                        f"{_describe(x)}") from None
    if isinstance(x, bool) or x not in options:          # True == 1 must not pick option 1
        raise ValueError(f"{name}: expected one of {sorted(options, key=str)}, got {x!r}")
    return x


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), "
                         f"got shape {arr.shape}")
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
        raise ValueError(f"{name}: expected rows summing to 1 (within 1e-9), got a row summing "
                         f"to {float(s.ravel()[int(np.argmax(bad))])!r}")
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
        a = np.asarray(v, dtype=np.float64)
        if not np.isfinite(a).all():
            kind = "NaN" if np.isnan(a).any() else "inf"
            raise ValueError(f"{name}: expected a value for which {what} is finite in float64, "
                             f"got one that makes it {kind} (overflow)")
    return value


def real_result(value, name, context=""):
    """A callable's return value (a grader's reward) as a finite Python float, else an error
    naming ``name`` (the callable): None, a string, a bool, NaN or inf are rejected."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number{context}, got {_describe(value)}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name}: expected a finite number{context}, got {value}")
    return value


def callable_check(f, name, nargs, call="f(...)"):
    """Raise unless ``f`` is a callable that accepts ``nargs`` positional arguments."""
    if not callable(f) or isinstance(f, type):
        raise TypeError(f"{name}: expected a callable {call}, got {_describe(f)}")
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):                      # builtins without a signature
        return f
    try:
        sig.bind(*range(nargs))
    except TypeError:
        raise TypeError(f"{name}: expected a callable {call} taking {nargs} positional "
                        f"arguments, got one with signature {sig}") from None
    return f


def _asarray(x, name):
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:         # ragged nesting, huge ints
        raise TypeError(f"{name}: expected an array, got {_describe(x)} ({e})") from None


def _check_shape(arr, name, ndim, shape):
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, "
                         f"got shape {arr.shape}")
    if shape is not None:
        ok = len(shape) == arr.ndim and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = ", ".join("any" if s is None else str(s) for s in shape)
            want = f"({want},)" if len(shape) == 1 else f"({want})"    # as Python prints a tuple
            raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")


# ---- bundles: kernels (and the policy and log-prob files, their NumPy twins)
# The public Numba entries (minirl_lm.kernels) take arrays as they are: the jitted cores read them
# by pointer, so a wrong dtype or a strided view is refused, never converted.

def exact_array(x, name, ndim, dtypes):
    """Raise unless ``x`` is a non-empty C-contiguous ndarray of ``ndim`` dimensions and one of
    ``dtypes`` (no conversion: a kernel reads the memory as it is); returns ``x``. A few
    attribute reads on the good path: the messages are composed only when one is raised."""
    if not isinstance(x, np.ndarray) or x.dtype not in dtypes:
        want = " or ".join(np.dtype(d).name for d in dtypes)
        if not isinstance(x, np.ndarray):
            raise TypeError(f"{name}: expected a numpy array of dtype {want}, got "
                            f"{type(x).__name__}")
        raise TypeError(f"{name}: expected dtype {want} (convert with "
                        f"np.ascontiguousarray(x, dtype=...)), got {x.dtype}")
    if x.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, "
                         f"got shape {x.shape}")
    if 0 in x.shape:
        raise ValueError(f"{name}: expected every axis of length >= 1, got shape {x.shape}")
    if not x.flags.c_contiguous:
        raise ValueError(f"{name}: expected a C-contiguous array (np.ascontiguousarray), "
                         f"got strides {x.strides}")
    return x


def flag(x, name):
    """Return ``x`` if it is a bool (Python or NumPy), else a TypeError naming ``name``."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a bool (True or False), got {_describe(x)}")
    return bool(x)


def token_batch(states, tokens, mask, S, V):
    """The (B, T) batch of a tabular policy with S states and V tokens: int ids in [0, S) and
    [0, V) at every position (padding too), the same shape, and a right-padded 0/1 mask; returned
    as C-contiguous int64, int64, float64 (the kernels read them by pointer)."""
    states = int_array(states, "states", ndim=2, low=0, high=S)
    tokens = int_array(tokens, "tokens", ndim=2, low=0, high=V)
    same_shape("states", states, "tokens", tokens)
    mask = mask_array(mask, "mask", shape=states.shape)
    return (np.ascontiguousarray(states), np.ascontiguousarray(tokens),
            np.ascontiguousarray(mask))


_NO_DLOGP = object()


def logit_rows(z, name="logits"):
    """Raise unless the checked float array ``z`` has a last axis of V >= 1 entries and a finite
    entry in every row (a row of -inf only has no softmax)."""
    if z.ndim < 1 or z.shape[-1] == 0:
        raise ValueError(f"{name}: expected a last axis of V >= 1 entries, got shape {z.shape}")
    dead = ~np.isfinite(z).any(axis=-1)
    if dead.any():
        idx = tuple(int(i) for i in np.argwhere(dead)[0])
        raise ValueError(f"{name}: expected a finite entry in every row (-inf everywhere has no "
                         f"softmax), got {int(dead.sum())} all -inf rows, the first at {idx}")
    return z


def logits_any(logits):
    """Logits (..., V) of any shape, non-empty, -inf allowed, a finite entry in every row."""
    z = float_array(logits, "logits", allow_neginf=True)
    if z.size == 0:
        raise ValueError(f"logits: expected a non-empty array, got shape {z.shape}")
    return logit_rows(z)


def logits_batch(logits, tokens, mask, dlogp=_NO_DLOGP):
    """(logits (B, T, V), tokens (B, T) ids in [0, V), right-padded 0/1 mask (B, T)), and with
    ``dlogp`` also the upstream gradient (B, T), finite."""
    logits = logit_rows(float_array(logits, "logits", ndim=3, allow_neginf=True))
    B, T, V = logits.shape
    tokens = int_array(tokens, "tokens", ndim=2, shape=(B, T), low=0, high=V)
    mask = mask_array(mask, "mask", shape=(B, T))
    if dlogp is _NO_DLOGP:
        return logits, tokens, mask
    dlogp = float_array(dlogp, "dlogp", ndim=2)
    same_shape("tokens", tokens, "dlogp", dlogp)
    return logits, tokens, mask, dlogp


def values_mask(x, mask):
    """(x (B, T) float, -inf allowed; a right-padded 0/1 mask of its shape)."""
    x = float_array(x, "x", ndim=2, allow_neginf=True)
    return x, mask_array(mask, "mask", shape=x.shape)
