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

import numpy as np

from minirl_lm.boundary import POSITIVE, array, boundary, has, number, one_of, simplex
from minirl_lm.core.ops import log_softmax
from minirl_lm.distill.objectives import jsd_terms
from minirl_lm.distill.samples import nll_coef, reward_coef
from minirl_lm.exact.scores import draw_moments

__all__ = ["OBJECTIVES", "tied_probs", "tied_backward", "expected_gradient", "fixed_point"]

OBJECTIVES = ("forward_kl", "reverse_kl", "reverse_kl_to_go", "gkd")
TIE = array("S", integer=True, low=0)  # the group of each state


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


EXACT = dict(
    objective=one_of(OBJECTIVES),
    mdp=_enumerated_mdp,
    theta=array("G V"),
    tie=TIE,
    teacher=simplex("S V"),
    beta=number(0.0, 1.0),
    where=[_tie_in_groups, _positive_teacher],
)


@boundary(theta=array("G V"), tie=TIE, where=[_tie_in_groups], returns="probs")
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


@boundary(
    dlogits=array("S V"),
    tie=TIE,
    G=number(1, 10**7, integer=True),
    where=[_few_entries, _tie_in_groups],
    returns="dtheta",
)
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


@boundary(**EXACT, returns="gradient")
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


@boundary(
    **EXACT,
    lr=number(0.0, 1.0, low_open=True),
    max_steps=number(1, 10**7, integer=True),
    tol=POSITIVE,
    returns="theta steps",
)
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
