# minirl_lm 0.1.0: a self-contained copy of minirl_lm/distill/student.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/distill/student.py -o DIR
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

"""A student of limited capacity, and each distiller's exact expected gradient and fixed point.

The tied student: a table `theta` of `G` rows and a map `tie` from the `S` states to them; state
`s` uses row `tie[s]`,

```text
pi(.|s) = softmax(theta[tie[s]])                                             eq. (distill_tied)
dL/dtheta[g] = sum_{s: tie[s] = g} dL/dz_s                                   eq. (distill_tied_grad)
```

`tie = arange(S)` is the tabular student, which can match any teacher; `tie = zeros(S)` on the
chapter's toy (one state per prompt) is a student that cannot see the prompt; tying the states of
a tree by depth gives one whose next token cannot depend on the earlier ones.

The exact expected gradient of each distiller, with `x ~ mu_0` uniform and one response drawn
from its sampler, goes through the exact engine (`minirl_lm.exact.scores.draw_moments` over the
enumerated responses of the task, `TokenMDP.all_responses`): every update here is
`g = sum_t c_t (e_{y_t} - pi(.|s_t))`, eq. (exact_linear), with the coefficients

```text
forward_kl         y ~ teacher,  c_t = -1                     eq. (distill_nll)
reverse_kl         y ~ student,  c_t = k_t                    eq. (distill_reward)
reverse_kl_to_go   y ~ student,  c_t = sum_{t' >= t} k_t'     eq. (distill_to_go)
gkd                y ~ student,  c_t = G_{y_t}(s_t) / pi(y_t|s_t)
```

where `G(s)` is `d D_jsd / d z` at state `s`, eq. (distill_gkd_grad): a vector summing to 0,
so `E_{y~pi(.|s)}[(G_y / pi_y)(e_y - pi)] = G(s)`, the full-vocabulary loss at the states the
student visits (GKD with `lmbda = 1`: every batch the student's). `gkd` at `beta = 1` is the
reverse KL's loss form, and its expected gradient equals `reverse_kl`'s (the reward form) exactly.

The fixed point runs natural-gradient steps on the exact gradient: the Fisher matrix of row `g`
under the sampler is `w_g (diag pi_g - pi_g pi_g^T)`, `w_g` the sampler's expected visits to the
states tied to `g`, and `Delta theta_g = -lr (E[g]_g / pi_g) / w_g` solves it (up to a shift of
the row, which the softmax ignores). For `0 < beta < 1` the JSD's curvature at the teacher is
`beta (1 - beta)` times the KL's, so the step is divided by it.

    $ python examples/distill.py
"""

import numbers

import numpy as np


__all__ = ["tied_probs", "tied_backward", "expected_gradient", "fixed_point"]


OBJECTIVES = ("forward_kl", "reverse_kl", "reverse_kl_to_go", "gkd")


def tied_probs(theta, tie):
    """The tied student's table, eq. (distill_tied).

    Args:
        theta: `(G, V)` finite logits, one row per group.
        tie: `(S,)` int group of each state, in `[0, G)`.

    Returns:
        `(S, V)` float64 probabilities `pi(.|s) = softmax(theta[tie[s]])`.
    """
    theta, tie = tied_args(theta, tie)
    with np.errstate(over="ignore"):  # a row spanning over 1.8e308 gives -inf, probability 0
        return np.exp(log_softmax(theta))[tie]  # (S, V)


def tied_backward(dlogits, tie, G):
    """Per-state gradients summed into their groups, eq. (distill_tied_grad).

    Args:
        dlogits: `(S, V)` the gradient with respect to each state's logits.
        tie: `(S,)` int group of each state, in `[0, G)`.
        G: the number of groups, `>= 1`.

    Returns:
        `(G, V)` float64, the gradient with respect to `theta`.
    """
    dlogits, tie, G = backward_args(dlogits, tie, G)
    return _tied_backward(dlogits, tie, G)


def _tied_backward(dlogits, tie, G):
    out = np.zeros((G, dlogits.shape[1]))  # (G, V)
    np.add.at(out, tie, dlogits)  # eq. (distill_tied_grad)
    return out


def _terms(objective, theta, tie, teacher, ro, N, beta):
    """The exact E[dloss/dtheta] `(G, V)` and the sampler's visits per group `(G,)`."""
    lpi = log_softmax(theta)[tie]  # (S, V) log pi
    lt = np.log(teacher)  # (S, V)
    st, tk, mask = ro.states, ro.tokens, ro.mask
    lsampler = lt if objective == "forward_kl" else lpi  # (S, V)
    q = np.exp((mask * lsampler[st, tk]).sum(axis=1)) / N  # (B,) mu_0(x) sampler(y|x)
    if objective == "forward_kl":
        coef = _nll_coef(mask)  # (B, T) eq. (distill_nll)
    elif objective == "gkd":
        ones = np.ones((lpi.shape[0], 1))  # (S, 1): each state once, weight 1
        _, G = _jsd(lpi[:, None], lt[:, None], ones, 1.0, beta)  # (S, 1, V) eq. (distill_gkd_grad)
        G = G[:, 0]  # (S, V) d D_jsd / dz at every state
        coef = G[st, tk] * np.exp(-lpi[st, tk])  # (B, T) G_y / pi_y
    else:
        coef = _reward_coef(lpi[st, tk], lt[st, tk], mask, objective == "reverse_kl_to_go")  # (B, T)
    mean, _ = _draw_moments(q, coef, np.exp(lpi), st, tk, mask)  # (S, V) eq. (exact_moments)
    grad = _tied_backward(mean, tie, theta.shape[0])  # (G, V)
    visits = np.bincount(tie[st].ravel(), (q[:, None] * mask).ravel(), minlength=theta.shape[0])  # (G,)
    return grad, visits


def expected_gradient(objective, theta, tie, teacher, mdp, beta=0.5):
    """A distiller's exact expected gradient in the tied student's `theta` (see the module).

    Args:
        objective: one of `OBJECTIVES`.
        theta: `(G, V)` finite logits of the student, one row per group.
        tie: `(S,)` group of each state of `mdp`, in `[0, G)`.
        teacher: `(S, V)` the teacher's probabilities, all `> 0`.
        mdp: a `TokenMDP` with `ids="enumerate"` (`S` states, `V` tokens).
        beta: GKD's beta in `[0, 1]` (used by `gkd` only).

    Returns:
        `(G, V)` float64 `E[dloss/dtheta]`, prompts uniform, one response each.
    """
    objective, theta, tie, teacher, mdp, beta = exact_args(objective, theta, tie, teacher, mdp, beta, OBJECTIVES)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        grad, _ = _terms(objective, theta, tie, teacher, mdp.all_responses(), mdp.N, beta)
    return finite_result(grad, "theta", "the expected gradient")


def fixed_point(objective, theta, tie, teacher, mdp, beta=0.5, lr=0.5, max_steps=10000, tol=1e-12):
    """Run a distiller's exact expected gradient to its fixed point (natural-gradient steps).

    Args:
        objective: one of `OBJECTIVES`.
        theta: `(G, V)` finite starting logits of the student (not modified).
        tie: `(S,)` group of each state of `mdp`, in `[0, G)`.
        teacher: `(S, V)` the teacher's probabilities, all `> 0`.
        mdp: a `TokenMDP` with `ids="enumerate"`.
        beta: GKD's beta in `[0, 1]` (used by `gkd` only).
        lr: step size in `(0, 1]` of the natural-gradient step.
        max_steps: `>= 1`, the most steps taken.
        tol: `> 0`; stop once no logit moves by more than it.

    Returns:
        `(theta, steps)`: the `(G, V)` logits reached (each row's max 0) and the steps taken;
        `steps == max_steps` means the tolerance was not met.
    """
    objective, theta, tie, teacher, mdp, beta, lr, max_steps, tol = fixed_args(
        objective, theta, tie, teacher, mdp, beta, lr, max_steps, tol, OBJECTIVES
    )
    ro, N = mdp.all_responses(), mdp.N
    curv = beta * (1.0 - beta) if objective == "gkd" and 0.0 < beta < 1.0 else 1.0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        theta = theta - theta.max(axis=1, keepdims=True)  # (G, V) a copy, each row's max 0
        step = 0
        while step < max_steps:
            step += 1
            grad, visits = _terms(objective, theta, tie, teacher, ro, N, beta)
            pi = np.exp(log_softmax(theta))  # (G, V)
            seen = visits > 0
            delta = np.zeros_like(theta)  # (G, V) the Fisher's solve, row by row
            delta[seen] = -(lr / curv) * grad[seen] / (pi[seen] * visits[seen, None])
            theta = theta + delta
            theta -= theta.max(axis=1, keepdims=True)  # a shift the softmax ignores
            if np.ptp(delta, axis=1).max() <= tol:
                break
    return finite_result(theta, "theta", "the fixed point"), step


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
# part 2: from minirl_lm/distill/objectives.py
#   Divergences from the student to a teacher, token by token, on whole next-token distributions.
# ----------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------
# part 3: from minirl_lm/distill/samples.py
#   Distillation from sampled tokens: maximum likelihood on the teacher's samples (off-policy) and
# ----------------------------------------------------------------------------------------------


def _nll_coef(mask):
    return -mask  # (B, T) dloss/dlogp of one response's summed NLL, eq. (distill_nll)


def _reward_coef(logp, logp_teacher, mask, to_go):
    k = mask * (logp - logp_teacher)  # (B, T) -r_t, the sampled reverse KL per token
    c = np.cumsum(k[:, ::-1], axis=1)[:, ::-1] if to_go else k  # (B, T) eq. (distill_to_go)
    return mask * c  # (B, T) eq. (distill_reward), one response's coefficients


# ----------------------------------------------------------------------------------------------
# part 4: from minirl_lm/exact/scores.py
#   Updates linear in per-token coefficients, and their exact moments over one draw.
# ----------------------------------------------------------------------------------------------


def _draw_moments(q, coef, probs, states, tokens, mask):
    c = coef * mask  # (B, T)
    w = q[:, None] * c  # (B, T) the draw's weight on each token's score
    mean = np.zeros(probs.shape)  # (S, V)
    np.add.at(mean, (states, tokens), w)  # e_{y_t}
    mean -= np.bincount(states.ravel(), w.ravel(), minlength=probs.shape[0])[:, None] * probs  # - pi(.|s)
    sq = (probs * probs).sum(axis=1)  # (S,) |pi(.|s)|^2
    norm = 1.0 - 2.0 * probs[states, tokens] + sq[states]  # (B, T) |score_t|^2, eq. (exact_norm)
    second = float(q @ (c * c * norm).sum(axis=1))  # E|g|^2
    return mean, max(second - float((mean * mean).sum()), 0.0)  # eq. (exact_moments)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/distill/checks.py
#   The boundary of the distillation part: one bundle call per public function of
# ----------------------------------------------------------------------------------------------


def tied_args(theta, tie):
    """A `(G, V)` finite table and `(S,)` group ids in `[0, G)`, every group used."""
    theta = nonempty(float_array(theta, "theta", ndim=2), "theta")
    tie = int_array(tie, "tie", ndim=1, low=0, high=theta.shape[0])
    nonempty(tie, "tie")
    return theta, tie


def backward_args(dlogits, tie, G):
    """`(S, V)` per-state gradients, `(S,)` group ids, the number of groups `G >= 1`."""
    dlogits = nonempty(float_array(dlogits, "dlogits", ndim=2), "dlogits")
    G = int_scalar(G, "G", low=1, high=10**7)
    tie = int_array(tie, "tie", shape=(dlogits.shape[0],), low=0, high=G)
    return dlogits, tie, G


def exact_args(objective, theta, tie, teacher, mdp, beta, objectives):
    """The exact run: an objective's name, the tied student `(theta, tie)`, the teacher's `(S,
    V)` table, an enumerated `TokenMDP` with `S` states and `V` tokens, GKD's beta."""
    objective = choice(objective, "objective", objectives)
    theta, tie = tied_args(theta, tie)
    mdp = children_args(mdp)
    S, V = mdp.S, mdp.V
    if tie.shape != (S,):
        raise ValueError(f"tie: expected one group id per state of mdp, shape ({S},), got {tie.shape}")
    if theta.shape[1] != V:
        raise ValueError(f"theta: expected V = {V} columns (the mdp's tokens), got {theta.shape[1]}")
    teacher = prob_table(teacher, "teacher", shape=(S, V))
    if (teacher <= 0).any():
        raise ValueError(f"teacher: expected probabilities > 0 (every KL finite), got min {teacher.min()}")
    beta = float_scalar(beta, "beta", low=0.0, high=1.0)
    return objective, theta, tie, teacher, mdp, beta


def fixed_args(objective, theta, tie, teacher, mdp, beta, lr, max_steps, tol, objectives):
    """`exact_args`, then the run's step size `lr` in (0, 1], `max_steps >= 1` and `tol > 0`."""
    out = exact_args(objective, theta, tie, teacher, mdp, beta, objectives)
    lr = float_scalar(lr, "lr", low=0.0, high=1.0, low_open=True)
    max_steps = int_scalar(max_steps, "max_steps", low=1, high=10**7)
    tol = float_scalar(tol, "tol", low=0.0, low_open=True)
    return out + (lr, max_steps, tol)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/exact/checks.py
#   The boundary of the exact engine: one bundle call per public function of `minirl_lm/exact/`.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def children_args(mdp):
    """A token MDP whose states are enumerated (a tree table needs every state); by the names
    `children` calls, so a copy's TokenMDP and the package's both pass."""
    need = ("S", "V", "N", "ids", "all_states", "is_terminal", "state_id")
    missing = [a for a in need if not hasattr(mdp, a)]
    if missing:
        raise TypeError(f"mdp: expected a TokenMDP, got {_describe(mdp)} without {', '.join(missing)}")
    if mdp.ids != "enumerate":
        raise ValueError(f"mdp: expected ids='enumerate' (every state listed), got {mdp.ids!r}")
    return mdp


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


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


def int_array(x, name, ndim=None, shape=None, low=None, high=None):
    """Return ``x`` as an int64 array of ids in ``[low, high)`` after checking it."""
    arr = _asarray(x, name)
    if arr.dtype.kind not in "iu":  # signed or unsigned integers
        raise TypeError(f"{name}: expected an integer array of ids, got {_describe(arr)}")
    arr = arr.astype(np.int64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: expected ids >= {low}, got min {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: expected ids < {high}, got max {arr.max()}")
    return arr


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


def prob_table(p, name, shape=None, ndim=None):
    """Return ``p`` as float64 probabilities: entries >= 0, each row (last axis) summing to 1
    within 1e-9 absolutely (stricter than ``Generator.choice``'s ~1.5e-8, so a table that
    passes here is accepted by ``rng.choice``), and non-empty."""
    p = float_array(p, name, ndim=ndim, shape=shape)
    nonempty(p, name)
    if (p < 0).any():
        raise ValueError(f"{name}: expected probabilities >= 0, got min {p.min()}")
    s = p.sum(axis=-1)
    if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
        bad = np.abs(s - 1.0).ravel()
        raise ValueError(
            f"{name}: expected rows summing to 1 (within 1e-9), got a row summing "
            f"to {float(s.ravel()[int(np.argmax(bad))])!r}"
        )
    return p


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
