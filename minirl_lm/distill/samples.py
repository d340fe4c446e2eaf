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

import numpy as np

from minirl_lm.boundary import MASK, TOKENS, boundary, flag

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


@boundary(logp=TOKENS, mask=MASK, returns="loss dloss_dlogp")
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


@boundary(logp=TOKENS, logp_teacher=TOKENS, mask=MASK, to_go=flag, returns="loss dloss_dlogp")
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
