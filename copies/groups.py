# minirl_lm 0.1.0: a self-contained copy of minirl_lm/exact/groups.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/exact/groups.py -o DIR
# Files named below (tests/, examples/, docs/, scripts/) are files of the minirl_lm repository,
# and a page named below (the page "...") is a page of the minirl_lm documentation site.
#
# MIT License
#
# Copyright (c) 2026 the minirl_lm authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.

"""Groups of K i.i.d. responses: the multinomial law of a group and the moments of its update.

K responses drawn i.i.d. from `p` over R responses form a multiset; its probability is

    P(counts n_1..n_R) = K! / (n_1! ... n_R!) prod_r p_r^{n_r}                     (exact_multinomial)

so an expectation over a group is a finite sum over the `C(R + K - 1, K)` multisets, not over
the `R^K` ordered draws. A group's update is linear in per-token coefficients on fixed basis
vectors (the scores of `minirl_lm.exact.scores`, or any other per-token vectors, such as the
entropy's gradient): with `C_m` the coefficients of multiset `m` summed onto its distinct
responses and `Phi` the basis stacked as rows,

    E[g] = (sum_m P_m C_m) Phi,    E|g|^2 = sum_m P_m C_m (Phi Phi^T) C_m^T        (exact_group)

(the Gram matrix `Phi Phi^T` is computed once). `iid_moments` takes the other road for a
bilinear update `g = sum_{k,j} c[k, j] R_j S_k`: its second moment depends only on which of the
four indices coincide, so it needs no list of groups at all.

Sizes are bounded before anything is listed: at most `MAX_ENTRIES` entries in the multisets'
_arrays, and in the ordered tuples of `ordered_groups`.

    $ python examples/atlas.py --K 4    # every configuration's exact moments at K = 4
"""

import functools
import inspect
import itertools
import math
import numbers

import numpy as np


__all__ = [
    "MAX_ENTRIES",
    "multisets",
    "group_law",
    "group_moments",
    "group_updates",
    "ordered_groups",
    "iid_moments",
]

MAX_ENTRIES = 10**7  # entries of the _arrays a listing builds: beyond this it would not end soon


def _arrays(shape):
    """A non-empty list of _arrays, each of `shape` (its letters shared across the list)."""
    each = array(shape)

    def read(x, name, dims):
        if not isinstance(x, (list, tuple)) or not x:
            got = f"{type(x).__name__} {x!r}"[:120]  # only when raising: a repr of big arrays is slow
            raise TypeError(f"{name}: expected a non-empty list of arrays, got {got}")
        return [each(a, name, dims) for a in x]

    return read


def _count(n):
    """A count for a message, however large (no float overflow, no giant decimal string)."""
    return f"{n:.3g}" if n < 10**300 else f"~1e{int(n.bit_length() * 0.30103)}"


def _listing_size(R, K, N=1):
    """None if the multisets of K out of R (and their probabilities under N laws) fit in
    `MAX_ENTRIES` entries, else the message (blaming K): `M = C(R + K - 1, K)` multisets, each
    with K ids, R counts and N probabilities."""
    bounded = R > MAX_ENTRIES and K > 1  # C(R + K - 1, K) > R: a huge R's binomial is not computed
    M = R if bounded else math.comb(R + K - 1, K)
    if M * (K + R + N * K) > MAX_ENTRIES:
        return (
            f"K: expected at most {MAX_ENTRIES:.0e} entries in the multisets of K out of R "
            f"(C(R + K - 1, K) of them, times K + R + N K), got {'>= ' * bounded}{_count(M)} multisets "
            f"(R = {_count(R)}, K = {K}, N = {N})"
        )


def _multiset_count(R, K):
    return _listing_size(R, K)


def _law_count(p, K):
    return _listing_size(p.shape[-1], K, p.shape[0] if p.ndim == 2 else 1)


@functools.lru_cache(maxsize=64)
def _multisets(R, K):
    Y = np.array(list(itertools.combinations_with_replacement(range(R), K)), dtype=np.int64)  # (M, K)
    counts = np.stack([(Y == y).sum(1) for y in range(R)], 1)  # (M, R)
    coef = np.array([math.factorial(K) / np.prod([math.factorial(c) for c in row]) for row in counts])  # (M,)
    for a in (Y, counts, coef):
        a.setflags(write=False)  # cached: shared by every caller
    return Y, counts, coef


def multisets(R, K):
    """Every multiset of K responses out of R, and its multinomial coefficient.

    Args:
        R: number of distinct responses, >= 1.
        K: group size, >= 1.

    Returns:
        `(Y, counts, coef)`: `(M, K)` int64 sorted index tuples, `(M, R)` int64 counts, `(M,)`
        float64 `K! / prod n_r!`, `M = C(R + K - 1, K)`. Read-only (cached).

    Raises:
        ValueError: a bad argument (named), or more multisets than `MAX_ENTRIES` entries hold.
    """
    return _multisets(R, K)


def group_law(p, K):
    """The multisets of K i.i.d. draws from each row of `p`, and their probabilities.

    Args:
        p: `(R,)` or `(N, R)` probabilities, each row summing to 1.
        K: group size, >= 1.

    Returns:
        `(Y, P)`: `(M, K)` int64 multisets and `(M,)` or `(N, M)` float64 probabilities,
        eq. (exact_multinomial).
    """
    Y, _, coef = _multisets(p.shape[-1], K)
    return Y, coef * np.prod(p[..., Y], axis=-1)  # (M,) or (N, M), eq. (exact_multinomial)


def _at_most_one(P):
    """Multiset probabilities sum to at most 1 (a law conditioned on an event that may fail)."""
    if P.sum() > 1.0 + 1e-9:
        return f"P: expected probabilities >= 0 summing to at most 1, got sum {float(P.sum())!r}"


def _ids_in_basis(Y, bases):
    """Response ids index the basis' rows."""
    R = bases[0].shape[0]
    if Y.max() >= R:
        return f"Y: expected ids < {R} (the rows of bases), got max {Y.max()}"


def _one_per_basis(coefs, bases):
    if len(coefs) != len(bases):
        return f"coefs: expected one array per basis ({len(bases)}), got {len(coefs)}"


GROUP_RULES = [_ids_in_basis, _one_per_basis]


def group_moments(P, Y, coefs, bases, second=True):
    """`E[g]` and `E|g|^2` of a group's update `g = sum_f sum_{k,t} coefs[f][m, k, t] bases[f][Y[m, k], t]`.

    Eq. (exact_group). `coefs[f]` gives, for multiset `m`, the coefficient of slot `k`'s token `t`
    on basis family `f` (for instance the score and the entropy's gradient); equal responses in a
    group share their basis vectors, so the coefficients are summed onto distinct responses first.

    Args:
        P: `(M,)` probabilities of the multisets (summing to at most 1: a law conditioned on an
            event that may fail, such as a filter, sums below 1).
        Y: `(M, K)` int response indices in `[0, R)`.
        coefs: a list of F `(M, K, T)` finite coefficient arrays.
        bases: a list of F `(R, T, D)` finite basis arrays.
        second: also compute `E|g|^2` (else it is returned as 0.0).

    Returns:
        `(mean, second)`: `(D,)` float64 `E[g]` and the float `E|g|^2`.
    """
    C, Phi = _stack(Y, coefs, bases)
    mean = (P @ C) @ Phi  # (D,) eq. (exact_group)
    if not second:
        return mean, 0.0
    CG = C @ (Phi @ Phi.T)  # (M, F R T)
    return mean, float(P @ (CG * C).sum(1))


def _stack(Y, coefs, bases):
    """The coefficients summed onto distinct responses, C (M, F R T), and the basis Phi (F R T, D)."""
    R, T, D = bases[0].shape
    onehot = (Y[:, :, None] == np.arange(R)).astype(float)  # (M, K, R)
    C = np.concatenate([np.einsum("mkr,mkt->mrt", onehot, c).reshape(len(Y), R * T) for c in coefs], 1)
    return C, np.concatenate([b.reshape(R * T, D) for b in bases], 0)


def group_updates(Y, coefs, bases):
    """Every multiset's update on each basis family: `(F, M, D)`, eq. (exact_group).

    Family f's update of multiset m is `sum_{k,t} coefs[f][m, k, t] bases[f][Y[m, k], t]`; the
    families are kept apart (sum over the first axis for the whole update), so one call gives
    the several parts of an update (the advantage-weighted scores, the plain scores, a
    penalty). Summed slot by slot over the gathered basis `(M, K, T, D)`, not through the Gram
    form of `group_moments`: for small bases as fast, and the summation order of the atlas's
    first exact code, which its rounding-set fixed points reproduce bit for bit.

    Args:
        Y: `(M, K)` int response indices in `[0, R)`.
        coefs: a list of F `(M, K, T)` finite coefficient arrays.
        bases: a list of F `(R, T, D)` finite basis arrays.

    Returns:
        `(F, M, D)` float64.
    """
    return np.stack([np.einsum("mkt,mktd->md", c, b[Y]) for c, b in zip(coefs, bases)])  # (F, M, D)


def _sums_to_one(logq, prompt):
    """Each prompt's probabilities sum to 1."""
    ids, inv = np.unique(prompt, return_inverse=True)
    mass = np.bincount(inv.ravel(), np.exp(logq))  # (N,): inv takes every value in [0, N)
    if not np.allclose(mass, 1.0, rtol=0.0, atol=1e-9):
        x = int(np.argmax(np.abs(mass - 1.0)))
        return f"logq: expected probabilities summing to 1 per prompt, got {float(mass[x])!r} for prompt {ids[x]}"


def _tuple_count(prompt, K):
    """The ordered tuples, `sum_x R_x^K` of them, fit in `MAX_ENTRIES` entries."""
    O = sum(int(r) ** K for r in np.unique(prompt, return_counts=True)[1])
    if O * (K + 1) > MAX_ENTRIES:
        return (
            f"K: expected at most {MAX_ENTRIES:.0e} entries in the ordered K-tuples, got {O:.3g} tuples (K = {K})"
        )


ORDERED = [_sums_to_one, _tuple_count]


def ordered_groups(logq, prompt, K):
    """Every ordered K-tuple of responses of one prompt, and its probability under i.i.d. draws.

    Args:
        logq: `(B,)` log-probabilities of the responses (sequence log-probs `log q(y|x)`), each
            prompt's probabilities summing to 1; `-inf` for a response that cannot occur.
        prompt: `(B,)` int prompt index of each response, in `[0, N)`.
        K: tuple size, >= 1.

    Returns:
        `(idx, prob)`: `(O, K)` int64 response indices (prompt-major, then lexicographic) and
        `(O,)` float64 `exp(sum_k logq[idx_k])`; `O = sum_x R_x^K`.

    Raises:
        ValueError: a bad argument (named), or more tuples than `MAX_ENTRIES` entries hold.
    """
    idx = []
    for x in np.unique(prompt):  # the prompts present, in order
        rows = np.flatnonzero(prompt == x)
        grids = np.meshgrid(*[rows] * K, indexing="ij")
        idx.append(np.stack([g.ravel() for g in grids], 1))
    idx = np.concatenate(idx, 0)  # (O, K)
    return idx, np.exp(logq[idx].sum(axis=1))


def _square(c):
    """`c` is a square `(K, K)` array with `K <= 16` (work `K^4`)."""
    if c.shape[0] != c.shape[1] or c.shape[0] > 16:
        return f"c: expected a square (K, K) array with 1 <= K <= 16, got shape {c.shape}"


def iid_moments(p, R, Sc, c):
    """Exact `E[g]` and `E|g|^2` of `g = sum_{k,j} c[k, j] R_j S_k` over K i.i.d. draws.

    `E[R_j R_j' S_k . S_k']` depends only on which of `(k, j, k', j')` coincide: each block of
    equal indices is one draw, contributing `E[R^n]`, `E[R^n S]` or `E[R^n |S|^2]`, and the
    blocks are independent. No group is listed: work `K^4 + 16 M D`.

    Args:
        p: `(M,)` probabilities of the outcomes of one draw, summing to 1.
        R: `(M,)` finite scalar of each outcome (a reward).
        Sc: `(M, D)` finite vector of each outcome (a score).
        c: `(K, K)` finite coefficients.

    Returns:
        `(first, second)`: `(D,)` float64 `E[g]` and the float `E|g|^2`.

    Raises:
        ValueError: a bad argument (named), or a moment beyond float64 (named after the
            function, with the range of its inputs).
    """
    K = c.shape[0]
    ER = lambda n: p @ R**n  # noqa: E731
    ERS = lambda n: (p * R**n) @ Sc  # noqa: E731
    ERSS = lambda n: (p * R**n) @ (Sc * Sc).sum(1)  # noqa: E731
    idx = np.stack(np.meshgrid(*[np.arange(K)] * 4, indexing="ij"), -1).reshape(-1, 4)
    coef = c[idx[:, 0], idx[:, 1]] * c[idx[:, 2], idx[:, 3]]  # slots: S_k, R_j, S_k', R_j'
    eq = (idx[:, :, None] == idx[:, None, :]).reshape(len(idx), 16) @ (1 << np.arange(16))
    second = 0.0
    for pat in np.unique(eq):
        rep = idx[np.argmax(eq == pat)]
        val, vecs = 1.0, []
        for lab in np.unique(rep):
            slots = np.flatnonzero(rep == lab)
            nS, nR = np.isin(slots, (0, 2)).sum(), np.isin(slots, (1, 3)).sum()
            if nS == 0:
                val *= ER(nR)
            elif nS == 1:
                vecs.append(ERS(nR))
            else:
                val *= ERSS(nR)
        second += coef[eq == pat].sum() * val * (vecs[0] @ vecs[1] if vecs else 1.0)
    ES = p @ Sc
    first = np.trace(c) * ERS(1) + (c.sum() - np.trace(c)) * ER(1) * ES
    return first, float(second)


# part 1: from minirl_lm/exact/tree.py ---------------------------------------------------------
#   Sums and products along a response, by recursion over the prefix tree: no list of responses.


def allowing_inf(kind, signs=(-1.0, 1.0)):
    """The kind `kind`, with infinite entries of the listed signs let through (values the body
    ignores, such as those where `q = 0`; a relation says where they may be)."""

    def read(x, name, dims):
        try:
            a = np.asarray(x)  # a str or bytes gives no float array
        except (ValueError, TypeError, OverflowError):
            a = None
        if a is None or a.dtype.kind != "f":
            return kind(x, name, dims)
        inf = np.isinf(a) & np.isin(np.sign(a), signs)
        out = kind(np.where(inf, 0.0, a), name, dims)
        out[inf] = a[inf]
        return out

    return read


# the declared boundary: from minirl_lm/boundary.py --------------------------------------------
#   The declared boundary: one engine applies the contracts each function declares beside it.
#   A declared function binds its arguments by keyword, reads each with its kind (a valid form
#   comes back converted, arrays as fresh float64 copies; anything else raises a TypeError or
#   ValueError starting with the argument's name), checks the relations, runs the body, and
#   refuses a non-finite result with one ValueError naming the function. `f.core` is the body.


def boundary(where=(), returns="", args=None, **kinds):
    """Declare the kinds of a function's arguments (`name=kind`), the relations between them
    (`where=[rule, ...]`) and the names of its results (`returns="loss grad"`)."""
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
    ValueError of step 6: `fname`, the results `names` that overflowed, the ranges of
    `inputs`."""
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


def array(*shapes, values=None, low=None, high=None, low_open=False, integer=False, empty=False, neginf=False):
    """A float64 array (a fresh copy) of one of `shapes`, each a string of letters ("B T") or
    fixed lengths ("B 2"), its entries finite, among `values` if given, in `[low, high]` (or
    `(low, high]` with `low_open`)."""
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
    summing to 1 within 1e-9 (stricter than `Generator.choice`'s ~1.5e-8, so a table that
    passes here is one `rng.choice` accepts)."""
    entries = array(*shapes, low=0.0)

    def read(x, name, dims):
        p = entries(x, name, dims)
        s = p.sum(axis=-1)
        if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
            worst = float(s.ravel()[int(np.argmax(np.abs(s - 1.0)))])
            raise ValueError(f"{name}: expected rows summing to 1 (within 1e-9), got a row summing to {worst!r}")
        return p

    return read


def flag(x, name, dims):
    """True or False (a NumPy bool too; not 0 or 1)."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {_show(x)}")
    return bool(x)


def number(low=-np.inf, high=np.inf, low_open=False, integer=False, high_open=False):
    """A finite real number as a Python float (an int with `integer`) in `[low, high]`; an end is
    excluded with `low_open` or `high_open`."""
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


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


COUNT = number(1, integer=True)  # an integer >= 1


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

GROUP_SIZE = number(1, 64, integer=True)  # K
GROUP = dict(Y=array("M K", integer=True, low=0), bases=_arrays("R T D"), coefs=_arrays("M K T"))
LOGQ = allowing_inf(array("B"), signs=(-1.0,))  # -inf: a response that cannot occur
PROMPT_IDS = array("B", integer=True, low=0)

multisets = boundary(R=COUNT, K=GROUP_SIZE, where=[_multiset_count], returns="Y counts coef")(multisets)

group_law = boundary(p=simplex("R", "N R"), K=GROUP_SIZE, where=[_law_count], returns="Y P")(group_law)

group_moments = boundary(
    P=array("M", low=0.0), **GROUP, second=flag, where=[_at_most_one, *GROUP_RULES], returns="mean second"
)(group_moments)

group_updates = boundary(**GROUP, where=GROUP_RULES, returns="updates")(group_updates)

ordered_groups = boundary(
    logq=LOGQ, prompt=PROMPT_IDS, K=number(1, 8, integer=True), where=ORDERED, returns="idx prob"
)(ordered_groups)

iid_moments = boundary(
    p=simplex("M"), R=array("M"), Sc=array("M D"), c=array("K J"), where=[_square], returns="first second"
)(iid_moments)
