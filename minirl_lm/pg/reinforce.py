"""REINFORCE, the score-function estimator, in its two views, as an objective of token log-probs.

With terminal reward `R(x, y)`, `gamma = 1` and a prompt-dependent baseline `b(x)`, the token view
and the sequence (bandit) view are one estimator, sample for sample, because `log pi(y|x)` is the
sum of the token log-probs:

```text
token view     grad_hat = sum_t (R - b(x)) grad log pi(y_t | x, y_<t)     eq. (pg_token)
bandit view    grad_hat = (R - b(x)) grad log pi(y | x)                    eq. (pg_sequence)
```

As losses (minimized, `loss = -objective`) over a batch of `B` responses:

```text
reinforce_loss           loss = -sum_{b,t} w[b,t] A[b,t] logp[b,t]        eq. (pg_token)
                         dloss/dlogp[b,t] = -w[b,t] A[b,t]
sequence_reinforce_loss  loss = -(1/B) sum_b A_b seq_logp_b                eq. (pg_sequence)
                         dloss/dseq_logp_b = -A_b / B
```

A per-token advantage `A[b,t]` (a critic, GAE, per-token KL shaping, discounting) is allowed in
the token view only; it is where the two views part ways.

The per-token weights `w` (`token_weights`) are the loss aggregation, eq. (pg_agg). With `|y_b|`
the number of real tokens of response `b`, `B` responses, `T_max` a constant length (`max_len`):

| `agg` | `w[b, t]` on a real token | what it means |
|---|---|---|
| `seq_sum` | `1/B` | the estimator itself, averaged over the batch. Every token counts once: a long response moves `theta` in proportion to its length. |
| `token_mean` | `1/sum_b |y_b|` | every real token of the batch counts the same; a response's total weight is `|y_b| / (all tokens)`, so long responses still weigh more, and the scale depends on the batch's lengths. |
| `seq_mean_token_mean` | `1/(B |y_b|)` | each response weighs `1/B` in total whatever its length: a token of a short response weighs more than a token of a long one (GRPO's original form; the length bias Dr. GRPO points out: a long wrong answer is penalized less per token). |
| `constant` | `1/(B T_max)` | `seq_sum` divided by a constant (Dr. GRPO, `T_max = max_len`): unbiased, no length-dependent weight. |
| `token_sum` | `1` | no normalizer at all (verl's `token-sum`): `B` times `seq_sum`, so the step grows with the batch; the learning rate carries the whole scale. |

Padding has `w = 0`, so the gradient is 0 there; a response of length 0 contributes nothing (no
division by zero: its weights are 0). One default for every loss of the library and for
`token_weights`: `agg="token_mean"` (the frameworks' default too, below).

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

```text
agg="token_mean" (default)  TRL loss_type="dapo" (default) or "bnpo"; verl
                            actor.loss_agg_mode="token-mean" (default); OpenRLHF
                            --actor.loss_agg_mode token-mean (default)
agg="seq_sum"               TRL loss_type="luspo"; verl "seq-mean-token-sum"; OpenRLHF: none
agg="seq_mean_token_mean"   TRL "grpo"; verl "seq-mean-token-mean"; OpenRLHF seq-mean-token-mean
                            (verl's seq-mean modes and OpenRLHF's divide by the rows with a real
                            token, not by B)
agg="constant", max_len     TRL "dr_grpo" (T_max = max_completion_length); verl
                            "seq-mean-token-sum-norm" (T_max = loss_scale_factor, or the padded
                            width T when null, the default); OpenRLHF: none
agg="token_sum"             verl "token-sum" (the masked sum, no normalizer; times the
                            data-parallel size); TRL, OpenRLHF: none
```
"""

from minirl_lm.boundary import ADVANTAGE, MASK, TOKENS, array, boundary
from minirl_lm.core.ops import AGGREGATION, AGGS, adv_tokens, agg_weights

__all__ = ["AGGS", "token_weights", "reinforce_loss", "sequence_reinforce_loss"]


@boundary(mask=MASK, **AGGREGATION)
def token_weights(mask, agg="token_mean", max_len=None):
    """Per-token weights `w` of the loss aggregation, eq. (pg_agg).

    The checked entry of `minirl_lm.core.ops.agg_weights` (the one definition, which the
    estimators call on their own checked masks).

    Any 0/1 mask is accepted. A 0 between 1s is a hole: a position inside a response that is
    not trained (a tool output; what TRL's `tool_mask` or verl's multi-turn `response_mask`
    holds). `|y_b|` is the number of trained tokens of row `b` (`mask.sum(axis=1)`), wherever
    they sit, so the weights of a row with holes are those of its compacted row (holes removed,
    the trained tokens moved left in order) scattered back, for every `agg`; every token-level
    objective built on them inherits it (loss and gradient).

    Args:
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        agg: one of `"seq_sum"`, `"token_mean"`, `"seq_mean_token_mean"`, `"constant"`,
            `"token_sum"`.
        max_len: the constant `T_max` of `"constant"` (default: the padded width `T`); must be
            at least the longest response, the largest `|y_b|` (trained tokens, holes not
            counted). Compaction keeps the weights at a given `max_len`; the default is the
            compacted batch's too when its rows keep the width `T`.

    Returns:
        `(B, T)` weights, 0 at padding.

    Raises:
        ValueError: an unknown `agg`, or `max_len` shorter than the longest response (its
            trained tokens).
    """
    return agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)


@boundary(logp=TOKENS, adv=ADVANTAGE, mask=MASK, **AGGREGATION, returns="loss dloss_dlogp")
def reinforce_loss(logp, adv, mask, agg="token_mean", max_len=None):
    """Token-view REINFORCE loss, eq. (pg_token): `loss = -sum_{b,t} w[b,t] A[b,t] logp[b,t]`.

    Args:
        logp: `(B, T)` token log-probs.
        adv: `(B,)` one advantage per response, or `(B, T)` one per token.
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        agg: the aggregation of `token_weights`.
        max_len: the constant `T_max` of `agg="constant"`.

    Returns:
        `(loss, dloss_dlogp)`: a float and the `(B, T)` gradient `-w A`, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss (named after the function, with
            the range of its inputs). The gradient `-w A` is always finite: every weight is in
            `[0, 1]` and `A` is finite.
    """
    A = adv_tokens(adv, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    loss = -(w * A * logp).sum()  # eq. (pg_token)
    # backward: d loss / d logp[b, t] = -w[b, t] A[b, t]   (0 at padding: w = 0)
    return float(loss), -w * A  # (B, T)


@boundary(seq_logp=array("B"), adv=array("B"), returns="loss dloss_dseq")
def sequence_reinforce_loss(seq_logp, adv):
    """Bandit-view REINFORCE loss, eq. (pg_sequence): `loss = -(1/B) sum_b A_b seq_logp_b`.

    The policy spreads `dloss_dseq[b]` onto every real token of response `b`
    (`d seq_logp / d logp[b, t] = mask[b, t]`).

    Args:
        seq_logp: `(B,)` sequence log-probs `log pi(y_b | x_b)`.
        adv: `(B,)` one advantage per response.

    Returns:
        `(loss, dloss_dseq)`: a float and the `(B,)` gradient `-A / B`.

    Raises:
        ValueError: an empty batch, mismatched shapes or a non-finite result.
    """
    B = seq_logp.shape[0]
    loss = -(adv * seq_logp).sum() / B  # eq. (pg_sequence)
    # backward: d loss / d seq_logp_b = -A_b / B
    return float(loss), -adv / B  # (B,)
