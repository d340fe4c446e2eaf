# minirl_lm 0.1.0: a self-contained copy of minirl_lm/distill/samples.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/distill/samples.py -o DIR
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

"""Distillation from sampled tokens: maximum likelihood on the teacher's samples (off-policy) and
the per-token reverse KL as a reward on the student's own samples (on-policy).

Off-policy, the teacher writes the responses and the student maximizes their likelihood
(sequence-level knowledge distillation, Kim & Rush 2016; hard distillation, prime-rl's `sft`):

```text
loss = -(1/B) sum_{b,t} mask log pi(y_t|s_t),   y ~ teacher                   eq. (distill_nll)
dloss/dlogp = -mask / B
```

Its expectation is the sequence-level forward KL `E_x KL(T(.|x) || pi(.|x))` up to the
teacher's entropy (a constant), so its expected gradient is the forward KL's, token by token on
the teacher's states: `sum_s d_T(s) (pi(.|s) - t(.|s))` in row `s`.

On-policy, the student writes the responses and each token earns the reward
`r_t = log t(y_t|s_t) - log pi(y_t|s_t)` (minus the per-token reverse KL), used as that token's
advantage with no sum over later tokens: prime-rl (commit 559b447,
`src/prime_rl/trainer/rl/loss.py:225-232`, `ref_kl = ref_logprobs - trainer_logprobs`,
`pg_loss = keep_mask * ref_kl.detach() * importance_ratio`, `loss = (-pg_loss + ...).sum()`)
and slime (commit 624b824, `slime/backends/megatron_utils/loss.py:696-697`,
`advantages = adv - opd_kl_coef * (student_log_probs - teacher_log_probs)`). As a
stop-gradient surrogate, with `k_t = log pi(y_t|s_t) - log t(y_t|s_t)` held:

```text
loss = (1/B) sum_{b,t} mask sg[c_t] log pi(y_t|s_t),   c_t = k_t              eq. (distill_reward)
dloss/dlogp = mask c_t / B
```

Its expected gradient is the reverse KL's of `distill/objectives.py` on the student's states:
`E_{y~pi}[k(s, y) (e_y - pi)] = sum_y pi(y|s) k(s, y) (e_y - pi) = dKL(pi(.|s) || t(.|s))/dz`,
since `sum_y pi (e_y - pi) = 0` lets the `-KL` of eq. (distill_reverse_grad) be dropped (it is
a baseline). Both are the per-state reverse KL weighted by the student's occupancy, with no
gradient through the occupancy. The gradient of the sequence-level KL(pi || T) over whole
responses adds that part: with `to_go=True` the coefficient is the reverse KL still to come,

```text
c_t = sum_{t' >= t} mask k_t'                                                 eq. (distill_to_go)
```

and `E[g] = grad_theta E_x KL(pi(.|x) || T(.|x))` exactly (REINFORCE with the return to go; the
term `E[sum_t grad k_t] = E[sum_t score_t] = 0`). On one-token responses the two coincide.

    $ python examples/distill.py
"""

import numbers

import numpy as np


__all__ = ["teacher_nll", "reverse_kl_reward"]


def _nll_coef(mask):
    return -mask  # (B, T) dloss/dlogp of one response's summed NLL, eq. (distill_nll)


def _reward_coef(logp, logp_teacher, mask, to_go):
    k = mask * (logp - logp_teacher)  # (B, T) -r_t, the sampled reverse KL per token
    c = np.cumsum(k[:, ::-1], axis=1)[:, ::-1] if to_go else k  # (B, T) eq. (distill_to_go)
    return mask * c  # (B, T) eq. (distill_reward), one response's coefficients


def teacher_nll(logp, mask):
    """Maximum likelihood on the teacher's samples, eq. (distill_nll): the off-policy distiller.

    Args:
        logp: `(B, T)` the student's log-probs of the teacher's tokens.
        mask: `(B, T)` 0/1 (holes allowed).

    Returns:
        `(loss, dloss_dlogp)`: a float (the mean over responses of the summed negative
        log-likelihood) and a `(B, T)` array (0 at padding).
    """
    logp, mask = nll_args(logp, mask)
    B = logp.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        loss = -(mask * logp).sum() / B  # eq. (distill_nll)
    dloss_dlogp = _nll_coef(mask) / B  # (B, T)
    return finite_result((float(loss), dloss_dlogp), "logp", "the teacher NLL")


def reverse_kl_reward(logp, logp_teacher, mask, to_go=False):
    """The per-token reverse KL as a reward, eq. (distill_reward): the on-policy distiller.

    Args:
        logp: `(B, T)` the student's log-probs of its own tokens.
        logp_teacher: `(B, T)` the teacher's log-probs of the same tokens (data).
        mask: `(B, T)` 0/1 (holes allowed).
        to_go: False (prime-rl, slime: each token's own `k_t`) or True (the reverse KL to come,
            eq. (distill_to_go): the exact gradient of the sequence-level KL).

    Returns:
        `(loss, dloss_dlogp)`: the surrogate's value `(1/B) sum mask sg[c] logp` and its
        gradient `mask c / B`, `(B, T)` (0 at padding).
    """
    logp, logp_teacher, mask, to_go = reward_args(logp, logp_teacher, mask, to_go)
    B = logp.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        dloss_dlogp = _reward_coef(logp, logp_teacher, mask, to_go) / B  # (B, T) eq. (distill_reward)
        loss = (dloss_dlogp * logp).sum()
    return finite_result((float(loss), dloss_dlogp), "logp", "the reverse-KL reward")


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/validate.py
#   The boundary of the log-prob primitive, the tabular policy and the kernels' NumPy twins:
# ----------------------------------------------------------------------------------------------


def flag(x, name):
    """Return ``x`` if it is a bool (Python or NumPy), else a TypeError naming ``name``."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a bool (True or False), got {_describe(x)}")
    return bool(x)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/distill/checks.py
#   The boundary of the distillation part: one bundle call per public function of
# ----------------------------------------------------------------------------------------------


def nll_args(logp, mask):
    """`(B, T)` token log-probs of the teacher's samples under the student, and their mask."""
    logp = float_array(logp, "logp", ndim=2)
    mask = mask_array(mask, "mask", shape=logp.shape)
    return logp, mask


def reward_args(logp, logp_teacher, mask, to_go):
    """`(B, T)` student and teacher log-probs of the student's samples, a mask, the to-go flag."""
    logp = float_array(logp, "logp", ndim=2)
    logp_teacher = float_array(logp_teacher, "logp_teacher", ndim=2)
    same_shape("logp", logp, "logp_teacher", logp_teacher)
    mask = mask_array(mask, "mask", shape=logp.shape)
    return logp, logp_teacher, mask, flag(to_go, "to_go")


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
