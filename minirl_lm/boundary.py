"""The declared boundary: one engine applies the contracts each function declares beside it.

A public function states its arguments' contracts beside its signature, and this engine applies
them. The function's body is then the math alone.

    @boundary(logp=TOKENS, adv=ADVANTAGE, mask=MASK, agg=one_of(AGGS), max_len=MAX_LEN,
              where=[longest_response], returns="loss dloss_dlogp")
    def reinforce_loss(logp, adv, mask, agg="token_mean", max_len=None):
        ...  # every argument is what its kind says: a (B, T) float64 array, a 0/1 mask, ...

A call of the decorated function, in order:

1. binds the arguments by keyword (the signature is read once, when the function is declared);
2. reads each declared argument with its kind, in the order of the declaration: a valid form
   comes back as what the body needs (an array always as a fresh float64 copy, so nothing the
   caller passed is changed); anything else is a TypeError (the wrong kind of object) or a
   ValueError (the wrong shape or value) starting with the argument's name, saying what was
   expected and what came: `logp_old: expected shape (2, 3), got (2, 4)`;
3. shapes are letters: `TOKENS` is `(B, T)`, `ADVANTAGE` `(B,)` or `(B, T)`. The first argument
   that uses a letter fixes its length (>= 1), every later one must match it;
4. checks each relation of `where=`: a function of some arguments (by their names; a parameter
   the function lacks takes the relation's default) returning None when it holds, else the
   message, starting with the argument it blames;
5. runs the body under `np.errstate(all="ignore")`;
6. checks the result once (unless `returns=None`: a body that commits state checks before it
   commits). Every input is finite, so a non-finite result is an overflow: one ValueError
   starting with the function's name, naming the results (`returns=`) that came out inf or NaN
   and the range of every numeric input (the arrays and the real numbers, not the integers).
   The engine does not guess which argument to blame.

`f.core` is the body without the boundary, for a caller whose arguments are already read;
`f.kinds` the declared kinds and `f.returns` the declared names of the results (None if not
declared). A kind is a function `read(value, name, dims) -> value`. This file needs NumPy only.
"""

import functools
import inspect
import numbers

import numpy as np


def boundary(where=(), returns="", args=None, **kinds):
    """Declare the kinds of a function's arguments (`name=kind`), the relations between them
    (`where=[rule, ...]`) and the names of its results (`returns="loss grad"`). An argument
    named like one of these keywords is declared in `args={"returns": kind}` (read last)."""
    kinds = {**kinds, **(args or {})}

    def declare(f):
        sig = inspect.signature(f)
        rules = [(r, list(inspect.signature(r).parameters)) for r in where]

        @functools.wraps(f)
        def checked(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a, dims = bound.arguments, {}
            for name, read in kinds.items():
                a[name] = read(a[name], name, dims)
            for rule, params in rules:
                if (msg := rule(**{p: a[p] for p in params if p in a})) is not None:
                    raise ValueError(msg)
            with np.errstate(all="ignore"):
                out = f(*bound.args, **bound.kwargs)
            if returns is None:
                return out
            numeric = {n: a[n] for n in kinds if isinstance(a[n], (float, np.ndarray))}  # not ints, options
            return finite(out, f.__name__, returns.split(), numeric)

        checked.core, checked.kinds = f, dict(kinds)  # the body, and what it declares
        checked.returns = returns.split() if returns else None  # the results' names, if declared
        return checked

    return declare


def finite(out, fname, names, inputs):
    """`out` (a number, an array or a tuple of them) if every entry is finite, else the
    ValueError of step 6: `fname`, the results `names` that overflowed, the ranges of `inputs`."""
    leaves = [_flat(v) for v in (out if isinstance(out, tuple) else (out,))]  # one per result
    bad = [i for i, v in enumerate(leaves) if not np.isfinite(v).all()]
    if not bad:
        return out
    what = " and ".join(names[i] if i < len(names) else f"result {i}" for i in bad)
    kind = "NaN" if any(np.isnan(leaves[i]).any() for i in bad) else "inf"
    given = ", ".join(
        f"{n} in [{np.min(v):g}, {np.max(v):g}]" if np.ndim(v) else f"{n} = {v:g}"
        for n, v in inputs.items()
        if v is not None
    )
    raise ValueError(f"{fname}: expected a finite {what}, got {kind} (beyond float64) from {given}")


def _flat(v):
    """Every number of a result (a number, an array, or a tuple of them, nested) as one array."""
    if isinstance(v, (tuple, list)):
        return np.concatenate([_flat(u) for u in v]) if v else np.zeros(0)
    return np.asarray(v, dtype=np.float64).ravel()


# ---- the kinds --------------------------------------------------------------------------------


def array(*shapes, values=None, low=None, high=None, low_open=False, integer=False, empty=False, neginf=False):
    """A float64 array (a fresh copy) of one of `shapes`, each a string of letters ("B T") or
    fixed lengths ("B 2"), its entries finite, among `values` if given, in `[low, high]` (or
    `(low, high]` with `low_open`). With `integer`, an int64 array of integers (ids, counts):
    floats are refused. With `empty`, an axis may have length 0. With `neginf`, logits: `-inf`
    entries are kept (an impossible token), and every row (the last axis) has a finite entry."""
    shapes = [s.split() for s in shapes]

    def fits(s, shape, dims):
        return len(s) == len(shape) and all(
            (int(k) == n) if k.isdigit() else dims.get(k, n) == n for k, n in zip(s, shape)
        )

    def read(x, name, dims):
        try:
            a = None if isinstance(x, (str, bytes)) else np.asarray(x)
        except (ValueError, TypeError, OverflowError):  # ragged nesting, huge ints
            a = None
        if a is None or a.dtype.kind not in ("iub" if integer else "fiub"):  # float, int, uint, bool
            noun = "an integer array" if integer else "a real-valued array"
            raise TypeError(f"{name}: expected {noun}, got {_show(x)}")
        a = np.array(a, dtype=np.int64 if integer else np.float64)  # a copy: the caller's is never written
        ok = [s for s in shapes if fits(s, a.shape, dims)]
        if not ok:
            want = " or ".join(str(tuple(dims.get(k, int(k) if k.isdigit() else k) for k in s)) for s in shapes)
            raise ValueError(f"{name}: expected shape {want.replace(chr(39), '')}, got {a.shape}")
        if 0 in a.shape and not empty:
            raise ValueError(
                f"{name}: expected a non-empty array (every axis of length >= 1), got shape {a.shape}"
            )
        dims.update((k, n) for k, n in zip(ok[0], a.shape) if not k.isdigit())
        all_finite = integer or np.isfinite(a).all()  # one pass on the good path
        if not all_finite and np.isnan(a).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(a).sum())} NaN entries")
        if not all_finite and (inf := np.isposinf(a) if neginf else np.isinf(a)).any():
            want = "finite values or -inf (no +inf)" if neginf else "finite values (no +-inf)"
            raise ValueError(f"{name}: expected {want}, got {int(inf.sum())} such entries")
        if neginf and not all_finite and (dead := np.isneginf(a).all(axis=-1)).any():  # -inf entries
            raise ValueError(
                f"{name}: expected a finite entry in every row (-inf everywhere has no softmax), got "
                f"{int(dead.sum())} all -inf rows, the first at {tuple(int(i) for i in np.argwhere(dead)[0])}"
            )
        if values is not None and not (among := functools.reduce(np.logical_or, [a == v for v in values])).all():
            want = " and ".join(f"{v:g}" for v in values)
            raise ValueError(f"{name}: expected only {want}, got value {a[~among].flat[0].item()!r}")
        if low is not None and a.size and ((a <= low) if low_open else (a < low)).any():
            raise ValueError(
                f"{name}: expected entries {'>' if low_open else '>='} {low:g}, got min {a.min().item()!r}"
            )
        if high is not None and a.size and (a > high).any():
            raise ValueError(f"{name}: expected entries <= {high:g}, got max {a.max().item()!r}")
        return a

    return read


def simplex(*shapes):
    """Probabilities: a float64 array of one of `shapes`, entries >= 0, each row (last axis)
    summing to 1 within 1e-9 (stricter than `Generator.choice`'s ~1.5e-8, so a table that passes
    here is one `rng.choice` accepts)."""
    entries = array(*shapes, low=0.0)

    def read(x, name, dims):
        p = entries(x, name, dims)
        s = p.sum(axis=-1)
        if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
            worst = float(s.ravel()[int(np.argmax(np.abs(s - 1.0)))])
            raise ValueError(f"{name}: expected rows summing to 1 (within 1e-9), got a row summing to {worst!r}")
        return p

    return read


def right_padded(shape, what, where):
    """A 0/1 float mask of `shape` whose rows are prefixes (1s then 0s), as `what` reads them; a
    mask with holes is refused, and the message says `where` such a mask goes."""
    mask = array(shape, values=(0.0, 1.0))

    def read(x, name, dims):
        m = mask(x, name, dims)
        rises = (m[:, 1:] > m[:, :-1]).any(axis=1)  # (B,) a 1 after a 0
        if rises.any():
            row = int(np.flatnonzero(rises)[0])
            col = int(np.flatnonzero(m[row, 1:] > m[row, :-1])[0]) + 1  # its first 1 after a 0
            shown = (
                f"is {m[row].astype(int).tolist()}" if m.shape[1] <= 20 else f"has a 1 after a 0 at column {col}"
            )
            raise ValueError(
                f"{name}: expected right padding (1s then 0s in each row) for {what}, row {row} {shown}; a "
                f"mask with holes (tool outputs) is accepted by the token-level objectives; here use {where}"
            )
        return m

    return read


def padded(what, where):
    """The relation form of `right_padded`, on an argument `mask` (B, T) already read."""
    read = right_padded("B T", what, where)

    def rule(mask):
        read(mask, "mask", {})  # raises, or the mask is right-padded

    return rule


def flag(x, name, dims):
    """True or False (a NumPy bool too; not 0 or 1)."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {_show(x)}")
    return bool(x)


def number(low=-np.inf, high=np.inf, low_open=False, integer=False, high_open=False):
    """A finite real number as a Python float (an int with `integer`) in `[low, high]`; an end
    is excluded with `low_open` or `high_open`."""
    noun = "an integer" if integer else "a number"
    show = lambda b: f"{b}" if isinstance(b, int) else f"{b:g}"  # noqa: E731  an int bound in full
    bounds = [f"{'>' if low_open else '>='} {show(low)}"] if low > -np.inf else []
    bounds += [f"{'<' if high_open else '<='} {show(high)}"] if high < np.inf else []

    def read(x, name, dims):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral if integer else numbers.Real):
            raise TypeError(f"{name}: expected {'an integer' if integer else 'a real number'}, got {_show(x)}")
        try:
            v = int(x) if integer else float(x)
        except OverflowError:  # an int beyond float64
            v = np.inf
        if not integer and not np.isfinite(v):  # an int is finite however large
            raise ValueError(f"{name}: expected a finite number, got {x}"[:200])
        if (v <= low if low_open else v < low) or (v >= high if high_open else v > high):
            raise ValueError(f"{name}: expected {noun} {' and '.join(bounds)}, got {v}")
        return v

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

    return read


def optional(of):
    """None, or a value of the kind `of`."""
    return lambda x, name, dims: None if x is None else of(x, name, dims)


def has(what, members):
    """Any object with `members`, a string of names (`"logp() theta"`: `logp()` a method,
    `theta` an attribute), whatever its type: what the body uses of it; `what` says what fits."""
    members = members.split()

    def lacks(x, m):
        return not callable(getattr(x, m[:-2], None)) if m.endswith("()") else not hasattr(x, m)

    def read(x, name, dims):
        if missing := [m.rstrip("()") for m in members if lacks(x, m)]:
            raise TypeError(
                f"{name}: expected {what} (with {', '.join(members)}), "
                f"got {type(x).__name__} without {', '.join(missing)}"
            )
        return x

    return read


def function(call, nargs):
    """A callable `call` (a string saying how it is called) taking `nargs` positional arguments."""

    def read(f, name, dims):
        if not callable(f) or isinstance(f, type):
            raise TypeError(f"{name}: expected a callable {call}, got {_show(f)}")
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):  # a builtin without a signature
            return f
        try:
            sig.bind(*range(nargs))
        except TypeError:
            raise TypeError(
                f"{name}: expected a callable {call} taking {nargs} positional arguments, "
                f"got one with signature {sig}"
            ) from None
        return f

    return read


def generator(rng, name, dims):
    """A `np.random.Generator`, the one source of every draw."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), got {_show(rng)}"
        )
    return rng


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


# ---- the library's kinds and relations, by what they mean -----------------------------------

TOKENS = array("B T")  # one number per position of each response (log-probs)
ADVANTAGE = array("B", "B T")  # one advantage per response, or one per token
MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed
EPS = number(0.0, 1.0, low_open=True)  # a clip range in (0, 1]
EPS_HIGH = optional(number(0.0, low_open=True))  # an upper clip range > 0, None: the lower one
POSITIVE = number(0.0, low_open=True)
NONNEGATIVE = number(0.0)
COUNT = number(1, integer=True)  # an integer >= 1
MAX_LEN = optional(COUNT)  # T_max of agg="constant": None or an int >= 1
DDOF = number(0, 1, integer=True)  # a std's delta degrees of freedom: population 0, Bessel 1
REFERENCE = has("a TabularPolicy", "logp() theta")  # a frozen reference: what a step reads of it


def longest_response(mask, agg, max_len):
    """`max_len`, the `T_max` of `agg="constant"`, is at least the longest response (its
    trained tokens, holes not counted)."""
    n = int(mask.sum(axis=1).max())
    if agg == "constant" and max_len is not None and max_len < n:
        return f"max_len: expected >= the longest response ({n} trained tokens), got {max_len}"
