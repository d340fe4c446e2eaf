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
only differences `r_c - r_r`, so a constant per prompt is free; the term pins it near 0. Read
from TRL 1.16.0, `trl/trainer/reward_trainer.py` lines 789-795:

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

Demonstrated by `python examples/reward_models.py`. Imports NumPy, `minirl_lm.core` and the
part's checks only.

Names in the frameworks (TRL 1.16.0, read from its released code): `center` is
`RewardConfig.center_rewards_coefficient` (default `None`: off); `margin` is the dataset
column `"margin"` (absent: 0). OpenRLHF 0.11.2: `PairWiseLoss` (`openrlhf/models/loss.py`
lines 301-313) is eq. (rm_margin) with the mean, the margin read only under
`--model.margin_loss_enable` (`openrlhf/trainer/rm_trainer.py` lines 71, 156-159); no
centering term. verl 0.9.1: not mapped here (unverified).
"""

import numbers

import numpy as np


__all__ = ["bt_margin_loss", "outcome_loss", "one_hot_features", "linear_bt_loss",
    "linear_outcome_loss", "fit_bt", "fit_outcome", "bt_pair_law", "error_off_constant"]


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
    """
    r_c, r_r, m, c, w = margin_args(r_chosen, r_rejected, margin, center, weights)
    with np.errstate(over="ignore", invalid="ignore"):
        loss, d_c, d_r = _bt_terms(r_c, r_r, m, c, w)
    return finite_result((loss, (d_c, d_r)), "r_chosen", "the loss")


def _bt_terms(r_c, r_r, m, c, w):
    """Trusted core: the loss of eq. (rm_center) and its gradients in r_c, r_r (P,)."""
    z = r_c - r_r - m  # (P,) eq. (rm_margin)
    s = r_c + r_r  # (P,) what the centering term squares
    loss = float(w @ np.logaddexp(0.0, -z) + c * (w @ (s * s)))  # eq. (rm_center)
    dz = -sigmoid(-z)  # (P,) d softplus(-z)/dz
    ds = 2.0 * c * s  # (P,) d c s^2/ds
    return loss, w * (dz + ds), w * (-dz + ds)  # dz/dr_c = 1, dz/dr_r = -1, ds/dr = 1


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
    r, y, w = outcome_args(r, label, kind, weights)
    with np.errstate(over="ignore", invalid="ignore"):
        loss, dr = _outcome_terms(r, y, kind, w)
    return finite_result((loss, dr), "r", "the loss")


def _outcome_terms(r, y, kind, w):
    """Trusted core: eq. (rm_outcome)'s loss and dloss/dr (P,)."""
    if kind == "squared":
        e = r - y  # (P,)
        return float(w @ (e * e) / 2.0), w * e  # d (r - l)^2/2 / dr = r - l
    loss = float(w @ (np.logaddexp(0.0, r) - y * r))  # softplus(r) - l r
    return loss, w * (sigmoid(r) - y)  # d/dr = sigma(r) - l


# ---------------------------------------------------------------- linear reward models


def one_hot_features(N, Y):
    """The tabular model as a linear one: `phi[x, y]` is the one-hot vector of cell `(x, y)`.

    Args:
        N: prompts.
        Y: responses per prompt.

    Returns:
        `(N, Y, N * Y)` features; `phi @ w` is `w.reshape(N, Y)`.
    """
    N, Y = features_args(N, Y)
    return np.eye(N * Y).reshape(N, Y, N * Y)


def linear_bt_loss(w, phi, prompt, chosen, rejected, margin=None, center=0.0, weights=None, l2=0.0):
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
    w, phi, x, yc, yr, m, c, wt, l2 = linear_bt_args(w, phi, prompt, chosen, rejected, margin, center, weights, l2)
    with np.errstate(over="ignore", invalid="ignore"):
        loss, dw, _ = _bt_newton(w, phi[x, yc], phi[x, yr], m, c, wt, l2)
    return finite_result((loss, dw), "w", "the loss")


def _bt_newton(w, f_c, f_r, m, c, wt, l2):
    """Loss, gradient and Hessian, eq. (rm_hessian), of the linear BT model (f_c, f_r: (P, F))."""
    loss, d_c, d_r = _bt_terms(f_c @ w, f_r @ w, m, c, wt)  # (P,) each
    dw = f_c.T @ d_c + f_r.T @ d_r + l2 * w  # (F,) chain rule: dr_c/dw = phi_c
    z = (f_c - f_r) @ w - m  # (P,)
    d, e = f_c - f_r, f_c + f_r  # (P, F)
    h = wt * sigmoid(z) * sigmoid(-z)  # (P,) d^2 softplus(-z)/dz^2
    H = (d * h[:, None]).T @ d + 2.0 * c * (e * wt[:, None]).T @ e + l2 * np.eye(w.size)  # eq. (rm_hessian)
    return loss + 0.5 * l2 * float(w @ w), dw, H


def linear_outcome_loss(w, phi, prompt, response, label, kind="bce", weights=None, l2=0.0):
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
    w, phi, x, y, lab, wt, l2 = linear_outcome_args(w, phi, prompt, response, label, kind, weights, l2)
    with np.errstate(over="ignore", invalid="ignore"):
        loss, dw, _ = _outcome_newton(w, phi[x, y], lab, kind, wt, l2)
    return finite_result((loss, dw), "w", "the loss")


def _outcome_newton(w, f, lab, kind, wt, l2):
    """Loss, gradient and Hessian of the linear outcome model (f: (P, F))."""
    r = f @ w  # (P,)
    loss, dr = _outcome_terms(r, lab, kind, wt)
    h = wt if kind == "squared" else wt * sigmoid(r) * sigmoid(-r)  # (P,) d^2 loss/dr^2
    H = (f * h[:, None]).T @ f + l2 * np.eye(w.size)
    return loss + 0.5 * l2 * float(w @ w), f.T @ dr + l2 * w, H


# ---------------------------------------------------------------- fitting (Newton's method)


def _newton(terms, F, iters):
    """Damped Newton from w = 0 through the pseudo-inverse of H (no step along its null space)."""
    w = np.zeros(F)
    loss, g, H = terms(w)
    for _ in range(iters):
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


def fit_bt(phi, prompt, chosen, rejected, margin=None, center=0.0, weights=None, l2=0.0, iters=100):
    """The minimizer of `linear_bt_loss` over `w`, by Newton's method from `w = 0`.

    Arguments as `linear_bt_loss` (without `w`); `iters` bounds the Newton steps. On one-hot
    features with `center = l2 = 0` the per-prompt constants are free: the fit has mean 0 over
    each prompt's responses (see eq. (rm_identify)).

    Returns:
        `(F,)` weights `w`.
    """
    phi, x, yc, yr, m, c, wt, l2, iters = fit_bt_args(
        phi, prompt, chosen, rejected, margin, center, weights, l2, iters
    )
    (x, yc, yr, m), wt = _merge((x, yc, yr, m), wt)  # repeated pairs: one row, summed weight
    f_c, f_r = phi[x, yc], phi[x, yr]  # (U, F)
    with np.errstate(over="ignore", invalid="ignore"):
        w = _newton(lambda v: _bt_newton(v, f_c, f_r, m, c, wt, l2), phi.shape[2], iters)
    return finite_result(w, "phi", "the fitted weights")


def fit_outcome(phi, prompt, response, label, kind="bce", weights=None, l2=0.0, iters=100):
    """The minimizer of `linear_outcome_loss` over `w`, by Newton's method from `w = 0`.

    Arguments as `linear_outcome_loss` (without `w`). With `"bce"` and labels of 0 or 1 only,
    the unregularized optimum may lie at infinity: give `l2 > 0`.

    Returns:
        `(F,)` weights `w`.
    """
    phi, x, y, lab, wt, l2, iters = fit_outcome_args(phi, prompt, response, label, kind, weights, l2, iters)
    (x, y, lab), wt = _merge((x, y, lab), wt)  # repeated responses: one row, summed weight
    f = phi[x, y]  # (U, F)
    with np.errstate(over="ignore", invalid="ignore"):
        w = _newton(lambda v: _outcome_newton(v, f, lab, kind, wt, l2), phi.shape[2], iters)
    return finite_result(w, "phi", "the fitted weights")


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

    Returns:
        `(prompt, chosen, rejected, weights)`, each `(N * Y * Y,)`; the weights sum to 1.
    """
    reward, mu, mu0 = pair_law_args(reward, mu, mu0)
    N, Y = reward.shape
    x, i, j = (a.ravel() for a in np.meshgrid(np.arange(N), np.arange(Y), np.arange(Y), indexing="ij"))
    with np.errstate(over="ignore"):  # a difference of finite rewards: +-inf, never NaN
        p = 2.0 * mu0[x] * mu[x, i] * mu[x, j] * sigmoid(reward[x, i] - reward[x, j])  # eq. (bradley_terry)
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
    r_hat, reward = error_args(r_hat, reward)
    with np.errstate(over="ignore", invalid="ignore"):
        d = r_hat - reward  # (N, Y)
        err = float(((d.max(axis=1) - d.min(axis=1)) / 2.0).max())  # the best c: the midrange
    return finite_result(err, "r_hat", "the error")


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/reward/checks.py
#   The boundary of the reward-model part: one bundle call per public function of `reward/bt.py`
# ----------------------------------------------------------------------------------------------


def _weights(weights, P):
    """`(P,)` nonnegative weights, `1/P` each (the mean) by default."""
    if weights is None:
        return np.full(P, 1.0 / P)
    w = float_array(weights, "weights", shape=(P,))
    if (w < 0).any():
        raise ValueError(f"weights: expected nonnegative weights, got min {w.min()}")
    return w


def _rewards(r, name, P=None):
    """`(P,)` rewards, `P >= 1`."""
    r = float_array(r, name, ndim=1, shape=None if P is None else (P,))
    if r.size == 0:
        raise ValueError(f"{name}: expected at least one entry, got shape (0,)")
    return r


def margin_args(r_chosen, r_rejected, margin, center, weights):
    """`bt_margin_loss`'s arguments: two `(P,)` rewards, the margins, the centering, weights."""
    r_c = _rewards(r_chosen, "r_chosen")
    r_r = _rewards(r_rejected, "r_rejected", r_c.size)
    m = np.zeros(r_c.size) if margin is None else float_array(margin, "margin", shape=r_c.shape)
    center = float_scalar(center, "center", low=0.0)
    return r_c, r_r, m, center, _weights(weights, r_c.size)


def _labels(label, P):
    y = float_array(label, "label", shape=(P,))
    if ((y < 0) | (y > 1)).any():
        raise ValueError(f"label: expected labels in [0, 1], got min {y.min()}, max {y.max()}")
    return y


def outcome_args(r, label, kind, weights):
    """`outcome_loss`'s arguments: `(P,)` scores, `(P,)` labels in [0, 1], the kind, weights."""
    r = _rewards(r, "r")
    y = _labels(label, r.size)
    choice(kind, "kind", {"bce", "squared"})
    return r, y, _weights(weights, r.size)


def _features(phi):
    phi = float_array(phi, "phi", ndim=3)
    if phi.size == 0:
        raise ValueError(f"phi: expected a non-empty (N, Y, F) feature array, got shape {phi.shape}")
    return phi


FIT = object()  # the `w` a fit passes: no weights yet


def _pairs(phi, prompt, chosen, rejected):
    N, Y, _ = phi.shape
    prompt = int_array(prompt, "prompt", ndim=1, low=0, high=N)
    chosen = int_array(chosen, "chosen", shape=prompt.shape, low=0, high=Y)
    rejected = int_array(rejected, "rejected", shape=prompt.shape, low=0, high=Y)
    if prompt.size == 0:
        raise ValueError("prompt: expected at least one pair, got shape (0,)")
    return prompt, chosen, rejected


def linear_bt_args(w, phi, prompt, chosen, rejected, margin, center, weights, l2):
    """`linear_bt_loss`'s (and `fit_bt`'s, `w=FIT`) arguments."""
    phi = _features(phi)
    if w is not FIT:
        w = float_array(w, "w", shape=(phi.shape[2],))
    prompt, chosen, rejected = _pairs(phi, prompt, chosen, rejected)
    P = prompt.size
    m = np.zeros(P) if margin is None else float_array(margin, "margin", shape=(P,))
    center = float_scalar(center, "center", low=0.0)
    l2 = float_scalar(l2, "l2", low=0.0)
    return w, phi, prompt, chosen, rejected, m, center, _weights(weights, P), l2


def linear_outcome_args(w, phi, prompt, response, label, kind, weights, l2):
    """`linear_outcome_loss`'s (and `fit_outcome`'s, `w=FIT`) arguments."""
    phi = _features(phi)
    if w is not FIT:
        w = float_array(w, "w", shape=(phi.shape[2],))
    N, Y, _ = phi.shape
    prompt = int_array(prompt, "prompt", ndim=1, low=0, high=N)
    response = int_array(response, "response", shape=prompt.shape, low=0, high=Y)
    if prompt.size == 0:
        raise ValueError("prompt: expected at least one response, got shape (0,)")
    y = _labels(label, prompt.size)
    choice(kind, "kind", {"bce", "squared"})
    l2 = float_scalar(l2, "l2", low=0.0)
    return w, phi, prompt, response, y, _weights(weights, prompt.size), l2


def fit_bt_args(phi, prompt, chosen, rejected, margin, center, weights, l2, iters):
    """`fit_bt`'s arguments: `linear_bt_loss`'s without `w`, and 1..10000 Newton steps."""
    out = linear_bt_args(FIT, phi, prompt, chosen, rejected, margin, center, weights, l2)[1:]
    return (*out, int_scalar(iters, "iters", low=1, high=10000))


def fit_outcome_args(phi, prompt, response, label, kind, weights, l2, iters):
    """`fit_outcome`'s arguments: `linear_outcome_loss`'s without `w`, and the Newton steps."""
    out = linear_outcome_args(FIT, phi, prompt, response, label, kind, weights, l2)[1:]
    return (*out, int_scalar(iters, "iters", low=1, high=10000))


def pair_law_args(reward, mu, mu0):
    """`bt_pair_law`'s arguments: `(N, Y)` rewards, `(N, Y)` response law, `(N,)` prompt law."""
    reward = float_array(reward, "reward", ndim=2)
    mu = prob_table(mu, "mu", shape=reward.shape)
    N = reward.shape[0]
    mu0 = np.full(N, 1.0 / N) if mu0 is None else prob_table(mu0, "mu0", shape=(N,))
    return reward, mu, mu0


def error_args(r_hat, reward):
    """Two `(N, Y)` reward tables of one shape."""
    reward = float_array(reward, "reward", ndim=2)
    if reward.size == 0:
        raise ValueError(f"reward: expected a non-empty (N, Y) table, got shape {reward.shape}")
    return float_array(r_hat, "r_hat", shape=reward.shape), reward


def features_args(N, Y):
    """Table sizes: `N * Y` features at most 10**6."""
    N = int_scalar(N, "N", low=1, high=10**6)
    return N, int_scalar(Y, "Y", low=1, high=10**6 // N)


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
