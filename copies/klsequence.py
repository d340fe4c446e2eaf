# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/klsequence.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/klsequence.py -o DIR
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

"""The bias-corrected KL with a sequence-level ratio: TRL's broadcast `s_b`.

`kl.kl_penalty_is`, eq. (kl_is), weighs each token's k3 by its own ratio
`rho_t = pi(y_t|s_t) / pi_old(y_t|s_t)`. With `importance_sampling_level="sequence"`, TRL
multiplies every token's k3 by the response's geometric-mean ratio instead (the same `coef_1`
its GSPO term uses), and the ratio is not detached:

```text
s_b  = exp( (1/|y_b|) sum_t (logp - logp_old) )                  eq. (gspo_ratio), geometric
loss = sum_{b,t} w[b,t] s_b k3_t,    k3_t = exp(-u_t) + u_t - 1,  u_t = logp_t - logp_ref,t
                                                                  eq. (kl_is_seq)
dloss/dlogp[b, t] = w[b,t] s_b (1 - exp(-u_t))  +  (s_b / |y_b|) sum_t' w[b,t'] k3_t'
```

The second term is the ratio's own gradient, spread over every trained token of the row: a
token's KL term moves the log-probs of the whole response. Under `pi_old`, `E[rho_t k3_t]` is the
k3 of `pi` at each visited state (per-token importance sampling is exact per state), while
`E[s_b k3_t]` is not: `s_b` mixes the ratios of the other tokens of the response, so the
broadcast penalty estimates neither `KL(pi || pi_ref)` nor its gradient without bias once
`pi != pi_old`. At `pi = pi_old` (`s_b = 1`) both equal `kl_penalty`'s k3 and its derivative
plus the term above (`(1/|y_b|) sum w k3`, which the per-token version does not have: the
gradient of `rho_t` at `rho_t = 1` is `k3_t` on its own token only).

A response of length 0 contributes nothing. Non-finite results raise ValueError naming the
log-prob array of largest magnitude. Demonstrated on the KL page (docs/kl.md, section "The
sequence-level ratio in the bias-corrected KL").

Read from TRL 1.16.0 `use_bias_correction_kl=True` with `importance_sampling_level="sequence"`
(trl/trainer/grpo_trainer.py:3085-3095, the ratio `coef_1` of shape (B, 1); :3097-3105, `per_token_kl
* coef_1`, not detached); verl, OpenRLHF: none.
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["kl_penalty_is_sequence"]


def kl_penalty_is_sequence(logp, logp_old, logp_ref, mask, agg="token_mean", max_len=None):
    """k3 weighted by the broadcast geometric-mean sequence ratio, eq. (kl_is_seq) (TRL).

    Args:
        logp: `(B, T)` log-probs of the policy being trained (carries the gradient, also through
            the ratio).
        logp_old: `(B, T)` log-probs of the policy that sampled the tokens (data).
        logp_ref: `(B, T)` reference log-probs (data).
        mask: `(B, T)` 0/1; holes allowed (`|y_b|` counts the trained tokens).
        agg: the aggregation of eq. (pg_agg).
        max_len: see `agg`.

    Returns:
        `(loss, dloss_dlogp (B, T))`.
    """
    logp, logp_old, logp_ref, mask, max_len = kl_is_args(logp, logp_old, logp_ref, mask, agg, max_len, AGGS)
    s, scale = _seq_ratio(logp, logp_old, mask, "geometric")  # (B,), (B,) 1/|y_b|
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: rejected below
        k, dk = kl_per_token.core(logp, logp_ref, mask, "k3")  # (B, T) eq. (kl_k3)
        row = (w * k).sum(axis=1)  # (B,) sum_t w k3
        loss = (s * row).sum()  # eq. (kl_is_seq)
        # backward: the k3 of the token, then the ratio's: d s_b / d logp[b, t] = s_b / |y_b|
        dloss_dlogp = s[:, None] * (w * dk) + (s * scale * row)[:, None] * mask  # (B, T)
    named = {"logp": logp, "logp_old": logp_old, "logp_ref": logp_ref}
    return finite_among((float(loss), dloss_dlogp), "s k3 (s the sequence ratio)", named)


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


AGGS = ("seq_sum", "token_mean", "seq_mean_token_mean", "constant", "token_sum")


def agg_weights(mask, agg, max_len=None):
    """Per-token weights `w` (B, T) of aggregation `agg` over a checked 0/1 `mask` (B, T), eq.
    (pg_agg)."""
    B, T = mask.shape
    if agg == "token_sum":
        return mask.copy()  # (B, T) no normalizer at all
    if agg == "seq_sum":
        return mask / B  # (B, T)
    lengths = mask.sum(axis=1, keepdims=True)  # (B, 1) |y_b|
    if agg == "token_mean":
        return mask / max(lengths.sum(), 1.0)  # (B, T)
    if agg == "seq_mean_token_mean":
        return mask / (B * np.maximum(lengths, 1.0))  # (B, T) length 0: 0 / 1
    return mask / (B * (T if max_len is None else max_len))  # (B, T) "constant"


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


# ----------------------------------------------------------------------------------------------
# part 2: from minirl_lm/pg/kl.py
#   KL to the frozen reference: per-token estimators, their two placements, and the exact KL.
# ----------------------------------------------------------------------------------------------


ESTIMATORS = ("k1", "k2", "k3")


def kl_per_token(logp, logp_ref, mask, estimator="k3"):
    """The per-token estimate `k` of `KL(pi || pi_ref)` and its derivative `dk/dlogp`."""
    u = log_ratio(logp, logp_ref, mask)  # (B, T) 0 at padding
    if estimator == "k1":
        return u, mask.copy()  # eq. (kl_k1); dk1 = 1
    if estimator == "k2":
        return 0.5 * u * u, u  # eq. (kl_k2); dk2 = u
    return _k3(u), -np.expm1(-u) * mask  # eq. (kl_k3); dk3 = 1 - exp(-u)


def _k3(u):
    """exp(-u) - 1 + u to ~1e-14 relative error: expm1(-u) + u, and near 0 (where the two cancel)
    its Taylor series u^2/2 - u^3/6 + ... to u^8 (truncation below 1e-17 relative)."""
    small = np.abs(u) < 0.05  # (B, T) each branch only where used
    k = np.empty_like(u)  # (B, T)
    us = u[small]
    c = 1.0 / 40320.0
    for n in (5040.0, 720.0, 120.0, 24.0, 6.0, 2.0):  # Horner, innermost term first
        c = 1.0 / n - us * c
    k[small] = us * us * c
    ul = u[~small]
    k[~small] = np.expm1(-ul) + ul  # inf for u < ~-709.78: rejected
    return k


# ----------------------------------------------------------------------------------------------
# part 3: from minirl_lm/pg/seqclip.py
#   The clip family beyond PPO: dual-clip, sequence-level ratios (GSPO), clipped IS weights (CISPO).
# ----------------------------------------------------------------------------------------------


def _seq_ratio(logp, logp_old, mask, ratio):
    """(s (B,), ds/dlogp per real token (B, 1)) on checked inputs."""
    with np.errstate(over="ignore", invalid="ignore"):  # +-inf, NaN: callers reject them
        u = log_ratio(logp, logp_old, mask).sum(axis=1)  # (B,) log prod_t rho_t
        scale = 1.0 / np.maximum(mask.sum(axis=1), 1.0) if ratio == "geometric" else np.ones(len(u))
        s = np.exp(u * scale)  # (B,) eq. (gspo_ratio)
    return s, scale


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/checks.py
#   The boundary of the policy-gradient part, token level: one bundle call per public function
# ----------------------------------------------------------------------------------------------


_UNSET = object()  # an argument the bundle was not given (None is an input to reject)


def token_batch(logps, mask, adv=_UNSET, agg=_UNSET, max_len=None, aggs=(), per_token=True):
    """Check a token-level batch; returns ``(*arrays, mask, adv, max_len)``. logps: ``{name:
    array}`` of ``(B, T)`` arrays (log-probs, weights), the first one the shape the others and
    the 0/1 ``mask`` (holes allowed) must have; adv: ``(B,)``, or ``(B, T)`` too if
    ``per_token`` (returned as given, None if not passed); agg: one of ``aggs`` (unchecked if
    not passed); max_len: None or an int >= 1, and for ``"constant"`` at least the longest
    response (the most trained tokens in a row)."""
    names = list(logps)
    arrays = [float_array(logps[n], n, ndim=2) for n in names]
    mask = mask_array(mask, "mask")
    for n, a in zip(names[1:] + ["mask"], arrays[1:] + [mask]):
        same_shape(names[0], arrays[0], n, a)
    A = None if adv is _UNSET else advantage(adv, mask, per_token)
    if agg is not _UNSET:
        max_len = aggregation(mask, agg, max_len, aggs)
    return (*arrays, mask, A, max_len)


def advantage(adv, mask, per_token=True):
    """``adv`` as float64 of shape ``(B,)`` (or ``(B, T)`` if ``per_token``) for a checked mask."""
    A = float_array(adv, "adv")
    if A.shape != (mask.shape[0],) and not (per_token and A.shape == mask.shape):
        want = f"({mask.shape[0]},)" + (f" or {mask.shape}" if per_token else "")
        raise ValueError(f"adv: expected shape {want}, got {A.shape}")
    return A


def aggregation(mask, agg, max_len, aggs):
    """Check ``agg`` (one of ``aggs``) and ``max_len`` for a checked mask; returns max_len."""
    choice(agg, "agg", aggs)
    max_len = None if max_len is None else int_scalar(max_len, "max_len", low=1)  # any agg
    n = mask.sum(axis=1).max()  # the most trained tokens in a row (holes not counted)
    if agg == "constant" and max_len is not None and max_len < n:
        raise ValueError(f"max_len: expected >= the longest response ({int(n)} trained tokens), got {max_len}")
    return max_len


def finite_among(value, what, arrays):
    """``finite_result(value, name, what)`` for a value (or a flat tuple) computed from several
    ``arrays`` (``{name: array}``), the ``name`` picked only on failure: the array of largest
    magnitude, the input that drove the overflow (a log-prob of 1e308, not the ordinary one it
    was subtracted from; the first name on a tie)."""
    if all(np.isfinite(v).all() for v in (value if isinstance(value, tuple) else (value,))):
        return value
    big = {n: float(np.abs(a).max(initial=0.0)) for n, a in arrays.items()}
    return finite_result(value, max(big, key=big.get), what)


def kl_is_args(logp, logp_old, logp_ref, mask, agg, max_len, aggs):
    """The arguments of the importance-weighted k3 (logp_ref checked before logp_old)."""
    logp, logp_ref, logp_old, mask, _, max_len = token_batch(
        {"logp": logp, "logp_ref": logp_ref, "logp_old": logp_old}, mask, agg=agg, max_len=max_len, aggs=aggs
    )
    return logp, logp_old, logp_ref, mask, max_len


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it. ndim: required number of dimensions
    (None: any). shape: required shape; a None entry matches any length. finite: reject NaN
    and +-inf; with ``allow_neginf`` a -inf entry is allowed (log-probabilities of impossible
    tokens), NaN and +inf never are."""
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


def mask_array(x, name, shape=None, prefix=None):
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted)."""
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


def finite_result(value, name, what):
    """Return ``value`` (a number, an array, or a tuple of them, nested) if every entry is
    finite; else raise a ValueError naming ``name``, the argument that drove the overflow."""
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


# ----------------------------------------------------------------------------------------------
# the declared boundary: from minirl_lm/boundary.py
#   The declared boundary: one engine applies the contracts each function declares beside it.
#   A declared function binds its arguments by keyword, reads each with its kind (a valid form
#   comes back converted, arrays as fresh float64 copies; anything else raises a TypeError or
#   ValueError starting with the argument's name), checks the relations, runs the body, and
#   refuses a non-finite result with one ValueError naming the function. `f.core` is the body.
# ----------------------------------------------------------------------------------------------


def boundary(where=(), returns="", **kinds):
    """Declare the kinds of a function's arguments (`name=kind`), the relations between them
    (`where=[rule, ...]`) and the names of its results (`returns="loss grad"`)."""

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
        return checked

    return declare


def finite(out, fname, names, inputs):
    """`out` (a number, an array or a tuple of them) if every entry is finite, else the
    ValueError of step 6: `fname`, the results `names` that overflowed, the ranges of
    `inputs`."""
    leaves = [np.asarray(v, dtype=np.float64) for v in (out if isinstance(out, tuple) else (out,))]
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


def array(*shapes, values=None, low=None, high=None, low_open=False, integer=False, empty=False):
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
        if not integer and np.isnan(a).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(a).sum())} NaN entries")
        if not integer and np.isinf(a).any():
            raise ValueError(
                f"{name}: expected finite values (no +-inf), got {int(np.isinf(a).sum())} such entries"
            )
        if values is not None and not np.isin(a, values).all():
            want = " and ".join(f"{v:g}" for v in values)
            raise ValueError(f"{name}: expected only {want}, got value {a[~np.isin(a, values)].flat[0].item()!r}")
        if low is not None and a.size and ((a <= low) if low_open else (a < low)).any():
            raise ValueError(
                f"{name}: expected entries {'>' if low_open else '>='} {low:g}, got min {a.min().item()!r}"
            )
        if high is not None and a.size and (a > high).any():
            raise ValueError(f"{name}: expected entries <= {high:g}, got max {a.max().item()!r}")
        return a

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


def _show(x):
    return (
        f"array of shape {x.shape} and dtype {x.dtype}"
        if isinstance(x, np.ndarray)
        else f"{type(x).__name__} {x!r}"[:120]
    )


TOKENS = array("B T")  # one number per position of each response (log-probs)


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

ESTIMATOR = one_of(ESTIMATORS)
KL = dict(logp=TOKENS, logp_ref=TOKENS, mask=MASK, estimator=ESTIMATOR)  # a per-token estimate

kl_per_token = boundary(**KL, returns="k dk")(kl_per_token)
