# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/shaping.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/shaping.py -o DIR
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

"""Sampling and reward shaping: DAPO's dynamic sampling, its overlong penalty, truncation masks.

Dynamic sampling (DAPO; verl `algorithm.filter_groups`). A group whose rewards are all equal
has zero group-relative advantage: it is dropped and the prompt resampled until a group with
some spread comes. verl drops a group when it has more than one response and its rewards have
std 0 (a group of one is kept). If each prompt is resampled until accepted, the kept group is
drawn from the distribution conditioned on acceptance, and since dropped groups carried a zero
update, the expected update of prompt x is its unconditioned expected update divided by the
acceptance probability. For a 0/1 reward with success probability p = P(r = 1 | x):

    E[update | kept] = E[update] / (1 - p^K - (1-p)^K)                          eq. (dapo_reweight)

so hard and easy prompts (p near 0 or 1) are weighted up. (When instead the batch is filled
from a stream of prompts, as verl does, each prompt enters in proportion to its acceptance
probability, which cancels the factor: the update is the unfiltered one times a global scale.)

Overlong reward shaping (DAPO; verl reward manager "dapo", `overlong_buffer.len`,
`overlong_buffer.penalty_factor`), with L_max the length cap, L_buf the buffer and |y| the
response length:

    r_len(y) = min(-(|y| - (L_max - L_buf)) / L_buf * penalty_factor, 0)        eq. (overlong)

added to the reward: 0 up to L_max - L_buf, falling linearly to -penalty_factor at L_max.

Truncation masking (TRL `mask_truncated_completions`): a response that hit the length cap
without emitting EOS is truncated; its mask row is zeroed, so it is left out of the loss (and of
a token count that normalizes it). An empty response (length 0) is not truncated.

Each function declares its arguments with `boundary`; its body is the math.

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository); in parentheses their defaults, not results of this library.

```text
filter_groups     verl algorithm.filter_groups.enable; OpenRLHF --algo.dynamic_filtering_enable,
                  --algo.dynamic_filtering_range (0 1)
overlong_penalty  verl reward manager dapo, overlong_buffer.len, .penalty_factor; OpenRLHF
                  --reward.overlong_buffer_len (None), --reward.overlong_penalty_factor (1)
mask_truncated    TRL mask_truncated_completions (False)
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["filter_groups", "acceptance_probability", "resample_factor", "overlong_penalty"]
__all__ += ["truncated", "mask_truncated"]


def filter_groups(rewards):
    """Which groups dynamic sampling keeps.

    Args:
        rewards: `(N, K)` finite rewards, a group of K per prompt. A group is dropped when K > 1
            and all its rewards are equal (std 0); K = 1 keeps every group (as verl does; its
            group-relative advantage is 0 anyway).

    Returns:
        A bool array `(N,)`, True where the group is kept.
    """
    if rewards.shape[1] == 1:
        return np.ones(rewards.shape[0], dtype=bool)
    return rewards.max(axis=1) != rewards.min(axis=1)  # (N,) some spread


def acceptance_probability(p, K):
    """P(a group of K 0/1 rewards is not all equal) = 1 - p^K - (1-p)^K.

    Args:
        p: the success probability P(r = 1 | x), in `[0, 1]`.
        K: the group size, an int >= 1 (K = 1: every group is kept, 1.0).

    Returns:
        A float in `[0, 1]`.
    """
    return 1.0 - p**K - (1.0 - p) ** K if K > 1 else 1.0  # K = 1: every group kept


def _accepted(p, K):
    """Some group is accepted (else resampling never ends)."""
    if acceptance_probability.core(p, K) <= 0:
        return (
            f"p: expected 0 < p < 1 (at p = {p} every group of K = {K} has equal "
            f"rewards and resampling never ends)"
        )


def resample_factor(p, K):
    """The factor of eq. (dapo_reweight), 1 / (1 - p^K - (1-p)^K), for a 0/1 reward.

    Args:
        p: the success probability P(r = 1 | x), in `[0, 1]`; in `(0, 1)` when K >= 2.
        K: the group size, an int >= 1; K = 1 gives 1 (nothing is filtered).

    Returns:
        A float >= 1.

    Raises:
        ValueError: no group can be accepted (p = 0 or p = 1 with K >= 2: resampling never
            ends), or a bad argument (named).
    """
    return 1.0 / acceptance_probability.core(p, K)  # eq. (dapo_reweight)


def _within_cap(lengths, max_len, buffer_len):
    """The buffer and every length fit under the cap `max_len`."""
    if buffer_len > max_len:
        return f"buffer_len: expected an integer <= max_len = {max_len}, got {buffer_len}"
    if lengths.max() > max_len:
        return f"lengths: expected entries <= max_len = {max_len}, got max {lengths.max()}"


def overlong_penalty(lengths, max_len, buffer_len, penalty_factor=1.0):
    """DAPO's soft overlong penalty, eq. (overlong): lengths `(B,)` -> additive rewards `(B,)`.

    The length `|y|` is the response's extent, every token it occupies (tool outputs inside it
    included), not its number of trained tokens: the cap L_max bounds what the response fills
    of the context, tool outputs too, and verl's DAPO reward manager reads the length off the
    attention mask, not off the loss mask. For a right-padded mask both are
    `mask.sum(axis=1)`; for a mask with holes pass the last trained position + 1 (when the
    response ends on a trained token), not the sum.

    Args:
        lengths: `(B,)` response lengths, integers in `[0, max_len]`.
        max_len: the length cap L_max, an integer in `[1, 2**62]`.
        buffer_len: L_buf, in `[1, max_len]`.
        penalty_factor: `>= 0`; the penalty at |y| = L_max.
    """
    exceed = lengths - (max_len - buffer_len)  # (B,) > 0 in the buffer
    # eq. (overlong); the min before the product, so a long way below the buffer cannot overflow
    return np.minimum(-exceed, 0) / buffer_len * penalty_factor + 0.0  # +0.0: no -0.0


def truncated(tokens, mask, eos):
    """Which responses hit the cap without EOS.

    A row is truncated when it is non-empty and its last real token is not `eos`. With holes in
    the mask that is the token at the row's last trained position (the last 1 of the row), the
    same token as in the compacted row.

    Args:
        tokens: `(B, T)` integer token ids >= 0 (read at the last trained position only).
        mask: `(B, T)` 0/1; holes allowed.
        eos: the end-of-sequence token id, an int >= 0.

    Returns:
        A bool array `(B,)`, True where the row is truncated.
    """
    real = mask > 0  # (B, T)
    at = mask.shape[1] - 1 - np.argmax(real[:, ::-1], axis=1)  # (B,) last trained position
    last = tokens[np.arange(len(at)), at]  # (B,) last real token (any token for an empty row)
    return real.any(axis=1) & (last != eos)


def mask_truncated(tokens, mask, eos):
    """The mask with truncated rows zeroed (TRL `mask_truncated_completions`).

    Args:
        tokens: `(B, T)` integer token ids >= 0.
        mask: `(B, T)` 0/1; holes allowed.
        eos: the end-of-sequence token id, an int >= 0.

    Returns:
        `(B, T)` the mask, its truncated rows (`truncated`) all 0.
    """
    return mask * (~truncated.core(tokens, mask, eos))[:, None]  # (B, T)


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


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


NONNEGATIVE = number(0.0)
COUNT = number(1, integer=True)  # an integer >= 1


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

PROBABILITY = number(0.0, 1.0)
TOKEN_IDS = array("B T", integer=True, low=0)  # (B, T) int ids >= 0
EOS = number(0, integer=True)  # a token id >= 0

filter_groups = boundary(rewards=array("N K"))(filter_groups)

acceptance_probability = boundary(p=PROBABILITY, K=COUNT)(acceptance_probability)

resample_factor = boundary(p=PROBABILITY, K=COUNT, where=[_accepted])(resample_factor)

overlong_penalty = boundary(
    lengths=array("B", integer=True, low=0),
    max_len=number(1, 2**62, integer=True),  # the lengths' arithmetic stays within int64
    buffer_len=COUNT,
    penalty_factor=NONNEGATIVE,
    where=[_within_cap],
)(overlong_penalty)

truncated = boundary(mask=MASK, tokens=TOKEN_IDS, eos=EOS)(truncated)

mask_truncated = boundary(mask=MASK, tokens=TOKEN_IDS, eos=EOS)(mask_truncated)
