"""The bias-corrected KL with a sequence-level ratio: TRL's broadcast `s_b`.

`kl.kl_penalty_is`, eq. (kl_is), weighs each token's k3 by its own ratio
`rho_t = pi(y_t|s_t) / pi_old(y_t|s_t)`. With `importance_sampling_level="sequence"`, TRL
multiplies every token's k3 by the response's geometric-mean ratio instead (the same `coef_1`
its GSPO term uses), and the ratio is not detached:

```text
s_b  = exp( (1/|y_b|) sum_t (logp - logp_old) )                  eq. (gspo_ratio), geometric
loss = sum_{b,t} w[b,t] s_b k3_t,    k3_t = exp(-u_t) + u_t - 1,  u_t = logp_t - logp_ref,t
                                                                  eq. (kl_is_seq)
dloss/dlogp[b, t] = w[b,t] s_b (1 - exp(-u_t))  +  (s_b / |y_b|) sum_t' w[b,t'] k3_t'
```

The second term is the ratio's own gradient, spread over every trained token of the row: a
token's KL term moves the log-probs of the whole response. Under `pi_old`, `E[rho_t k3_t]` is the
k3 of `pi` at each visited state (per-token importance sampling is exact per state), while
`E[s_b k3_t]` is not: `s_b` mixes the ratios of the other tokens of the response, so the
broadcast penalty estimates neither `KL(pi || pi_ref)` nor its gradient without bias once
`pi != pi_old`. At `pi = pi_old` (`s_b = 1`) both equal `kl_penalty`'s k3 and its derivative
plus the term above (`(1/|y_b|) sum w k3`, which the per-token version does not have: the
gradient of `rho_t` at `rho_t = 1` is `k3_t` on its own token only).

A response of length 0 contributes nothing. A non-finite result from finite input is a
ValueError naming the function and the range of its inputs. Demonstrated on the KL page
(docs/kl.md, section "The sequence-level ratio in the bias-corrected KL").

Names in the frameworks (`docs/next.md` has the versions and files):

```text
kl_penalty_is_sequence  TRL use_bias_correction_kl=True with importance_sampling_level="sequence"
                        (the ratio coef_1 of shape (B, 1), per_token_kl * coef_1, not detached);
                        verl, OpenRLHF: none
```
"""

from minirl_lm.boundary import MASK, TOKENS, boundary
from minirl_lm.core.ops import AGGREGATION, agg_weights
from minirl_lm.pg.kl import kl_per_token
from minirl_lm.pg.seqclip import ratio_scale, sequence_ratio

__all__ = ["kl_penalty_is_sequence"]


@boundary(logp=TOKENS, logp_old=TOKENS, logp_ref=TOKENS, mask=MASK, **AGGREGATION, returns="loss dloss_dlogp")
def kl_penalty_is_sequence(logp, logp_old, logp_ref, mask, agg="token_mean", max_len=None):
    """k3 weighted by the broadcast geometric-mean sequence ratio, eq. (kl_is_seq) (TRL).

    Args:
        logp: `(B, T)` log-probs of the policy being trained (carries the gradient, also through
            the ratio).
        logp_old: `(B, T)` log-probs of the policy that sampled the tokens (data).
        logp_ref: `(B, T)` reference log-probs (data).
        mask: `(B, T)` 0/1; holes allowed (`|y_b|` counts the trained tokens).
        agg: the aggregation of eq. (pg_agg).
        max_len: see `agg`.

    Returns:
        `(loss, dloss_dlogp (B, T))`.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
    s = sequence_ratio.core(logp, logp_old, mask, "geometric")  # (B,) eq. (gspo_ratio)
    scale = ratio_scale(mask, "geometric")  # (B,) 1/|y_b|
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    k, dk = kl_per_token.core(logp, logp_ref, mask, "k3")  # (B, T) eq. (kl_k3)
    row = (w * k).sum(axis=1)  # (B,) sum_t w k3
    loss = (s * row).sum()  # eq. (kl_is_seq)
    # backward: the k3 of the token, then the ratio's: d s_b / d logp[b, t] = s_b / |y_b|
    return float(loss), s[:, None] * (w * dk) + (s * scale * row)[:, None] * mask  # (B, T)
