"""The loophole: a sloppy grader, a hedge that passes it everywhere, and the price beta puts on it.

The chapter's toy (minirl_lm/tasks.py) trained against the sloppy grader (a grep: the hedge "one of
4, 12, 64 or 81" contains every answer), K = 32, 400 steps, KL to the reference folded into the
reward with weight beta, np.random.default_rng(seed) restarted for each beta. Beside each trained
row: the tilted optimum pi_ref exp(r / beta) / Z of the sloppy reward, eq. (kl_optimum).

    $ python examples/loophole.py
    $ python examples/loophole.py --seeds 20
    $ python examples/loophole.py --plot loophole.svg
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm.core.policy import TabularPolicy
from minirl_lm.tasks import HEDGE, evaluate, reference_theta, reward_table, train
from minirl_lm.values.optimum import exploit_threshold, tilted_optimum

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _cli import check_work, integer, plot_path, real, seed  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--betas", type=real(0, 100), nargs="+", default=[0.0, 0.1, 0.2, 0.3, 0.5])
    p.add_argument("--K", type=integer(1, 4096), default=32, help="responses per prompt per step")
    p.add_argument("--steps", type=integer(1, 10**5), default=400, help="training steps")
    p.add_argument("--seed", type=seed, default=2, help="np.random.default_rng(seed), restarted per beta")
    p.add_argument(
        "--seeds",
        type=integer(0, 1000),
        default=0,
        help="also train with seeds 0..N-1 and print mean and spread per beta",
    )
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="draw gold and hedge against beta")
    args = p.parse_args(argv)
    if len(args.betas) > 64:
        p.error(f"--betas: expected at most 64 values, got {len(args.betas)}")
    check_work(
        p,
        "--steps, --K, --betas, --seeds",
        "responses per prompt in all (steps x K x betas x (1 + seeds))",
        args.steps * args.K * len(args.betas) * (1 + args.seeds),
        1e8,
    )
    return args


def optimum_scores(beta):
    """sloppy/gold/hedge of the tilted optimum of the sloppy reward (beta = 0: the beta -> 0 limit)."""
    pi_ref = TabularPolicy(reference_theta()).probs()  # (N, V)
    r = reward_table("sloppy")  # (N, V)
    if beta > 0:
        pi = tilted_optimum(pi_ref, r, beta)  # eq. (kl_optimum)
    else:  # all mass on the best rewards, split by pi_ref
        best = pi_ref * (r == r.max(axis=1, keepdims=True))
        pi = best / best.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):  # log 0 = -inf: a token of probability 0
        return evaluate(TabularPolicy(np.log(pi)))


def thresholds():
    """The exploit's two prices, read off the task's own tables on a hard prompt ("8*8", row 2).

    Returns (gap, log_odds, n_honest, beats_one, majority): the hedge's reward gap over an honest
    answer, the reference log-odds against it, the number of honest answers, the beta below which
    the optimum gives the hedge more mass than any one honest answer, eq. (exploit_threshold), and
    the beta below which the hedge holds more than half of the prompt's mass.
    """
    logits_ref, r = reference_theta()[2], reward_table("sloppy")[2]
    honest = [y for y in range(len(r)) if y != HEDGE]
    gap = r[HEDGE] - max(r[honest])  # 1 - 0
    log_odds = logits_ref[honest[0]] - logits_ref[HEDGE]  # log pi_ref(honest) - log pi_ref(hedge)
    # a majority iff exp(-l + g/beta) > the number of honest answers (all equally likely under pi*)
    majority = gap / (log_odds + np.log(len(honest)))
    return gap, log_odds, len(honest), exploit_threshold(gap, log_odds), majority


def trained_scores(beta, K, steps, seed):
    policy, _, _ = train(K, K * steps, seed, grader="sloppy", beta=beta)
    return evaluate(policy)


def main(argv=None):
    args = parse_args(argv)
    rows = {}
    for beta in args.betas:
        ev, opt = trained_scores(beta, args.K, args.steps, args.seed), optimum_scores(beta)
        rows[beta] = ev
        print(
            f"beta = {beta:.1f}: sloppy {ev['sloppy']:.2f}, gold {ev['success']:.2f}, "
            f"hedge {ev['hedge']:.2f}    tilted optimum: sloppy {opt['sloppy']:.2f}, "
            f"gold {opt['success']:.2f}, hedge {opt['hedge']:.2f}"
        )

    gap, log_odds, n_honest, beats_one, majority = thresholds()
    print(f"\nhard prompt: reward gap {gap:g}, reference log-odds {log_odds:g}, {n_honest} honest answers")
    print(f"  the hedge beats any one honest answer iff beta < gap / log-odds = {beats_one:.4f}")
    pi_star = tilted_optimum(TabularPolicy(reference_theta()).probs(), reward_table("sloppy"), majority)
    print(
        f"  the hedge is a majority iff beta < gap / (log-odds + log {n_honest}) = {majority:.4f}"
        f" (its mass there: {pi_star[2, HEDGE]:.4f})"
    )

    if args.seeds:
        print(f"\nspread over seeds 0..{args.seeds - 1} (mean +- std [min, max]) beside seed {args.seed}:")
        for beta in args.betas:
            runs = [trained_scores(beta, args.K, args.steps, s) for s in range(args.seeds)]
            cells = []
            for key, name in (("sloppy", "sloppy"), ("success", "gold"), ("hedge", "hedge")):
                v = np.array([e[key] for e in runs])
                cells.append(
                    f"{name} {rows[beta][key]:.2f} | {v.mean():.2f} +- {v.std():.2f} "
                    f"[{v.min():.2f}, {v.max():.2f}]"
                )
            print(f"beta = {beta:.1f}: " + ";  ".join(cells))

    if args.plot:
        plot(rows, args.plot)


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(0.02, max(0.6, max(rows)), 120)
    opt = [optimum_scores(b) for b in grid]
    fig, ax = plt.subplots(figsize=(5.4, 4.0))  # narrow: legible at phone width
    ax.plot(grid, [o["success"] for o in opt], color="C0", label="gold, tilted optimum")
    ax.plot(grid, [o["hedge"] for o in opt], color="C3", label="hedge, tilted optimum")
    ax.plot(list(rows), [e["success"] for e in rows.values()], "o", color="C0", label="gold, trained")
    ax.plot(list(rows), [e["hedge"] for e in rows.values()], "s", color="C3", label="hedge, trained")
    _, _, n_honest, beats_one, majority = thresholds()
    ax.axvline(beats_one, color="gray", lw=0.9, ls="--")
    ax.axvline(majority, color="gray", lw=0.9, ls=":")
    ax.annotate(
        f"beats any one\nhonest answer:\nbeta < {beats_one:.4f}",
        (beats_one, 0.97),
        xytext=(4, 0),
        textcoords="offset points",
        va="top",
        fontsize=9,
    )
    ax.annotate(
        f"hedge is a\nmajority:\nbeta < {majority:.4f}",
        (majority, 0.97),
        xytext=(-4, 0),
        textcoords="offset points",
        va="top",
        ha="right",
        fontsize=9,
    )
    ax.set_xlabel("beta")
    ax.set_ylabel("mean probability")
    ax.set_ylim(0, 1.0)
    ax.legend(fontsize=9, loc="center right")
    fig.tight_layout()
    fig.savefig(path)


if __name__ == "__main__":
    main()
