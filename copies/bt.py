# minirl_lm 0.1.0: a self-contained copy of minirl_lm/reward/bt.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/reward/bt.py -o DIR
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

"""Reward models from preferences and from labels: Bradley-Terry with a margin, outcome models.

A reward model is fitted before RL and then stands in for the gold reward. Its data: pairs
`(x, y_c, y_r)` of a prompt, a chosen and a rejected response (`direct/dpo.py`
`bt_sample_preferences` draws them from a Bradley-Terry model of a known reward), or responses
with a verifier's label `l` in [0, 1]. Per pair or per response `p`, weight `w_p` (`1/P` by
default: the mean), with the scores `r_c = r(x, y_c)`, `r_r = r(x, y_r)`:

```text
z_p = r_c - r_r - m_p                                                       eq. (rm_margin)
loss = sum_p w_p softplus(-z_p) + c sum_p w_p (r_c + r_r)^2                 eq. (rm_center)
bce:      loss = sum_p w_p [softplus(r_p) - l_p r_p]                        eq. (rm_outcome)
squared:  loss = sum_p w_p (r_p - l_p)^2 / 2
```

At `m = 0`, `c = 0` eq. (rm_margin) is the Bradley-Terry loss of `direct/dpo.py`, eq.
(bradley_terry). The margin `m_p >= 0` is Llama 2's (Touvron et al. 2023, Sec. 3.2.2): a pair
rated "significantly better" must be won by at least `m_p`. The centering term with
coefficient `c` is TRL's `center_rewards_coefficient` (Eisenstein et al. 2023, Eq. 2): BT sees
only differences `r_c - r_r`, so a constant per prompt is free; the term pins it near 0. TRL's
reward trainer computes

```text
loss = -nn.functional.logsigmoid(rewards_chosen - rewards_rejected - inputs["margin"]).mean()
loss += self.args.center_rewards_coefficient * torch.mean((rewards_chosen + rewards_rejected) ** 2)
```

Gradients, derived by hand (`d softplus(u)/du = sigma(u)`, `s_p = r_c + r_r`):

```text
dloss/dr_c =  w_p [-sigma(-z_p) + 2 c s_p]        dloss/dr_r = w_p [sigma(-z_p) + 2 c s_p]
bce:      dloss/dr_p = w_p (sigma(r_p) - l_p)     squared: dloss/dr_p = w_p (r_p - l_p)
```

A linear reward model `r(x, y) = phi(x, y) . w` (`phi`: `(N, Y, F)` features) reaches `w` by
the chain rule, `dloss/dw = sum_p dloss/dr_p phi_p`, plus `l2 w` from a ridge term
`l2 |w|^2 / 2` (a unit Gaussian prior at `l2 = 1/P`: the MAP fit). The tabular model is the
linear one on one-hot features (`one_hot_features`). The Hessian, for Newton's method:

```text
BT:      H = sum_p w_p [sigma(z_p) sigma(-z_p) d_p d_p^T + 2 c e_p e_p^T] + l2 I
         d_p = phi_c - phi_r,  e_p = phi_c + phi_r                          eq. (rm_hessian)
bce:     H = sum_p w_p sigma(r_p) sigma(-r_p) phi_p phi_p^T + l2 I   (squared: without the sigmas)
```

Identifiability. `BT` is unchanged by `r(x, .) -> r(x, .) + k(x)`: on one-hot features `H`
has the per-prompt constants in its null space. `fit_bt` takes Newton steps through the
pseudo-inverse of `H`, which never moves along that null space: from `w = 0` the tabular fit
has mean 0 over each prompt's responses. On the expected loss under a pair law of full support
(`bt_pair_law`), the minimizer is the true reward up to that constant, eq. (rm_identify):

```text
min_c max_y |r_hat(x, y) - R(x, y) - c| = 0    for every x          (error_off_constant)
```

Newton's step solves through LAPACK; a Hessian or gradient beyond float64 (features near
1e154 and up) gives NaN weights instead of a LAPACK call on inf, and the boundary reports them.

Demonstrated by `python examples/reward_models.py`.

Names in the frameworks (`docs/next.md` maps them, file by file):

```text
center   TRL RewardConfig.center_rewards_coefficient (None: off); OpenRLHF: no centering term
margin   TRL the dataset column "margin" (absent: 0); OpenRLHF PairWiseLoss's margin, read
         only under --model.margin_loss_enable
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = [
    "bt_margin_loss",
    "outcome_loss",
    "one_hot_features",
    "linear_bt_loss",
    "linear_outcome_loss",
    "fit_bt",
    "fit_outcome",
    "bt_pair_law",
    "error_off_constant",
]

FEATURES_MAX = 1000  # F of a fit: Newton solves an F x F system each step
SOLVES_MAX = 10**11  # iters * F**3: the work of a fit's Newton steps (100 steps at F = 1000)
ONE_HOT_MAX = FEATURES_MAX  # N * Y features of the one-hot table (fitted by fit_bt, fit_outcome)
PAIRS_MAX = 10**7  # N * Y * Y ordered pairs of bt_pair_law


def _ids_in_phi(phi, prompt, chosen=None, rejected=None, response=None):
    """Every id is a row of `phi`: prompts below N, responses below Y."""
    N, Y, _ = phi.shape
    for name, ids, n, what in (
        ("prompt", prompt, N, "prompts"),
        ("chosen", chosen, Y, "responses"),
        ("rejected", rejected, Y, "responses"),
        ("response", response, Y, "responses"),
    ):
        if ids is not None and ids.max() >= n:
            return f"{name}: expected ids < {n} (phi's {what}), got max {int(ids.max())}"


def _few_features(phi, iters):
    """A fit's features, `F <= FEATURES_MAX`, and its work, `iters * F**3 <= SOLVES_MAX`."""
    F = phi.shape[2]
    if F > FEATURES_MAX:
        return f"phi: expected at most {FEATURES_MAX} features (F x F Newton solves), got F = {F}"
    if iters * F**3 > SOLVES_MAX:
        return f"iters: expected iters * F**3 <= {SOLVES_MAX:.0e} (F x F Newton solves), got {iters} * {F}**3"


def _few_pairs(reward):
    """`N * Y * Y <= PAIRS_MAX` ordered pairs."""
    N, Y = reward.shape
    if N * Y * Y > PAIRS_MAX:
        return f"reward: expected N * Y * Y <= {PAIRS_MAX} ordered pairs, got {N} * {Y} * {Y} = {N * Y * Y}"


def _one_hot_size(N, Y):
    """The one-hot table has `N * Y <= ONE_HOT_MAX` features (as many as a fit takes)."""
    if N * Y > ONE_HOT_MAX:
        return f"Y: expected N * Y <= {ONE_HOT_MAX} features (Y <= {ONE_HOT_MAX // N} at N = {N}), got Y = {Y}"


def _mean(weights, P):
    return np.full(P, 1.0 / P) if weights is None else weights  # (P,) the mean by default


# ---------------------------------------------------------------- objectives on scores


def bt_margin_loss(r_chosen, r_rejected, margin=None, center=0.0, weights=None):
    """Bradley-Terry loss with margins and centering, eq. (rm_margin) and (rm_center).

    Args:
        r_chosen: `(P,)` scores `r_c` of the chosen responses.
        r_rejected: `(P,)` scores `r_r` of the rejected responses.
        margin: `(P,)` margins `m_p` (default 0: plain Bradley-Terry).
        center: the coefficient `c >= 0` of the centering term.
        weights: `(P,)` nonnegative pair weights, default `1/P`.

    Returns:
        `(loss, (d_chosen, d_rejected))`: a float and two `(P,)` gradients.

    Raises:
        ValueError: a bad argument (named), or a loss or gradient beyond float64 (named after
            the function, with the range of its inputs).
    """
    P = r_chosen.size
    m = np.zeros(P) if margin is None else margin  # (P,)
    w = _mean(weights, P)  # (P,)
    z = r_chosen - r_rejected - m  # (P,) eq. (rm_margin)
    s = r_chosen + r_rejected  # (P,) what the centering term squares
    loss = float(w @ np.logaddexp(0.0, -z) + center * (w @ (s * s)))  # eq. (rm_center)
    dz = -sigmoid(-z)  # (P,) d softplus(-z)/dz
    ds = 2.0 * center * s  # (P,) d c s^2/ds
    return loss, (w * (dz + ds), w * (-dz + ds))  # dz/dr_c = 1, dz/dr_r = -1, ds/dr = 1


def outcome_loss(r, label, kind="bce", weights=None):
    """Outcome reward model against verifier labels, eq. (rm_outcome).

    Args:
        r: `(P,)` scores (logits for `"bce"`, predictions for `"squared"`).
        label: `(P,)` labels in [0, 1].
        kind: `"bce"` or `"squared"`.
        weights: `(P,)` nonnegative weights, default `1/P`.

    Returns:
        `(loss, dr)`: a float and the `(P,)` gradient.
    """
    w = _mean(weights, r.size)  # (P,)
    if kind == "squared":
        e = r - label  # (P,)
        return float(w @ (e * e) / 2.0), w * e  # d (r - l)^2/2 / dr = r - l
    loss = float(w @ (np.logaddexp(0.0, r) - label * r))  # softplus(r) - l r
    return loss, w * (sigmoid(r) - label)  # d/dr = sigma(r) - l


# ---------------------------------------------------------------- linear reward models


def one_hot_features(N, Y):
    """The tabular model as a linear one: `phi[x, y]` is the one-hot vector of cell `(x, y)`.

    Args:
        N: prompts.
        Y: responses per prompt; `N * Y <= 1000` features (what `fit_bt` and `fit_outcome` take).

    Returns:
        `(N, Y, N * Y)` features; `phi @ w` is `w.reshape(N, Y)`.
    """
    return np.eye(N * Y).reshape(N, Y, N * Y)


def _bt_newton(w, f_c, f_r, m, c, wt, l2, hessian=True):
    """Loss, gradient and Hessian, eq. (rm_hessian), of the linear BT model (f_c, f_r: (P, F));
    the Hessian None unless asked (an F x F matrix)."""
    loss, (d_c, d_r) = bt_margin_loss.core(f_c @ w, f_r @ w, m, c, wt)  # (P,) each
    loss += 0.5 * l2 * float(w @ w)  # the ridge
    dw = f_c.T @ d_c + f_r.T @ d_r + l2 * w  # (F,) chain rule: dr_c/dw = phi_c
    if not hessian:
        return loss, dw, None
    z = (f_c - f_r) @ w - m  # (P,)
    d, e = f_c - f_r, f_c + f_r  # (P, F)
    h = wt * sigmoid(z) * sigmoid(-z)  # (P,) d^2 softplus(-z)/dz^2
    H = (d * h[:, None]).T @ d + 2.0 * c * (e * wt[:, None]).T @ e + l2 * np.eye(w.size)  # eq. (rm_hessian)
    return loss, dw, H


def _outcome_newton(w, f, lab, kind, wt, l2, hessian=True):
    """Loss, gradient and Hessian (None unless asked) of the linear outcome model (f: (P, F))."""
    r = f @ w  # (P,)
    loss, dr = outcome_loss.core(r, lab, kind, wt)
    loss, dw = loss + 0.5 * l2 * float(w @ w), f.T @ dr + l2 * w  # the ridge; dr/dw = phi
    if not hessian:
        return loss, dw, None
    h = wt if kind == "squared" else wt * sigmoid(r) * sigmoid(-r)  # (P,) d^2 loss/dr^2
    return loss, dw, (f * h[:, None]).T @ f + l2 * np.eye(w.size)


def linear_bt_loss(w, phi, prompt, chosen, rejected, *, margin=None, center=0.0, weights=None, l2=0.0):
    """eq. (rm_center) of the linear model `r = phi . w`, plus `l2 |w|^2 / 2`, and dloss/dw.

    Args:
        w: `(F,)` weights.
        phi: `(N, Y, F)` features of every prompt and response.
        prompt: `(P,)` prompt ids in `[0, N)`.
        chosen: `(P,)` response ids in `[0, Y)`.
        rejected: `(P,)` response ids in `[0, Y)`.
        margin: `(P,)` margins (default 0).
        center: the centering coefficient `c >= 0`.
        weights: `(P,)` pair weights, default `1/P`.
        l2: the ridge coefficient `>= 0`.

    Returns:
        `(loss, dw)`: a float and the `(F,)` gradient.
    """
    P = prompt.size
    loss, dw, _ = _bt_newton(  # without the Hessian the margin goes to bt_margin_loss, None for 0
        w, phi[prompt, chosen], phi[prompt, rejected], margin, center, _mean(weights, P), l2, False
    )
    return loss, dw


def linear_outcome_loss(w, phi, prompt, response, label, *, kind="bce", weights=None, l2=0.0):
    """eq. (rm_outcome) of the linear model `r = phi . w`, plus `l2 |w|^2 / 2`, and dloss/dw.

    Args:
        w: `(F,)` weights.
        phi: `(N, Y, F)` features.
        prompt: `(P,)` prompt ids.
        response: `(P,)` response ids.
        label: `(P,)` labels in [0, 1].
        kind: `"bce"` or `"squared"`.
        weights: `(P,)` weights, default `1/P`.
        l2: the ridge coefficient `>= 0`.

    Returns:
        `(loss, dw)`: a float and the `(F,)` gradient.
    """
    loss, dw, _ = _outcome_newton(w, phi[prompt, response], label, kind, _mean(weights, prompt.size), l2, False)
    return loss, dw


# ---------------------------------------------------------------- fitting (Newton's method)


def _newton(terms, F, iters):
    """Damped Newton from w = 0 through the pseudo-inverse of H (no step along its null space);
    NaN weights where H or the gradient is beyond float64 (LAPACK is never given inf)."""
    w = np.zeros(F)
    loss, g, H = terms(w)
    for _ in range(iters):
        if not (np.isfinite(H).all() and np.isfinite(g).all()):
            return np.full(F, np.nan)  # no Newton step in float64: the boundary reports it
        step = -np.linalg.lstsq(H, g, rcond=1e-13)[0]  # (F,) min-norm Newton step
        t, slope = 1.0, float(g @ step)
        if slope >= 0:  # no descent left: converged to rounding
            break
        while t > 1e-10:  # backtrack (Armijo) until the loss decreases
            new = terms(w + t * step)
            if new[0] <= loss + 1e-4 * t * slope:
                break
            t /= 2
        else:
            break
        w = w + t * step
        loss, g, H = new
        if np.abs(t * step).max() <= 1e-15 * (1.0 + np.abs(w).max()):
            break
    return w


def _merge(cols, wt):
    """Rows repeated in every column merged into one with the summed weight: the loss, its
    gradient and its Hessian are sums over rows, so they are unchanged (up to rounding)."""
    keys = np.stack([np.asarray(c, dtype=np.float64) for c in cols], axis=1)  # (P, C)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    w = np.bincount(inv.ravel(), weights=wt, minlength=uniq.shape[0])  # (U,)
    return [u.astype(c.dtype) for u, c in zip(uniq.T, cols)], w


def fit_bt(phi, prompt, chosen, rejected, *, margin=None, center=0.0, weights=None, l2=0.0, iters=100):
    """The minimizer of `linear_bt_loss` over `w`, by Newton's method from `w = 0`.

    Arguments as `linear_bt_loss` (without `w`), at most 1000 features. On one-hot features
    with `center = l2 = 0` the per-prompt constants are free: the fit has mean 0 over each
    prompt's responses (see eq. (rm_identify)).

    Args:
        iters: the most Newton steps (fewer once no descent is left), an int in `[1, 10000]`
            with `iters * F**3 <= 1e11`.

    Returns:
        `(F,)` weights `w`.

    Raises:
        ValueError: a bad argument (named), or a Hessian, gradient or fit beyond float64 (named
            after the function, with the range of its inputs).
    """
    P = prompt.size
    m = np.zeros(P) if margin is None else margin  # (P,)
    (x, yc, yr, m), wt = _merge((prompt, chosen, rejected, m), _mean(weights, P))  # one row per pair
    f_c, f_r = phi[x, yc], phi[x, yr]  # (U, F)
    return _newton(lambda v: _bt_newton(v, f_c, f_r, m, center, wt, l2), phi.shape[2], iters)


def fit_outcome(phi, prompt, response, label, *, kind="bce", weights=None, l2=0.0, iters=100):
    """The minimizer of `linear_outcome_loss` over `w`, by Newton's method from `w = 0`.

    Arguments as `linear_outcome_loss` (without `w`), at most 1000 features; the options
    (`iters`), the result (`(F,)` weights `w`) and the errors are those of `fit_bt`. With
    `"bce"` and labels of 0 or 1 only, the unregularized optimum may lie at infinity: give
    `l2 > 0`.
    """
    (x, y, lab), wt = _merge((prompt, response, label), _mean(weights, prompt.size))  # one row per response
    f = phi[x, y]  # (U, F)
    return _newton(lambda v: _outcome_newton(v, f, lab, kind, wt, l2), phi.shape[2], iters)


# ---------------------------------------------------------------- the law of the data, the error


def bt_pair_law(reward, mu, mu0=None):
    """Every ordered pair `(x, y_c, y_r)` with its probability under `bt_sample_preferences`.

    `a, b ~ mu(.|x)` independently and `a` wins with probability `sigma(R_a - R_b)`, so
    `Pr(y_c = i, y_r = j | x) = 2 mu(i|x) mu(j|x) sigma(R(x, i) - R(x, j))` (a tie `i = j`
    included). Used as `weights`, the losses above become their expectations over the data.

    Args:
        reward: `(N, Y)` the reward `R`.
        mu: `(N, Y)` the response law, rows summing to 1.
        mu0: `(N,)` the prompt law, uniform by default.

    `N * Y * Y <= 10**7` pairs.

    Returns:
        `(prompt, chosen, rejected, weights)`, each `(N * Y * Y,)`; the weights sum to 1.
    """
    N, Y = reward.shape
    mu0 = np.full(N, 1.0 / N) if mu0 is None else mu0  # (N,)
    x, i, j = (a.ravel() for a in np.meshgrid(np.arange(N), np.arange(Y), np.arange(Y), indexing="ij"))
    p = (
        2.0 * mu0[x] * mu[x, i] * mu[x, j] * sigmoid(reward[x, i] - reward[x, j])
    )  # eq. (bradley_terry); +-inf: 0, 1
    return x, i, j, p


def error_off_constant(r_hat, reward):
    """`max_x min_c max_y |r_hat(x, y) - R(x, y) - c|`, eq. (rm_identify): 0 iff equal up to a
    constant per prompt.

    Args:
        r_hat: `(N, Y)` a learned reward.
        reward: `(N, Y)` the true reward.

    Returns:
        a float `>= 0`.
    """
    d = r_hat - reward  # (N, Y)
    return float(((d.max(axis=1) - d.min(axis=1)) / 2.0).max())  # the best c: the midrange


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


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


def optional(of):
    """None, or a value of the kind `of`."""
    return lambda x, name, dims: None if x is None else of(x, name, dims)


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


NONNEGATIVE = number(0.0)


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

SCORES = array("P")  # one score per pair (or per labelled response)
WEIGHTS = optional(array("P", low=0.0))  # nonnegative weights; None: 1/P each, the mean
MARGIN = dict(margin=optional(array("P")), center=NONNEGATIVE, weights=WEIGHTS)  # eq. (rm_center)'s knobs
OUTCOME = dict(label=array("P", low=0.0, high=1.0), kind=one_of(("bce", "squared")), weights=WEIGHTS)
IDS = array("P", integer=True, low=0)  # a prompt's or a response's row of phi
LINEAR = dict(phi=array("N Y F"), prompt=IDS, l2=NONNEGATIVE)  # phi first: it binds N, Y and F
ITERS = number(1, 10000, integer=True)  # Newton steps
TABLE = array("N Y")

bt_margin_loss = boundary(r_chosen=SCORES, r_rejected=SCORES, **MARGIN, returns="loss gradients")(bt_margin_loss)

outcome_loss = boundary(r=SCORES, **OUTCOME, returns="loss dr")(outcome_loss)

one_hot_features = boundary(
    N=number(1, ONE_HOT_MAX, integer=True), Y=number(1, ONE_HOT_MAX, integer=True), where=[_one_hot_size]
)(one_hot_features)

linear_bt_loss = boundary(
    **LINEAR, w=array("F"), chosen=IDS, rejected=IDS, **MARGIN, where=[_ids_in_phi], returns="loss dw"
)(linear_bt_loss)

linear_outcome_loss = boundary(
    **LINEAR, w=array("F"), response=IDS, **OUTCOME, where=[_ids_in_phi], returns="loss dw"
)(linear_outcome_loss)

fit_bt = boundary(
    **LINEAR, chosen=IDS, rejected=IDS, **MARGIN, iters=ITERS, where=[_few_features, _ids_in_phi], returns="w"
)(fit_bt)

fit_outcome = boundary(
    **LINEAR, response=IDS, **OUTCOME, iters=ITERS, where=[_few_features, _ids_in_phi], returns="w"
)(fit_outcome)

bt_pair_law = boundary(
    reward=TABLE,
    mu=simplex("N Y"),
    mu0=optional(simplex("N")),
    where=[_few_pairs],
    returns="prompt chosen rejected weights",
)(bt_pair_law)

error_off_constant = boundary(reward=TABLE, r_hat=TABLE, returns="error")(error_off_constant)  # r_hat is read against reward
