# minirl_lm 0.1.0: a self-contained copy of minirl_lm/direct/family_div.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/direct/family_div.py -o DIR
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

"""The f-divergence scores of f-DPO and TR-DPO's soft reference update, gradients by hand.

**f-DPO.** Replacing `KL(pi || pi_ref)` in the regularized objective by an f-divergence
`D_f(pi || pi_ref) = E_{pi_ref} f(pi / pi_ref)` changes the implicit reward from
`beta log(pi / pi_ref)` to `beta f'(pi / pi_ref)`. On the sequence log-ratio `h = log pi(y|x) -
log pi_ref(y|x)` (`t = e^h`) the score `s(h) = f'(e^h)` of each divergence, and its derivative:

```text
reverse_kl        f'(t) = log t + 1 (the 1 cancels)   s = h                        ds/dh = 1
forward_kl        f'(t) = 1 - 1/t                     s = 1 - e^(-h)               ds/dh = e^(-h)
js_divergence     f'(t) = log(2t / (t + 1))           s = log 2 + log sigma(h)     ds/dh = sigma(-h)
alpha_divergence  f'(t) = (t^(a-1) - 1) / (a - 1)     s = (e^((a-1) h) - 1)/(a-1)  ds/dh = e^((a-1) h)
                                                                                   eq. (f_score)
```

(`a` is the argument `alpha`, TRL's `f_alpha_divergence_coef`; at `|a - 1| < 1e-6` the score is
`h`, as TRL falls back to reverse_kl.) The margin of a pair is `s(h_c) - s(h_r)`; `family.py`
puts it into the losses that TRL allows an f-divergence for. Deviation from TRL: the exponent of
the alpha score is not clamped at 80 (TRL clamps it so that float32 stays finite); float64 only
fails beyond about 709, and then the finite guard names the log-probs.

**TR-DPO.** The reference is not frozen: every `tau` optimizer steps it is pulled towards the
policy, in parameters, `theta_ref <- (1 - alpha) theta_ref + alpha theta`, eq. (tr_dpo_sync). On
a tabular softmax that is a per-state geometric mixture of the two next-token distributions.
An entry that is `-inf` (an impossible token) in either table stays `-inf` unless its weight is
0.

Names in the frameworks (TRL 1.16.0, `trl/trainer/dpo_trainer.py`, `trl/trainer/callbacks.py`;
defaults in parentheses, not results of this library):

```text
divergence          TRL DPOConfig.f_divergence_type ("reverse_kl")
alpha               TRL DPOConfig.f_alpha_divergence_coef (0.5)
sync_reference      TRL DPOConfig.sync_ref_model (False), ref_model_mixup_alpha (0.6),
                    ref_model_sync_steps (512): SyncRefModelCallback._sync_target_model
```

Demonstrated by `python examples/preferences.py` (the rows fdpo_* and tr_dpo). Imports NumPy and
the checks only.
"""

import numbers

import numpy as np


__all__ = ["sync_reference"]


DIVERGENCES = ("reverse_kl", "forward_kl", "js_divergence", "alpha_divergence")


def _f_score(h, divergence, alpha):
    """Trusted core: the score s(h) and ds/dh, eq. (f_score), of log-ratios h (P,). Overflow of
    exp is left to the caller's finite guard (errstate ignored there)."""
    if divergence == "forward_kl":
        e = np.exp(-h)  # (P,) 1/t
        return -np.expm1(-h), e  # s = 1 - 1/t;  ds/dh = e^(-h)
    if divergence == "js_divergence":
        return np.log(2.0) - np.logaddexp(0.0, -h), sigmoid(-h)  # log 2 + log sigma(h)
    if divergence == "alpha_divergence" and abs(alpha - 1.0) >= 1e-6:
        t = (alpha - 1.0) * h  # (P,)
        return np.expm1(t) / (alpha - 1.0), np.exp(t)  # ds/dh = e^((a-1) h)
    return h, np.ones_like(h)  # reverse_kl (and alpha = 1)


def sync_reference(theta_ref, theta, mixup):
    """TR-DPO's soft update of the reference, eq. (tr_dpo_sync): `(1 - alpha) theta_ref + alpha theta`.

    Args:
        theta_ref: `(S, V)` the reference's logits (`-inf` for an impossible token allowed).
        theta: `(S, V)` the policy's logits.
        mixup: `alpha` in `[0, 1]` (TRL's `ref_model_mixup_alpha`); 0 keeps the reference,
            1 copies the policy.

    Returns:
        `(S, V)` the new reference logits (a new array; the inputs are not written).
    """
    theta_ref, theta, alpha = sync_args(theta_ref, theta, mixup)
    a = (1.0 - alpha) * theta_ref if alpha < 1.0 else np.zeros_like(theta)  # (S, V) a weight 0 drops -inf
    b = alpha * theta if alpha > 0.0 else np.zeros_like(theta)  # (S, V)
    return a + b  # eq. (tr_dpo_sync); -inf + finite = -inf, -inf + -inf = -inf: no NaN


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/direct/checks.py
#   The boundary of the direct-alignment part: one bundle call per public function of
# ----------------------------------------------------------------------------------------------


def sync_args(theta_ref, theta, mixup):
    """`sync_reference`'s arguments: two `(S, V)` logit tables (`-inf` allowed) and alpha in [0, 1]."""
    theta_ref = float_array(theta_ref, "theta_ref", ndim=2, allow_neginf=True)
    theta = float_array(theta, "theta", shape=theta_ref.shape, allow_neginf=True)
    return theta_ref, theta, float_scalar(mixup, "mixup", low=0.0, high=1.0)


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
