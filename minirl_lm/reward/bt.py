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

import numpy as np

from minirl_lm.core.checks import finite_result
from minirl_lm.core.ops import sigmoid
from minirl_lm.reward.checks import (
    error_args,
    features_args,
    fit_bt_args,
    fit_outcome_args,
    linear_bt_args,
    linear_outcome_args,
    margin_args,
    outcome_args,
    pair_law_args,
)

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
