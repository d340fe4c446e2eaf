"""Where each preference loss lands: population optima against the tilted optimum, and online DPO.

The task: a token MDP with N = 2 prompts, V = 3 tokens (EOS = 0, and the content tokens 1 and 2),
responses of up to T_max = 4 tokens: 31 complete responses per prompt, all enumerated. The
reference pi_ref puts logit 0 on every token in every state (EOS probability 1/3 at each step).
The known reward counts the content token the prompt likes minus the one it does not: prompt 0
likes token 1, prompt 1 likes token 2, R(x, y) = #liked - #other.

Part 1, where each loss lands. Preference data is the population: every ordered draw (y_a, y_b)
from pi_ref, with weight mu_0(x) pi_ref(y_a|x) pi_ref(y_b|x), labelled by Bradley-Terry,
eq. (bradley_terry): y_a is chosen with probability sigma(R(x, y_a) - R(x, y_b)). Each loss's
expected gradient over that data is exact (a weighted sum over all 2 * 31^2 labelled pairs per
prompt), reaches the tabular policy through its backward, and is run to convergence by L-BFGS
from pi_ref. KTO sees the same pairs split into a desirable (chosen) and an undesirable (rejected)
example, with z0 fixed. Each landing point pi is compared with the tilted optimum
pi* = pi_ref exp(R / beta) / Z at the loss's beta, eq. (kl_optimum): total variation and
KL(pi* || pi) over whole responses, and the mean response length, all averaged over prompts.

Part 2, online DPO: each step draws two responses per prompt (several pairs) from the current
policy, labels them by Bradley-Terry of R, and takes one DPO step; beside it, offline DPO
takes full-batch steps on one fixed sample of pairs drawn from pi_ref. KL(pi* || pi) as steps go.

    $ python examples/preferences.py
    $ python examples/preferences.py --plot lengths.svg
"""

import argparse
import builtins
import os
import sys

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.direct.dpo import dpo_loss
from minirl_lm.direct.preferences import (
    bradley_terry_judge,
    ipo_loss,
    kto_loss,
    online_dpo_step,
    orpo_loss,
    simpo_loss,
)
from minirl_lm.exact.groups import ordered_groups
from minirl_lm.values.optimum import tilted_optimum_tree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import check_work, integer, plot_path, real, seed  # noqa: E402

LOSSES = ("dpo", "cdpo", "ipo_sum", "ipo_avg", "simpo", "orpo", "kto")


def make_task():
    """The token MDP, the reference policy and the known reward (a grader)."""
    mdp = TokenMDP(["likes 1", "likes 2"], V=3, eos=0, max_len=4)
    ref = TabularPolicy(np.zeros((mdp.S, mdp.V)))

    def grader(prompt, response):
        liked = 1 if prompt == "likes 1" else 2
        content = [y for y in response if y != 0]
        return float(sum(y == liked for y in content) - sum(y != liked for y in content))

    return mdp, ref, grader


def _sigmoid(z):
    return np.exp(-np.logaddexp(0.0, -z))


# ---------------------------------------------------------------- the population of labelled pairs


class Population:
    """Every response, and every labelled pair (chosen c, rejected r, weight w) of the data."""

    def __init__(self, mdp, ref, grader):
        self.R = mdp.all_responses()  # (M, T) every response
        self.N, self.M = mdp.N, self.R.prompt.size
        self.reward = mdp.score(grader, self.R)  # (M,)
        _, self.seq_ref = ref.logp(self.R.states, self.R.tokens, self.R.mask)  # (M,)
        pairs, prob = ordered_groups(self.seq_ref, self.R.prompt, 2)  # every (a, b), i.i.d. pi_ref
        c, r, w = [], [], []
        for x in range(self.N):
            a, b = pairs[self.R.prompt[pairs[:, 0]] == x].T
            draw = prob[self.R.prompt[pairs[:, 0]] == x] / self.N  # mu_0 pi_ref(a) pi_ref(b)
            p = _sigmoid(self.reward[a] - self.reward[b])  # eq. (bradley_terry)
            c += [a, b]
            r += [b, a]
            w += [draw * p, draw * (1.0 - p)]  # a chosen, or b chosen
        self.c, self.r, self.w = (np.concatenate(v) for v in (c, r, w))

    def net_desirable(self):
        """Weight of each response as chosen minus as rejected (M,): KTO's sign of pull."""
        return np.bincount(self.c, self.w, minlength=self.M) - np.bincount(self.r, self.w, minlength=self.M)

    def ipo_avg_constant(self, pi, beta):
        """C of the averaged-IPO landing point (N,): log(pi/pi_ref) / |y| - Psi / beta, where
        Psi(y) = E_{b ~ pi_ref} P(y > b) - 1/2 (constant over a prompt's responses at the optimum)."""
        x, n = self.R.prompt, self.R.lengths
        psi = np.bincount(self.c, self.w, minlength=self.M) * self.N / np.exp(self.seq_ref)
        psi = 0.5 * psi - 0.5  # E_b P(y > b) - 1/2, eq. (bradley_terry)
        q = (np.log(pi) - self.seq_ref) / n - psi / beta  # (M,)
        return np.bincount(x, q) / np.bincount(x)

    def probs(self, policy):
        """pi(y|x) of every response (M,)."""
        return np.exp(policy.logp(self.R.states, self.R.tokens, self.R.mask)[1])

    def loss(self, name, policy, beta, gamma, lam, z0, ls):
        """The population loss `name` at the policy and its gradient on theta (S, V)."""
        R, c, r, w = self.R, self.c, self.r, self.w
        logp, seq = policy.logp(R.states, R.tokens, R.mask)  # (M, T), (M,)
        G = np.zeros(logp.shape)  # (M, T) dloss/dlogp
        if name in ("dpo", "cdpo"):
            loss, (d_c, d_r) = dpo_loss(
                seq[c],
                seq[r],
                self.seq_ref[c],
                self.seq_ref[r],
                beta,
                "dpo" if name == "dpo" else "conservative",
                0.0 if name == "dpo" else ls,
                weights=w,
            )
            np.add.at(G, c, d_c[:, None] * R.mask[c])  # eq. (dpo): ds/dlogp_t = mask_t
            np.add.at(G, r, d_r[:, None] * R.mask[r])
        elif name == "kto":
            both = np.concatenate([c, r])
            desirable = np.arange(both.size) < c.size  # chosen: desirable
            loss, d = kto_loss(
                logp[both],
                R.mask[both],
                self.seq_ref[both],
                desirable,
                beta,
                z0,
                weights=np.concatenate([w, w]) / 2,
            )
            np.add.at(G, both, d)
        else:
            args = (logp[c], R.mask[c], logp[r], R.mask[r])
            if name.startswith("ipo"):
                loss, (d_c, d_r) = ipo_loss(
                    *args, self.seq_ref[c], self.seq_ref[r], beta, average=name == "ipo_avg", weights=w
                )
            elif name == "simpo":
                loss, (d_c, d_r) = simpo_loss(*args, beta, gamma, weights=w)
            else:
                loss, (d_c, d_r) = orpo_loss(*args, lam, weights=w)
            np.add.at(G, c, d_c)
            np.add.at(G, r, d_r)
        return loss, policy.backward(R.states, R.tokens, R.mask, G)


def lbfgs(f, x, max_iter=3000, tol=1e-12, m=20, max_step=1.0):
    """Minimize f(x) -> (value, gradient) by L-BFGS with a backtracking line search.

    Returns (x, max |gradient|, iterations). Near the minimum the loss stops resolving the
    decrease (rounding); a step that lowers the gradient without raising the loss by more than
    rounding is then accepted.
    """
    fx, g = f(x)
    S, Y = [], []
    for it in range(max_iter):
        if np.abs(g).max() < tol:
            return x, np.abs(g).max(), it
        q, coef = g.copy(), []
        for s, y in zip(reversed(S), reversed(Y)):  # two-loop recursion
            a = (s @ q) / (y @ s)
            q -= a * y
            coef.append(a)
        q *= (S[-1] @ Y[-1]) / (Y[-1] @ Y[-1]) if S else 1.0 / max(1.0, np.abs(g).max())
        for (s, y), a in zip(zip(S, Y), reversed(coef)):
            q += (a - (y @ q) / (y @ s)) * s
        d = -q
        t = min(1.0, max_step / np.abs(d).max())  # a trust region on theta
        while True:
            fn, gn = f(x + t * d)
            if fn <= fx + 1e-4 * t * (g @ d) or (
                fn <= fx + 1e-14 * abs(fx) and np.abs(gn).max() < np.abs(g).max()
            ):
                break
            t *= 0.5
            if t < 1e-12:
                return x, np.abs(g).max(), it  # no further progress possible
        s, y = t * d, gn - g
        if s @ y > 0:
            S.append(s)
            Y.append(y)
            S, Y = S[-m:], Y[-m:]
        x, fx, g = x + s, fn, gn
    return x, np.abs(g).max(), max_iter


def land(pop, name, theta_ref, args):
    """The population optimum of loss `name` from pi_ref: (policy, max |gradient|, iterations)."""
    shape = theta_ref.shape

    def f(flat):
        loss, dtheta = pop.loss(
            name,
            TabularPolicy(flat.reshape(shape)),
            args.beta,
            args.gamma,
            args.lam,
            args.z0,
            args.label_smoothing,
        )
        return loss, dtheta.ravel()

    flat, gmax, it = lbfgs(f, theta_ref.ravel().copy(), max_iter=args.max_iter)
    return TabularPolicy(flat.reshape(shape)), gmax, it


def compare(pop, pi, pi_star):
    """TV, KL(pi* || pi), mean length of pi and of pi*: each averaged over prompts."""
    x, n = pop.R.prompt, pop.R.lengths
    tv = 0.5 * np.bincount(x, np.abs(pi - pi_star)).mean()
    with np.errstate(divide="ignore", over="ignore"):  # pi = 0 somewhere: KL = inf
        d = np.log(pi) - np.log(pi_star)  # (M,)
        # KL = sum pi* (-d) = sum pi* (e^d - 1 - d), as sum pi* (e^d - 1) = sum (pi - pi*) = 0;
        # the second form keeps its accuracy when pi is within rounding of pi*
        kl = np.bincount(x, pi_star * (np.expm1(d) - d)).mean()
    return tv, kl, np.bincount(x, pi * n).mean(), np.bincount(x, pi_star * n).mean()


def length_dist(pop, pi):
    """P(|y| = L) for L = 1..T_max, averaged over prompts."""
    T = pop.R.mask.shape[1]
    return np.bincount(pop.R.lengths - 1, pi, minlength=T)[:T] / pop.N


# ---------------------------------------------------------------- part 2: online and offline DPO


def kl_to_star(pop, policy, pi_star):
    return compare(pop, pop.probs(policy), pi_star)[1]


def offline_pairs(mdp, ref, judge, n_pairs, rng):
    """A fixed sample: n_pairs per prompt drawn from pi_ref and labelled by the judge."""
    prompts = np.repeat(np.arange(mdp.N), n_pairs)
    ro = mdp.rollout(ref, 2, rng, prompts=prompts)  # rows 2i, 2i+1: pair i
    resp = ro.responses()
    p = np.array([judge(mdp.prompts[n], resp[2 * i], resp[2 * i + 1]) for i, n in enumerate(prompts)])
    a = 2 * np.arange(prompts.size)
    a_wins = rng.random(prompts.size) < p
    return ro, np.where(a_wins, a, a + 1), np.where(a_wins, a + 1, a)


def offline_step(policy, seq_ref, ro, c, r, beta, lr):
    """One full-batch DPO step on the fixed sample, eq. (dpo)."""
    _, seq = policy.logp(ro.states, ro.tokens, ro.mask)
    _, (d_c, d_r) = dpo_loss(seq[c], seq[r], seq_ref[c], seq_ref[r], beta)
    dseq = np.zeros(seq.size)
    np.add.at(dseq, c, d_c)
    np.add.at(dseq, r, d_r)
    policy.theta -= lr * policy.backward(ro.states, ro.tokens, ro.mask, dseq[:, None] * ro.mask)


# ---------------------------------------------------------------- the program


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--beta", type=real(0.05, 100), default=1.0, help="beta of every loss, and of pi* (0.05..100)")
    p.add_argument(
        "--gamma", type=real(0, 100), default=0.5, help="SimPO's target margin zeta (TRL's simpo_gamma)"
    )
    p.add_argument("--lam", type=real(0, 100), default=0.1, help="ORPO's odds-ratio weight chi (TRL's beta)")
    p.add_argument("--z0", type=real(0, 100), default=0.0, help="KTO's reference point, held fixed")
    p.add_argument("--label-smoothing", type=real(0, 0.5), default=0.1, help="conservative DPO's")
    p.add_argument("--max-iter", type=integer(1, 100000), default=3000, help="L-BFGS iterations per loss")
    p.add_argument("--steps", type=integer(1, 100000), default=300, help="online and offline DPO steps")
    p.add_argument("--pairs", type=integer(1, 10000), default=8, help="online pairs per prompt and step")
    p.add_argument("--offline-pairs", type=integer(1, 100000), default=40, help="fixed offline pairs per prompt")
    p.add_argument("--lr", type=real(0, 100, low_open=True), default=2.0, help="online / offline DPO step size")
    p.add_argument("--seed", type=seed, default=0, help="np.random.default_rng(seed) for part 2")
    p.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    p.add_argument("--takeaway", action="store_true", help="print only three lines that sum the run up")
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="draw each loss's length distribution vs pi*'s")
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.max_iter = min(args.steps, 60), min(args.max_iter, 300)
    check_work(
        p,
        "--steps, --pairs",
        "sampled online pairs per prompt in all (steps x pairs)",
        args.steps * args.pairs,
        1e7,
    )
    return args


def main(argv=None):
    args = parse_args(argv)
    print = builtins.print if not args.takeaway else (lambda *a, **k: None)  # noqa: A001
    mdp, ref, grader = make_task()
    pop = Population(mdp, ref, grader)
    star = TabularPolicy(np.log(tilted_optimum_tree(mdp, ref.probs(), grader, args.beta)))
    pi_star = pop.probs(star)  # (M,) eq. (kl_optimum)
    print(
        f"task: {mdp.N} prompts, {pop.M // mdp.N} responses each (up to {mdp.max_len} tokens), "
        f"{pop.c.size // mdp.N} labelled pairs per prompt; pi* at beta = {args.beta:g}"
    )
    print(
        f"beta = {args.beta:g} in every loss but orpo; cdpo label smoothing {args.label_smoothing:g}, "
        f"simpo margin zeta {args.gamma:g}, orpo weight chi {args.lam:g}, kto z0 {args.z0:g}"
    )

    # part 1: where each loss lands
    landed, notes, res = {}, [], {}
    for name in LOSSES:
        policy, gmax, it = land(pop, name, ref.theta, args)
        pi = pop.probs(policy)
        landed[name] = pi
        tv, kl, m, m_star = compare(pop, pi, pi_star)
        res[name] = (tv, kl, m, m_star)
        print(
            f"preference {name:<11s}: TV to pi* {tv:.1e}, KL(pi*||pi) {kl:.1e}, "
            f"mean length {m:.2f} (pi* {m_star:.2f})"
        )
        if gmax >= 1e-9:
            notes.append(f"{name}: not stationary after {it} L-BFGS iterations (max |gradient| {gmax:.1e})")
        if name == "ipo_avg":
            C = pop.ipo_avg_constant(pi, args.beta)  # (N,)
            notes.append(
                f"ipo_avg: log(pi/pi_ref) = |y| (Psi/beta + C) with C = "
                f"{', '.join(f'{c:+.3f}' for c in C)} (per prompt): a length "
                f"{'penalty' if C.mean() < 0 else 'bonus'} of |y| C no pair asked for"
            )
        if name == "kto":
            good = pop.net_desirable() > 1e-12  # (M,) more desirable than not
            kto_mass = pi[~good].sum() / mdp.N
            notes.append(
                f"kto: no interior optimum; it stops at |gradient| {gmax:.0e} only "
                f"because sigma' vanishes, with mass {pi[~good].sum() / mdp.N:.0e} left "
                f"on the {int((~good).sum())} responses that are not net-desirable "
                f"(their KL(pi*||pi) term grows without bound as that mass goes to 0)"
            )
    for note in notes:
        print(note)

    # part 2: online DPO against offline DPO on a fixed sample
    rng = np.random.default_rng(args.seed)
    judge = bradley_terry_judge(grader)
    ro, c, r = offline_pairs(mdp, ref, judge, args.offline_pairs, rng)
    _, seq_ref = ref.logp(ro.states, ro.tokens, ro.mask)
    online, offline = ref.copy(), ref.copy()
    marks = sorted({0, 1, 3, 10, 30, 100, 300, 1000, args.steps} & set(range(args.steps + 1)))
    print(
        f"\nonline DPO ({args.pairs} fresh pairs per prompt and step, sampled from the policy) "
        f"against offline DPO ({args.offline_pairs} fixed pairs per prompt from pi_ref), "
        f"lr = {args.lr:g}: KL(pi*||pi)"
    )
    print(f"{'step':>6s}  {'online':>9s}  {'offline':>9s}")
    trace = []
    for step in range(args.steps + 1):
        if step in marks:
            trace.append((step, kl_to_star(pop, online, pi_star), kl_to_star(pop, offline, pi_star)))
            print(f"{step:6d}  {trace[-1][1]:9.2e}  {trace[-1][2]:9.2e}")
        if step < args.steps:
            online_dpo_step(mdp, online, ref, judge, args.beta, args.lr, rng, args.pairs)
            offline_step(offline, seq_ref, ro, c, r, args.beta, args.lr)
    best = min(trace[1:], key=lambda t: t[2])
    print(
        f"offline KL is smallest at step {best[0]} ({best[2]:.2e}) and ends at {trace[-1][2]:.2e}; "
        f"online ends at {trace[-1][1]:.2e}"
    )

    page_run = {k: v for k, v in vars(args).items() if k not in ("plot", "takeaway")} == {
        k: v for k, v in vars(parse_args([])).items() if k not in ("plot", "takeaway")
    }
    if page_run or args.takeaway:  # the page's claims are about its run, the defaults
        summary = conclusions(res, trace, kto_mass)
    if args.takeaway:
        for line in summary:
            builtins.print(line)
    if args.plot:
        plot(pop, landed, pi_star, args.plot)


def conclusions(res, trace, kto_mass):
    """The page's claims, checked on this run, and its three-line takeaway (returned)."""
    others = {k: v for k, v in res.items() if k != "dpo"}
    near = min(others, key=lambda k: others[k][0])
    length = {k: v[2] for k, v in res.items()}
    m_star = res["dpo"][3]
    claim(
        bool(res["dpo"][0] < 1e-6 and min(v[0] for v in others.values()) > 1e-3),
        "only DPO lands on pi*; every other loss lands at a nonzero distance",
    )
    claim(bool(abs(length["dpo"] - m_star) < 5e-3), "DPO's mean length is pi*'s")
    claim(bool(length["ipo_avg"] > length["ipo_sum"]), "averaged IPO lands on longer responses than summed IPO")
    claim(
        bool(length["simpo"] > m_star > length["orpo"]),
        "SimPO lands on longer responses than pi*, ORPO on shorter",
    )
    claim(bool(kto_mass < 1e-6), "KTO leaves almost no mass on the responses that are not net-desirable")
    steps, online, offline = zip(*trace)
    i = int(np.argmin(offline))
    claim(
        bool(0 < i < len(offline) - 1 and offline[-1] > offline[i] < offline[0]),
        "offline DPO on a fixed sample first improves, then its KL rises again after its minimum",
    )
    claim(bool(online[-1] < min(offline)), "online DPO ends nearer pi* than offline DPO ever gets")
    longer = ", ".join(f"{k} {length[k]:.2f}" for k in ("ipo_sum", "ipo_avg", "simpo", "orpo"))
    return [
        f"only DPO lands on pi*: TV {res['dpo'][0]:.0e} (the solver's tolerance); the nearest other "
        f"loss, {near}, lands at TV {others[near][0]:.2f}",
        f"the others move the length: pi* (and DPO) {m_star:.2f} tokens on average, {longer}",
        f"online DPO ends at KL(pi*||pi) {online[-1]:.2e}, offline DPO on a fixed sample at "
        f"{offline[-1]:.2e}, after its best {offline[i]:.2e} at step {steps[i]}",
    ]


def plot(pop, landed, pi_star, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    T = pop.R.mask.shape[1]
    L = np.arange(1, T + 1)
    star = length_dist(pop, pi_star)
    fig, axes = plt.subplots(4, 2, figsize=(6.0, 7.2), sharex=True, sharey=True)
    for ax, name in zip(axes.ravel(), LOSSES):
        ax.bar(L, length_dist(pop, landed[name]), color="C0", width=0.6, label="the loss's optimum")
        ax.plot(L, star, "o-", color="k", ms=4, label=r"$\pi^*$")
        ax.set_title(name, fontsize=10)
    ax = axes.ravel()[-1]
    ax.axis("off")
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    ax.legend(handles, labels, loc="center", frameon=False)
    for a in (axes[-1, 0], axes[-2, 1]):  # the lowest panel of each column
        a.set_xlabel("response length (tokens)")
        a.xaxis.set_tick_params(labelbottom=True)
    for a in axes[:, 0]:
        a.set_ylabel("probability")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
