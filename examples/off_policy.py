"""Off the policy: the sampler mu is not pi_old; what each correction does to the update, exactly.

A small multi-token task (2 prompts, EOS + 2 letters, up to 3 tokens: 15 responses per prompt).
pi_old is a random tabular policy; the sampler mu is pi_old at temperature tau >= 1, with tau
chosen so that the sequence-level KL(mu || pi_old) hits each level of --levels (the first is 0:
mu = pi_old). For every estimator and level, by enumerating every response (no sampling):

  bias      |E_mu[g] - grad J| / |grad J|, grad J the on-policy gradient of J = E_pi_old[R];
  cosine    between E_mu[g] and grad J;
  variance  trace of the covariance of the per-sample update g (one response, x ~ mu_0, y ~ mu).

g is the ascent direction in theta of one response's loss, with A = R - v(x), v the exact value of
pi_old. Estimators: sampler corrections as weights on REINFORCE (none, token/sequence IS,
truncated, masked, TRL's default sequence mask, TRL's off-policy sequence mask, verl's
geometric rejection), and the clip family in verl's "bypass" mode (the ratio taken against mu).

Then one epoch over a sampled batch in M mini-batches (the clip fraction per optimizer step), and
the loss normalizers under gradient accumulation against one big batch.

    $ python examples/off_policy.py                  # the tables on the page
    $ python examples/off_policy.py --section minibatch --lr 1 --minibatches 8
    $ python examples/off_policy.py --plot off_policy.svg --levels 0,0.05,0.1,0.25 --seed 1
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.advantages import standardized
from minirl_lm.pg.clip import clip_fraction, clipped_surrogate
from minirl_lm.pg.offpolicy import (
    ACCUM,
    accumulation_weights,
    corrected_pg_loss,
    is_weights,
    minibatch_rows,
    off_policy_sequence_mask,
    rejection_mask,
)
from minirl_lm.pg.seqclip import cispo_loss, dual_clip_surrogate, gspo_surrogate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _cli import integer, plot_path, real, reals, seed  # noqa: E402

EOS, PROMPTS = 0, ("ab", "b")  # token 0 is EOS, tokens 1, 2 are "a", "b"


def grader(prompt, response):
    """Letters in the right place / max(len(response), len(prompt)), in [0, 1]."""
    text = "".join("ab"[y - 1] for y in response if y != EOS)
    return sum(a == b for a, b in zip(text, prompt)) / max(len(text), len(prompt))


def make_task():
    return TokenMDP(PROMPTS, V=3, eos=EOS, max_len=3)


# ---- exact machinery: every response, its scores, its probabilities -------------------------
class Exact:
    """All responses of the task, their token scores d logp[b, t] / d theta, rewards, values."""

    def __init__(self, mdp, pi_old):
        self.mdp, self.pi_old = mdp, pi_old
        self.ro = ro = mdp.all_responses()
        B, T = ro.mask.shape
        self.R = mdp.score(grader, ro)  # (B,)
        self.logp_old, seq = pi_old.logp(ro.states, ro.tokens, ro.mask)  # (B, T), (B,)
        self.p_old = np.exp(seq) / mdp.N  # (B,) mu_0(x) pi_old(y|x)
        v = np.bincount(ro.prompt, self.p_old * self.R) * mdp.N  # (N,) v(x) = E_pi_old[R|x]
        self.A = self.R - v[ro.prompt]  # (B,)
        self.score = np.zeros((B, T, pi_old.theta.size))  # (B, T, S*V)
        for b in range(B):
            for t in range(int(ro.lengths[b])):
                e = np.zeros((1, T))
                e[0, t] = 1.0
                sl = slice(b, b + 1)
                self.score[b, t] = pi_old.backward(ro.states[sl], ro.tokens[sl], ro.mask[sl], e).ravel()
        self.grad_J = np.einsum("b,btp->p", self.p_old * self.A, self.score)  # eq. (pg_is) on-policy

    def sampler(self, tau):
        """mu = softmax(theta_old / tau): (its token log-probs (B, T), mu_0(x) mu(y|x) (B,))."""
        mu = TabularPolicy(self.pi_old.theta / tau)
        lp, seq = mu.logp(self.ro.states, self.ro.tokens, self.ro.mask)
        return lp, np.exp(seq) / self.mdp.N

    def kl(self, tau):
        """Sequence-level KL(mu || pi_old) = E_x sum_y mu(y|x) log(mu(y|x) / pi_old(y|x))."""
        lp, q = self.sampler(tau)
        return float((q * ((lp - self.logp_old) * self.ro.mask).sum(axis=1)).sum())

    def tau_for(self, target):
        """The temperature tau >= 1 with KL(mu || pi_old) = target (bisection on log tau)."""
        if target == 0:
            return 1.0
        lo, hi = 0.0, 1.0
        while self.kl(np.exp(hi)) < target:
            lo, hi = hi, 2 * hi
            if hi > 64:
                raise ValueError(
                    f"expected KL levels below KL(uniform || pi_old) = {self.kl(np.exp(hi)):.4g}, got {target:g}"
                )
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.kl(np.exp(mid)) < target else (lo, mid)
        return float(np.exp(0.5 * (lo + hi)))

    def moments(self, dlogp, q):
        """Per-sample updates g_b = -B dloss/dlogp . score (seq_sum agg): E[g], bias, cosine, var."""
        c = -len(self.R) * dlogp  # (B, T)
        g = np.einsum("bt,btp->bp", c, self.score)  # (B, S*V) one per response
        Eg = q @ g  # (S*V,) E_mu[g]
        var = float(q @ ((g - Eg) ** 2).sum(axis=1))  # trace of the covariance
        gj = self.grad_J
        bias = float(np.linalg.norm(Eg - gj) / np.linalg.norm(gj))
        norms = np.linalg.norm(Eg) * np.linalg.norm(gj)
        cos = float(Eg @ gj / norms) if norms > 0 else float("nan")  # E[g] = 0: every token masked
        return bias, cos, var


def estimators(ex, logp_mu, args):
    """{name: dloss/dlogp (B, T)} of every estimator at theta = theta_old on all responses."""
    ro, lo, A = ex.ro, ex.logp_old, ex.A
    m, C = ro.mask, args.c

    def pg(w):
        return corrected_pg_loss(lo, A, m, w, agg="seq_sum")[1]  # eq. (pg_is)

    trl = is_weights(lo, logp_mu, m, "sequence", "mask", c_max=3.0)  # TRL's default mode
    return {
        "none": pg(m),
        "tok_is": pg(is_weights(lo, logp_mu, m, "token")),  # eq. (is_token)
        "seq_is": pg(is_weights(lo, logp_mu, m, "sequence")),  # eq. (is_seq)
        "tok_tis": pg(is_weights(lo, logp_mu, m, "token", c_max=C)),  # eq. (tis)
        "seq_tis": pg(is_weights(lo, logp_mu, m, "sequence", c_max=C)),
        "tok_mis": pg(is_weights(lo, logp_mu, m, "token", "mask", C, 1 / C)),  # eq. (mis)
        "seq_mis": pg(is_weights(lo, logp_mu, m, "sequence", "mask", C, 1 / C)),
        "seq_mis_trl": pg(trl),
        "opsm_trl": pg(trl * off_policy_sequence_mask(lo, logp_mu, A, m, args.delta)),  # eq. (opsm)
        "rs_geo_verl": pg(rejection_mask(lo, logp_mu, m, "seq_mean_k1", args.geo)),  # eq. (rejection)
        # verl's bypass mode: the ratio is taken against the sampler (logp_old := logp_mu)
        "ppo_bypass": clipped_surrogate(lo, logp_mu, A, m, 0.2, agg="seq_sum")[1],
        "dual_bypass": dual_clip_surrogate(lo, logp_mu, A, m, 0.2, c=3.0, agg="seq_sum")[1],
        "gspo_bypass": gspo_surrogate(lo, logp_mu, A, m, 0.2)[1],
        "cispo_bypass": cispo_loss(lo, logp_mu, A, m, 0.8, 1.28, agg="seq_sum")[1],
    }


def measure(ex, args, taus):
    """rows[name] = [(kl, bias, cosine, variance) per level], the sampler of each at taus."""
    rows = {}
    for tau in taus:
        logp_mu, q = ex.sampler(tau)
        kl = ex.kl(tau)
        for name, d in estimators(ex, logp_mu, args).items():
            rows.setdefault(name, []).append((kl,) + ex.moments(d, q))
    return rows


# ---- one epoch in mini-batches, and the normalizers ------------------------------------------
def minibatch_epoch(mdp, pi_old, rng, args, tau):
    """Clip fraction before each optimizer step of one epoch over M mini-batches, and the clip
    fraction of the first step if the ratio is taken against a sampler at temperature tau."""
    pol = pi_old.copy()
    ro = mdp.rollout(pol, args.K, rng)
    r = mdp.score(grader, ro)
    A = standardized(r.reshape(-1, args.K)).reshape(-1)  # (B,)
    logp_old, _ = pi_old.logp(ro.states, ro.tokens, ro.mask)  # fixed for the epoch
    logp_mu, _ = TabularPolicy(pi_old.theta / tau).logp(ro.states, ro.tokens, ro.mask)
    bypass = clip_fraction(logp_old, logp_mu, A, ro.mask, 0.2)  # theta = theta_old
    out = []
    for rows in minibatch_rows(len(A), args.minibatches, rng):
        s, y, m = ro.states[rows], ro.tokens[rows], ro.mask[rows]
        lp, _ = pol.logp(s, y, m)
        frac = clip_fraction(lp, logp_old[rows], A[rows], m, 0.2)
        rho = np.exp((lp - logp_old[rows]) * m)
        _, d = clipped_surrogate(lp, logp_old[rows], A[rows], m, 0.2)
        pol.theta -= args.lr * pol.backward(s, y, m, d)  # one optimizer step
        out.append((frac, float(np.abs(rho - 1).max())))
    return out, bypass, ro


def normalizers(ro, G):
    """{mode: (weights x N (B, T), per-micro-batch mean factor (G,))} for every ACCUM mode."""
    m = ro.mask
    N = m.sum()
    res = {"big": (m / N * N, np.ones(G))}
    for mode in ACCUM:
        w = accumulation_weights(m, G, mode) * N  # eq. (accum), x N
        blocks = np.split(np.arange(len(m)), G)
        res[mode] = (w, np.array([w[b][m[b] > 0].mean() for b in blocks]))
    return res


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 1, figsize=(6.4, 9.6), sharex=True)
    for i, (name, rs) in enumerate(rows.items()):
        kl, bias, _, var = np.array(rs).T
        style = dict(marker="osv^D<>ph*xP+d"[i % 14], ls="-" if i < 10 else "--", label=name)
        ax[0].plot(kl, bias, **style)
        ax[1].plot(kl, var, **style)
    ax[0].set_ylabel("bias |E[g] - grad J| / |grad J|")
    ax[1].set_ylabel("variance (trace of Cov g)")
    ax[1].set_yscale("log")
    ax[1].set_xlabel("KL(mu || pi_old) per response")
    ax[1].legend(ncol=3, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    for a in ax:
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of pi_old and of the sampled batch")
    p.add_argument(
        "--levels",
        type=reals(0),
        default=(0.0, 0.02, 0.05, 0.1, 0.2),
        help="KL(mu || pi_old) levels, comma-separated, increasing, the first 0",
    )
    p.add_argument(
        "--c", type=real(1, 1e6, low_open=True), default=1.5, help="truncation bound C (masks: [1/C, C])"
    )
    p.add_argument("--delta", type=real(0, 1e6, low_open=True), default=0.1, help="TRL off-policy mask threshold")
    p.add_argument(
        "--geo", type=real(1, 1e6, low_open=True), default=1.1, help="verl geometric rejection bound (> 1)"
    )
    p.add_argument("--K", type=integer(2, 10000), default=16, help="responses per prompt in the mini-batch run")
    p.add_argument("--minibatches", type=integer(1, 20000), default=4, help="M mini-batches (and G micro-batches)")
    p.add_argument("--lr", type=real(0, 100, low_open=True), default=3.0, help="step size of the mini-batch run")
    p.add_argument(
        "--section",
        choices=("all", "estimators", "minibatch", "normalizers"),
        default="all",
        help="print only one part of the output",
    )
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="write bias and variance against the KL")
    args = p.parse_args(argv)
    args.levels = list(args.levels)
    lv = np.array(args.levels)
    if len(lv) < 2 or lv[0] != 0 or np.any(np.diff(lv) <= 0):
        p.error(f"--levels: expected increasing finite levels starting at 0, got {args.levels}")
    if (args.K * len(PROMPTS)) % args.minibatches:
        p.error(
            f"--minibatches: expected a divisor of the batch size {args.K * len(PROMPTS)}, got {args.minibatches}"
        )

    rng = np.random.default_rng(args.seed)
    mdp = make_task()
    pi_old = TabularPolicy(rng.normal(size=(mdp.S, mdp.V)))
    ex = Exact(mdp, pi_old)
    try:
        taus = [ex.tau_for(target) for target in args.levels]  # before the run
    except ValueError as e:
        p.error(f"--levels: {e}")
    rows = measure(ex, args, taus)
    if args.section in ("all", "estimators"):
        print(
            f"task: prompts {', '.join(PROMPTS)}, V = {mdp.V} (EOS, a, b), max_len = "
            f"{mdp.max_len}, {len(ex.R)} responses; |grad J| = {np.linalg.norm(ex.grad_J):.4f}"
        )
        print(
            "sampler temperatures: " + ", ".join(f"kl {k:.3f} at tau {t:.4f}" for k, t in zip(args.levels, taus))
        )
        print()
        for name, rs in rows.items():
            for kl, bias, cos, var in rs:
                print(f"estimator {name:12s} kl {kl:.3f}: bias {bias:.3e}, cosine {cos:.6f}, variance {var:.3e}")

    steps, bypass, ro = minibatch_epoch(mdp, pi_old, rng, args, taus[-1])
    if args.section in ("all", "minibatch"):
        print(
            f"\none epoch over B = {len(ro.lengths)} responses from pi_old in "
            f"M = {args.minibatches} mini-batches (PPO clip, eps 0.2, lr {args.lr:g}):"
        )
        for i, (frac, dev) in enumerate(steps, 1):
            print(f"minibatch step {i}: clip fraction {frac:.3f}, max |rho - 1| {dev:.3e}")
        print(f"bypass step 1 (ratio against mu at kl {args.levels[-1]:.3f}): clip fraction {bypass:.3f}")

    if args.section in ("all", "normalizers"):
        G = args.minibatches
        N = int(ro.mask.sum())
        print(
            f"\nnormalizers: N = {N} tokens in B = {len(ro.lengths)} responses, gradient "
            f"accumulation over G = {G} micro-batches; weight per token x N (big batch: 1)"
        )
        print(f"{'mode':8s} {'weight x N min .. max':>22s} {'total':>7s}   factor per micro-batch")
        for mode, (w, fac) in normalizers(ro, G).items():
            w_real = w[ro.mask > 0]
            print(
                f"{mode:8s} {w_real.min():10.4f} .. {w_real.max():8.4f} {w.sum() / N:7.4f}   "
                + " ".join(f"{f:.4f}" for f in fac)
            )
    if args.plot:
        plot(rows, args.plot)
        print(f"\nfigure written to {args.plot}")


if __name__ == "__main__":
    main()
