"""Common confusions about GRPO-style losses, each settled by a few lines of arithmetic.

One function per confusion, each a few lines on the library's public functions, printing what it
measures. Everything is deterministic (the one sampled group uses np.random.default_rng(0)). The
docs page "Common confusions" shows each function (a snippet section) and runs it.

    loss_zero      the loss is ~0 but the policy moves (rho = 1, centred advantages)
    never_clips    one epoch per group means rho = 1: the clip fraction is 0
    aggregation    per-token weights of a short and a long response under each normalizer
    bessel         population versus Bessel std at K = 2 (and the factor sqrt((K-1)/K))
    k_equals_1     what K = 1 does in each baseline: r, 0, 0, ValueError

    $ python examples/confusions.py              # all of them
    $ python examples/confusions.py loss_zero    # one
"""

import argparse

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.advantages import centred, leave_one_out, no_baseline, standardized
from minirl_lm.pg.clip import clipped_surrogate
from minirl_lm.pg.grpo import grpo_step
from minirl_lm.pg.reinforce import token_weights


# --8<-- [start:loss_zero]
def loss_zero():
    policy = TabularPolicy(np.array([[0.5, 0.0, -0.5, 0.2]]))  # one prompt, V = 4
    states = np.zeros((4, 1), dtype=np.int64)  # (B, T) = (4, 1)
    tokens = np.array([[0], [1], [2], [3]])  # a group of K = 4 responses
    mask = np.ones((4, 1))
    r = np.array([1.0, 0.0, 0.3, 1.0])  # r(y) of each token y
    adv = centred(r[tokens].reshape(1, 4)).reshape(-1)  # (N, K) -> (B,), sums to 0
    logp, _ = policy.logp(states, tokens, mask)
    loss, dlogp = clipped_surrogate(logp, logp.copy(), adv, mask)  # first epoch: logp_old = logp
    dtheta = policy.backward(states, tokens, mask, dlogp)  # (1, V)
    print(f"advantages          {np.round(adv, 4)}")
    print(f"loss value          {loss:.3e}")
    print(f"dloss/dlogp         {np.round(dlogp[:, 0], 4)}")
    print(f"dloss/dtheta        {np.round(dtheta[0], 4)}")
    before = policy.probs()[0] @ r
    policy.theta -= 1.0 * dtheta  # one step, lr = 1
    print(f"E_pi[r] before/after one step: {before:.4f} -> {policy.probs()[0] @ r:.4f}")


# --8<-- [end:loss_zero]


# --8<-- [start:never_clips]
def never_clips():
    mdp = TokenMDP(prompts=[0], V=4, max_len=1)  # one prompt, one-token answers
    grader = lambda prompt, response: float(response[0] in (0, 3))  # tokens 0 and 3 are right
    for mu in (1, 4):  # epochs on each group
        policy = TabularPolicy(np.zeros((mdp.S, mdp.V)))
        rng = np.random.default_rng(0)
        for group in range(3):
            info = grpo_step(policy, policy.copy(), mdp, grader, rng, K=8, mu=mu, lr=1.0, beta=0.0)
            print(
                f"mu = {mu}, group {group}: clip fraction per epoch {np.round(info['clip_fraction'], 3).tolist()}"
            )


# --8<-- [end:never_clips]


# --8<-- [start:aggregation]
def aggregation():
    mask = np.array(
        [
            [1, 1, 0, 0, 0, 0, 0, 0],  # a short response: 2 tokens
            [1, 1, 1, 1, 1, 1, 1, 1.0],
        ]
    )  # a long response: 8 tokens
    print(f"{'agg':>20}  {'w per token (short, long)':>26}  {'total (short, long)':>20}")
    for agg in ("seq_sum", "token_mean", "seq_mean_token_mean", "constant"):
        w = token_weights(mask, agg, max_len=8 if agg == "constant" else None)  # (B, T)
        per_token, total = w[:, 0], w.sum(axis=1)
        print(f"{agg:>20}  {per_token[0]:12.4f} {per_token[1]:12.4f}  {total[0]:9.4f} {total[1]:9.4f}")


# --8<-- [end:aggregation]


# --8<-- [start:bessel]
def bessel():
    r = np.array([[1.0, 0.0]])  # K = 2, one right, one wrong
    print(f"population std (ddof=0): A = {standardized(r, ddof=0)[0]}")
    print(f"Bessel std     (ddof=1): A = {standardized(r, ddof=1)[0]}")
    print(f"1/sqrt(2)              =     {1 / np.sqrt(2):.8f}")
    for K in (2, 4, 8, 64):
        r = np.random.default_rng(K).random((1, K))  # any rewards with a spread
        ratio = standardized(r, eps=0.0, ddof=1) / standardized(r, eps=0.0, ddof=0)
        print(
            f"K = {K:2d}: A(ddof=1) / A(ddof=0) = {ratio.mean():.6f}, sqrt((K-1)/K) = {np.sqrt((K - 1) / K):.6f}"
        )


# --8<-- [end:bessel]


# --8<-- [start:k_equals_1]
def k_equals_1():
    r = np.array([[0.7], [1.0], [0.0]])  # N = 3 prompts, K = 1 each
    print(f"no baseline:         {no_baseline(r).ravel()}")
    print(f"centred:             {centred(r).ravel()}")
    print(f"standardized ddof=0: {standardized(r, ddof=0).ravel()}")
    print(f"standardized ddof=1: {standardized(r, ddof=1).ravel()}")
    try:
        leave_one_out(r)
    except ValueError as err:
        print(f"leave-one-out:       ValueError\n  {err}")


# --8<-- [end:k_equals_1]


CONFUSIONS = {f.__name__: f for f in (loss_zero, never_clips, aggregation, bessel, k_equals_1)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="confusions to settle: " + ", ".join(CONFUSIONS) + " (default all)",
    )
    args = p.parse_args(argv)
    for name in args.names:
        if name not in CONFUSIONS:
            p.error(f"NAME: expected one of {', '.join(CONFUSIONS)}, got {name!r}")
    names = args.names or list(CONFUSIONS)
    for i, name in enumerate(names):
        if len(names) > 1:
            print(("\n" if i else "") + f"== {name}")
        CONFUSIONS[name]()


if __name__ == "__main__":
    main()
