"""The optimal token baseline: a baseline per position, weighted by the squared score.

For a one-token response the estimator `(R - b) grad log pi(y)` is unbiased for any `b` that
does not depend on `y`; its variance (the trace of its covariance) is

```text
Var(b) = E[(R - b)^2 ||s||^2] - ||grad J||^2,     s = grad_theta log pi(y) = onehot(y) - pi
b*     = E[R ||s||^2] / E[||s||^2]                                           eq. (otb)
||s||^2 = 1 - 2 pi(y) + sum_v pi(v)^2                                       eq. (otb_score)
```

(`Var` is a quadratic in `b`; `b*` its minimum, so its variance is the lowest of every constant
baseline: the group mean `E[R]` included, which is `b*` only when `R` and `||s||^2` are
uncorrelated.) `||s||^2` is the squared norm of the softmax score in the logits of the
token's state: large for unlikely tokens, 0 for a deterministic state.

For a response of several tokens, verl's estimator gives each position `t` its own baseline,
with the cumulative score `W_t = sum_{j <= t} ||s_j||^2` of the path so far as the weight, over
the `K` responses of the group:

```text
B_t = sum_k G_{k,t} W_{k,t} m_{k,t} / (sum_k W_{k,t} m_{k,t} + w_eps)
A_{k,t} = (G_{k,t} - B_t) m_{k,t},        G_{k,t} = R_k (the outcome reward)  eq. (otb_group)
```

`m` the mask; positions are columns (right padding). With `zero_tail`, a longest response longer
than every other one of its group gets `B_t = 0` past the second-longest (its tail has no
others to average). A group of one (`K = 1`) gets no baseline, `A = R` (verl). Like the group
mean, `B_t` uses the response's own reward: at finite `K` it is a biased baseline (exactly as
`mean` against `loo` in `advantages.py`); eq. (otb) is the population quantity it estimates,
and the minimal variance is a claim about that one (tested by enumeration).

`sum_pi_sq` is `sum_v pi_old(v | s_t)^2` per token (B, T), computed where the logits are (the
policy: `(probs ** 2).sum(-1)` at each visited state), `logp_old` the sampled token's log-prob.

Demonstrated on the baselines page (docs/baselines.md, section "The optimal token baseline").

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository):

```text
otb_advantages   verl algorithm.adv_estimator="optimal_token_baseline" (handle_zero_tail True,
                 epsilon 1e-8; its rollout IS weights rho^2 on W: not here)
```
"""

import numpy as np

from minirl_lm.boundary import COUNT, MASK, NONNEGATIVE, TOKENS, array, boundary, flag, padded

__all__ = ["otb_advantages"]


_columns = padded(  # a position is a column (a baseline per column of the group)
    "the optimal token baseline (a position is a column: a baseline per column of the group)",
    "minirl_lm.multiturn.env.action_view to compact the rows (scatter puts results back)",
)


def _groups_of_K(mask, K):
    """`K` divides the batch: `B = N*K` rows, prompt-major."""
    if mask.shape[0] % K:
        return f"K: expected a divisor of the batch size B = {mask.shape[0]} (groups of K rows), got {K}"


def _log_probs(logp_old, mask):
    """The sampled tokens' log-probs are `<= 0` where trained."""
    if (logp_old[mask > 0] > 0).any():
        return f"logp_old: expected log-probs <= 0 on the trained tokens, got max {logp_old[mask > 0].max():g}"


def _sums_of_squares(logp_old, sum_pi_sq, mask):
    """`sum_v pi(v|s)^2` lies in `[pi(y|s)^2, 1]` where trained (to rounding)."""
    p = np.exp(np.minimum(logp_old, 0.0))  # (B, T)
    if ((sum_pi_sq < p * p * (1 - 1e-12)) | (sum_pi_sq > 1.0 + 1e-12))[mask > 0].any():
        return "sum_pi_sq: expected sum_v pi(v|s)^2 in [pi(y|s)^2, 1] on the trained tokens"


@boundary(
    mask=MASK,
    rewards=array("B"),
    logp_old=TOKENS,
    sum_pi_sq=TOKENS,
    K=COUNT,
    w_eps=NONNEGATIVE,
    zero_tail=flag,
    where=[_columns, _groups_of_K, _log_probs, _sums_of_squares],
)
def otb_advantages(rewards, mask, logp_old, sum_pi_sq, K, w_eps=1e-8, zero_tail=True):
    """Advantages (B, T) with the optimal token baseline of each group, eq. (otb_group).

    Args:
        rewards: `(B,)` outcome rewards, `B = N*K` rows prompt-major.
        mask: `(B, T)` 0/1, right-padded (a position is a column; a mask with holes is refused).
        logp_old: `(B, T)` log-probs of the sampled tokens (`<= 0` on trained tokens).
        sum_pi_sq: `(B, T)` `sum_v pi(v|s_t)^2` at each token's state, in `[pi(y_t)^2, 1]`.
        K: the group size, dividing `B`.
        w_eps: the stabilizer of the denominator (verl's 1e-8), `>= 0`.
        zero_tail: True or False: zero the baseline of a group's unique longest response past
            the second-longest.

    Returns:
        `(B, T)` advantages, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a result beyond float64 (named after the function).
    """
    B, T = mask.shape
    p = np.exp(np.minimum(logp_old, 0.0))  # (B, T) pi(y_t); padding may hold any finite garbage
    G = rewards[:, None] * mask  # (B, T) G_t = R on every trained token
    W = np.cumsum((1.0 - 2.0 * p + sum_pi_sq) * mask, axis=1)  # (B, T) eq. (otb_score), summed to t
    if K == 1:
        return G  # no others: no baseline
    Gg, Wg, mg = (x.reshape(-1, K, T) for x in (G, W, mask))  # (N, K, T)
    num = (Gg * Wg * mg).sum(axis=1)  # (N, T)
    den = (Wg * mg).sum(axis=1) + w_eps  # (N, T)
    base = np.divide(num, den, out=np.zeros_like(num), where=den > 0)  # (N, T) eq. (otb_group)
    base = np.repeat(base[:, None, :], K, axis=1)  # (N, K, T)
    if zero_tail:  # past the second-longest, the longest has no others (a tie: only padding)
        L = mg.sum(axis=2)  # (N, K) lengths
        second = np.sort(L, axis=1)[:, -2]  # (N,)
        base[np.arange(len(L)), np.argmax(L, axis=1)] *= np.arange(T) < second[:, None]  # (N, T)
    return ((Gg - base) * mg).reshape(B, T)  # (B, T)
