# minirl_lm 0.1.0: a self-contained copy of minirl_lm/distill/objectives.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/distill/objectives.py -o DIR
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

"""Divergences from the student to a teacher, token by token, on whole next-token distributions.

At every position of a batch the student's logits `z` give `p = softmax(z / tau)` and the
teacher's give `t`; `tau` is a temperature applied to both (TRL's `temperature`). Three
divergences of `p` from `t`, summed over the vocabulary:

```text
D_fwd = sum_v t_v (log t_v - log p_v)        KL(t || p), mode-covering        eq. (distill_forward)
D_rev = sum_v p_v (log p_v - log t_v)        KL(p || t), mode-seeking         eq. (distill_reverse)
m     = (1 - beta) p + beta t
D_jsd = beta KL(t || m) + (1 - beta) KL(p || m),   0 < beta < 1               eq. (distill_gkd)
```

and GKD's generalized Jensen-Shannon divergence (Agarwal et al. 2024, eq. 1) takes `beta = 0`
as the forward KL and `beta = 1` as the reverse KL, as TRL's GKD trainer does (`F.kl_div(input,
target)` is `target (log target - input)`, so `kl_div(student, teacher)` is KL(t || p)). Inside (0, 1) the
divergence vanishes at both ends, like `beta KL(t || p)` near 0 and `(1 - beta) KL(p || t)` near
1: the endpoints are the limits of `D_jsd / beta` and `D_jsd / (1 - beta)`, not of `D_jsd`.

The loss is the mean over real tokens (TRL's `reduction="batchmean"` with labels: the sum over
tokens and vocabulary over the number of unmasked tokens, clamped at 1, so an all-zero mask
gives 0):

```text
loss = sum_{b,t} mask D / max(1, sum mask)                                   eq. (distill_mean)
```

Gradients with respect to the student's logits (the policy's backward takes them from here;
the teacher is data). With `k_v = log p_v - log t_v`, `r_v = log p_v - log m_v`:

```text
d D_fwd / d z_v = (p_v - t_v) / tau                                          eq. (distill_forward_grad)
d D_rev / d z_v = p_v (k_v - D_rev) / tau                                    eq. (distill_reverse_grad)
d D_jsd / d z_v = (1 - beta) p_v (r_v - KL(p || m)) / tau                     eq. (distill_gkd_grad)
```

(the last because `d D_jsd / d p_v = (1 - beta) r_v + (1 - beta)(1 - ((1 - beta) p_v + beta t_v)
/ m_v) = (1 - beta) r_v`, then the softmax's Jacobian `p_v (a_v - sum_u p_u a_u)`). Each is a
vector summing to 0 over the vocabulary, so it equals `sum_v G_v (e_v - p)`: a weight
`G_v / p_v` on the score of token `v`, which is how the exact engine takes it
(`distill/student.py`, through `jsd_terms`, the divergence on log-probabilities).

    $ python examples/distill.py

Names in the frameworks (`docs/next.md` maps them): `beta` is TRL `GKDConfig.beta` (0.5),
`temperature` TRL `GKDConfig.temperature`.
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["forward_kl", "reverse_kl", "generalized_jsd", "jsd_terms"]


def _weights(mask):
    return mask / max(1.0, mask.sum())  # (B, T) eq. (distill_mean)


def _forward(ls, lt, w, tau):
    p, t = np.exp(ls), np.exp(lt)  # (B, T, V)
    D = (t * (lt - ls)).sum(axis=-1)  # (B, T) eq. (distill_forward)
    G = (p - t) / tau  # (B, T, V) eq. (distill_forward_grad)
    return float((w * D).sum()), w[..., None] * G


def _reverse(ls, lt, w, tau):
    p = np.exp(ls)  # (B, T, V)
    k = ls - lt  # (B, T, V) log p - log t
    D = (p * k).sum(axis=-1)  # (B, T) eq. (distill_reverse)
    G = p * (k - D[..., None]) / tau  # (B, T, V) eq. (distill_reverse_grad)
    return float((w * D).sum()), w[..., None] * G


def jsd_terms(ls, lt, w, tau, beta):
    """eq. (distill_gkd) on log-probabilities: `(sum w D_jsd, w dD_jsd/dz)` for the student's
    `ls` and the teacher's `lt` `(..., V)`, position weights `w` `(...)`, the temperature `tau`
    that divided the logits and `beta` in [0, 1] (0: the forward KL, 1: the reverse KL).
    What `generalized_jsd` computes after the log-softmax, and the exact engine at each state."""
    if beta == 0.0:
        return _forward(ls, lt, w, tau)  # TRL: beta = 0 is KL(t || p)
    if beta == 1.0:
        return _reverse(ls, lt, w, tau)  # TRL: beta = 1 is KL(p || t)
    p, t = np.exp(ls), np.exp(lt)  # (B, T, V)
    lm = np.logaddexp(ls + np.log1p(-beta), lt + np.log(beta))  # (B, T, V) log m
    r = ls - lm  # (B, T, V) log p - log m
    kl_p = (p * r).sum(axis=-1)  # (B, T) KL(p || m)
    kl_t = (t * (lt - lm)).sum(axis=-1)  # (B, T) KL(t || m)
    D = beta * kl_t + (1.0 - beta) * kl_p  # (B, T) eq. (distill_gkd)
    G = (1.0 - beta) * p * (r - kl_p[..., None]) / tau  # (B, T, V) eq. (distill_gkd_grad)
    return float((w * D).sum()), w[..., None] * G


def forward_kl(student_logits, teacher_logits, mask, temperature=1.0):
    """Token-mean forward KL(t || p), eq. (distill_forward), and its gradient in the logits.

    Args:
        student_logits: `(B, T, V)` finite logits of the student at each position.
        teacher_logits: `(B, T, V)` finite logits of the teacher at the same positions.
        mask: `(B, T)` 0/1 (holes allowed); the loss is the mean over its ones, eq. (distill_mean).
        temperature: `> 0`, divides both logits.

    Returns:
        `(loss, dloss_dlogits)`: a float and a `(B, T, V)` array (0 at padding).
    """
    tau = temperature
    return _forward(log_softmax(student_logits / tau), log_softmax(teacher_logits / tau), _weights(mask), tau)


def reverse_kl(student_logits, teacher_logits, mask, temperature=1.0):
    """Token-mean reverse KL(p || t), eq. (distill_reverse), and its gradient in the logits.

    Arguments and result as `forward_kl`.
    """
    tau = temperature
    return _reverse(log_softmax(student_logits / tau), log_softmax(teacher_logits / tau), _weights(mask), tau)


def generalized_jsd(student_logits, teacher_logits, mask, beta=0.5, temperature=1.0):
    """GKD's generalized Jensen-Shannon divergence, eq. (distill_gkd), TRL's convention.

    `beta = 0` is the forward KL, `beta = 1` the reverse KL (exactly those functions), inside
    the mixture `m = (1 - beta) p + beta t`. The other arguments and the result as `forward_kl`.

    Args:
        beta: in `[0, 1]`, the teacher's weight in the mixture (TRL's default 0.5).
    """
    tau = temperature
    ls, lt = log_softmax(student_logits / tau), log_softmax(teacher_logits / tau)  # (B, T, V)
    return jsd_terms(ls, lt, _weights(mask), tau, beta)


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


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


POSITIVE = number(0.0, low_open=True)


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

LOGITS = dict(student_logits=array("B T V"), teacher_logits=array("B T V"), mask=MASK, temperature=POSITIVE)

forward_kl = boundary(**LOGITS, returns="loss dloss_dlogits")(forward_kl)

reverse_kl = boundary(**LOGITS, returns="loss dloss_dlogits")(reverse_kl)

generalized_jsd = boundary(**LOGITS, beta=number(0.0, 1.0), returns="loss dloss_dlogits")(generalized_jsd)
