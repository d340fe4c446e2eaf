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

import functools
import inspect
import numbers

import numpy as np


__all__ = ["OBJECTIVES", "tied_probs", "tied_backward", "expected_gradient", "fixed_point"]

OBJECTIVES = ("forward_kl", "reverse_kl", "reverse_kl_to_go", "gkd")


def _enumerated_mdp(mdp, name, dims):
    """A `TokenMDP` with `ids="enumerate"` (every state listed); its `S` and `V` bind the letters."""
    mdp = has("a TokenMDP", "S V N ids all_responses()")(mdp, name, dims)
    if mdp.ids != "enumerate":
        raise ValueError(f"{name}: expected ids='enumerate' (every state listed), got {mdp.ids!r}")
    dims.update(S=mdp.S, V=mdp.V)
    return mdp


def _tie_in_groups(tie, theta=None, G=None):
    """Every group id names a row of `theta` (or is below `G`)."""
    n, what = (G, "G") if G is not None else (theta.shape[0], "theta's rows")
    if tie.max() >= n:
        return f"tie: expected group ids < {n} ({what}), got max {int(tie.max())}"


def _few_entries(dlogits, G):
    """The `(G, V)` gradient holds at most `10**8` entries."""
    if G * dlogits.shape[1] > 10**8:
        return f"G: expected G * V <= 10**8 entries of the (G, V) gradient, got {G} * {dlogits.shape[1]}"


def _positive_teacher(teacher):
    """Every teacher probability is positive: every KL is finite."""
    if (teacher <= 0).any():
        return f"teacher: expected probabilities > 0 (every KL finite), got min {teacher.min()}"


def tied_probs(theta, tie):
    """The tied student's table, eq. (distill_tied).

    Args:
        theta: `(G, V)` finite logits, one row per group.
        tie: `(S,)` int group of each state, in `[0, G)`.

    Returns:
        `(S, V)` float64 probabilities `pi(.|s) = softmax(theta[tie[s]])` (a row spanning over
        1.8e308 gives probability 0 to its lowest logits).
    """
    return np.exp(log_softmax(theta))[tie]  # (S, V)


def tied_backward(dlogits, tie, G):
    """Per-state gradients summed into their groups, eq. (distill_tied_grad).

    Args:
        dlogits: `(S, V)` the gradient with respect to each state's logits.
        tie: `(S,)` int group of each state, in `[0, G)`.
        G: the number of groups, in `[1, 10**7]`, with `G * V <= 10**8`.

    Returns:
        `(G, V)` float64, the gradient with respect to `theta`.
    """
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
        coef = nll_coef(mask)  # (B, T) eq. (distill_nll)
    elif objective == "gkd":
        ones = np.ones((lpi.shape[0], 1))  # (S, 1): each state once, weight 1
        _, G = jsd_terms(lpi[:, None], lt[:, None], ones, 1.0, beta)  # (S, 1, V) eq. (distill_gkd_grad)
        G = G[:, 0]  # (S, V) d D_jsd / dz at every state
        coef = G[st, tk] * np.exp(-lpi[st, tk])  # (B, T) G_y / pi_y
    else:
        coef = reward_coef(lpi[st, tk], lt[st, tk], mask, objective == "reverse_kl_to_go")  # (B, T)
    mean, _ = draw_moments.core(q, coef, np.exp(lpi), st, tk, mask)  # (S, V) eq. (exact_moments)
    grad = tied_backward.core(mean, tie, theta.shape[0])  # (G, V)
    visits = np.bincount(tie[st].ravel(), (q[:, None] * mask).ravel(), minlength=theta.shape[0])  # (G,)
    return grad, visits


def expected_gradient(objective, theta, tie, teacher, mdp, *, beta=0.5):
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
    grad, _ = _terms(objective, theta, tie, teacher, mdp.all_responses(), mdp.N, beta)
    return grad


def fixed_point(objective, theta, tie, teacher, mdp, *, beta=0.5, lr=0.5, max_steps=10000, tol=1e-12):
    """Run a distiller's exact expected gradient to its fixed point (natural-gradient steps).

    Args:
        objective: one of `OBJECTIVES`.
        theta: `(G, V)` finite starting logits of the student.
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
    ro, N = mdp.all_responses(), mdp.N
    curv = beta * (1.0 - beta) if objective == "gkd" and 0.0 < beta < 1.0 else 1.0
    theta = theta - theta.max(axis=1, keepdims=True)  # (G, V) each row's max 0
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
        if not np.ptp(delta, axis=1).max() > tol:  # converged, or beyond float64 (reported)
            break
    return theta, step


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# part 2: from minirl_lm/distill/objectives.py -------------------------------------------------
#   Divergences from the student to a teacher, token by token, on whole next-token distributions.


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
    `ls` and the teacher's `lt` `(..., V)`, position weights `w` `(...)`, the temperature
    `tau` that divided the logits and `beta` in [0, 1] (0: the forward KL, 1: the reverse KL)."""
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


# part 3: from minirl_lm/distill/samples.py ----------------------------------------------------
#   Distillation from sampled tokens: maximum likelihood on the teacher's samples (off-policy) and


def nll_coef(mask):
    """`(B, T)` dloss/dlogp of each response's summed NLL, eq. (distill_nll): `-mask`."""
    return -mask


def reward_coef(logp, logp_teacher, mask, to_go):
    """`(B, T)` each response's coefficients `mask c_t`, eq. (distill_reward) (with `to_go`, eq.
    (distill_to_go)), of read `(B, T)` arrays."""
    k = mask * (logp - logp_teacher)  # (B, T) -r_t, the sampled reverse KL per token
    c = np.cumsum(k[:, ::-1], axis=1)[:, ::-1] if to_go else k  # (B, T) eq. (distill_to_go)
    return mask * c  # (B, T) eq. (distill_reward), one response's coefficients


# part 4: from minirl_lm/exact/scores.py -------------------------------------------------------
#   Updates linear in per-token coefficients, and their exact moments over one draw.


def _ids_in_table(probs, states, tokens):
    """State ids index the rows of `probs`, token ids its columns."""
    for name, ids, n, what in (("states", states, probs.shape[0], "S"), ("tokens", tokens, probs.shape[1], "V")):
        if ids.max() >= n:
            return f"{name}: expected ids < {what} = {n} (the shape of probs), got max {ids.max()}"


def _one_visit(states, mask):
    """Each row visits a state at most once (a path in the prefix tree), so its scores are
    orthogonal; a repeat at padding does not count."""
    seen = np.where(mask > 0, states, -1 - np.arange(mask.shape[1]))  # (B, T) padding never collides
    srt = np.sort(seen, axis=1)
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)  # (B, T - 1)
    if dup.any():
        b = int(np.flatnonzero(dup.any(axis=1))[0])
        return (
            f"states: expected each row to visit a state at most once (a path in the prefix tree), "
            f"row {b} visits state {int(srt[b, 1:][dup[b]][0])} twice"
        )


# --8<-- [start:draw]
def draw_moments(q, coef, probs, states, tokens, mask):
    """`E[g]` and `tr Cov[g]` of `g = g_b` for one row `b` drawn with probability `q_b`."""
    c = coef * mask  # (B, T)
    w = q[:, None] * c  # (B, T) the draw's weight on each token's score
    mean = np.zeros(probs.shape)  # (S, V)
    np.add.at(mean, (states, tokens), w)  # e_{y_t}
    mean -= np.bincount(states.ravel(), w.ravel(), minlength=probs.shape[0])[:, None] * probs  # - pi(.|s)
    sq = (probs * probs).sum(axis=1)  # (S,) |pi(.|s)|^2
    norm = 1.0 - 2.0 * probs[states, tokens] + sq[states]  # (B, T) |score_t|^2, eq. (exact_norm)
    second = float(q @ (c * c * norm).sum(axis=1))  # E|g|^2
    return mean, max(second - float((mean * mean).sum()), 0.0)  # eq. (exact_moments)


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


def has(what, members):
    """Any object with `members`, a string of names (`"logp() theta"`: `logp()` a method, `theta`
    an attribute), whatever its type: what the body uses of it; `what` says what fits."""
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


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


POSITIVE = number(0.0, low_open=True)


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

IDS = array("B T", integer=True, low=0)
SCORES = dict(probs=simplex("S V"), mask=MASK, states=IDS, tokens=IDS)  # the mask fixes (B, T)
TIE = array("S", integer=True, low=0)  # the group of each state
EXACT = dict(
    objective=one_of(OBJECTIVES),
    mdp=_enumerated_mdp,
    theta=array("G V"),
    tie=TIE,
    teacher=simplex("S V"),
    beta=number(0.0, 1.0),
    where=[_tie_in_groups, _positive_teacher],
)

tied_probs = boundary(theta=array("G V"), tie=TIE, where=[_tie_in_groups], returns="probs")(tied_probs)

tied_backward = boundary(
    dlogits=array("S V"),
    tie=TIE,
    G=number(1, 10**7, integer=True),
    where=[_few_entries, _tie_in_groups],
    returns="dtheta",
)(tied_backward)

expected_gradient = boundary(**EXACT, returns="gradient")(expected_gradient)

fixed_point = boundary(
    **EXACT,
    lr=number(0.0, 1.0, low_open=True),
    max_steps=number(1, 10**7, integer=True),
    tol=POSITIVE,
    returns="theta steps",
)(fixed_point)

draw_moments = boundary(
    **SCORES, coef=TOKENS, q=simplex("B"), where=[_ids_in_table, _one_visit], returns="mean var"
)(draw_moments)
