"""The test oracle at work: a hand-written implementation passes, every bug of the zoo is flagged.

`minirl_lm.oracle.compare(fn, reference)` runs your implementation and ours on the reference's
seeded cases (garbage at the padding, holes, an empty row, both signs of A, ratios beyond the
clip bounds, every aggregation) and reports the largest relative difference per case. This
program checks two things with it:

1. `my_clipped_loss` below, the PPO clipped loss written from its equation the way a user would
   write it (in NumPy here; in PyTorch the wrapper converts tensors), against
   `minirl_lm.pg.clip.clipped_surrogate`: no case is flagged.
2. Every mutant of the bug zoo (`scripts/bugzoo.py`: a bug a framework shipped, as a small edit
   of one of our files), loaded in memory as a stand-in implementation of the public function
   it breaks, against the unmutated function: every mutant is flagged on some case, and every
   unmutated stand-in on none.

    $ python examples/oracle.py

Output lines (parsed by the docs page and tests/examples/test_oracle.py):

    oracle NAME against FUNCTION: flagged F of N cases, max rel err X
    mutant NAME against FUNCTION: flagged F of N cases (first: CASE)
    oracle: M of Z bug-zoo mutants flagged, U of Z unmutated stand-ins flagged
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bug_effects  # noqa: E402  (loads a mutant of the zoo in memory)
from _claims import claim  # noqa: E402
from _cli import quiet_pipe  # noqa: E402

from minirl_lm import oracle  # noqa: E402
from minirl_lm.pg.clip import clipped_surrogate  # noqa: E402

RTOL = 1e-6
# the public function each mutant breaks (the mutated statements are in it or in its private core)
TARGET = {
    "clip_fraction_sign": "clip_fraction",
    "singleton_raw_reward": "advantages",
    "equal_rewards_residue": "advantages",
    "batch_not_group_statistics": "standardized",
    "kl_estimator_fallthrough": "kl_per_token",
    "kl_coefficient_ignored": "grpo_loss",
    "kl_loss_maximized": "grpo_loss",
    "token_kl_summed_at_the_end": "per_token_rewards",
    "gae_reads_masked_values": "td_errors",
    "dual_clip_positive_advantage": "dual_clip_surrogate",
    "dual_clip_constant_below_one": "dual_clip_surrogate",
    "accumulation_divides_twice": "accumulation_weights",
    "ipo_summed_not_averaged": "ipo_loss",
    "gae_reset_at_observations": "gae_actions",
    "observation_tokens_trained": "action_view",
}


# --8<-- [start:standin]
def my_clipped_loss(logp, logp_old, adv, mask, eps=0.2, eps_high=None, agg="token_mean", max_len=None):
    """The clipped loss and its gradient in logp, written from the equations alone."""
    B, T = mask.shape
    lengths = mask.sum(axis=1, keepdims=True)
    w = {
        "token_mean": mask / max(mask.sum(), 1.0),
        "seq_mean_token_mean": mask / (B * np.maximum(lengths, 1.0)),
        "seq_sum": mask / B,
        "constant": mask / (B * (T if max_len is None else max_len)),
        "token_sum": mask,  # verl's token-sum: no normalizer
    }[agg]
    ratio = np.exp(np.where(mask > 0, logp - logp_old, 0.0))
    A = adv[:, None]
    clipped = np.clip(ratio, 1.0 - eps, 1.0 + (eps if eps_high is None else eps_high))
    use_ratio = ratio * A <= clipped * A  # the min picks the unclipped term
    loss = -np.sum(w * np.minimum(ratio * A, clipped * A))
    return loss, -w * np.where(use_ratio, ratio * A, 0.0)  # d ratio / d logp = ratio


# --8<-- [end:standin]


def main(argv=None):
    quiet_pipe()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    rows = oracle.compare(my_clipped_loss, clipped_surrogate)
    n = sum(r.flagged(RTOL) for r in rows)
    worst = max(r.rel for r in rows)
    name = "oracle my_clipped_loss against clipped_surrogate"
    print(f"{name}: flagged {n} of {len(rows)} cases, max rel err {worst:.1e}")
    claim(n == 0, "the hand-written clipped loss passes every case")
    caught = clean = 0
    for mutant in bug_effects.bugzoo.MUTANTS:
        f = TARGET[mutant.name]
        ref = getattr(bug_effects.REAL[mutant.file], f)
        rows = oracle.compare(getattr(bug_effects.load(mutant), f), ref)
        bad = [r for r in rows if r.flagged(RTOL)]
        first = bad[0].case if bad else "-"
        print(f"mutant {mutant.name} against {f}: flagged {len(bad)} of {len(rows)} cases (first: {first})")
        caught += bool(bad)
        clean += any(
            r.flagged(RTOL) for r in oracle.compare(getattr(bug_effects.load(mutant, pristine=True), f), ref)
        )
    z = len(bug_effects.bugzoo.MUTANTS)
    print(f"oracle: {caught} of {z} bug-zoo mutants flagged, {clean} of {z} unmutated stand-ins flagged")
    claim(caught == z and clean == 0, "every mutant is flagged and no unmutated stand-in is")


if __name__ == "__main__":
    main()
