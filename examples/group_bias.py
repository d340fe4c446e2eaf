"""The group is a biased baseline: E[centred update] = ((K-1)/K) grad J, measured by enumeration.

One prompt, a bandit: V = 5 one-token responses, a fixed reference policy pi = softmax(theta)
and a reward per response. The exact policy gradient of J = E_{y~pi} r(y) on theta is

    grad J = sum_y pi(y) r(y) (onehot(y) - pi) = pi * (r - E_pi r)            eq. (pg_vanilla)

A group is K independent draws y_1..y_K ~ pi; its update is

    g_hat = (1/K) sum_k A_k (onehot(y_k) - pi)

with A from advantages.py: mean-centred, eq. (pg_centred), leave-one-out, eq. (pg_loo), or
standardized (population std, std_eps = 1e-8), eq. (pg_normalized). The update depends on the group
only through its multiset of draws, so E[g_hat] is an exact finite sum: every multiset of K draws
from V responses (C(V+K-1, K) of them, 495 at V = 5, K = 8), weighted by its multinomial
probability K! / prod(c_y!) prod pi(y)^c_y.

Printed per K = 1..8:
- centred: <E g_hat, g> / <g, g> beside (K-1)/K, and max |E g_hat - ((K-1)/K) g| (zero to rounding:
  E g_hat is parallel to g, not just its projection);
- leave-one-out: the same ratio (1 to rounding) and max |E g_hat - g|; undefined at K = 1;
- standardized: the cosine of E g_hat to g and its scale <E g_hat, g> / <g, g>;
- Monte Carlo: the centred ratio from --mc-groups sampled groups, mean of <u_i, g> / <g, g>
  with its standard error, np.random.default_rng(seed) restarted for each K.

The default rewards have three levels and ties, r = (0.1, 0, 0, 1, 1): the two correct responses
are the two least likely under pi, and the likeliest one earns a little partial credit. The ties
matter for the standardized baseline (a group of equal rewards has zero advantage) and the three
levels matter for its cosine: with binary rewards (try --rewards 1,0,0,1,0) the expected
standardized update of one prompt is exactly parallel to g, because the update sums to zero over
the vocabulary and is symmetric among the correct and among the wrong responses; with three
levels it is not. Here most small groups hold no correct response, and standardizing blows the
0.1-versus-0 difference up to unit size, so E[g_hat] leans toward the partial-credit response.

    $ python examples/group_bias.py
    $ python examples/group_bias.py --rewards 1,0,0,1,0 --plot bias.svg
"""

import argparse
import itertools
import math
import os
import sys

import numpy as np

from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.advantages import centred, leave_one_out, standardized

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import integer, plot_path, quiet_pipe, reals, seed  # noqa: E402

THETA = (1.0, 0.5, 0.0, -0.5, -1.0)  # the fixed reference logits, V = 5
REWARDS = (0.1, 0.0, 0.0, 1.0, 1.0)  # three levels with ties: partial credit on the likeliest
MAX_ENUMERATED = 10**7  # multisets x K x V at the largest K (the (M, K, V) scores)
MAX_MC_ENTRIES = 10**8  # sampled groups x K x V (the score array: 0.8 GB)


def group_updates(tokens, adv, pi):
    """g_hat = (1/K) sum_k A_k (onehot(y_k) - pi) for G groups: tokens, adv (G, K), pi (V,) -> (G, V)."""
    V = pi.shape[0]
    score = np.eye(V)[tokens] - pi  # (G, K, V) grad log pi(y_k)
    return (adv[:, :, None] * score).mean(axis=1)  # (G, V)


def multisets(V, K, pi):
    """Every multiset of K draws from V tokens, as sorted token tuples (M, K), and its probability (M,)."""
    tokens = np.array(list(itertools.combinations_with_replacement(range(V), K)), dtype=np.int64)
    counts = np.stack([(tokens == v).sum(axis=1) for v in range(V)], axis=1)  # (M, V)
    coef = np.array(
        [math.factorial(K) / np.prod([math.factorial(c) for c in row]) for row in counts]
    )  # (M,) multinomial coefficient
    prob = coef * np.prod(pi[None, :] ** counts, axis=1)  # (M,)
    return tokens, prob


BASELINES = {
    "centred": centred,
    "loo": leave_one_out,
    "standardized": lambda r: standardized(r, std_eps=1e-8, ddof=0),
}


def exact_expected_update(pi, r, K, baseline):
    """E[g_hat] over all groups of K draws, by enumeration: (V,). Raises as the baseline does (loo, K = 1)."""
    tokens, prob = multisets(pi.shape[0], K, pi)  # (M, K), (M,)
    adv = BASELINES[baseline](r[tokens])  # (M, K)
    return prob @ group_updates(tokens, adv, pi)  # (V,)


def mc_ratio(policy, r, K, g, baseline, n, seed):
    """Mean and standard error of <g_hat_i, g> / <g, g> over n sampled groups of K."""
    rng = np.random.default_rng(seed)
    pi = policy.probs()[0]
    tokens = policy.sample(np.zeros((n, K), dtype=np.int64), rng)  # (n, K)
    adv = BASELINES[baseline](r[tokens])  # (n, K)
    s = group_updates(tokens, adv, pi) @ g / (g @ g)  # (n,)
    se = s.std(ddof=1) / math.sqrt(n) if n > 1 else float("nan")
    return float(s.mean()), float(se)


def measure(theta, r, Ks, mc_groups, seed):
    """One row of measurements per K (a list of dicts)."""
    policy = TabularPolicy(np.asarray(theta, dtype=np.float64)[None, :])
    pi = policy.probs()[0]  # (V,)
    g = pi * (r - pi @ r)  # (V,) grad J, eq. (pg_vanilla)
    rows = []
    for K in Ks:
        row = {"K": K, "shrink": (K - 1) / K}
        Ec = exact_expected_update(pi, r, K, "centred")
        row["centred"] = Ec @ g / (g @ g)
        row["centred_dev"] = np.abs(Ec - (K - 1) / K * g).max()
        row["mc"], row["mc_se"] = mc_ratio(policy, r, K, g, "centred", mc_groups, seed)
        if K >= 2:
            El = exact_expected_update(pi, r, K, "loo")
            row["loo"] = El @ g / (g @ g)
            row["loo_dev"] = np.abs(El - g).max()
        else:
            row["loo"] = row["loo_dev"] = None  # no "others" at K = 1
        Es = exact_expected_update(pi, r, K, "standardized")
        ns = np.linalg.norm(Es)
        row["std_cos"] = Es @ g / (ns * np.linalg.norm(g)) if ns > 0 else None
        row["std_scale"] = Es @ g / (g @ g)
        rows.append(row)
    return pi, g, rows


def print_table(pi, r, g, rows, mc_groups, seed):
    print("one prompt, V = %d responses" % len(r))
    print("pi(y)      " + " ".join(f"{p:7.4f}" for p in pi))
    print("r(y)       " + " ".join(f"{x:7.4f}" for x in r))
    print("grad J     " + " ".join(f"{x:7.4f}" for x in g))
    print()
    print("ratio = <E[update], grad J> / |grad J|^2, exact by enumeration over all groups;")
    print(f"MC: {mc_groups} sampled groups per K, np.random.default_rng({seed}), mean +- s.e.")
    print()
    head = (
        f"{'K':>2}  {'(K-1)/K':>8}  {'centred':>17}  {'max dev':>8}  "
        f"{'MC centred':>18}  {'LOO':>17}  {'max dev':>8}  {'std cos':>13}  {'std scale':>9}"
    )
    print(head)
    print("-" * len(head))
    for w in rows:
        loo = "undefined" if w["loo"] is None else f"{w['loo']:.15f}"
        loo_dev = "-" if w["loo_dev"] is None else f"{w['loo_dev']:.1e}"
        cos = "E[update] = 0" if w["std_cos"] is None else f"{w['std_cos']:.6f}"
        mc = f"{w['mc']:.4f} +- {w['mc_se']:.4f}"
        print(
            f"{w['K']:>2}  {w['shrink']:8.6f}  {w['centred']:17.15f}  {w['centred_dev']:8.1e}  "
            f"{mc:>18}  {loo:>17}  {loo_dev:>8}  {cos:>13}  {w['std_scale']:9.6f}"
        )
    devs = [w["centred_dev"] for w in rows]
    loo_devs = [w["loo_dev"] for w in rows if w["loo_dev"] is not None]
    print()
    print(f"max over K of |E[centred update] - (K-1)/K grad J|: {max(devs):.1e}")
    print(
        "max over K of |E[leave-one-out update] - grad J|:   "
        + (f"{max(loo_devs):.1e}" if loo_devs else "n/a (leave-one-out needs K >= 2)")
    )
    z = [abs(w["mc"] - w["shrink"]) / w["mc_se"] for w in rows if w["mc_se"] > 0]
    print(
        "max over K of |MC centred - (K-1)/K| / s.e.:        "
        + (f"{max(z):.2f}" if z else "n/a (no K with a Monte-Carlo spread)")
    )


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "group_bias"
    Ks = np.array([w["K"] for w in rows])
    fig, ax = plt.subplots(2, 1, figsize=(6.4, 6.4))  # stacked: readable on a phone
    ax[0].plot(Ks, (Ks - 1) / Ks, "-", color="0.6", label="(K-1)/K")
    ax[0].plot(Ks, [w["centred"] for w in rows], "o", label="centred, exact")
    ax[0].errorbar(
        Ks + 0.12,
        [w["mc"] for w in rows],
        yerr=[2 * w["mc_se"] for w in rows],
        fmt="s",
        ms=3,
        label="centred, MC (2 s.e.)",
    )
    loo = [(w["K"], w["loo"]) for w in rows if w["loo"] is not None]
    if loo:  # K >= 2 only
        ax[0].plot(*zip(*loo), "^", label="leave-one-out, exact")
    ax[0].set_xlabel("K (responses per prompt)")
    ax[0].set_ylabel("<E[update], grad J> / |grad J|^2")
    ax[0].legend(fontsize=8)
    std = [(w["K"], w["std_cos"]) for w in rows if w["std_cos"] is not None]
    if std:  # K >= 2 only
        ax[1].plot(*zip(*std), "o-")
    ax[1].set_xlabel("K (responses per prompt)")
    ax[1].set_ylabel("cos(E[standardized update], grad J)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--K-max", type=integer(1, 64), default=8, help="largest group size (default 8)")
    p.add_argument(
        "--rewards",
        type=reals(-1e6, 1e6, most=64),
        default=REWARDS,
        help="comma-separated reward per response (default 0.1,0,0,1,1)",
    )
    p.add_argument(
        "--theta",
        type=reals(-50, 50, most=64),
        default=THETA,
        help="comma-separated reference logits (default 1,0.5,0,-0.5,-1)",
    )
    p.add_argument(
        "--mc-groups",
        type=integer(2, 10**6),
        default=20000,
        help="sampled groups per K for the Monte-Carlo column (default 20000)",
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of the Monte-Carlo column")
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="write a figure (SVG or PNG by extension)")
    args = p.parse_args(argv)
    if len(args.rewards) != len(args.theta):
        p.error(f"--rewards: expected {len(args.theta)} values (one per response), got {len(args.rewards)}")
    if len(args.theta) < 2:
        p.error(f"--theta: expected at least 2 values (responses), got {len(args.theta)}")
    V = len(args.theta)
    n_sets = math.comb(V + args.K_max - 1, args.K_max)
    if n_sets * args.K_max * V > MAX_ENUMERATED:
        p.error(
            f"--K-max: expected a group size whose C(V+K-1, K) multisets of V = {V} responses, "
            f"times K V, are at most {MAX_ENUMERATED:.0e} (the enumerated scores), got "
            f"{args.K_max} ({n_sets} multisets)"
        )
    if args.mc_groups * args.K_max * V > MAX_MC_ENTRIES:
        p.error(
            f"--mc-groups: expected at most {MAX_MC_ENTRIES // (args.K_max * V)} groups at "
            f"K = {args.K_max}, V = {V} (the (groups, K, V) score array), got {args.mc_groups}"
        )
    pi = TabularPolicy(np.asarray(args.theta, dtype=np.float64)[None, :]).probs()[0]
    r = np.array(args.rewards, dtype=np.float64)  # (V,)
    g = pi * (r - pi @ r)  # (V,) grad J, eq. (pg_vanilla)
    if not g @ g >= np.finfo(np.float64).tiny:
        p.error(
            f"--rewards: expected rewards whose gradient grad J = pi (r - E_pi r) is not 0 "
            f"(every ratio divides by |grad J|^2), got |grad J|^2 = {g @ g:.3g} at "
            f"--theta {','.join(f'{t:g}' for t in args.theta)}"
        )
    pi, g, rows = measure(args.theta, r, range(1, args.K_max + 1), args.mc_groups, args.seed)
    print_table(pi, r, g, rows, args.mc_groups, args.seed)
    if tuple(args.rewards) == REWARDS and tuple(args.theta) == THETA:  # the sentences of baselines.md
        devs = [w["centred_dev"] for w in rows] + [w["loo_dev"] for w in rows if w["loo_dev"] is not None]
        claim(bool(max(devs) < 1e-12), "the centred and the leave-one-out columns both hold to rounding")
        cos = [w["std_cos"] for w in rows if w["K"] >= 2]
        claim(bool(all(c < 1 - 1e-6 for c in cos)), "the standardized update's cosine is below 1 at every K >= 2")
    if args.plot:
        plot(rows, args.plot)
        print(f"\nfigure written to {args.plot}")


if __name__ == "__main__":
    main()
