"""GRPO assembled from owned parts, trained on a multi-token task with a verifier.

Each iteration samples K responses per prompt from the current policy (pi_old), scores them with
the verifier, standardizes the rewards within each group, and takes mu > 1 gradient epochs on the
same group: the first epoch has rho = 1 everywhere, later epochs move rho away from 1 and the clip
starts to fire. The KL to the frozen reference is a separate k3 term in the loss, eq. (grpo).
Everything is measured exactly on the prefix tree (all responses enumerated): the success of a
sampled response, the KL(pi || pi_ref) of whole responses, and at the end the distance to the
tilted optimum pi* of the same beta (the maximizer of E R - beta KL(pi || pi_ref), computed by
backward induction in minirl_lm/values/optimum.py) and to pi_rev, where k3 in the loss actually pulls:
the stationary point of E R - beta KL(pi_ref || pi) state by state (reverse_kl_fixed_point_tree).

The second table trains the same task once per loss aggregation (seq_sum, token_mean,
seq_mean_token_mean, constant) and measures what each leaves behind: success on the short and the
long answer, the mean length of the remaining wrong answers, and the probability of a wrong answer
that runs to the length cap. The per-sequence token mean weighs a token by 1/|y|: a long wrong
answer is pushed down less per token, a long right answer pulled up less.

    $ python examples/grpo.py                        # both tables (a few seconds)
    $ python examples/grpo.py --plot grpo.svg        # and the success / KL / clip curves
    $ python examples/grpo.py --iters 100 --mu 8 --beta 0.1
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.grpo import grpo_step
from minirl_lm.pg.reinforce import AGGS
from minirl_lm.values.optimum import tilted_optimum_tree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _cli import check_work, integer, plot_path, real, seed  # noqa: E402

# ---- the task: copy the prompt, exactly, then stop ---------------------------------------------
EOS, ALPHABET = 0, "abc"  # token 0 is EOS, tokens 1..3 are the letters
PROMPTS = ("a", "ca", "bca")  # answers of 2, 3 and 4 tokens (EOS included)


def verifier(prompt, response):
    """Reward 1 iff the response is the prompt's letters followed by EOS, else 0."""
    return float(tuple(response) == tuple(ALPHABET.index(c) + 1 for c in prompt) + (EOS,))


def make_task(max_len=4):
    return TokenMDP(PROMPTS, V=1 + len(ALPHABET), eos=EOS, max_len=max_len)


def reference_logits(mdp, prior):
    """theta_ref: logit `prior` on the right next token along the answer, 0 elsewhere.

    A reference that half knows the task: at prior = 1 the exact answer has probability
    (e / (e + 3))^|y| (0.23 for "a", 0.05 for "bca").
    """
    theta = np.zeros((mdp.S, mdp.V))  # (S, V)
    for s in range(mdp.S):
        n, prefix = mdp.prefix_of(s)
        answer = tuple(ALPHABET.index(c) + 1 for c in mdp.prompts[n]) + (EOS,)
        if prefix == answer[: len(prefix)]:  # still on the answer's path
            theta[s, answer[len(prefix)]] = prior
    return theta


def reverse_kl_fixed_point_tree(mdp, pi_ref, beta):
    """Where k3 in the loss pulls: per state, the stationary point of E R - beta KL(pi_ref || pi).

    A per-token k3 term differentiates KL(pi_ref(.|s) || pi(.|s)) at each visited state, the
    visit probabilities held fixed (kl.md). Setting the softmax gradient of the reward term,
    pi(a|s) (q(s, a) - v(s)), equal to beta (pi(a|s) - pi_ref(a|s)) gives
    pi(a|s) = beta pi_ref(a|s) / (nu_s - q(s, a)) with nu_s = v(s) + beta, where q and v
    are the plain expected rewards of that same policy (no KL in them). Solved by backward
    induction from the leaves, nu_s by bisection in (max_a q, max_a q + beta]. Returns (S, V).
    """
    pi = np.zeros((mdp.S, mdp.V))  # (S, V)
    values = np.zeros(mdp.S)  # (S,) plain expected reward v(s)
    for s in range(mdp.S - 1, -1, -1):  # ids are level by level: deepest first
        n, prefix = mdp.prefix_of(s)
        q = np.empty(mdp.V)  # (V,) q(s, a)
        for a in range(mdp.V):
            child = mdp.step(prefix, a)  # s . a: concatenation
            q[a] = verifier(mdp.prompts[n], child) if mdp.is_terminal(child) else values[mdp.state_id(n, child)]
        lo, hi = q.max(), q.max() + beta  # sum(pi) > 1 at lo+, <= 1 at hi
        for _ in range(200):
            nu = 0.5 * (lo + hi)  # the multiplier nu_s
            lo, hi = (nu, hi) if (beta * pi_ref[s] / (nu - q)).sum() > 1.0 else (lo, nu)
        p = beta * pi_ref[s] / (hi - q)
        pi[s] = p / p.sum()
        values[s] = pi[s] @ q
    return pi


# ---- exact evaluation on the prefix tree ------------------------------------------------------
class Exact:
    """Response-level quantities of a per-state table, by enumerating all responses."""

    def __init__(self, mdp):
        self.mdp, self.all = mdp, mdp.all_responses()
        self.r = mdp.score(verifier, self.all)  # (Y,) reward of every response
        self.mu0 = np.full(mdp.N, 1.0 / mdp.N)  # prompts: uniform

    def log_pi(self, log_table):
        """log pi(y | x) for every response (Y,), from a (S, V) table of log-probs."""
        a = self.all
        lp = log_table[a.states, a.tokens] * a.mask  # (Y, T) 0 at padding
        return lp.sum(axis=1)

    def per_prompt(self, values):
        return np.bincount(self.all.prompt, values, minlength=self.mdp.N)  # (N,)

    def success(self, lp):
        return self.per_prompt(np.exp(lp) * self.r)  # (N,) P(correct | x)

    def kl(self, lp, lq):
        """KL(p || q) of whole responses, per prompt (N,)."""
        return self.per_prompt(np.exp(lp) * (lp - lq))

    def tv(self, lp, lq):
        return 0.5 * self.per_prompt(np.abs(np.exp(lp) - np.exp(lq)))

    def wrong_stats(self, lp):
        """Mean length of the wrong answers, and P(wrong and at the length cap), per prompt."""
        p, wrong = np.exp(lp), self.r == 0
        p_wrong = self.per_prompt(p * wrong)
        mean_len = self.per_prompt(p * wrong * self.all.lengths) / p_wrong
        at_cap = self.per_prompt(p * wrong * (self.all.lengths == self.mdp.max_len))
        return mean_len, at_cap


def train(mdp, theta_ref, args, agg, seed, exact=None, log=None, lr=None, epochs=None, iters=None):
    """GRPO from the reference for args.iters iterations; returns the final policy.

    log: a list that receives one row per iteration (exact success, clip fractions, KL);
    epochs: a list that receives each iteration's clip fraction per epoch.
    """
    rng = np.random.default_rng(seed)
    policy, ref = TabularPolicy(theta_ref), TabularPolicy(theta_ref)  # start at pi_ref
    lq = exact.log_pi(ref.log_probs()) if exact is not None else None
    for it in range(1, (iters or args.iters) + 1):
        d = grpo_step(
            policy,
            ref,
            mdp,
            verifier,
            rng,
            K=args.K,
            mu=args.mu,
            lr=lr or args.lr,
            eps=args.eps,
            eps_high=args.eps_high,
            beta=args.beta,
            kl_estimator="k3",
            agg=agg,
        )
        if epochs is not None:
            epochs.append(d["clip_fraction"])
        if log is not None:
            lp = exact.log_pi(policy.log_probs())
            log.append(
                (
                    it,
                    exact.mu0 @ exact.success(lp),
                    float(np.mean(d["clip_fraction"])),
                    float(np.max(d["clip_fraction"])),
                    d["kl"],
                    exact.mu0 @ exact.kl(lp, lq),
                )
            )
    return policy


def plot(path, log, pi_star_success, pi_star_kl, pi_rev_success):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    it, succ, clip, _, k3, kl = (np.array(c) for c in zip(*log))
    # stacked panels sharing the iteration axis: each stays full width on a phone
    fig, ax = plt.subplots(3, 1, figsize=(6.4, 7.2), sharex=True)
    ax[0].plot(it, succ, label="GRPO")
    ax[0].axhline(pi_star_success, color="k", ls="--", lw=1, label="tilted optimum pi*")
    ax[0].axhline(pi_rev_success, color="C3", ls=":", lw=1.2, label="k3 fixed point pi_rev")
    ax[0].set(ylabel="success (exact)", ylim=(0, 1.02))
    ax[0].legend(loc="lower right", fontsize="small")
    ax[1].plot(it, kl, label="KL(pi || pi_ref), exact")
    ax[1].plot(it, k3, label="k3 per token, sampled")
    ax[1].axhline(pi_star_kl, color="k", ls="--", lw=1, label="KL(pi* || pi_ref)")
    ax[1].set(ylabel="KL")
    ax[1].legend(loc="lower right", fontsize="small")
    ax[2].plot(it, clip)
    ax[2].set(xlabel="iteration", ylabel="clip fraction\n(mean over epochs)")
    fig.tight_layout()
    fig.savefig(path)


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of the main run")
    p.add_argument("--iters", type=integer(1, 100000), default=40, help="GRPO iterations")
    p.add_argument("--K", type=integer(1, 1024), default=8, help="responses per prompt (group size)")
    p.add_argument("--mu", type=integer(1, 100), default=4, help="gradient epochs per group (> 1: clipping fires)")
    p.add_argument("--lr", type=real(0, 10, low_open=True), default=4.0, help="step size on theta")
    p.add_argument("--eps", type=real(0, 1, low_open=True), default=0.2, help="clip range epsilon (low)")
    p.add_argument(
        "--eps-high", type=real(0, 10, low_open=True), default=None, help="clip-higher epsilon (default eps)"
    )
    p.add_argument("--beta", type=real(0.01, 10), default=0.04, help="KL coefficient (k3 term in the loss)")
    p.add_argument("--prior", type=real(-10, 10), default=1.0, help="reference logit on the right token")
    p.add_argument("--agg", default="token_mean", choices=AGGS, help="aggregation of the main run")
    p.add_argument("--every", type=integer(1, 100000), default=5, help="print every this many iterations")
    p.add_argument(
        "--agg-seeds",
        type=integer(0, 1000),
        default=6,
        help="seeds per aggregation mode in the second table (0: skip it)",
    )
    p.add_argument(
        "--agg-iters",
        type=integer(1, 100000),
        default=15,
        help="iterations per run in the second table (before convergence hides the bias)",
    )
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="draw success, KL and clip fraction to PATH")
    args = p.parse_args(argv)
    check_work(
        p,
        "--iters, --K, --mu, --agg-seeds, --agg-iters",
        f"response-epochs per prompt in all (K x mu x (iters + {len(AGGS)} x agg-seeds x agg-iters))",
        args.K * args.mu * (args.iters + len(AGGS) * args.agg_seeds * args.agg_iters),
        1e7,
    )

    mdp = make_task()
    theta_ref = reference_logits(mdp, args.prior)
    exact = Exact(mdp)
    lq = exact.log_pi(TabularPolicy(theta_ref).log_probs())  # log pi_ref(y|x)
    pi_star = tilted_optimum_tree(mdp, TabularPolicy(theta_ref).probs(), verifier, args.beta)
    with np.errstate(divide="ignore"):
        ls = exact.log_pi(np.log(pi_star))  # log pi*(y|x)

    # Every run first, then the printing: a step size at which GRPO overflows (the library's
    # ValueError naming lr) is a usage error before any output.
    short, long_ = 0, mdp.N - 1  # "a" and "bca"

    def row(name, l):
        succ = exact.success(l)
        mean_len, at_cap = exact.wrong_stats(l)
        return (exact.mu0 @ succ, succ[short], succ[long_], exact.mu0 @ mean_len, exact.mu0 @ at_cap)

    # Matched steps: every mode gives a response the same mean total weight 1/B at the reference
    # (seq_sum gives |y|/B, constant |y|/(B L)), so what differs is how weight depends on |y|.
    L_ref = exact.mu0 @ exact.per_prompt(np.exp(lq) * exact.all.lengths)  # E_ref |y|
    lr_of = {
        "seq_sum": args.lr / L_ref,
        "token_mean": args.lr,
        "seq_mean_token_mean": args.lr,
        "constant": args.lr * mdp.max_len / L_ref,
    }

    def agg_runs(agg):
        """(seeds, 5): the row of each seed's policy after args.agg_iters at the matched lr."""
        return np.array(
            [
                row(
                    agg,
                    exact.log_pi(
                        train(mdp, theta_ref, args, agg, seed, lr=lr_of[agg], iters=args.agg_iters).log_probs()
                    ),
                )
                for seed in range(args.agg_seeds)
            ]
        )

    log, epochs = [], []
    try:
        policy = train(mdp, theta_ref, args, args.agg, args.seed, exact, log, epochs=epochs)
        by_agg = {agg: agg_runs(agg) for agg in AGGS} if args.agg_seeds > 0 else {}
    except ValueError as e:
        if not str(e).startswith("lr: "):
            raise
        p.error(
            f"--lr: expected a step size at which GRPO stays finite at --beta {args.beta:g}, "
            f"--mu {args.mu} (lower one of the three), got {args.lr:g} ({e})"
        )

    print(
        f"task: copy the prompt {', '.join(PROMPTS)} then EOS; verifier reward 1 iff exact; "
        f"V = {mdp.V}, max_len = {mdp.max_len}, {len(exact.r)} responses"
    )
    print(
        f"GRPO: K = {args.K}, mu = {args.mu} epochs per group, lr = {args.lr:g}, "
        f"eps = {args.eps:g}, eps_high = {args.eps_high or args.eps:g}, beta = {args.beta:g} (k3), "
        f"agg = {args.agg}, seed = {args.seed}"
    )
    print(
        f"reference: success {exact.mu0 @ exact.success(lq):.3f}; "
        f"tilted optimum (beta = {args.beta:g}): success {exact.mu0 @ exact.success(ls):.3f}, "
        f"KL(pi* || pi_ref) {exact.mu0 @ exact.kl(ls, lq):.3f}\n"
    )

    print(
        f"{'iter':>5s} {'success':>8s} {'clip frac':>10s} {'(max epoch)':>11s} "
        f"{'k3/token':>9s} {'KL(pi||ref)':>12s}"
    )
    for it, succ, clip, clip_max, k3, kl in log:
        if it == 1 or it % args.every == 0 or it == args.iters:
            print(f"{it:5d} {succ:8.3f} {clip:10.3f} {clip_max:11.3f} {k3:9.4f} {kl:12.4f}")
    n_clipped = sum(c > 0 for _, _, c, _, _, _ in log)
    by_epoch = np.mean(epochs, axis=0)  # (mu,)
    print(
        f"clipping fired in {n_clipped} of {args.iters} iterations; clip fraction by epoch, "
        f"mean over iterations: {' '.join(f'{c:.3f}' for c in by_epoch)}"
    )
    print(
        f"(epoch 1 of every group has rho = 1 exactly: its largest clip fraction over all "
        f"iterations is {np.max(np.array(epochs)[:, 0]):.3f})"
    )

    lp = exact.log_pi(policy.log_probs())
    lr_ = exact.log_pi(
        np.log(reverse_kl_fixed_point_tree(mdp, TabularPolicy(theta_ref).probs(), args.beta))
    )  # log pi_rev(y|x)
    print(
        f"\ndistance to the tilted optimum pi* and to the k3 fixed point pi_rev "
        f"(beta = {args.beta:g}),\nwhole responses, mean over prompts:"
    )
    print("  pi*    maximizes E R - beta KL(pi || pi_ref): KL folded into the reward lands here")
    print("  pi_rev is stationary for E R - beta KL(pi_ref || pi) per state: k3 in the loss lands here")
    print(
        f"  {'':12s} {'TV(pi, pi*)':>12s} {'TV(pi, pi_rev)':>15s} {'KL(pi* || pi)':>14s} "
        f"{'KL(pi || pi*)':>14s} {'success':>8s}"
    )
    tv = {}
    for name, l in (("reference", lq), ("GRPO final", lp), ("pi_rev", lr_)):
        tv[name] = (exact.mu0 @ exact.tv(l, ls), exact.mu0 @ exact.tv(l, lr_))
        print(
            f"  {name:12s} {tv[name][0]:12.4f} {tv[name][1]:15.4f} "
            f"{exact.mu0 @ exact.kl(ls, l):14.4f} {exact.mu0 @ exact.kl(l, ls):14.4f} "
            f"{exact.mu0 @ exact.success(l):8.3f}"
        )
    gap, (to_star, to_rev) = tv["pi_rev"][0], tv["GRPO final"]
    closer = "pi_rev" if to_rev < to_star else "pi*"
    print(
        f"GRPO (k3 in the loss) ends TV {to_star:.4f} from pi* and {to_rev:.4f} from pi_rev, "
        f"closer to {closer};\nthe k3 estimator alone puts its target TV {gap:.4f} from pi*, "
        f"the sampled, standardized, clipped\noptimization leaves GRPO TV {to_rev:.4f} from "
        f"that target"
    )
    if args.plot:
        plot(
            args.plot,
            log,
            exact.mu0 @ exact.success(ls),
            exact.mu0 @ exact.kl(ls, lq),
            exact.mu0 @ exact.success(lr_),
        )
        print(f"\nfigure written to {args.plot}")

    if args.agg_seeds <= 0:
        return
    print(
        f"\nthe aggregation modes side by side ({args.agg_iters} iterations from the reference, "
        f"mean +- standard error over seeds 0..{args.agg_seeds - 1};\nlr matched so that a "
        f"response weighs 1/B on average: seq_sum lr / E_ref|y|, constant lr * {mdp.max_len} / "
        f"E_ref|y|, E_ref|y| = {L_ref:.3f}):"
    )
    print(
        f"  {'agg':20s} {'success':>13s} {'P(ok | a)':>13s} {'P(ok | bca)':>13s} "
        f"{'E|y| if wrong':>13s} {'P(wrong, |y|=' + str(mdp.max_len) + ')':>15s}"
    )
    print(f"  {'(reference)':20s}" + "".join(f" {v:13.3f}" for v in row(None, lq)))
    for agg, runs in by_agg.items():
        m = runs.mean(axis=0)
        se = runs.std(axis=0, ddof=1) / np.sqrt(len(runs)) if len(runs) > 1 else 0 * m
        print(f"  {agg:20s}" + "".join(f" {a:6.3f} +-{e:5.3f}" for a, e in zip(m, se)))


if __name__ == "__main__":
    main()
