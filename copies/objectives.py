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
as the forward KL and `beta = 1` as the reverse KL, as TRL 1.16.0 does
(`trl/experimental/gkd/gkd_trainer.py:278-281`: `F.kl_div(input, target)` is
`target (log target - input)`, so `kl_div(student, teacher)` is KL(t || p)). Inside (0, 1) the
divergence vanishes at both ends, like `beta KL(t || p)` near 0 and `(1 - beta) KL(p || t)` near
1: the endpoints are the limits of `D_jsd / beta` and `D_jsd / (1 - beta)`, not of `D_jsd`.

The loss is the mean over real tokens (TRL's `reduction="batchmean"` with labels, line 315: the
sum over tokens and vocabulary over the number of unmasked tokens, clamped at 1, so an all-zero
mask gives 0):

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
(`distill/student.py`).

    $ python examples/distill.py
"""

import numbers

import numpy as np


__all__ = ["forward_kl", "reverse_kl", "generalized_jsd"]


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


def _jsd(ls, lt, w, tau, beta):
    if beta == 0.0:
        return _forward(ls, lt, w, tau)  # TRL line 278: beta = 0 is KL(t || p)
    if beta == 1.0:
        return _reverse(ls, lt, w, tau)  # TRL line 280: beta = 1 is KL(p || t)
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
    zs, zt, mask, _, tau = logits_args(student_logits, teacher_logits, mask, temperature=temperature)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = _forward(log_softmax(zs / tau), log_softmax(zt / tau), _weights(mask), tau)
    return finite_result(out, "student_logits", "the forward KL")


def reverse_kl(student_logits, teacher_logits, mask, temperature=1.0):
    """Token-mean reverse KL(p || t), eq. (distill_reverse), and its gradient in the logits.

    Args:
        student_logits: `(B, T, V)` finite logits of the student at each position.
        teacher_logits: `(B, T, V)` finite logits of the teacher at the same positions.
        mask: `(B, T)` 0/1 (holes allowed); the loss is the mean over its ones, eq. (distill_mean).
        temperature: `> 0`, divides both logits.

    Returns:
        `(loss, dloss_dlogits)`: a float and a `(B, T, V)` array (0 at padding).
    """
    zs, zt, mask, _, tau = logits_args(student_logits, teacher_logits, mask, temperature=temperature)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = _reverse(log_softmax(zs / tau), log_softmax(zt / tau), _weights(mask), tau)
    return finite_result(out, "student_logits", "the reverse KL")


def generalized_jsd(student_logits, teacher_logits, mask, beta=0.5, temperature=1.0):
    """GKD's generalized Jensen-Shannon divergence, eq. (distill_gkd), TRL 1.16.0's convention.

    `beta = 0` is the forward KL, `beta = 1` the reverse KL (exactly those functions), inside
    the mixture `m = (1 - beta) p + beta t`.

    Args:
        student_logits: `(B, T, V)` finite logits of the student at each position.
        teacher_logits: `(B, T, V)` finite logits of the teacher at the same positions.
        mask: `(B, T)` 0/1 (holes allowed); the loss is the mean over its ones, eq. (distill_mean).
        beta: in `[0, 1]`, the teacher's weight in the mixture (TRL's default 0.5).
        temperature: `> 0`, divides both logits.

    Returns:
        `(loss, dloss_dlogits)`: a float and a `(B, T, V)` array (0 at padding).
    """
    zs, zt, mask, beta, tau = logits_args(student_logits, teacher_logits, mask, beta, temperature)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = _jsd(log_softmax(zs / tau), log_softmax(zt / tau), _weights(mask), tau, beta)
    return finite_result(out, "student_logits", "the generalized JSD")


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/distill/checks.py
#   The boundary of the distillation part: one bundle call per public function of
# ----------------------------------------------------------------------------------------------


def _logits(x, name):
    z = float_array(x, name, ndim=3)  # (B, T, V), finite: every token has some probability
    return nonempty(z, name)


_NO_BETA = object()  # forward_kl and reverse_kl take no beta


def logits_args(student_logits, teacher_logits, mask, beta=_NO_BETA, temperature=1.0):
    """`(B, T, V)` student and teacher logits, a `(B, T)` mask, `beta` in [0, 1] (None when the
    caller takes none), temperature > 0."""
    zs = _logits(student_logits, "student_logits")
    zt = _logits(teacher_logits, "teacher_logits")
    same_shape("student_logits", zs, "teacher_logits", zt)
    mask = mask_array(mask, "mask", shape=zs.shape[:2])
    beta = None if beta is _NO_BETA else float_scalar(beta, "beta", low=0.0, high=1.0)
    temperature = float_scalar(temperature, "temperature", low=0.0, low_open=True)
    return zs, zt, mask, beta, temperature


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
