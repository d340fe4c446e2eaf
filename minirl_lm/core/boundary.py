"""The declared boundary: a public function states its arguments' contracts beside its signature,
and this one engine applies them. The function's body is then the math alone.

    @boundary(logp=tokens(), adv=advantage(), mask=mask(), agg=one_of(AGGS),
              max_len=optional(count(1)), where=[longest_response], returns="loss dloss_dlogp")
    def reinforce_loss(logp, adv, mask, agg="token_mean", max_len=None):
        ...  # every argument is what its kind says: a (B, T) float64 array, a 0/1 mask, ...

A call of the decorated function, in order:

1. binds the arguments by keyword (the signature is read once, when the function is declared);
2. reads each declared argument with its kind, in the order of the declaration. A kind takes the
   valid forms (a list, ints, bools become a float64 array; always a fresh copy, so nothing the
   caller passed is changed) and raises a TypeError (the wrong kind of object) or a ValueError
   (the wrong shape or value) whose message starts with the argument's name, says what was
   expected and what came: `logp_old: expected shape (2, 3), got (2, 4)`;
3. shapes are letters: `tokens()` is `(B, T)`, `advantage()` `(B,)` or `(B, T)`. The first
   argument that uses a letter fixes its length (>= 1), every later one must match it: the
   relations between the arguments' shapes are declared, not coded;
4. checks each relation of `where=`: a small named function of some arguments (by their names)
   that returns None when it holds, else the message, starting with the argument it blames;
5. runs the body under `np.errstate(all="ignore")` (an overflow is never a warning here);
6. checks the result once. Every input is finite (the kinds saw to it), so a non-finite result
   is an overflow of the computation: one ValueError starting with the function's name, saying
   which result (`returns=` names them) came out inf or NaN and the range of every numeric
   input that entered it. The engine does not guess which argument to blame.

The body without the boundary is `f.core`, for a caller whose arguments are already read (no
argument is read twice). A kind is a function `read(value, name, dims) -> value` with a
`data` flag (True: its value is listed in an overflow's message); a new kind is one more
small function. This file needs NumPy only.
"""

import functools
import inspect
import numbers

import numpy as np


def boundary(where=(), returns="", **kinds):
    """Declare the kinds of a function's arguments (`name=kind()`), the relations between them
    (`where=[rule, ...]`) and the names of its results (`returns="loss grad"`, for messages)."""

    def declare(f):
        sig, names = inspect.signature(f), returns.split()
        rules = [(r, list(inspect.signature(r).parameters)) for r in where]

        @functools.wraps(f)
        def checked(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a, dims = bound.arguments, {}
            for name, read in kinds.items():
                a[name] = read(a[name], name, dims)
            for rule, params in rules:
                if (msg := rule(*(a[p] for p in params))) is not None:
                    raise ValueError(msg)
            with np.errstate(all="ignore"):
                out = f(*bound.args, **bound.kwargs)
            return finite(out, f.__name__, names, {n: a[n] for n, r in kinds.items() if r.data})

        checked.core = f
        return checked

    return declare


def finite(out, fname, names, inputs):
    """`out` (a number, an array or a tuple of them) if every entry is finite, else the
    ValueError of step 6: `fname`, the results `names` that overflowed, the ranges of `inputs`."""
    leaves = out if isinstance(out, tuple) else (out,)
    bad = [i for i, v in enumerate(leaves) if not np.isfinite(np.asarray(v, dtype=np.float64)).all()]
    if not bad:
        return out
    what = " and ".join(names[i] if i < len(names) else f"result {i}" for i in bad)
    kind = "NaN" if any(np.isnan(np.asarray(leaves[i], dtype=np.float64)).any() for i in bad) else "inf"
    given = ", ".join(
        f"{n} in [{np.min(v):g}, {np.max(v):g}]" if np.ndim(v) else f"{n} = {v:g}"
        for n, v in inputs.items()
        if v is not None
    )
    raise ValueError(f"{fname}: expected a finite {what}, got {kind} (beyond float64) from {given}")


# ---- kinds ------------------------------------------------------------------------------------


def array(*shapes, values=None, data=True):
    """A float64 array (a fresh copy) of one of `shapes`, each a string of letters ("B T"), its
    entries finite (and among `values` if given)."""
    shapes = [tuple(s.split()) for s in shapes]

    def read(x, name, dims):
        try:
            a = None if isinstance(x, (str, bytes)) else np.asarray(x)
        except (ValueError, TypeError, OverflowError):  # ragged nesting, huge ints
            a = None
        if a is None or a.dtype.kind not in "fiub":  # float, int, uint, bool
            raise TypeError(f"{name}: expected a real-valued array, got {_show(x)}")
        a = np.array(a, dtype=np.float64)  # a copy: the caller's array is never written
        fit = next(
            (s for s in shapes if len(s) == a.ndim and all(dims.get(k, n) == n for k, n in zip(s, a.shape))), None
        )
        if fit is None:
            want = " or ".join(str(tuple(dims.get(k, k) for k in s)).replace("'", "") for s in shapes)
            raise ValueError(f"{name}: expected shape {want}, got {a.shape}")
        if 0 in a.shape:
            raise ValueError(
                f"{name}: expected a non-empty array (every axis of length >= 1), got shape {a.shape}"
            )
        dims.update(zip(fit, a.shape))
        if np.isnan(a).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(a).sum())} NaN entries")
        if np.isinf(a).any():
            raise ValueError(
                f"{name}: expected finite values (no +-inf), got {int(np.isinf(a).sum())} such entries"
            )
        if values is not None and not np.isin(a, values).all():
            want = " and ".join(f"{v:g}" for v in values)
            raise ValueError(f"{name}: expected only {want}, got value {float(a[~np.isin(a, values)][0])!r}")
        return a

    read.data = data
    return read


def number(low=-np.inf, high=np.inf, low_open=False, integer=False):
    """A finite real number as a Python float (an int with `integer`) in `[low, high]`, or
    `(low, high]` with `low_open`."""
    noun = "an integer" if integer else "a number"
    bounds = [f"{'>' if low_open else '>='} {low:g}"] * (low > -np.inf) + [f"<= {high:g}"] * (high < np.inf)

    def read(x, name, dims):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral if integer else numbers.Real):
            raise TypeError(f"{name}: expected {'an integer' if integer else 'a real number'}, got {_show(x)}")
        try:
            v = int(x) if integer else float(x)
        except OverflowError:  # an int beyond float64
            v = np.inf
        if not np.isfinite(v):
            raise ValueError(f"{name}: expected a finite number, got {x}"[:200])
        if (v <= low if low_open else v < low) or v > high:
            raise ValueError(f"{name}: expected {noun} {' and '.join(bounds)}, got {v}")
        return v

    read.data = not integer
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

    read.data = False
    return read


def optional(kind):
    """None, or a value of `kind`."""

    def read(x, name, dims):
        return None if x is None else kind(x, name, dims)

    read.data = kind.data
    return read


def _show(x):
    return (
        f"array of shape {x.shape} and dtype {x.dtype}"
        if isinstance(x, np.ndarray)
        else f"{type(x).__name__} {x!r}"[:120]
    )


# ---- the library's kinds and relations, by what they mean -----------------------------------


def tokens():
    """A `(B, T)` float array: one number per position of each response (log-probs)."""
    return array("B T")


def advantage():
    """`(B,)` one advantage per response, or `(B, T)` one per token."""
    return array("B", "B T")


def mask():
    """A `(B, T)` 0/1 mask of the trained tokens; holes (a 0 between 1s) allowed."""
    return array("B T", values=(0.0, 1.0), data=False)


def interval(low, high, low_open=False):
    """A number in `[low, high]` (`(low, high]` with `low_open`)."""
    return number(low, high, low_open)


def positive():
    """A number `> 0`."""
    return number(0.0, low_open=True)


def count(low=1):
    """An integer `>= low`."""
    return number(low, integer=True)


def longest_response(mask, agg, max_len):
    """`max_len`, the `T_max` of `agg="constant"`, is at least the longest response (its
    trained tokens, holes not counted)."""
    n = int(mask.sum(axis=1).max())
    if agg == "constant" and max_len is not None and max_len < n:
        return f"max_len: expected >= the longest response ({n} trained tokens), got {max_len}"
