"""The one primitive: token log-probs, their masked sum, and sum vs mean.

The chapter's demonstration in NumPy: a batch of B = 2 responses over a vocabulary of V = 8 tokens,
padded to T = 5; the second response has 3 tokens and 2 positions of padding. One log-softmax,
one gather, one masked sum:

    log pi(y | x) = sum_t log pi(y_t | x, y_<t)                           eq. (factorization)

The program checks by code that the sequence log-prob equals the masked sum of the token
log-probs, shows that summing and averaging over tokens give different numbers and, at the
default seed, different orders (the long response has the higher mean, the short one the higher
sum; checked with _claims.claim), and that the Numba kernel (``minirl_lm.kernels.dense_logp``)
agrees with the NumPy reference.

    $ python examples/logprob.py [--seed 1]
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm import kernels
from minirl_lm.core.logprob import log_softmax, masked_mean, masked_sum, token_logp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import quiet_pipe, seed  # noqa: E402

SEED = 1  # a batch whose two rankings differ (with seed 0 they agree)


def main(argv=None):
    quiet_pipe()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=seed, default=SEED, help=f"seed of np.random.default_rng (default {SEED})")
    args = parser.parse_args(argv)
    if args.seed < 0:
        parser.error(f"--seed: expected an integer >= 0, got {args.seed}")
    rng = np.random.default_rng(args.seed)

    # Toy batch: logits[b, t] are the next-token logits *before* emitting response[b, t].
    B, T, V = 2, 5, 8
    logits = rng.standard_normal((B, T, V))  # (B, T, V)
    response = rng.integers(0, V, (B, T))  # (B, T) the sampled tokens
    mask = np.array(
        [
            [1, 1, 1, 1, 1],  # response 1: 5 tokens
            [1, 1, 1, 0, 0],
        ],
        dtype=float,
    )  # response 2: 3 tokens + padding

    # one log-softmax, one gather, one masked sum
    logps = log_softmax(logits)  # (B, T, V)
    token_logps = np.take_along_axis(logps, response[..., None], axis=-1)[..., 0]  # (B, T)
    seq_logps = (token_logps * mask).sum(-1)  # (B,)  eq. (factorization)

    np.set_printoptions(precision=3, suppress=True, floatmode="fixed")
    print("token log-probs log pi(y_t | x, y_<t), padding shown as computed:")
    print(token_logps)
    print("sequence log-probs log pi(y | x):", seq_logps)

    # the library's primitive: logp is exactly 0.0 at padding, seq_logp its masked sum
    logp, seq_logp = token_logp(logits, response, mask)
    print("\nminirl_lm.core.logprob.token_logp (0.0 at padding):")
    print(logp)
    diff = np.abs(seq_logp - masked_sum(token_logps, mask)).max()
    print(f"max |seq_logp - masked sum of token log-probs| = {diff:.1e}")
    assert diff == 0.0

    # sum vs mean over real tokens: not the same number once lengths differ
    lengths = mask.sum(-1)
    summed, averaged = masked_sum(logp, mask), masked_mean(logp, mask)
    print("\nresponse  length  sum over tokens  mean over tokens")
    for b in range(B):
        print(f"{b:8d}  {int(lengths[b]):6d}  {summed[b]:15.3f}  {averaged[b]:16.3f}")
    by_sum, by_mean = int(np.argmax(summed)), int(np.argmax(averaged))
    print(
        f"ranked first by the sum: response {by_sum}; by the mean: response {by_mean} "
        + ("(the two orders differ)" if by_sum != by_mean else "(the two orders agree)")
    )
    if args.seed == SEED:  # the page's sentence: the mean ranks these two responses differently
        claim(
            (by_sum, by_mean) == (1, 0),
            "sum and mean rank the two responses differently: the short one by the sum, the long one by the mean",
        )

    # the fused Numba kernel against the NumPy reference
    k_logp, k_seq = kernels.dense_logp(logits, response, mask)
    err = max(np.abs(k_logp - logp).max(), np.abs(k_seq - seq_logp).max())
    print(f"\nkernels.dense_logp vs NumPy: max abs difference {err:.1e}")
    assert err <= 1e-12


if __name__ == "__main__":
    main()
