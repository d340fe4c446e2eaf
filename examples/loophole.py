"""The loophole: a sloppy grader, a hedge that passes it everywhere, and the price beta puts on it.

The chapter's toy (minirl_lm/tasks.py) trained against the sloppy grader (a grep: the hedge "one of
4, 12, 64 or 81" contains every answer), K = 32, 400 steps, KL to the reference folded into the
reward with weight beta, np.random.default_rng(seed) restarted for each beta. Beside each trained
row: the tilted optimum pi_ref exp(r / beta) / Z of the sloppy reward, eq. (kl_optimum), and the
hedge's mass on the two hard prompts (8*8, 9*9), where the thresholds act. Then the jitter: a run
started at the tilted optimum itself, where the group's shaped rewards are equal to rounding, and
how far standardization carries it away. The page's comparisons are checked with _claims.claim
when the run has the default settings: in strict mode (MINIRL_CLAIMS_STRICT=1, the site's build
and the tests) a claim that no longer holds stops the run with exit status 1; elsewhere it prints
a line saying so and the run goes on.

    $ python examples/loophole.py
    $ python examples/loophole.py --seeds 20
    $ python examples/loophole.py --plot loophole.svg
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.advantages import advantages
from minirl_lm.pg.kl import kl_in_reward
from minirl_lm.tasks import HEDGE, PROMPTS, evaluate, reference_theta, reward_table, train
from minirl_lm.values.optimum import exploit_threshold, tilted_optimum

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import check_work, integer, plot_path, quiet_pipe, real, seed  # noqa: E402

BETAS = [0.0, 0.1, 0.2, 0.3, 0.5]
HARD = [2, 3]  # "8*8", "9*9": no honest candidate passes the gold grader
JITTER_BETA = 0.3  # the jitter run: a beta where the tilted optimum is interior


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--betas", type=real(0, 100), nargs="+", default=BETAS)
    p.add_argument("--K", type=integer(1, 4096), default=32, help="responses per prompt per step")
    p.add_argument(
        "--steps",
        type=integer(1, 20000),
        default=400,
        help="training steps (default 400; at most 20000, about half a minute per beta: the run's "
        "success has long settled by then)",
    )
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


def optimum_pi(beta):
    """The tilted optimum of the sloppy reward (N, V) (beta = 0: the beta -> 0 limit)."""
    pi_ref = TabularPolicy(reference_theta()).probs()  # (N, V)
    r = reward_table("sloppy")  # (N, V)
    if beta > 0:
        return tilted_optimum(pi_ref, r, beta)  # eq. (kl_optimum)
    best = pi_ref * (r == r.max(axis=1, keepdims=True))  # all mass on the best rewards, split by pi_ref
    return best / best.sum(axis=1, keepdims=True)


def optimum_scores(beta):
    """sloppy/gold/hedge of the tilted optimum of the sloppy reward (beta = 0: the beta -> 0 limit)."""
    with np.errstate(divide="ignore"):  # log 0 = -inf: a token of probability 0
        return scores(TabularPolicy(np.log(optimum_pi(beta))))


def scores(policy):
    """evaluate(policy) plus "hard": the hedge's mass on the hard prompts, mean of the two."""
    ev = evaluate(policy)
    ev["hard"] = float(policy.probs()[HARD, HEDGE].mean())
    return ev


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
    return scores(policy)


def jitter(beta, K, steps, seed, report=(1, 2, 3, 10)):
    """Train from the tilted optimum itself: (max group std of r~ at the start, [(step, TV)]).

    The toy's step (tasks.train's, written out with the public pieces): K responses per prompt,
    r~ = r - beta log(pi/pi_ref) as data, eq. (kl_reward), standardized within the group with
    xi = 1e-8, theta += lr (1/K) sum_k A_k (onehot(y_k) - pi), lr = 2. TV is the largest over
    the prompts of 0.5 sum_y |pi - pi*|.
    """
    ref = TabularPolicy(reference_theta())
    r = reward_table("sloppy")  # (N, V)
    pi_star = tilted_optimum(ref.probs(), r, beta)  # (N, V) eq. (kl_optimum)
    policy = TabularPolicy(np.log(pi_star))  # start on the optimum
    N = r.shape[0]
    states = np.repeat(np.arange(N), K)[:, None]  # (B, 1) prompt-major
    mask = np.ones(states.shape)  # (B, 1)
    rng = np.random.default_rng(seed)
    spread0, trace = None, []
    for step in range(1, steps + 1):
        tokens = policy.sample(states, rng)  # (B, 1)
        logp, _ = policy.logp(states, tokens, mask)  # (B, 1)
        logp_ref, _ = ref.logp(states, tokens, mask)  # (B, 1)
        r_kl = kl_in_reward(r[states[:, 0], tokens[:, 0]], logp, logp_ref, mask, beta)  # (B,) data
        if spread0 is None:
            spread0 = float(r_kl.reshape(N, K).std(axis=1).max())  # at pi*: equal up to rounding
        A = advantages(r_kl.reshape(N, K), "standardized", 1e-8).reshape(-1, 1)  # (B, 1)
        policy.theta = policy.theta - 2.0 * policy.backward(states, tokens, mask, -A / K)
        if step in report or step == steps:
            trace.append((step, float(0.5 * np.abs(policy.probs() - pi_star).sum(axis=1).max())))
    return spread0, trace


def main(argv=None):
    quiet_pipe()
    args = parse_args(argv)
    default = args.betas == BETAS and (args.K, args.steps, args.seed) == (32, 400, 2)  # the page's run
    rows, opts = {}, {}
    for beta in args.betas:
        ev, opt = trained_scores(beta, args.K, args.steps, args.seed), optimum_scores(beta)
        rows[beta], opts[beta] = ev, opt
        print(
            f"beta = {beta:.1f}: sloppy {ev['sloppy']:.2f}, gold {ev['success']:.2f}, "
            f"hedge {ev['hedge']:.2f}    tilted optimum: sloppy {opt['sloppy']:.2f}, "
            f"gold {opt['success']:.2f}, hedge {opt['hedge']:.2f}"
        )
    hard = " and ".join(PROMPTS[x] for x in HARD)
    print(f"\nthe hedge's mass on the hard prompts {hard} (mean of the two), where the thresholds act:")
    print(f"{'beta':>6}  {'trained':>7}  {'tilted optimum':>14}")
    for beta in args.betas:
        print(f"{beta:6.1f}  {rows[beta]['hard']:7.2f}  {opts[beta]['hard']:14.2f}")
    keys = ("sloppy", "success", "hedge", "hard")
    worst = max(((abs(rows[b][k] - opts[b][k]), b, k) for b in args.betas for k in keys))
    name = {"success": "gold", "hard": "hard-prompt hedge"}.get(worst[2], worst[2])
    print(
        f"largest gap between a trained number and its tilted optimum: {worst[0]:.3f} "
        f"(beta = {worst[1]:.1f}, {name})"
    )

    gap, log_odds, n_honest, beats_one, majority = thresholds()
    print(f"\nhard prompt: reward gap {gap:g}, reference log-odds {log_odds:g}, {n_honest} honest answers")
    print(f"  the hedge beats any one honest answer iff beta < gap / log-odds = {beats_one:.4f}")
    pi_star = tilted_optimum(TabularPolicy(reference_theta()).probs(), reward_table("sloppy"), majority)
    print(
        f"  the hedge is a majority iff beta < gap / (log-odds + log {n_honest}) = {majority:.4f}"
        f" (its mass there: {pi_star[2, HEDGE]:.4f})"
    )
    if default:
        check_table(rows, opts, worst[0], beats_one, majority)

    spread0, trace = jitter(JITTER_BETA, args.K, args.steps, args.seed)
    print(
        f"\nstarted at the tilted optimum itself (beta = {JITTER_BETA:g}, K = {args.K}, seed {args.seed}): "
        f"the first groups'"
    )
    print(f"shaped rewards differ by rounding only (largest std {spread0:.1e}); standardization divides")
    print("that by std + 1e-8, and TV(pi, pi*), the largest over the prompts, grows:")
    print("  " + ", ".join(f"{tv:.1e} after {s} step{'s' if s > 1 else ''}" for s, tv in trace))
    if default:
        claim(bool(spread0 < 1e-15), "at pi* the group's shaped rewards are equal to rounding")
        claim(
            trace[0][1] < 1e-6 and trace[2][1] > 1e-2 and trace[-1][1] > 1e-2,
            "the first step barely moves; within three steps the run has left pi*, and stays away",
        )

    if args.seeds:
        print(f"\nspread over seeds 0..{args.seeds - 1} (mean +- std [min, max]) beside seed {args.seed}:")
        moving = {}
        for beta in args.betas:
            runs = [trained_scores(beta, args.K, args.steps, s) for s in range(args.seeds)]
            cells = []
            moving[beta] = []
            for key, name in (("sloppy", "sloppy"), ("success", "gold"), ("hedge", "hedge")):
                v = np.array([e[key] for e in runs])
                cells.append(
                    f"{name} {rows[beta][key]:.2f} | {v.mean():.2f} +- {v.std():.2f} "
                    f"[{v.min():.2f}, {v.max():.2f}]"
                )
                if f"{v.min():.2f}" != f"{v.max():.2f}":  # differs in the printed digits
                    moving[beta].append(name)
            print(f"beta = {beta:.1f}: " + ";  ".join(cells))
        still = [f"{b:.1f}" for b in args.betas if not moving[b]]
        moves = [f"{b:.1f} ({', '.join(moving[b])})" for b in args.betas if moving[b]]
        print(
            "the same to the printed digits on every seed: beta = "
            + (", ".join(still) or "none")
            + "; moves in the second decimal (min != max): beta = "
            + ("; ".join(moves) or "none")
        )
        if default and args.seeds >= 2:
            claim(
                [b for b in args.betas if not moving[b]] == [0.0, 0.1],
                "the beta = 0 and 0.1 rows do not depend on the seed; every row with beta >= 0.2 does",
            )

    if args.plot:
        plot(rows, args.plot)


def check_table(rows, opts, worst, beats_one, majority):
    """The page's sentences about the default table, checked."""
    e0 = rows[0.0]
    claim(
        e0["sloppy"] > 0.995 and abs(e0["success"] - 0.5) < 0.005 and e0["hard"] > 0.99,
        "at beta = 0 the sloppy score is perfect, gold at the honest ceiling 0.5, the hard prompts all hedge",
    )
    honest = [y for y in range(reward_table("sloppy").shape[1]) if y != HEDGE]
    for beta in rows:
        pi = optimum_pi(beta)[HARD]  # (2, V) the hard prompts under pi*
        claim(
            bool((pi[:, HEDGE] > 0.5).all() == (beta < majority)),
            f"beta = {beta:g}: the optimum's hedge holds most of a hard prompt iff beta < (exploit_majority)",
        )
        likeliest = bool((pi[:, HEDGE] > pi[:, honest].max(axis=1)).all())
        claim(
            likeliest == (beta < beats_one),
            f"beta = {beta:g}: the optimum's hedge is a hard prompt's likeliest iff beta < (exploit_threshold)",
        )
    claim(bool(0.005 <= worst < 0.05), "the trained rows follow the tilted optimum closely but not exactly")


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
