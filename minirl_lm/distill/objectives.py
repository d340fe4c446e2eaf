"""Divergences from the student to a teacher, token by token, on whole next-token distributions.

At every position of a batch the student's logits `z` give `p = softmax(z / tau)` and the
teacher's give `t`; `tau` is a temperature applied to both (TRL's `temperature`). Three
divergences of `p` from `t`, summed over the vocabulary:

```text
D_fwd = sum_v t_v (log t_v - log p_v)        KL(t || p), mode-covering        eq. (distill_forward)
D_rev = sum_v p_v (log p_v - log t_v)        KL(p || t), mode-seeking         eq. (distill_reverse)
m     = (1 - beta) p + beta t
D_jsd = beta KL(t || m) + (1 - beta) KL(p || m),   0 < beta < 1               eq. (distill_gkd)
```

and GKD's generalized Jensen-Shannon divergence (Agarwal et al. 2024, eq. 1) takes `beta = 0`
as the forward KL and `beta = 1` as the reverse KL, as TRL's GKD trainer does (`F.kl_div(input,
target)` is `target (log target - input)`, so `kl_div(student, teacher)` is KL(t || p)). Inside (0, 1) the
divergence vanishes at both ends, like `beta KL(t || p)` near 0 and `(1 - beta) KL(p || t)` near
1: the endpoints are the limits of `D_jsd / beta` and `D_jsd / (1 - beta)`, not of `D_jsd`.

The loss is the mean over real tokens (TRL's `reduction="batchmean"` with labels: the sum over
tokens and vocabulary over the number of unmasked tokens, clamped at 1, so an all-zero mask
gives 0):

```text
loss = sum_{b,t} mask D / max(1, sum mask)                                   eq. (distill_mean)
```

Gradients with respect to the student's logits (the policy's backward takes them from here;
the teacher is data). With `k_v = log p_v - log t_v`, `r_v = log p_v - log m_v`:

```text
d D_fwd / d z_v = (p_v - t_v) / tau                                          eq. (distill_forward_grad)
d D_rev / d z_v = p_v (k_v - D_rev) / tau                                    eq. (distill_reverse_grad)
d D_jsd / d z_v = (1 - beta) p_v (r_v - KL(p || m)) / tau                     eq. (distill_gkd_grad)
```

(the last because `d D_jsd / d p_v = (1 - beta) r_v + (1 - beta)(1 - ((1 - beta) p_v + beta t_v)
/ m_v) = (1 - beta) r_v`, then the softmax's Jacobian `p_v (a_v - sum_u p_u a_u)`). Each is a
vector summing to 0 over the vocabulary, so it equals `sum_v G_v (e_v - p)`: a weight
`G_v / p_v` on the score of token `v`, which is how the exact engine takes it
(`distill/student.py`, through `jsd_terms`, the divergence on log-probabilities).

    $ python examples/distill.py

Names in the frameworks (`docs/next.md` maps them): `beta` is TRL `GKDConfig.beta` (0.5),
`temperature` TRL `GKDConfig.temperature`.
"""

import numpy as np

from minirl_lm.boundary import MASK, POSITIVE, array, boundary, number
from minirl_lm.core.ops import log_softmax

__all__ = ["forward_kl", "reverse_kl", "generalized_jsd", "jsd_terms"]

LOGITS = dict(student_logits=array("B T V"), teacher_logits=array("B T V"), mask=MASK, temperature=POSITIVE)


def _weights(mask):
    return mask / max(1.0, mask.sum())  # (B, T) eq. (distill_mean)


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
    `ls` and the teacher's `lt` `(..., V)`, position weights `w` `(...)`, the temperature `tau`
    that divided the logits and `beta` in [0, 1] (0: the forward KL, 1: the reverse KL).
    What `generalized_jsd` computes after the log-softmax, and the exact engine at each state."""
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


@boundary(**LOGITS, returns="loss dloss_dlogits")
def forward_kl(student_logits, teacher_logits, mask, temperature=1.0):
    """Token-mean forward KL(t || p), eq. (distill_forward), and its gradient in the logits.

    Args:
        student_logits: `(B, T, V)` finite logits of the student at each position.
        teacher_logits: `(B, T, V)` finite logits of the teacher at the same positions.
        mask: `(B, T)` 0/1 (holes allowed); the loss is the mean over its ones, eq. (distill_mean).
        temperature: `> 0`, divides both logits.

    Returns:
        `(loss, dloss_dlogits)`: a float and a `(B, T, V)` array (0 at padding).
    """
    tau = temperature
    return _forward(log_softmax(student_logits / tau), log_softmax(teacher_logits / tau), _weights(mask), tau)


@boundary(**LOGITS, returns="loss dloss_dlogits")
def reverse_kl(student_logits, teacher_logits, mask, temperature=1.0):
    """Token-mean reverse KL(p || t), eq. (distill_reverse), and its gradient in the logits.

    Arguments and result as `forward_kl`.
    """
    tau = temperature
    return _reverse(log_softmax(student_logits / tau), log_softmax(teacher_logits / tau), _weights(mask), tau)


@boundary(**LOGITS, beta=number(0.0, 1.0), returns="loss dloss_dlogits")
def generalized_jsd(student_logits, teacher_logits, mask, beta=0.5, temperature=1.0):
    """GKD's generalized Jensen-Shannon divergence, eq. (distill_gkd), TRL's convention.

    `beta = 0` is the forward KL, `beta = 1` the reverse KL (exactly those functions), inside
    the mixture `m = (1 - beta) p + beta t`. The other arguments and the result as `forward_kl`.

    Args:
        beta: in `[0, 1]`, the teacher's weight in the mixture (TRL's default 0.5).
    """
    tau = temperature
    ls, lt = log_softmax(student_logits / tau), log_softmax(teacher_logits / tau)  # (B, T, V)
    return jsd_terms(ls, lt, _weights(mask), tau, beta)
