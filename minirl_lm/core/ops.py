"""The small pieces every objective shares, one definition each.

Trusted cores: each takes arguments already read at a public boundary (the declarations of
`minirl_lm.boundary`) and does the arithmetic only. The estimator files import them; their
standalone copies inline them.

- `AGGS`, `agg_weights`: the loss aggregations as per-token weights `w`, eq. (pg_agg) of the
  REINFORCE page (`minirl_lm.pg.reinforce.token_weights` is the checked entry).
- `adv_tokens`: one advantage per response, or one per token, as a `(B, T)` array.
- `log_ratio`: the masked log-ratio `logp - logp_other`, exactly 0 at padding.
- `sigmoid`, `log_softmax`: stable at both tails.
- `AGGREGATION`: the declaration of `agg` and `max_len` (`boundary`), shared by every loss.

Imports NumPy only.
"""

import numpy as np

from minirl_lm.boundary import MAX_LEN, longest_response, one_of

__all__ = ["AGGS", "AGGREGATION", "agg_weights", "adv_tokens", "log_ratio", "sigmoid", "log_softmax"]

AGGS = ("seq_sum", "token_mean", "seq_mean_token_mean", "constant", "token_sum")
AGGREGATION = dict(agg=one_of(AGGS), max_len=MAX_LEN, where=[longest_response])  # eq. (pg_agg)


def agg_weights(mask, agg, max_len=None):
    """Per-token weights `w` (B, T) of aggregation `agg` over a checked 0/1 `mask` (B, T), eq.
    (pg_agg).

    Any 0/1 mask: a row's length `|y_b| = sum_t mask[b, t]` counts its trained tokens wherever
    they sit, so a row with holes (untrained positions inside it) gets the weights of its
    compacted row (holes removed, the trained tokens moved left in order), scattered back.
    `max_len` is the `T_max` of `"constant"` (default: the padded width `T`), already checked to
    be at least the largest `|y_b|`; compaction invariance holds at a given `max_len` (the
    default is the same for the compacted rows when they keep the width `T`)."""
    B, T = mask.shape
    if agg == "token_sum":
        return mask.copy()  # (B, T) no normalizer at all
    if agg == "seq_sum":
        return mask / B  # (B, T)
    lengths = mask.sum(axis=1, keepdims=True)  # (B, 1) |y_b|
    if agg == "token_mean":
        return mask / max(lengths.sum(), 1.0)  # (B, T)
    if agg == "seq_mean_token_mean":
        return mask / (B * np.maximum(lengths, 1.0))  # (B, T) length 0: 0 / 1
    return mask / (B * (T if max_len is None else max_len))  # (B, T) "constant"


def adv_tokens(adv, mask):
    """A checked advantage of shape (B,) or (B, T) as (B, T): a (B,) advantage is put on every
    column (padding is weighted 0 by the caller's `w`, or multiply by `mask`)."""
    if adv.ndim == 1:
        return np.broadcast_to(adv[:, None], mask.shape)  # (B, T)
    return adv


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
