"""Best-of-N and rejection sampling on the chapter's toy: exact laws, the frontier, RFT against GRPO.

The base policy is the chapter's reference (logit 0 on the eight numbers, -4 on the hedge) on its
four prompts. Part 1 prints best-of-N's exact reward (gold grader), win rate, KL and the quoted
bound, and the reward of the tilted optimum pi* at the same KL (minirl_lm/select/bestofn.py).
Part 2 prints the frontier for a reward with three levels (gold + sloppy: 2 for the answer, 1
for the hedge, 0 else). Part 3 selects with the sloppy grader (the proxy) and scores with the
gold one, best-of-N beside RL at the same KL (pi*_proxy, the KL-regularized optimum against the
proxy). Part 4 checks the rejection-sampling identity through the exact engine
(minirl_lm/select/rejection.py); part 5 trains: RFT against GRPO and REINFORCE, the same draws
budget, success and KL from the reference as mean +- std over seeds, an ordering read only where
the spreads do not overlap, and the distance to the success ceiling 0.5.

    $ python examples/best_of_n.py
    $ python examples/best_of_n.py --plot best_of_n.svg
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.advantages import no_baseline, standardized
from minirl_lm.pg.reinforce import reinforce_loss
from minirl_lm.pg.shaping import resample_factor
from minirl_lm.select.bestofn import best_of_n, best_of_n_kl, kl_bound, kl_ceiling, matched_optimum, win_rate
from minirl_lm.select.rejection import accepted, closed_form_update, expected_update, rejection_loss
from minirl_lm.tasks import HEDGE, reference_theta, reward_table

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim, stated  # noqa: E402
from _cli import integer, plot_path, quiet_pipe, seed  # noqa: E402

NS = (1, 2, 4, 8, 16, 32)
PROXY_NS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
METHODS = ("rft", "grpo", "reinforce")


def base():
    """The chapter's reference policy pi (4, 9) and its gold, sloppy and graded rewards."""
    pi = TabularPolicy(reference_theta()).probs()  # (4, 9)
    gold, sloppy = reward_table("gold"), reward_table("sloppy")
    return pi, gold, sloppy, gold + sloppy


def score(p, r):
    """E_x E_p R, mu_0 uniform."""
    return float((p * r).sum(axis=1).mean())


def frontier(pi, r, Ns):
    """Per N: (KL, best-of-N's reward, pi*'s reward at that KL, best-of-N's law, pi*)."""
    out = []
    for N in Ns:
        kl = best_of_n_kl(pi, r, N)
        q = best_of_n(pi, r, N)
        _, star = matched_optimum(pi, r, kl)
        out.append((kl, score(q, r), score(star, r), q, star))
    return out


def part_bon(pi, gold):
    rows = frontier(pi, gold, NS)
    for N, (kl, rq, rs, _, _) in zip(NS, rows):
        print(
            f"best-of-N N={N:3d}: reward {rq:.4f}, win rate {win_rate(pi, gold, N):.4f}, "
            f"KL exact {kl:.4f}, bound {kl_bound(N):.4f}, pi* at this KL {rs:.4f}"
        )
    gaps = np.array([kl_bound(N) - kl for N, (kl, *_) in zip(NS, rows)])
    print(f"bound - KL exact: {', '.join(f'{g:.4f}' for g in gaps)} (N = {', '.join(map(str, NS))})")
    claim(bool((gaps >= 0).all()), "the exact KL never exceeds log N - (N - 1)/N")
    claim(bool((gaps[1:] > 0.1).all()), "the bound overstates the KL by more than 0.1 nats at every N >= 2")
    wins = np.array([win_rate(pi, gold, N) for N in NS])
    claim(
        bool((wins[1:] < np.array(NS[1:]) / (np.array(NS[1:]) + 1)).all()),
        "ties keep the win rate below N/(N + 1) at every N >= 2",
    )
    diff = max(abs(rs - rq) for _, rq, rs, _, _ in rows)
    print(f"gold: max |pi* - best-of-N| reward at equal KL {diff:.1e}")
    claim(diff < 1e-12, "with the gold grader pi* at best-of-N's KL earns best-of-N's reward to 1e-12")
    return rows


def part_graded(pi, graded):
    rows = frontier(pi, graded, NS)
    for N, (kl, rq, rs, _, _) in zip(NS, rows):
        print(f"frontier N={N:3d}: KL {kl:.4f}, best-of-N {rq:.4f}, pi* {rs:.4f}, gap {rs - rq:.4f}")
    gaps = np.array([rs - rq for _, rq, rs, _, _ in rows])
    rel = float(max(g / rq for g, (_, rq, *_) in zip(gaps, rows)))
    claim(
        bool((gaps[1:] > 0).all()),
        "with three reward levels pi* earns strictly more than best-of-N at every N >= 2",
    )
    claim(rel < 0.01, "the gap is below 1% of best-of-N's reward at every N")
    print(f"graded: largest gap {gaps.max():.4f}, at most {100 * rel:.2f}% of best-of-N's reward")
    return rows


def part_proxy(pi, gold, sloppy):
    rows = frontier(pi, sloppy, PROXY_NS)
    g_bon, g_rl, p_bon, p_rl = [], [], [], []
    for N, (kl, pq, ps, q, star) in zip(PROXY_NS, rows):
        g_bon.append(score(q, gold))
        g_rl.append(score(star, gold))
        p_bon.append(pq)
        p_rl.append(ps)
        print(
            f"proxy N={N:3d}: KL {kl:.4f}, best-of-N proxy {pq:.4f} gold {g_bon[-1]:.4f}, "
            f"RL proxy {ps:.4f} gold {g_rl[-1]:.4f}"
        )
    g_bon, g_rl, p_bon, p_rl = map(np.array, (g_bon, g_rl, p_bon, p_rl))
    claim(bool((p_rl >= p_bon - 1e-12).all()), "at equal KL RL earns at least best-of-N's proxy reward")
    claim(
        bool((g_rl[1:] < g_bon[1:]).all()), "at equal KL RL earns less gold reward than best-of-N at every N >= 2"
    )
    claim(
        bool((np.diff(g_bon) > 0).all()),
        "best-of-N's gold reward rises with N: it never turns over",
        negation="best-of-N's gold reward does not rise at every N",
    )
    hedge_bon = np.array([q[:, HEDGE].mean() for _, _, _, q, _ in rows])
    hedge_rl = np.array([star[:, HEDGE].mean() for *_, star in rows])
    claim(
        bool((hedge_rl[1:] > hedge_bon[1:]).all()),
        "at equal KL RL puts more mass on the hedge than best-of-N at every N >= 2",
    )
    gap = p_bon - g_bon
    claim(
        bool((np.diff(gap) > 0).all()),
        "best-of-N's proxy - gold gap grows with N",
        negation="best-of-N's proxy - gold gap does not grow at every N",
    )
    # eq. (kl_ceiling): the KL of pi restricted to each prompt's top proxy level, the N -> inf limit
    ceil = kl_ceiling(pi, sloppy)
    top = (pi * (sloppy == sloppy.max(axis=1, keepdims=True))).sum(axis=1)  # (4,) P_pi(R = max R | x)
    kls = np.array([r[0] for r in rows])
    print(
        f"proxy: KL ceiling E_x[-log P_pi(R = max R | x)] = {ceil:.4f} "
        f"(-log P per prompt: {', '.join(f'{v:.4f}' for v in -np.log(top))}); "
        f"best-of-N at N = {PROXY_NS[-1]} has spent {kls[-1]:.4f} of it, "
        f"the bound log N - (N - 1)/N there is {kl_bound(PROXY_NS[-1]):.4f}"
    )
    claim(
        abs(ceil + np.log(top).mean()) < 1e-12, "the ceiling is the mean over prompts of -log P_pi(R = max R | x)"
    )
    claim(
        bool((np.diff(kls) > 0).all() and kls[-1] < ceil),
        "best-of-N's KL rises with N and stays below the ceiling",
    )
    claim(bool(kl_bound(PROXY_NS[-1]) > ceil), f"at N = {PROXY_NS[-1]} the quoted bound exceeds the ceiling")
    print(
        f"proxy: gold gained from N = 64 to 256: best-of-N {g_bon[-1] - g_bon[-3]:.4f} "
        f"for {rows[-1][0] - rows[-3][0]:.4f} nats"
    )
    return rows, g_bon, g_rl, p_bon, p_rl


def part_identity(pi, gold, K):
    ok = 0.0
    for rule in ("verified", "best"):
        for norm in ("accepted", "group"):
            e = expected_update(pi, gold, K, rule, norm)
            ok = max(ok, float(np.abs(e - closed_form_update(pi, gold, K, rule, norm)).max()))
    e = expected_update(pi, gold, K)  # (4, 9) verified, accepted
    p = (pi * gold).sum(axis=1)  # (4,) success
    glogp = pi[0] * (gold[0] - p[0]) / p[0]  # grad log p on prompt 0
    ratio = float(np.linalg.norm(e[0] * len(p)) / np.linalg.norm(glogp))
    print(
        f"identity K={K}: engine vs closed form, every rule and norm, max diff {ok:.1e}; "
        f"|E step| / |grad log p| = {ratio:.4f} = 1 - (1 - p)^K = {1 - (1 - p[0]) ** K:.4f}"
    )
    claim(ok < 1e-14, "the exact engine and the closed forms agree to 1e-14")
    claim(
        abs(ratio - (1 - (1 - p[0]) ** K)) < 1e-12,
        "the mean over accepted responses falls short of grad log p by P(none accepted)",
    )
    # eq. (rft_finite_k) over the norm "group" (REINFORCE): the factor on prompt 0's grad pass
    rft = (1 - (1 - p[0]) ** K) / p[0]
    rf = expected_update(pi, gold, K, "verified", "group")  # (4, 9) REINFORCE, no baseline
    engine = float(np.linalg.norm(e[0]) / np.linalg.norm(rf[0]))
    dapo = resample_factor(float(p[0]), K)  # eq. (dapo_reweight): the kept groups over all groups
    print(
        f"weights on prompt 2+2 (p = {p[0]:.4f}), each step against its own unfiltered method: "
        f"RFT's expected step is (1 - (1-p)^K)/p = {rft:.2f} times REINFORCE's (engine: {engine:.2f}); "
        f"DAPO's dynamic sampling, 1/(1 - p^K - (1-p)^K) = {dapo:.2f} times GRPO's"
    )
    claim(
        abs(engine - rft) < 1e-12,
        "the exact engine's ratio of the RFT and REINFORCE steps is eq. (rft_finite_k)'s",
    )
    claim(
        bool(dapo < 0.5 * rft),
        "on the easy prompts DAPO's factor over GRPO is below half of RFT's factor over REINFORCE",
    )


def kl_ref(theta, theta_ref):
    lp, lr = np.log(TabularPolicy(theta).probs()), np.log(TabularPolicy(theta_ref).probs())
    return float((np.exp(lp) * (lp - lr)).sum(axis=1).mean())


def train(method, K, steps, rng, record, lr):
    """One run from the reference: (step, success, KL from the reference) at each record step."""
    pi_ref = TabularPolicy(reference_theta())
    policy = pi_ref.copy()
    gold = reward_table("gold")
    N = gold.shape[0]
    states = np.repeat(np.arange(N), K)[:, None]  # (B, 1) row n*K + k is draw k of prompt n
    mask = np.ones(states.shape)  # (B, 1)
    out = []
    for step in range(1, steps + 1):
        y = policy.sample(states, rng)  # (B, 1)
        r = gold[states[:, 0], y[:, 0]]  # (B,)
        logp, _ = policy.logp(states, y, mask)  # (B, 1)
        if method == "rft":
            _, d = rejection_loss(logp, mask, accepted(r, K), K)  # eq. (rft_loss)
        else:
            adv = standardized if method == "grpo" else no_baseline
            _, d = reinforce_loss(logp, adv(r.reshape(N, K)).ravel(), mask)  # token mean: 1/(N K)
        policy.theta = policy.theta - lr * policy.backward(states, y, mask, d)
        if step in record:
            success = float((policy.probs() * gold).sum(axis=1).mean())
            out.append((step, success, kl_ref(policy.theta, pi_ref.theta)))
    return out


def part_train(K, steps, seeds, seed0, lr):
    record = sorted({max(1, steps // 8), steps // 4, steps // 2, steps})
    res = {}
    for m in METHODS:
        runs = [train(m, K, steps, np.random.default_rng(seed0 + s), record, lr) for s in range(seeds)]
        res[m] = np.array(runs)  # (seeds, len(record), 3)
    # the identity: RFT with the norm "group" is REINFORCE without baseline, bit for bit
    rng = np.random.default_rng(seed0)
    N = 4
    states = np.repeat(np.arange(N), K)[:, None]
    y = TabularPolicy(reference_theta()).sample(states, rng)
    r = reward_table("gold")[states[:, 0], y[:, 0]]
    logp = np.log(TabularPolicy(reference_theta()).probs())[states, y]
    d_rft = rejection_loss(logp, np.ones_like(logp), accepted(r, K), K, "group")[1]
    d_rf = reinforce_loss(logp, no_baseline(r.reshape(N, K)).ravel(), np.ones_like(logp))[1]
    claim(bool(np.array_equal(d_rft, d_rf)), "RFT with the norm group is REINFORCE without baseline, bit for bit")
    print(
        f"train: K = {K} draws a prompt a step for every method, lr {lr:g}, gold grader, "
        + (f"mean +- std over {seeds} seeds" if seeds > 1 else "mean over 1 seeds: no spread, and no ordering")
    )
    print("  step   " + "   ".join(f"{m + ' success':>17s} {'KL':>11s}" for m in METHODS))
    for i, step in enumerate(record):
        cells = "   ".join(f"{pm(res[m][:, i, 1], 4):>17s} {pm(res[m][:, i, 2], 3):>11s}" for m in METHODS)
        print(f"  {step:4d}   {cells}")
    return record, res


def sd(x):
    """The standard deviation over seeds (ddof 1); nan for one seed, which then orders nothing."""
    return float(x.std(ddof=1)) if len(x) > 1 else float("nan")


def pm(x, digits):
    """mean +- std over seeds, or the mean alone for one seed (no spread to show)."""
    return f"{x.mean():.{digits}f}" + (f"+-{sd(x):.{digits}f}" if len(x) > 1 else "")


def ahead(a, b):
    """a's mean - std above b's mean + std: an ordering beyond the spread over seeds."""
    return bool(a.mean() - sd(a) > b.mean() + sd(b))


def order(res, i, col=1):
    """Each pair of methods at record index i: '>' beyond the spread, else '~' (indistinguishable)."""
    cells = []
    for j, a in enumerate(METHODS):
        for b in METHODS[j + 1 :]:
            x, y = res[a][:, i, col], res[b][:, i, col]
            cells.append(f"{a} > {b}" if ahead(x, y) else f"{b} > {a}" if ahead(y, x) else f"{a} ~ {b}")
    return ", ".join(cells)


def train_claims(record, res, ceiling):
    rft, grpo, rf = (res[m] for m in METHODS)  # (seeds, len(record), 3)
    for i in (0, len(record) - 1):
        print(f"train: step {record[i]}, success beyond mean +- std (~: indistinguishable): {order(res, i)}")
    gaps = {m: ceiling - res[m][:, -1, 1] for m in METHODS}  # (seeds,) distance to the ceiling
    moved = {m: res[m][:, -1, 1].mean() - res[m][:, -2, 1].mean() for m in METHODS}  # still rising
    print(
        f"train: ceiling {ceiling:.4f} (mean over prompts of the best gold reward); at step {record[-1]} "
        f"ceiling - success "
        + ", ".join(f"{m} {pm(gaps[m], 4)}" for m in METHODS)
        + f"; mean gain since step {record[-2]}: "
        + ", ".join(f"{m} {moved[m]:.4f}" for m in METHODS)
    )
    claim(
        all(ahead(rft[:, i, 1], rf[:, i, 1]) for i in range(len(record))),
        "RFT's success leads REINFORCE's beyond the spread over seeds at every recorded step",
    )
    claim(
        all(ahead(rft[:, i, 2], rf[:, i, 2]) for i in range(len(record))),
        "RFT has moved further from the reference than REINFORCE, beyond the spread, at every recorded step",
    )
    worst = max(g.mean() + (sd(g) if len(g) > 1 else 0.0) for g in gaps.values())
    print(
        f"train: at step {record[-1]} every method is within {worst:.4f} of the ceiling "
        + ("(mean + std), " if len(rft) > 1 else "(one seed), ")
        + stated(
            all(moved[m] > 0 for m in METHODS),
            "and every one is still rising",
            negation="not every one still rising",
        )
    )
    claim(
        ahead(grpo[:, -1, 1], rft[:, -1, 1]) and ahead(grpo[:, -1, 1], rf[:, -1, 1]),
        "GRPO's success is the highest of the three at the last step, beyond the spread over seeds",
    )


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--K",
        type=integer(2, 12),
        default=8,
        help="draws a prompt (default 8; at most 12: the exact update enumerates every group of K of the "
        "9 responses, and C(20, 12) = 125970 is the last count under the library's 200000)",
    )
    p.add_argument(
        "--steps", type=integer(8, 5000), default=None, help="training steps (default 40; 16 with --quick)"
    )
    p.add_argument(
        "--seeds", type=integer(1, 200), default=None, help="training seeds (default 20; 4 with --quick)"
    )
    p.add_argument("--seed", type=seed, default=0, help="first seed of the training runs")
    p.add_argument("--no-train", action="store_true", help="the exact parts only (no training runs)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a short run for the tests: --steps 16 --seeds 4 unless given (an explicit value wins)",
    )
    p.add_argument("--plot", type=plot_path, default=None, help="write the figure to this path")
    a = p.parse_args(argv)
    quick, full = {"steps": 16, "seeds": 4}, {"steps": 40, "seeds": 20}
    for name in ("steps", "seeds"):  # --quick sets the defaults; a value given on the command line wins
        if getattr(a, name) is None:
            setattr(a, name, (quick if a.quick else full)[name])
    lr = 8.0  # on losses averaged over the 4 prompts: the chapter's lr 2 per prompt's group
    pi, gold, sloppy, graded = base()
    rows = part_bon(pi, gold)
    graded_rows = part_graded(pi, graded)
    proxy = part_proxy(pi, gold, sloppy)
    part_identity(pi, gold, a.K)
    if a.no_train:
        if a.plot:
            plot(rows, graded_rows, proxy, a.plot)
        return
    record, res = part_train(a.K, a.steps, a.seeds, a.seed, lr)
    train_claims(record, res, float(gold.max(axis=1).mean()))
    if a.plot:
        plot(rows, graded_rows, proxy, a.plot)


def plot(rows, graded_rows, proxy, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "best_of_n"
    fig, ax = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for rs, name in ((rows, "gold"), (graded_rows, "graded")):
        kl = [r[0] for r in rs]
        ax[0].plot(kl, [r[1] for r in rs], "o", label=f"best-of-N, {name}")
        ax[0].plot(kl, [r[2] for r in rs], "-", label=f"pi*, {name}")
    ax[0].set_xlabel("KL from pi (nats)")
    ax[0].set_ylabel("reward")
    ax[0].legend(fontsize=7)
    prows, g_bon, g_rl, p_bon, p_rl = proxy
    kl = [r[0] for r in prows]
    ax[1].plot(kl, p_bon, "o--", label="best-of-N, proxy")
    ax[1].plot(kl, g_bon, "o-", label="best-of-N, gold")
    ax[1].plot(kl, p_rl, "s--", label="RL (pi*_proxy), proxy")
    ax[1].plot(kl, g_rl, "s-", label="RL (pi*_proxy), gold")
    ax[1].set_xlabel("KL from pi (nats)")
    ax[1].set_ylabel("reward")
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
