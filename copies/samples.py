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
advantage with no sum over later tokens: prime-rl (`ref_kl = ref_logprobs - trainer_logprobs`,
`pg_loss = keep_mask * ref_kl.detach() * importance_ratio`, `loss = (-pg_loss + ...).sum()`)
and slime (`advantages = adv - opd_kl_coef * (student_log_probs - teacher_log_probs)`); the
commits and lines read are in `docs/next.md`. As a
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

import functools
import inspect

import numpy as np


__all__ = ["teacher_nll", "reverse_kl_reward", "nll_coef", "reward_coef"]


def nll_coef(mask):
    """`(B, T)` dloss/dlogp of each response's summed NLL, eq. (distill_nll): `-mask`."""
    return -mask


def reward_coef(logp, logp_teacher, mask, to_go):
    """`(B, T)` each response's coefficients `mask c_t`, eq. (distill_reward) (with `to_go`,
    eq. (distill_to_go)), of read `(B, T)` arrays."""
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
    B = logp.shape[0]
    loss = -(mask * logp).sum() / B  # eq. (distill_nll)
    return float(loss), nll_coef(mask) / B  # (B, T)


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
    dloss_dlogp = reward_coef(logp, logp_teacher, mask, to_go) / logp.shape[0]  # (B, T) eq. (distill_reward)
    return float((dloss_dlogp * logp).sum()), dloss_dlogp


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


def flag(x, name, dims):
    """True or False (a NumPy bool too; not 0 or 1)."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {_show(x)}")
    return bool(x)


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)


teacher_nll = boundary(logp=TOKENS, mask=MASK, returns="loss dloss_dlogp")(teacher_nll)

reverse_kl_reward = boundary(
    logp=TOKENS, logp_teacher=TOKENS, mask=MASK, to_go=flag, returns="loss dloss_dlogp"
)(reverse_kl_reward)
