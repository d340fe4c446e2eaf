"""Sampling and reward shaping: DAPO's dynamic sampling, its overlong penalty, truncation masks.

Dynamic sampling (DAPO; verl `algorithm.filter_groups`). A group whose rewards are all equal
has zero group-relative advantage: it is dropped and the prompt resampled until a group with
some spread comes. verl drops a group when it has more than one response and its rewards have
std 0 (a group of one is kept). If each prompt is resampled until accepted, the kept group is
drawn from the distribution conditioned on acceptance, and since dropped groups carried a zero
update, the expected update of prompt x is its unconditioned expected update divided by the
acceptance probability. For a 0/1 reward with success probability p = P(r = 1 | x):

    E[update | kept] = E[update] / (1 - p^K - (1-p)^K)                          eq. (dapo_reweight)

so hard and easy prompts (p near 0 or 1) are weighted up. (When instead the batch is filled
from a stream of prompts, as verl does, each prompt enters in proportion to its acceptance
probability, which cancels the factor: the update is the unfiltered one times a global scale.)

Overlong reward shaping (DAPO; verl reward manager "dapo", `overlong_buffer.len`,
`overlong_buffer.penalty_factor`), with L_max the length cap, L_buf the buffer and |y| the
response length:

    r_len(y) = min(-(|y| - (L_max - L_buf)) / L_buf * penalty_factor, 0)        eq. (overlong)

added to the reward: 0 up to L_max - L_buf, falling linearly to -penalty_factor at L_max.

Truncation masking (TRL `mask_truncated_completions`): a response that hit the length cap
without emitting EOS is truncated; its mask row is zeroed, so it is left out of the loss (and of
a token count that normalizes it). An empty response (length 0) is not truncated.

Each function declares its arguments with `boundary`; its body is the math.

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository); in parentheses their defaults, not results of this library.

```text
filter_groups     verl algorithm.filter_groups.enable; OpenRLHF --algo.dynamic_filtering_enable,
                  --algo.dynamic_filtering_range (0 1)
overlong_penalty  verl reward manager dapo, overlong_buffer.len, .penalty_factor; OpenRLHF
                  --reward.overlong_buffer_len (None), --reward.overlong_penalty_factor (1)
mask_truncated    TRL mask_truncated_completions (False)
```
"""

import numpy as np

from minirl_lm.boundary import COUNT, MASK, NONNEGATIVE, array, boundary, number

__all__ = ["filter_groups", "acceptance_probability", "resample_factor", "overlong_penalty"]
__all__ += ["truncated", "mask_truncated"]

PROBABILITY = number(0.0, 1.0)
TOKEN_IDS = array("B T", integer=True, low=0)  # (B, T) int ids >= 0
EOS = number(0, integer=True)  # a token id >= 0


@boundary(rewards=array("N K"))
def filter_groups(rewards):
    """Which groups dynamic sampling keeps.

    Args:
        rewards: `(N, K)` finite rewards, a group of K per prompt. A group is dropped when K > 1
            and all its rewards are equal (std 0); K = 1 keeps every group (as verl does; its
            group-relative advantage is 0 anyway).

    Returns:
        A bool array `(N,)`, True where the group is kept.
    """
    if rewards.shape[1] == 1:
        return np.ones(rewards.shape[0], dtype=bool)
    return rewards.max(axis=1) != rewards.min(axis=1)  # (N,) some spread


@boundary(p=PROBABILITY, K=COUNT)
def acceptance_probability(p, K):
    """P(a group of K 0/1 rewards is not all equal) = 1 - p^K - (1-p)^K.

    Args:
        p: the success probability P(r = 1 | x), in `[0, 1]`.
        K: the group size, an int >= 1 (K = 1: every group is kept, 1.0).

    Returns:
        A float in `[0, 1]`.
    """
    return 1.0 - p**K - (1.0 - p) ** K if K > 1 else 1.0  # K = 1: every group kept


def _accepted(p, K):
    """Some group is accepted (else resampling never ends)."""
    if acceptance_probability.core(p, K) <= 0:
        return (
            f"p: expected 0 < p < 1 (at p = {p} every group of K = {K} has equal "
            f"rewards and resampling never ends)"
        )


@boundary(p=PROBABILITY, K=COUNT, where=[_accepted])
def resample_factor(p, K):
    """The factor of eq. (dapo_reweight), 1 / (1 - p^K - (1-p)^K), for a 0/1 reward.

    Args:
        p: the success probability P(r = 1 | x), in `[0, 1]`; in `(0, 1)` when K >= 2.
        K: the group size, an int >= 1; K = 1 gives 1 (nothing is filtered).

    Returns:
        A float >= 1.

    Raises:
        ValueError: no group can be accepted (p = 0 or p = 1 with K >= 2: resampling never
            ends), or a bad argument (named).
    """
    return 1.0 / acceptance_probability.core(p, K)  # eq. (dapo_reweight)


def _within_cap(lengths, max_len, buffer_len):
    """The buffer and every length fit under the cap `max_len`."""
    if buffer_len > max_len:
        return f"buffer_len: expected an integer <= max_len = {max_len}, got {buffer_len}"
    if lengths.max() > max_len:
        return f"lengths: expected entries <= max_len = {max_len}, got max {lengths.max()}"


@boundary(
    lengths=array("B", integer=True, low=0),
    max_len=number(1, 2**62, integer=True),  # the lengths' arithmetic stays within int64
    buffer_len=COUNT,
    penalty_factor=NONNEGATIVE,
    where=[_within_cap],
)
def overlong_penalty(lengths, max_len, buffer_len, penalty_factor=1.0):
    """DAPO's soft overlong penalty, eq. (overlong): lengths `(B,)` -> additive rewards `(B,)`.

    The length `|y|` is the response's extent, every token it occupies (tool outputs inside it
    included), not its number of trained tokens: the cap L_max bounds what the response fills
    of the context, tool outputs too, and verl's DAPO reward manager reads the length off the
    attention mask, not off the loss mask. For a right-padded mask both are
    `mask.sum(axis=1)`; for a mask with holes pass the last trained position + 1 (when the
    response ends on a trained token), not the sum.

    Args:
        lengths: `(B,)` response lengths, integers in `[0, max_len]`.
        max_len: the length cap L_max, an integer in `[1, 2**62]`.
        buffer_len: L_buf, in `[1, max_len]`.
        penalty_factor: `>= 0`; the penalty at |y| = L_max.
    """
    exceed = lengths - (max_len - buffer_len)  # (B,) > 0 in the buffer
    # eq. (overlong); the min before the product, so a long way below the buffer cannot overflow
    return np.minimum(-exceed, 0) / buffer_len * penalty_factor + 0.0  # +0.0: no -0.0


@boundary(mask=MASK, tokens=TOKEN_IDS, eos=EOS)
def truncated(tokens, mask, eos):
    """Which responses hit the cap without EOS.

    A row is truncated when it is non-empty and its last real token is not `eos`. With holes in
    the mask that is the token at the row's last trained position (the last 1 of the row), the
    same token as in the compacted row.

    Args:
        tokens: `(B, T)` integer token ids >= 0 (read at the last trained position only).
        mask: `(B, T)` 0/1; holes allowed.
        eos: the end-of-sequence token id, an int >= 0.

    Returns:
        A bool array `(B,)`, True where the row is truncated.
    """
    real = mask > 0  # (B, T)
    at = mask.shape[1] - 1 - np.argmax(real[:, ::-1], axis=1)  # (B,) last trained position
    last = tokens[np.arange(len(at)), at]  # (B,) last real token (any token for an empty row)
    return real.any(axis=1) & (last != eos)


@boundary(mask=MASK, tokens=TOKEN_IDS, eos=EOS)
def mask_truncated(tokens, mask, eos):
    """The mask with truncated rows zeroed (TRL `mask_truncated_completions`).

    Args:
        tokens: `(B, T)` integer token ids >= 0.
        mask: `(B, T)` 0/1; holes allowed.
        eos: the end-of-sequence token id, an int >= 0.

    Returns:
        `(B, T)` the mask, its truncated rows (`truncated`) all 0.
    """
    return mask * (~truncated.core(tokens, mask, eos))[:, None]  # (B, T)
