"""The group is the baseline: success of a sampled response after training, for each group size K.

The chapter's toy (minirl_lm/tasks.py): four arithmetic prompts, nine one-token answers, the gold
grader, beta = 0, lr = 2, 6400 responses per prompt for every K (so 6400 / K steps), the generator
np.random.default_rng(seed) restarted for each K. Each step samples K responses per prompt,
standardizes their rewards within the group and takes one step on the log-probs.

    $ python examples/k_sweep.py
    $ python examples/k_sweep.py --baseline mean --K 1 2 4 --responses 1600
    $ python examples/k_sweep.py --plot k_sweep.svg
"""

import argparse
import math
import os
import sys

import numpy as np

from minirl_lm.core.policy import TabularPolicy
from minirl_lm.tasks import HEDGE_LOGIT, PROMPTS, evaluate, reference_theta, train

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import check_work, integer, plot_path, quiet_pipe, real, seed  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--K",
        type=integer(1, 4096),
        nargs="+",
        default=[1, 2, 4, 8, 32],
        help="group sizes (responses per prompt per step)",
    )
    p.add_argument(
        "--responses",
        type=integer(1, 10**6),
        default=6400,
        help="responses drawn per prompt over the whole run (steps = responses // K)",
    )
    p.add_argument("--seed", type=seed, default=1, help="np.random.default_rng(seed), restarted per K")
    p.add_argument("--lr", type=real(0, 100), default=2.0, help="learning rate")
    p.add_argument(
        "--baseline",
        default="standardized",
        choices=["standardized", "mean", "loo"],
        help="group baseline (loo is undefined at K = 1 and skips it)",
    )
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="draw success against responses drawn")
    args = p.parse_args(argv)
    if len(args.K) > 64:
        p.error(f"--K: expected at most 64 group sizes, got {len(args.K)}")
    if args.responses < max(args.K):
        p.error(f"--responses: need at least one step for every K (>= {max(args.K)}), got {args.responses}")
    check_work(
        p,
        "--responses, --K",
        "responses per prompt in all (responses x group sizes)",
        args.responses * len(args.K),
        1e7,
    )
    return args


def main(argv=None):
    quiet_pipe()
    args = parse_args(argv)
    runs = {}
    for K in args.K:
        if args.baseline == "loo" and K == 1:
            print(f"K = {K:2d}: leave-one-out is undefined (no other response in the group)")
            continue
        steps = args.responses // K  # record at ~60 log-spaced step counts
        record = np.unique(np.geomspace(1, steps, 60).astype(int)) if args.plot else ()
        runs[K] = train(K, args.responses, args.seed, lr=args.lr, baseline=args.baseline, record_at=record)
        print(f"K = {K:2d}: success of a sampled response {evaluate(runs[K][0])['success']:.3f}")

    print()
    if 1 in runs:
        policy, ref, _ = runs[1]
        same = policy.theta.tobytes() == ref.theta.tobytes()
        print(f"K =  1: after {args.responses} steps theta is bitwise equal to the reference: {same}")
        print("        (one response per group: r - mean(r) = 0 exactly, so every advantage is 0)")
    exact = 0.5 / (8 + math.exp(HEDGE_LOGIT))
    ref_eval = evaluate(TabularPolicy(reference_theta()))
    ref_success = ref_eval["success"]
    print(
        f"reference success, exact: 0.5 / (8 + e^-4) = {exact:.5f}; computed from the table: "
        f"{ref_success:.5f} (not 1/16 = {1 / 16:.5f})"
    )

    print("\nper-prompt success (two prompts have no correct honest answer: 0.500 is a ceiling)")
    print("  K  " + "".join(f"{x:>8s}" for x in PROMPTS) + "    mean")
    print("ref  " + "".join(f"{v:8.3f}" for v in ref_eval["per_prompt"]) + f"{ref_success:8.3f}")
    for K, (policy, _, _) in runs.items():
        ev = evaluate(policy)
        print(f"{K:3d}  " + "".join(f"{v:8.3f}" for v in ev["per_prompt"]) + f"{ev['success']:8.3f}")

    print(f"\nstep (toy_step): eta = lr = {args.lr:g}, one {args.baseline} update per group, beta = 0")
    final = {K: f"{evaluate(policy)['success']:.3f}" for K, (policy, _, _) in runs.items() if K >= 2}
    if len(set(final.values())) == 1:
        print(
            f"every K >= 2 ends at {next(iter(final.values()))}: a factor on the expected step (the "
            f"(K-1)/K of mean-centring)\nchanges how fast a run climbs, not where it stops; this "
            f"table cannot show it, the figure's curves can"
        )
    elif final:
        print("the K >= 2 runs end apart: " + ", ".join(f"K = {K}: {v}" for K, v in final.items()))
    defaults = vars(parse_args([]))
    if all(v == defaults[k] for k, v in vars(args).items() if k != "plot"):  # the page's run
        claim(len(set(final.values())) == 1, "every K >= 2 ends at the same success, the ceiling")

    if args.plot:
        if all(v == defaults[k] for k, v in vars(args).items() if k != "plot"):  # the figure's caption
            # responses drawn per prompt until success first reaches 0.45, for each K >= 2
            reach = [min(n for n, v in runs[K][2] if v >= 0.45) for K in runs if K >= 2]
            claim(reach == sorted(reach), "larger groups reach the ceiling later in responses drawn")
        plot(runs, ref_success, args.plot)


def plot(runs, ref_success, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.4, 3.8))  # narrow: legible at phone width
    for K, (_, _, curve) in runs.items():
        n, s = zip(*curve)
        ax.plot(n, s, label=f"K = {K}")
    ax.axhline(0.5, color="gray", lw=0.8, ls="--")
    ax.axhline(ref_success, color="gray", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_xlabel("responses drawn per prompt (log scale)")
    ax.set_ylabel("success of a sampled response")
    ax.set_ylim(0, 0.55)
    # the lower right holds the K = 1 line and the reference: the legend sits above them, in the
    # empty band under the ceiling
    ax.legend(loc="center right", bbox_to_anchor=(1.0, 0.5), fontsize=9)
    ax.annotate(
        "ceiling: the hard prompts never move",
        (1, 0.5),
        xytext=(0, 3),
        textcoords="offset points",
        fontsize=9,
        color="gray",
    )
    ax.annotate(
        f"reference {ref_success:.3f} (and K = 1, on it)",
        (1, ref_success),
        xytext=(0, -4),
        textcoords="offset points",
        va="top",
        fontsize=9,
        color="gray",
    )
    fig.tight_layout()
    fig.savefig(path)


if __name__ == "__main__":
    main()
