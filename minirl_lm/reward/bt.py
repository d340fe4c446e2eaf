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

import numpy as np

from minirl_lm.boundary import NONNEGATIVE, array, boundary, number, one_of, optional, simplex
from minirl_lm.core.ops import sigmoid

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

SCORES = array("P")  # one score per pair (or per labelled response)
WEIGHTS = optional(array("P", low=0.0))  # nonnegative weights; None: 1/P each, the mean
MARGIN = dict(margin=optional(array("P")), center=NONNEGATIVE, weights=WEIGHTS)  # eq. (rm_center)'s knobs
OUTCOME = dict(label=array("P", low=0.0, high=1.0), kind=one_of(("bce", "squared")), weights=WEIGHTS)
IDS = array("P", integer=True, low=0)  # a prompt's or a response's row of phi
LINEAR = dict(phi=array("N Y F"), prompt=IDS, l2=NONNEGATIVE)  # phi first: it binds N, Y and F
ITERS = number(1, 10000, integer=True)  # Newton steps
TABLE = array("N Y")
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


@boundary(r_chosen=SCORES, r_rejected=SCORES, **MARGIN, returns="loss gradients")
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


@boundary(r=SCORES, **OUTCOME, returns="loss dr")
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


@boundary(N=number(1, ONE_HOT_MAX, integer=True), Y=number(1, ONE_HOT_MAX, integer=True), where=[_one_hot_size])
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


@boundary(**LINEAR, w=array("F"), chosen=IDS, rejected=IDS, **MARGIN, where=[_ids_in_phi], returns="loss dw")
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


@boundary(**LINEAR, w=array("F"), response=IDS, **OUTCOME, where=[_ids_in_phi], returns="loss dw")
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


@boundary(
    **LINEAR, chosen=IDS, rejected=IDS, **MARGIN, iters=ITERS, where=[_few_features, _ids_in_phi], returns="w"
)
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


@boundary(**LINEAR, response=IDS, **OUTCOME, iters=ITERS, where=[_few_features, _ids_in_phi], returns="w")
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


@boundary(
    reward=TABLE,
    mu=simplex("N Y"),
    mu0=optional(simplex("N")),
    where=[_few_pairs],
    returns="prompt chosen rejected weights",
)
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


@boundary(reward=TABLE, r_hat=TABLE, returns="error")  # r_hat is read against reward
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
