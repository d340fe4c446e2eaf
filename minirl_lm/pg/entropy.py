"""The entropy bonus: a whole-distribution term, with its own backward on the table.

At a state s with pi = softmax(theta[s]) the entropy is

    H(s) = -sum_v pi_v log pi_v                                                 eq. (entropy)

(0 log 0 = 0 for a -inf logit). It needs every entry of the row, not only the sampled token's
log-prob, so it does not fit the `(loss, dloss_dlogp)` contract of the objectives; its gradient
goes straight to the table. With d pi_u / d theta_v = pi_u (1[u = v] - pi_v),

    dH(s) / dtheta[s, v] = -sum_u (log pi_u + 1) pi_u (1[u = v] - pi_v)
                         = -pi_v (log pi_v + H(s))                              eq. (entropy_grad)

The bonus as the frameworks ship it (verl `actor.entropy_coeff`, TRL `entropy_coef`): the
entropy of every visited state, averaged with the loss aggregation weights w of eq. (pg_agg)
(token_mean by default, TRL's "mean per-token entropy"), subtracted from the loss:

    L_H = -sum_{b,t} w[b,t] H(s_bt)                                             eq. (entropy_bonus)
    dL_H / dtheta[s, :] = -(sum_{(b,t): s_bt = s} w[b,t]) dH(s)/dtheta[s, :]

The visited states are data: the gradient does not flow through which states were visited.
On a response of several tokens that is not the gradient of the entropy of the response
distribution H(pi(.|x)) = E[sum_t H(s_t)] (which also moves the visitation); on one-token
responses it is. The caller multiplies L_H by the coefficient c and adds it to the policy loss.
A response of length 0 visits no state and contributes nothing. tests/pg/test_entropy.py checks
the gradient by finite differences. `LOGITS` is the declaration of a logit table (`-inf` allowed),
shared with `entropy_knobs.py` and `kl.py`.

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository); in parentheses their defaults, not results of this library.

```text
entropy_bonus x coefficient  TRL entropy_coef (0.0); verl actor.entropy_coeff (0); OpenRLHF
                             --actor.entropy_coef (None: off), always the token mean over the
                             batch's action tokens, whatever --actor.loss_agg_mode
```
"""

import numpy as np

from minirl_lm.boundary import MASK, MAX_LEN, array, boundary, longest_response, one_of
from minirl_lm.core.ops import AGGS, agg_weights, log_softmax

__all__ = ["LOGITS", "entropy_table", "entropy_grad_table", "entropy_bonus"]

LOGITS = array("S V", neginf=True)  # a logit table: -inf allowed (a token of probability 0)


def _entropy(logpi):
    """(pi (S, V), H (S,)) of log pi, 0 log 0 = 0, eq. (entropy)."""
    pi = np.exp(logpi)  # (S, V)
    plogp = np.where(pi > 0, pi * np.where(pi > 0, logpi, 0.0), 0.0)  # 0 log 0 = 0
    return pi, -plogp.sum(axis=1)  # (S,) eq. (entropy)


def _entropy_grad(pi, logpi, H):
    """dH(s)/dtheta[s, v] = -pi_v (log pi_v + H(s)) (S, V), 0 where pi_v = 0, eq. (entropy_grad)."""
    return -np.where(pi > 0, pi * (np.where(pi > 0, logpi, 0.0) + H[:, None]), 0.0)


@boundary(theta=LOGITS, returns="H")
def entropy_table(theta):
    """H(s) for every row of a logit table, eq. (entropy).

    Args:
        theta: `(S, V)` logits, finite or `-inf` (a token of probability 0), every row with a
            finite entry. A logit more than float64's range below its row's maximum is a
            probability of exactly 0 (log pi = -inf), as it is in the limit.

    Returns:
        H, `(S,)`.
    """
    _, H = _entropy(log_softmax(theta))
    return H


@boundary(theta=LOGITS, returns="dH")
def entropy_grad_table(theta):
    """dH(s)/dtheta[s, v] for every row, eq. (entropy_grad).

    Args:
        theta: `(S, V)` logits, finite or `-inf` (a token of probability 0), every row with a
            finite entry.

    Returns:
        dH, `(S, V)`; entries with probability 0 (a -inf logit) get 0, the limit of
        `-pi_v (log pi_v + H)`.
    """
    logpi = log_softmax(theta)  # (S, V)
    pi, H = _entropy(logpi)
    return _entropy_grad(pi, logpi, H)  # (S, V)


def _states_in_table(theta, states):
    """Every state id is a row of the table."""
    if states.max() >= theta.shape[0]:
        return f"states: expected ids < {theta.shape[0]} (the rows of theta), got max {states.max()}"


@boundary(
    theta=LOGITS,
    mask=MASK,
    states=array("B T", integer=True, low=0),
    agg=one_of(AGGS),
    max_len=MAX_LEN,
    where=[_states_in_table, longest_response],
    returns="loss dtheta",
)
def entropy_bonus(theta, states, mask, agg="token_mean", max_len=None):
    """The entropy bonus as a loss term and its gradient on the table, eq. (entropy_bonus).

    Args:
        theta: `(S, V)` logits of the policy (`-inf` for impossible tokens).
        states: `(B, T)` int state id of every token (`Rollout.states`), rows of `theta`.
        mask: `(B, T)` 0/1; holes allowed (untrained positions inside a row).
        agg: the aggregation weights w (token_mean: the mean per-token entropy).
        max_len: the constant of agg="constant".

    Returns:
        `(loss, dtheta (S, V))` with loss = `-sum w H(s_bt)`; descend on it (with a coefficient
        c) to raise the entropy of the visited states.
    """
    logpi = log_softmax(theta)  # (S, V)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    pi, H = _entropy(logpi)  # (S, V), (S,)
    loss = -(w * H[states]).sum()  # eq. (entropy_bonus)
    c = np.zeros(logpi.shape[0])  # (S,) sum of w per state
    np.add.at(c, states, w)
    return float(loss), -c[:, None] * _entropy_grad(pi, logpi, H)  # (S, V)
