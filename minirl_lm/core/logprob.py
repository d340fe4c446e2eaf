r"""The one primitive: token log-probs, their masked sum, and the one derivative.

Every objective of the chapter is a function of per-token log-probs, and every gradient reaches
the policy through one derivative. This file is the NumPy reference for both; the Numba kernels
(`minirl_lm.kernels`) are tested equal to it.

Factorization. Transitions are deterministic (concatenation), so a response's probability is the
product of its next-token probabilities:

```text
log pi(y | x) = sum_{t=1}^{|y|} log pi(y_t | x, y_<t)                 eq. (factorization)
```

In a padded batch, `seq_logp[b] = sum_t mask[b, t] logp[b, t]`: a masked *sum*. Dividing by the
length instead (`masked_mean`) is a different quantity, not a normalization of the same one.

Log-softmax. With logits `z` (one row of `V` entries) and `m = max_v z_v`, the log-sum-exp is
`m + log sum_v exp(z_v - m)`: `m` is subtracted inside every exponential and added back once, so

```text
log softmax(z)_y = z_y - m - log sum_v exp(z_v - m)                   eq. (log_softmax)
```

(the shift changes nothing mathematically and keeps every `exp` in `(0, 1]`; `-inf` entries give
`exp(-inf) = 0`; `m` is finite because a row must have a finite entry).

Its gradient. Write `p = softmax(z)`, `p_v = exp(z_v) / sum_u exp(z_u)`. Then

```text
d/dz_v [z_y - log sum_u exp(z_u)] = 1[v = y] - exp(z_v) / sum_u exp(z_u)
                                  = 1[v = y] - p_v                    eq. (logsoftmax_grad)
```

so the backward of `logp[b, t]` with upstream gradient `dlogp[b, t]` is
`dlogits[b, t, :] = dlogp[b, t] mask[b, t] (onehot(y_bt) - p)`.

Edge cases, defined and tested: padding positions get `logp == 0.0` exactly and a zero gradient
(whatever `dlogp` holds there); a token whose logit is `-inf` has probability 0 and log-prob
`-inf` where it is gathered, and its gradient is the finite limit `dlogp (1 - 0)` at that entry
(eq. (logsoftmax_grad) holds with `p_y = 0`), so the backward never produces NaN.

Demonstration: `python examples/logprob.py`.
"""

import numpy as np

from minirl_lm.boundary import MASK, TOKENS, array, boundary
from minirl_lm.core.ops import log_softmax as _log_softmax
from minirl_lm.core.validate import logits

__all__ = ["log_softmax", "masked_sum", "masked_mean", "token_logp", "token_logp_backward"]

VALUES = logits("B T")  # (B, T) values; -inf allowed (a log-prob of an impossible token)
TOKEN_IDS = array("B T", integer=True, low=0)  # (B, T) token ids, below V: `_in_vocab`


def _in_vocab(logits, tokens):
    """Every token id (padding too) is a column of the logits: `tokens < V`."""
    if (tokens >= logits.shape[-1]).any():
        return f"tokens: expected ids in [0, {logits.shape[-1]}) (V, the logits' last axis), got {tokens.max()}"


@boundary(logits=logits("... V"), returns=None)  # -inf where a logit is -inf
def log_softmax(logits):
    """Stable log-softmax over the last axis, eq. (log_softmax).

    Args:
        logits: `(..., V)` logits; entries may be `-inf` (impossible tokens), every row needs
            at least one finite entry.

    Returns:
        `(..., V)` log-probabilities.
    """
    return _log_softmax(logits)


@boundary(x=VALUES, mask=MASK, returns=None)  # -inf where a real entry is -inf
def masked_sum(x, mask):
    """The masked sum `sum_t mask[b, t] x[b, t]`, eq. (factorization).

    Args:
        x: `(B, T)` values, finite or `-inf`; padding entries are ignored, even if `-inf`.
        mask: `(B, T)` 0/1 float mask; holes allowed.

    Returns:
        `(B,)` sums over the real tokens of each row (`-inf` where a real entry is `-inf`).
    """
    return np.where(mask > 0, x, 0.0).sum(axis=-1)  # (B,)  eq. (factorization)


@boundary(x=VALUES, mask=MASK, returns=None)  # -inf where a real entry is -inf
def masked_mean(x, mask):
    """The per-sequence mean over real tokens, `masked_sum / length`.

    A response of length 0 (all padding) gets 0.0: it contributes nothing.

    Args:
        x: `(B, T)` values, finite or `-inf`; padding entries are ignored.
        mask: `(B, T)` 0/1 float mask; holes allowed.

    Returns:
        `(B,)` means over the real tokens of each row (`-inf` where a real entry is `-inf`).
    """
    lengths = mask.sum(axis=-1)  # (B,)
    total = np.where(mask > 0, x, 0.0).sum(axis=-1)  # (B,)
    return total / np.maximum(lengths, 1.0)  # a row of padding only: 0.0 / 1.0


@boundary(logits=logits("B T V"), tokens=TOKEN_IDS, mask=MASK, where=[_in_vocab], returns=None)  # -inf: see below
def token_logp(logits, tokens, mask):
    """Token log-probs and sequence log-probs of the sampled tokens.

    Args:
        logits: `(B, T, V)`; `logits[b, t - 1]` are the next-token logits at `s_t`, before
            emitting `tokens[b, t - 1] = y_t`.
        tokens: `(B, T)` int in `[0, V)` (padding positions too).
        mask: `(B, T)` 0/1 float mask; holes allowed (each token is gathered on its own).

    Returns:
        `(logp, seq_logp)`: `logp` `(B, T)`, exactly 0.0 at padding, `-inf` at a real token
        whose logit is `-inf`; `seq_logp` `(B,)`, the masked sum over `t`.
    """
    logp_all = _log_softmax(logits)  # (B, T, V)
    logp = np.take_along_axis(logp_all, tokens[..., None], axis=-1)[..., 0]  # (B, T) gather
    logp = np.where(mask > 0, logp, 0.0)  # (B, T), 0.0 at padding
    seq_logp = logp.sum(axis=-1)  # (B,)  eq. (factorization)
    return logp, seq_logp


@boundary(logits=logits("B T V"), tokens=TOKEN_IDS, mask=MASK, dlogp=TOKENS, where=[_in_vocab], returns="dlogits")
def token_logp_backward(logits, tokens, mask, dlogp):
    """The backward of `token_logp`'s `logp`, eq. (logsoftmax_grad).

    `dlogits[b, t, v] = dlogp[b, t] mask[b, t] (1[v = y_bt] - softmax(logits[b, t])_v)`.

    Args:
        logits: `(B, T, V)` logits, as given to `token_logp`.
        tokens: `(B, T)` int in `[0, V)`.
        mask: `(B, T)` 0/1 float mask; holes allowed.
        dlogp: `(B, T)` finite upstream gradient `g = dloss/dlogp`; padding entries are ignored.

    Returns:
        `(B, T, V)` `dlogits`, finite.
    """
    w = np.where(mask > 0, dlogp, 0.0)  # (B, T)
    p = np.exp(_log_softmax(logits))  # (B, T, V), exp(-inf) = 0
    dlogits = -w[..., None] * p  # (B, T, V) eq. (logsoftmax_grad): -w p_v
    np.put_along_axis(
        dlogits, tokens[..., None], np.take_along_axis(dlogits, tokens[..., None], axis=-1) + w[..., None], axis=-1
    )  # eq. (logsoftmax_grad): +w 1[v = y]
    return dlogits
