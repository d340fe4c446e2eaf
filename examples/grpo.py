"""GRPO assembled from owned parts, trained on a multi-token task with a verifier.

Each iteration samples K responses per prompt from the current policy (pi_old), scores them with
the verifier, standardizes the rewards within each group, and takes mu > 1 gradient epochs on the
same group: the first epoch has rho = 1 everywhere, later epochs move rho away from 1 and the clip
starts to fire. The KL to the frozen reference is a separate k3 term in the loss, eq. (grpo).
Everything is measured exactly on the prefix tree (all responses enumerated): the success of a
sampled response and the KL(pi || pi_ref) of whole responses after each iteration's update, and
at the end the distance to the tilted optimum pi* of the same beta (the maximizer of
E R - beta KL(pi || pi_ref), computed by backward induction in minirl_lm/values/optimum.py) and
to pi_fwd, where k3 in the loss pulls at the same beta: the stationary point of
E R - beta KL(pi_ref || pi) state by state (forward_kl_fixed_point_tree). The default run is long
enough to settle (the distances at half-way and at the end are printed side by side); where it
rests is neither target: the standardized advantage multiplies the reward term by
chi = E[A | R = 1] - E[A | R = 0] (standardized_gain), so the k3 term's effective coefficient
is beta / chi, and the program fits beta_fwd, the coefficient of the pi_fwd nearest the final
policy (and beta_tilt, that of the nearest pi*).

The second table trains the same task once per loss aggregation (seq_sum, token_mean,
seq_mean_token_mean, constant) and measures what each leaves behind: success on the short and the
long answer, the mean length of the remaining wrong answers, and the probability of a wrong answer
that runs to the length cap. The per-sequence token mean weighs a token by 1/|y|: a long wrong
answer is pushed down less per token, a long right answer pulled up less.

    $ python examples/grpo.py                        # both tables (about ten seconds)
    $ python examples/grpo.py --plot grpo.svg        # and the success / KL / clip curves
    $ python examples/grpo.py --iters 100 --mu 8 --beta 0.1
"""

import argparse
import math
import os
import sys

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.grpo import grpo_step
from minirl_lm.pg.reinforce import AGGS
from minirl_lm.values.optimum import tilted_optimum_tree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import check_work, integer, plot_path, quiet_pipe, real, seed  # noqa: E402

# the aggregations compared (token_sum has no normalizer: its step grows with the batch's tokens)
COMPARED = ("seq_sum", "token_mean", "seq_mean_token_mean", "constant")

ITERS = 300  # the default run: long enough that its second half no longer moves (SETTLED)
EARLY = 40  # an earlier snapshot printed beside it, while success is still rising
SETTLED = 0.005  # TV both distances may move by over the second half of a settled run

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


def forward_kl_fixed_point_tree(mdp, pi_ref, beta):
    """Where k3 in the loss pulls: per state, the stationary point of E R - beta KL(pi_ref || pi).

    A per-token k3 term differentiates KL(pi_ref(.|s) || pi(.|s)) at each visited state, the
    visit probabilities held fixed (kl.md). Setting the softmax gradient of the reward term,
    pi(a|s) (q(s, a) - v(s)), equal to beta (pi(a|s) - pi_ref(a|s)) gives
    pi(a|s) = beta pi_ref(a|s) / (nu_s - q(s, a)) with nu_s = v(s) + beta, where q and v
    are the plain expected rewards of that same policy (no KL in them). Solved by backward
    induction from the leaves, level by level, nu_s by bisection in (max_a q, max_a q + beta].
    beta: a float, or one coefficient per prompt (N,). Returns (S, V).
    """
    beta_n = np.broadcast_to(np.asarray(beta, dtype=float), (mdp.N,))  # (N,)
    pi = np.zeros((mdp.S, mdp.V))  # (S, V)
    values = np.zeros(mdp.S)  # (S,) plain expected reward v(s)
    levels = {}
    for s in range(mdp.S):
        levels.setdefault(len(mdp.prefix_of(s)[1]), []).append(s)
    for depth in sorted(levels, reverse=True):  # deepest first: children are solved
        ids = np.array(levels[depth])  # (L,) the states of this level
        q = np.empty((len(ids), mdp.V))  # (L, V) q(s, a)
        b = np.empty(len(ids))  # (L,) the state's beta
        for i, s in enumerate(ids):
            n, prefix = mdp.prefix_of(s)
            b[i] = beta_n[n]
            for a in range(mdp.V):
                child = mdp.step(prefix, a)  # s . a: concatenation
                q[i, a] = (
                    verifier(mdp.prompts[n], child) if mdp.is_terminal(child) else values[mdp.state_id(n, child)]
                )
        ref = pi_ref[ids]  # (L, V)
        lo, hi = q.max(axis=1), q.max(axis=1) + b  # sum(pi) > 1 at lo+, <= 1 at hi
        for _ in range(200):
            nu = 0.5 * (lo + hi)  # (L,) the multiplier nu_s
            over = (b[:, None] * ref / (nu[:, None] - q)).sum(axis=1) > 1.0
            lo, hi = np.where(over, nu, lo), np.where(over, hi, nu)
        p = b[:, None] * ref / (hi[:, None] - q)  # (L, V)
        pi[ids] = p / p.sum(axis=1, keepdims=True)
        values[ids] = (pi[ids] * q).sum(axis=1)
    return pi


def standardized_gain(p, K, xi=1e-8):
    """chi = E[A_k | R_k = 1] - E[A_k | R_k = 0] of the group-standardized advantage, binary rewards.

    With success probability p and the other K - 1 rewards of the group Binomial(K - 1, p),
    E[(1/K) sum_k A_k grad log pi(y_k)] = chi grad p for one prompt: the reward term of GRPO is
    chi times the policy gradient, so k3 in the loss weighs beta / chi against the plain reward.
    As K grows, A -> (R - p) / sigma_R and chi -> 1 / sigma_R, sigma_R = sqrt(p (1 - p)).
    """
    chi = 0.0
    for n in range(K):  # n correct among the other K - 1
        log_w = math.lgamma(K) - math.lgamma(n + 1) - math.lgamma(K - n)  # log C(K - 1, n)
        log_w += (n * math.log(p) if n else 0.0) + ((K - 1 - n) * math.log1p(-p) if K - 1 - n else 0.0)
        w = math.exp(log_w)  # P(n correct among the other K - 1)
        for r, ones in ((1.0, n + 1), (0.0, n)):
            m = ones / K  # the group's mean reward
            sd = math.sqrt(m * (1 - m))  # population std, ddof = 0
            chi += (1 if r else -1) * w * (r - m) / (sd + xi)
    return chi


def fit_beta(tv_of, lo=1e-3, hi=1.0):
    """The beta in [lo, hi] minimizing tv_of(beta): a log grid, then golden section around its best."""
    grid = np.geomspace(lo, hi, 25)
    best = int(np.argmin([tv_of(b) for b in grid]))
    a, b = np.log(grid[max(best - 1, 0)]), np.log(grid[min(best + 1, len(grid) - 1)])
    g = (np.sqrt(5) - 1) / 2
    for _ in range(30):
        c, d = b - g * (b - a), a + g * (b - a)
        a, b = (a, d) if tv_of(np.exp(c)) < tv_of(np.exp(d)) else (c, b)
    beta = float(np.exp(0.5 * (a + b)))
    return beta, tv_of(beta)


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
        lp = np.where(a.mask > 0, log_table[a.states, a.tokens], 0.0)  # (Y, T) 0 at padding
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


def train(mdp, theta_ref, args, agg, seed, exact=None, log=None, lr=None, epochs=None, iters=None, keep=None):
    """GRPO from the reference for args.iters iterations; returns the final policy.

    log: a list that receives one row per iteration: exact success and KL after the iteration's
    update, clip fractions and the k3 estimate of its sampled group (k3 before the update);
    epochs: a list that receives each iteration's clip fraction per epoch;
    keep: a dict {iteration: None} whose values receive a copy of the policy at that iteration.
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
        if keep is not None and it in keep:
            keep[it] = policy.copy()
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


def plot(path, log, pi_star_success, pi_star_kl, pi_fwd_success, rest):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    it, succ, clip, _, k3, kl = (np.array(c) for c in zip(*log))
    # stacked panels sharing the iteration axis: each stays full width on a phone
    fig, ax = plt.subplots(3, 1, figsize=(6.4, 7.2), sharex=True)
    ax[0].plot(it, succ, label="GRPO")
    ax[0].axhline(pi_star_success, color="k", ls="--", lw=1, label="tilted optimum pi*")
    ax[0].axhline(pi_fwd_success, color="C3", ls=":", lw=1.2, label="k3 fixed point pi_fwd")
    beta_rest, rest_success = rest
    ax[0].axhline(rest_success, color="C2", ls="-.", lw=1, label=f"pi_fwd at beta_fwd = {beta_rest:.3g}")
    ax[0].set(ylabel="success (exact)", ylim=(0, 1.02))
    ax[0].legend(loc="lower right", fontsize="small")
    ax[1].plot(it, kl, label="KL(pi || pi_ref), exact, after the update")
    ax[1].plot(it, k3, lw=0.8, label="k3 per token, sampled, before the update")
    ax[1].axhline(pi_star_kl, color="k", ls="--", lw=1, label="KL(pi* || pi_ref)")
    top = max(np.max(kl), np.max(k3), pi_star_kl)
    ax[1].set(ylabel="KL", ylim=(0, 1.75 * top))  # headroom: the legend sits above every line
    ax[1].legend(loc="upper left", fontsize="small")
    ax[2].plot(it, clip)
    ax[2].set(xlabel="iteration", ylabel="clip fraction\n(mean over epochs)")
    fig.tight_layout()
    fig.savefig(path)


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of the main run")
    p.add_argument(
        "--iters",
        type=integer(1, 2000),
        default=ITERS,
        help=f"GRPO iterations (default {ITERS}; at most 2000, about half a minute: an iteration evaluates "
        "the policy exactly on every response)",
    )
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
    p.add_argument(
        "--every",
        type=integer(1, 2000),
        default=25,
        help="print every this many iterations (at most --iters' bound)",
    )
    p.add_argument(
        "--agg-seeds",
        type=integer(0, 1000),
        default=6,
        help="seeds per aggregation mode in the second table (0: skip it)",
    )
    p.add_argument(
        "--agg-iters",
        type=integer(1, 500),
        default=15,
        help="iterations per run in the second table (before convergence hides the bias; at most 500, "
        "and at most 8000 in all with --agg-seeds: a minute)",
    )
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="draw success, KL and clip fraction to PATH")
    args = p.parse_args(argv)
    unchecked = ("plot", "every", "agg_seeds", "agg_iters")  # the main run's claims do not depend on these
    defaults = vars(p.parse_args([]))
    page_run = all(v == defaults[k] for k, v in vars(args).items() if k not in unchecked)
    agg_keys = ("K", "mu", "lr", "eps", "eps_high", "beta", "prior", "agg_seeds", "agg_iters")  # the table's
    agg_page = all(getattr(args, k) == defaults[k] for k in agg_keys)
    check_work(
        p,
        "--iters, --K, --mu, --agg-seeds, --agg-iters",
        f"response-epochs per prompt in all (K x mu x (iters + {len(COMPARED)} x agg-seeds x agg-iters))",
        args.K * args.mu * (args.iters + len(COMPARED) * args.agg_seeds * args.agg_iters),
        1e7,
    )
    check_work(
        p,
        "--agg-seeds, --agg-iters",
        f"iterations in the second table ({len(COMPARED)} modes x agg-seeds x agg-iters; each a few ms)",
        len(COMPARED) * args.agg_seeds * args.agg_iters,
        8000,
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

    log, epochs, half = [], [], max(args.iters // 2, 1)
    early = EARLY if EARLY < half else None  # a snapshot of an unsettled run, beside the end
    keep = {half: None, early: None}  # the policy half-way: is the second half still moving?
    try:
        policy = train(mdp, theta_ref, args, args.agg, args.seed, exact, log, epochs=epochs, keep=keep)
        by_agg = {agg: agg_runs(agg) for agg in COMPARED} if args.agg_seeds > 0 else {}
    except ValueError as e:
        if not str(e).startswith("grpo_step: "):  # an overflow of the step, named after it
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
        "success, KL(pi||ref): exact, after the iteration's update; clip frac, (max epoch) and "
        "k3/token:\non the iteration's sampled group (k3/token at the policy that sampled it, "
        "before the update)"
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

    first_epoch = float(np.max(np.array(epochs)[:, 0]))
    claim(first_epoch == 0.0, "epoch 1 of every group clips nothing (rho = 1 before the first step)")

    pi_ref = TabularPolicy(theta_ref).probs()
    lp, l_half = exact.log_pi(policy.log_probs()), exact.log_pi(keep[half].log_probs())
    snapshots = [(f"GRPO at iter {early}", exact.log_pi(keep[early].log_probs()))] if early else []
    lf = exact.log_pi(np.log(forward_kl_fixed_point_tree(mdp, pi_ref, args.beta)))  # log pi_fwd(y|x)
    print(
        f"\ndistance to the tilted optimum pi* and to the k3 fixed point pi_fwd "
        f"(beta = {args.beta:g}),\nwhole responses, mean over prompts:"
    )
    print("  pi*    maximizes E R - beta KL(pi || pi_ref): KL folded into the reward lands here")
    print("  pi_fwd is stationary for E R - beta KL(pi_ref || pi) per state: k3 in the loss lands here")
    print(
        f"  {'':18s} {'TV(pi, pi*)':>12s} {'TV(pi, pi_fwd)':>15s} {'KL(pi* || pi)':>14s} "
        f"{'KL(pi || pi*)':>14s} {'success':>8s}"
    )
    tv = {}
    for name, l in (
        ("reference", lq),
        *snapshots,
        (f"GRPO at iter {half}", l_half),
        (f"GRPO at iter {args.iters}", lp),
        ("pi_fwd", lf),
    ):
        tv[name] = (exact.mu0 @ exact.tv(l, ls), exact.mu0 @ exact.tv(l, lf))
        print(
            f"  {name:18s} {tv[name][0]:12.4f} {tv[name][1]:15.4f} "
            f"{exact.mu0 @ exact.kl(ls, l):14.4f} {exact.mu0 @ exact.kl(l, ls):14.4f} "
            f"{exact.mu0 @ exact.success(l):8.3f}"
        )
    gap, (to_star, to_fwd) = tv["pi_fwd"][0], tv[f"GRPO at iter {args.iters}"]
    moved = max(abs(u - v) for u, v in zip(tv[f"GRPO at iter {half}"], (to_star, to_fwd)))
    closer = "pi_fwd" if to_fwd < to_star else "pi*"
    print(
        f"GRPO (k3 in the loss) ends TV {to_star:.4f} from pi* and {to_fwd:.4f} from pi_fwd, "
        f"closer to {closer};\nthe two targets are TV {gap:.4f} apart "
        f"(TV(pi, pi*) <= TV(pi, pi_fwd) + {gap:.4f}: a bound, not a split)"
    )
    if early:
        e_star, e_fwd = tv[f"GRPO at iter {early}"]
        print(
            f"(at iteration {early}, with success still rising, it was TV {e_star:.4f} from pi* and "
            f"{e_fwd:.4f} from pi_fwd: closer to {'pi_fwd' if e_fwd < e_star else 'pi*'})"
        )
    settled = moved < SETTLED
    print(
        f"from iteration {half} to {args.iters} both distances moved by at most {moved:.4f}:\n"
        + (
            f"below {SETTLED:g}, the run has settled (its iterates jitter around one point)"
            if settled
            else f"not below {SETTLED:g}, the run is stopped before it settles (try --iters {4 * args.iters})"
        )
    )

    # Where it rests: the closest member of each family, and the coefficient the k3 term really has.
    cache = {}

    def fwd_of(b):  # log pi_fwd(y|x) at coefficient b, (Y,); b a float or one per prompt (N,)
        key = tuple(np.atleast_1d(b))
        if key not in cache:
            cache[key] = exact.log_pi(np.log(forward_kl_fixed_point_tree(mdp, pi_ref, b)))
        return cache[key]

    def star_of(b):  # log pi*(y|x) at coefficient b, (Y,); a small b underflows some rows to 0
        with np.errstate(divide="ignore"):
            return exact.log_pi(np.log(tilted_optimum_tree(mdp, pi_ref, verifier, b)))

    b_fwd, tv_fwd = fit_beta(lambda b: exact.mu0 @ exact.tv(lp, fwd_of(b)))
    b_star, tv_star = fit_beta(lambda b: exact.mu0 @ exact.tv(lp, star_of(b)))
    succ = np.clip(exact.success(lp), 1e-12, 1 - 1e-12)  # (N,) final success per prompt
    gain = np.array([standardized_gain(p_, args.K) for p_ in succ])  # (N,) chi per prompt
    b_pred = args.beta / gain  # (N,) the k3 term's weight against the plain reward
    tv_pred = exact.mu0 @ exact.tv(lp, fwd_of(b_pred))
    sigma = np.sqrt(succ * (1 - succ))  # (N,) sigma_R per prompt
    flat = exact.mu0 @ (succ**args.K + (1 - succ) ** args.K)  # P(a group of equal rewards)
    print(
        f"{'where GRPO rests' if settled else 'where the stopped run is'}, the member of each "
        f"family nearest the final policy:"
    )
    print(f"  pi_fwd at beta_fwd  = {b_fwd:.4f}: TV {tv_fwd:.4f}")
    print(f"  pi*    at beta_tilt = {b_star:.4f}: TV {tv_star:.4f}")
    print(
        f"beta_fwd {'<' if b_fwd < args.beta else '>='} beta: the standardized advantage multiplies "
        f"the reward term by\nchi = E[A | R = 1] - E[A | R = 0]; at the final success per prompt "
        f"({' '.join(f'{v:.3f}' for v in succ)}, K = {args.K})\nchi = "
        f"{' '.join(f'{v:.2f}' for v in gain)}, so k3 weighs beta / chi = "
        f"{' '.join(f'{v:.4f}' for v in b_pred)} against the reward;\npi_fwd at those "
        f"coefficients is TV {tv_pred:.4f} from GRPO"
    )
    print(
        f"(beta sigma_R = {' '.join(f'{v:.4f}' for v in args.beta * sigma)} is the K -> infinity "
        f"limit, where chi -> 1 / sigma_R;\nat K = {args.K} a group has equal rewards, so A = 0, "
        f"with probability {flat:.3f})"
    )
    if page_run:  # the sentences of grpo.md about the page's run
        claim(bool(np.all(np.diff(by_epoch) > 0)), "the mean clip fraction grows with the epoch")
        claim(settled, "the page's run has settled: the second half moves both distances by less than 0.005")
        e_star, e_fwd = tv[f"GRPO at iter {EARLY}"]
        claim((e_fwd < e_star) != (to_fwd < to_star), "the verdict at iteration 40 disagrees with the end's")
        claim(bool(tv_fwd < min(to_star, to_fwd)), "GRPO rests nearer pi_fwd(beta_fwd) than either target of beta")
        claim(bool(tv_pred < min(to_star, to_fwd)), "pi_fwd(beta / chi) is nearer GRPO than either target of beta")
        near = abs(np.log(b_pred.mean() / b_fwd)) < np.log(1.5)
        claim(bool(near), "beta / chi is the fitted beta_fwd within 50%")
    if args.plot:
        plot(
            args.plot,
            log,
            exact.mu0 @ exact.success(ls),
            exact.mu0 @ exact.kl(ls, lq),
            exact.mu0 @ exact.success(lf),
            (b_fwd, exact.mu0 @ exact.success(fwd_of(b_fwd))),
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
    if agg_page:  # the sentences of grpo.md about the page's table
        mean = {agg: runs.mean(axis=0) for agg, runs in by_agg.items()}  # (5,) each
        claim(
            np.array_equal(np.round(mean["seq_sum"], 3), np.round(mean["constant"], 3)),
            "seq_sum and constant print the same row (their weights differ by a constant)",
        )
        d_tm, d_smtm = (np.abs(mean[a] - mean["seq_sum"]) for a in ("token_mean", "seq_mean_token_mean"))
        claim(bool(np.all(d_tm < d_smtm)), "token_mean is nearer seq_sum than seq_mean_token_mean in every column")
        tm, sm = mean["token_mean"], mean["seq_mean_token_mean"]
        claim(
            bool(sm[1] > tm[1] and sm[2] < tm[2] and sm[3] > tm[3] and sm[4] > tm[4]),
            "seq_mean_token_mean: higher P(ok | a), lower P(ok | bca), longer wrong answers, more at the cap",
        )


if __name__ == "__main__":
    main()
