"""The exact engine (minirl_lm.exact): each structure against the brute-force enumeration it replaces.

Prints, for each of the engine's four structures, what enumeration it avoids (sizes) and the
largest difference from the brute force on a case small enough for both:

  scores  one draw of a response: E[g] and tr Cov[g] from per-token coefficients, against the
          dense (B, T, S V) score array;
  groups  K i.i.d. responses: the multiset law against all R^K ordered draws;
  batch   a batch statistic couples the prompts: per-prompt marginals in one pass of the
          kernel, against the joint outcome listed point by point;
  tree    the sequence KL and E[W^2] by recursion over the prefix tree, against the list of
          every response.

    $ python examples/exact.py
"""

import argparse
import itertools
import math
import os
import sys

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.exact.batch import batch_moments
from minirl_lm.exact.groups import group_law, group_moments, multisets
from minirl_lm.exact.scores import draw_moments, row_updates
from minirl_lm.exact.tree import children, tree_product, tree_sum

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_claims.py, beside this file
from _claims import claim  # noqa: E402
from _cli import quiet_pipe, seed  # noqa: E402


def lab(T, rng):
    """The off-policy lab's task at length T: two prompts, EOS + two letters, a random table."""
    mdp = TokenMDP(["ab", "b"], V=3, eos=0, max_len=T)
    return mdp, TabularPolicy(rng.normal(size=(mdp.S, mdp.V))), mdp.all_responses()


def part_scores(rng):
    mdp, pol, ro = lab(5, rng)
    c = rng.normal(size=ro.mask.shape)  # any per-token coefficients
    q = np.exp(pol.logp(ro.states, ro.tokens, ro.mask)[1]) / mdp.N  # mu_0(x) pi(y|x)
    mean, var = draw_moments(q, c, pol.probs(), ro.states, ro.tokens, ro.mask)  # eq. (exact_moments)
    G = row_updates(pol.probs(), ro.states, ro.tokens, ro.mask, c)  # (B, S V) dense
    Eg = q @ G
    d = max(np.abs(mean.ravel() - Eg).max(), abs(var - q @ ((G - Eg) ** 2).sum(1)))
    big, _, ro8 = lab(8, rng)
    dense = ro8.mask.size * big.S * big.V * 8 / 2**20  # MiB of the (B, T, S V) scores
    print(
        f"scores: T = 5, {len(q)} responses: E[g] and tr Cov[g] against the dense scores, max diff {d:.1e}; "
        f"at T = 8 the dense scores would take {dense:.0f} MiB, the engine {ro8.mask.size} coefficients"
    )
    claim(d < 1e-12, "the one-draw moments equal the dense enumeration")


def part_groups(rng):
    R, K, T, D = 5, 4, 3, 6
    p = rng.dirichlet(np.ones(R))
    r, basis = rng.normal(size=R), rng.normal(size=(R, T, D))
    Y, P = group_law(p, K)  # eq. (exact_multinomial)
    A = r[Y] - r[Y].mean(axis=1, keepdims=True)  # (M, K) a group statistic
    mean, second = group_moments(P, Y, [np.repeat(A[..., None], T, -1)], [basis])  # eq. (exact_group)
    E, E2 = 0.0, 0.0
    for draw in itertools.product(range(R), repeat=K):  # every ordered draw
        y = np.array(draw)
        g = np.einsum("k,ktd->d", r[y] - r[y].mean(), basis[y])
        E, E2 = E + np.prod(p[y]) * g, E2 + np.prod(p[y]) * g @ g
    d = max(np.abs(mean - E).max(), abs(second - E2) / E2)
    print(
        f"groups: R = {R}, K = {K}: {len(multisets(R, K)[0])} multisets (C(R+K-1, K) = {math.comb(R + K - 1, K)}) "
        f"against {R**K} ordered draws, max diff {d:.1e}"
    )
    claim(d < 1e-12 and len(Y) < R**K, "the multiset law gives the ordered draws' moments with fewer terms")


def part_batch(rng):
    M = [3, 4, 2]
    P = [rng.dirichlet(np.ones(m)) for m in M]
    stats = [np.stack([np.full(m, 2.0), rng.normal(size=m), rng.random(m) + 1, np.ones(m)]) for m in M]
    parts = [tuple(rng.normal(size=(m, 2)) for _ in range(3)) for m in M]
    mean, second = batch_moments(P, stats, parts, kind="batch_std")  # eq. (exact_batch)
    E, E2 = 0.0, 0.0
    for idx in itertools.product(*[range(m) for m in M]):  # the joint, listed
        pr = np.prod([P[n][i] for n, i in enumerate(idx)])
        cnt, S1, S2, _ = sum(stats[n][:, i] for n, i in enumerate(idx))
        a = 1.0 / (np.sqrt(max(S2 - S1 * S1 / cnt, 0.0) / cnt) + 1e-8)
        gs = [a * parts[n][0][i] + parts[n][2][i] for n, i in enumerate(idx)]
        E, E2 = E + pr * sum(gs), E2 + pr * sum(g @ g for g in gs)
    d = max(np.abs(mean - E).max(), abs(second - E2) / E2)
    print(
        f"batch: 3 prompts, {np.prod(M)} joint outcomes listed against the kernel's marginals, max diff {d:.1e}; "
        f"the atlas at K = 4 walks {len(multisets(5, 4)[0]) ** 3:,d} joint outcomes without storing them"
    )
    claim(d < 1e-12, "the batch marginals give the joint's moments")


def part_tree(rng):
    mdp, pol, ro = lab(8, rng)
    mu = TabularPolicy(pol.theta / 2.0)  # a sampler at temperature 2
    child, roots = children(mdp)
    kl = tree_sum(child, roots, mu.probs(), np.log(mu.probs() / pol.probs()))  # eq. (tree_sum)
    w2 = tree_product(child, roots, mu.probs(), (pol.probs() / mu.probs()) ** 2)  # eq. (tree_product)
    _, seq_pi = pol.logp(ro.states, ro.tokens, ro.mask)
    _, seq_mu = mu.logp(ro.states, ro.tokens, ro.mask)
    q = np.exp(seq_mu)
    d = max(
        np.abs(kl - np.bincount(ro.prompt, q * (seq_mu - seq_pi))).max(),
        np.abs(w2 - np.bincount(ro.prompt, np.exp(seq_pi) ** 2 / q)).max() / w2.max(),
    )
    print(
        f"tree: T = 8, {mdp.S} states against {len(q)} responses: KL(mu || pi) and E[W^2] by recursion, "
        f"max diff {d:.1e}"
    )
    claim(d < 1e-12 and mdp.S < len(q), "the tree recursions equal the list with fewer terms")


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=seed, default=0, help="np.random.default_rng(seed) for the cases")
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    for part in (part_scores, part_groups, part_batch, part_tree):
        part(rng)


if __name__ == "__main__":
    main()
