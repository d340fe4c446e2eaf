"""The group is the baseline: success of a sampled response after training, for each group size K.

The chapter's toy (minirl_lm/tasks.py): four arithmetic prompts, nine one-token answers, the gold
grader, beta = 0, lr = 2, 6400 responses per prompt for every K (so 6400 / K steps), the generator
np.random.default_rng(seed) restarted for each K. Each step samples K responses per prompt,
standardizes their rewards within the group and takes one step on the log-probs.

On the site, the toy is defined in docs/mdp.md (the toy); docs/baselines.md is the page about this
run.

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
from minirl_lm.tasks import HEDGE, HEDGE_LOGIT, PROMPTS, RESPONSES, evaluate, reference_theta, reward_table, train

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import check_work, integer, plot_path, quiet_pipe, real, seed  # noqa: E402

EPILOG = """what it prints:
  three lines naming the toy and where the site explains it: the toy in docs/mdp.md (the toy),
                                          this run in docs/baselines.md;
  K = ..: success of a sampled response   one line per group size: the exact probability that a
                                          response sampled from the trained policy is correct,
                                          averaged over the four prompts;
  K = 1 and the reference                 with one response per group every advantage is 0, so
                                          the K = 1 run ends on the reference table; the
                                          reference's own success, exact and from the table;
  per-prompt success                      the same success prompt by prompt, for the reference
                                          and each K, beside the highest mean success any policy
                                          can reach (the hard prompts have no correct answer);
  the last lines                          the update used, and whether the K >= 2 runs end at
                                          one value (with --plot, the figure shows how fast each
                                          climbs)."""


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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


def header(args):
    """Three lines: the toy, its hard prompts, and where to read about it."""
    gold = reward_table("gold")  # (prompts, responses): 1 for the correct answer
    hard = [x for x, row in zip(PROMPTS, gold) if not row.any()]
    numbers = " ".join(r for k, r in enumerate(RESPONSES) if k != HEDGE)
    return [
        f"the toy: {len(PROMPTS)} prompts {', '.join(PROMPTS)}; {len(RESPONSES)} one-token answers {numbers} "
        f'and the hedge "{RESPONSES[HEDGE]}"',
        f"the gold grader pays 1 for the correct answer, 0 for the hedge: {' and '.join(hard)} have no correct "
        f"honest answer",
        f"{args.responses} responses per prompt for each K, one {args.baseline} step per group; on the site: "
        f"the toy in docs/mdp.md (the toy), this run in docs/baselines.md",
    ]


def ending(final, ceiling, args):
    """The sentence about where the K >= 2 runs end, true of the table at any flags."""
    if not final:
        return None
    shown = {K: f"{v:.3f}" for K, v in final.items()}
    if len(set(shown.values())) > 1:
        spread = max(final.values()) - min(final.values())
        digits = max(3, 1 - math.floor(math.log10(spread)))  # enough digits to show the difference
        return f"the K >= 2 runs end apart (by up to {spread:.1e}): " + ", ".join(
            f"K = {K}: {v:.{digits}f}" for K, v in final.items()
        )
    value = next(iter(shown.values()))
    which = "every K >= 2 ends" if len(final) > 1 else f"the one K >= 2 run (K = {next(iter(final))}) ends"
    if value != f"{ceiling:.3f}" or len(final) == 1:
        return f"{which} at {value}"
    factor = " (the (K-1)/K of mean-centring)" if args.baseline != "loo" else ""
    return (
        f"{which} at {value}, the ceiling: a factor on the expected step{factor}\nchanges how fast a run "
        "climbs, not where it stops; this table cannot show it, "
        + ("the figure's curves can" if args.plot else "the figure of --plot PATH can")
    )


def main(argv=None):
    quiet_pipe()
    args = parse_args(argv)
    print("\n".join(header(args)) + "\n")
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

    gold = reward_table("gold")  # (prompts, responses)
    ceiling = float(gold.max(axis=1).mean())  # the best policy: the correct answer where there is one
    n_hard = int((gold.max(axis=1) == 0).sum())
    print(
        f"\nper-prompt success ({n_hard} prompts have no correct honest answer: {ceiling:.3f} is the "
        f"highest mean success)"
    )
    print("  K  " + "".join(f"{x:>8s}" for x in PROMPTS) + "    mean")
    print("ref  " + "".join(f"{v:8.3f}" for v in ref_eval["per_prompt"]) + f"{ref_success:8.3f}")
    for K, (policy, _, _) in runs.items():
        ev = evaluate(policy)
        print(f"{K:3d}  " + "".join(f"{v:8.3f}" for v in ev["per_prompt"]) + f"{ev['success']:8.3f}")

    print(f"\nstep (toy_step): eta = lr = {args.lr:g}, one {args.baseline} update per group, beta = 0")
    final = {K: evaluate(policy)["success"] for K, (policy, _, _) in runs.items() if K >= 2}
    line = ending(final, ceiling, args)
    if line:
        print(line)
    defaults = vars(parse_args([]))
    if all(v == defaults[k] for k, v in vars(args).items() if k != "plot"):  # the page's run
        claim(
            len({f"{v:.3f}" for v in final.values()}) == 1 and f"{min(final.values()):.3f}" == f"{ceiling:.3f}",
            "every K >= 2 ends at the same success, the ceiling",
        )

    if args.plot:
        if all(v == defaults[k] for k, v in vars(args).items() if k != "plot"):  # the figure's caption
            # responses drawn per prompt until success first reaches 0.45, for each K >= 2
            reach = [min((n for n, v in runs[K][2] if v >= 0.45), default=math.inf) for K in runs if K >= 2]
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
