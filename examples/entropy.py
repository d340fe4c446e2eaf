"""Entropy: why it collapses, and what each knob does, measured with the exact expected update.

First the identity of `minirl_lm/pg/entropy_knobs.py`, eq. (ent_identity): on the chapter's toy
(gold grader, K = 4) the exact expected update `E[g]` of one group-standardized policy-gradient
step, scaled by eta, changes the entropy of every row by exactly `H(theta + eta E[g]) - H(theta)`;
the first-order prediction `-eta Cov(log pi, E[g])` misses by a relative error linear in eta.

Then every knob, run for a fixed number of steps of the exact expected update (the expectation
over every group of K responses of each prompt, by `minirl_lm.exact`: the groups' multinomial law,
the token scores and the entropy's gradient as the bases). Each prompt's group is one batch
(token_mean within it), one gradient step per batch (so `rho = 1`), and Clip-Cov's random subset
enters through its exact expectation over the selection (`clip_cov_loss(..., rng=None)`).

    none          REINFORCE with the group-standardized advantage
    clip_higher   the clipped surrogate with eps_high = 0.28
    bonus_loss    + c H(s_t) per token in the loss (pg/entropy.py), c = C_ENT
    bonus_reward  the reward R - c log pi(y): the objective E[R] + c H(pi(.|x))
    adaptive      the bonus with the adaptive coefficient (target 0.6 H at the start)
    clip_cov      Clip-Cov (ratio 0.2, band 0.02 < c_t < 5)
    kl_cov        KL-Cov (ratio 0.2, k = 1)
    entropy_mask  the top rho_h = 0.5 of the batch's tokens by entropy
    kl_ref        R - beta log(pi/pi_ref) in the reward, beta = BETA

A sampled run follows: K responses per prompt, all prompts in one batch (the selections act on
the whole batch, as the frameworks do), two epochs per batch (the second one off-policy, where
clip-higher and KL-Cov act), over several seeds.

    $ python examples/entropy.py                # the page's run (a few seconds)
    $ python examples/entropy.py --quick        # the tests' run
    $ python examples/entropy.py --plot entropy.svg
"""

import argparse
import math
import os
import sys

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.exact.groups import group_law, group_moments
from minirl_lm.exact.scores import token_scores
from minirl_lm.pg.advantages import standardized
from minirl_lm.pg.clip import clipped_surrogate
from minirl_lm.pg.entropy import entropy_bonus, entropy_grad_table, entropy_table
from minirl_lm.pg.entropy_knobs import (
    adaptive_entropy_coef,
    clip_cov_loss,
    entropy_masked_loss,
    entropy_step,
    kl_cov_loss,
)
from minirl_lm.tasks import reference_theta, reward_table
from minirl_lm.values.optimum import tilted_optimum

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import check_work, integer, plot_path, quiet_pipe, seed  # noqa: E402

KNOBS = (
    "none",
    "clip_higher",
    "bonus_loss",
    "bonus_reward",
    "adaptive",
    "clip_cov",
    "kl_cov",
    "entropy_mask",
    "kl_ref",
)
C_ENT, BETA, LR, LR_SAMPLED = 0.2, 0.2, 3.0, 1.0
CLIP_COV = dict(ratio=0.2, cov_lb=0.02, cov_ub=5.0)
KL_COV = dict(ratio=0.2, kl_coef=1.0)
ETAS = (1.0, 1e-1, 1e-2, 1e-3, 1e-4)
WARM = 3  # exact steps before the identity check
GROUP_SIZES = ((9, 4), (7, 2))  # (responses per prompt, prompts) of the toy and the chain: the groups enumerated


# ---- the tasks -------------------------------------------------------------------------------
def make_task(name):
    """The chapter's toy (one token, V = 9) or a two-token chain (V = 3: EOS, a, b)."""
    if name == "toy":
        mdp = TokenMDP(["2+2", "3*4", "8*8", "9*9"], V=9, eos=None, max_len=1)
        theta, R = reference_theta(), reward_table("gold")
    else:
        mdp = TokenMDP(["x0", "x1"], V=3, eos=0, max_len=2)
        theta = np.zeros((mdp.S, mdp.V))
        for n in range(2):
            theta[mdp.state_id(n, ())] = [0.5, 0.0, 0.0]
        # responses: EOS | a EOS | a a | a b | b EOS | b a | b b
        R = np.array([[0.0, 0.5, 0.0, 1.0, 0.0, 0.0, 0.0], [0.3, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]])
    ro = mdp.all_responses()
    N = mdp.N
    Rn = len(ro.prompt) // N
    pick = lambda a: a.reshape((N, Rn) + a.shape[1:])
    return dict(
        name=name, mdp=mdp, theta_ref=theta, R=R, N=N, Rn=Rn, S=mdp.S, V=mdp.V, T=mdp.max_len,
        states=pick(ro.states), tokens=pick(ro.tokens), mask=pick(ro.mask),
    )  # fmt: skip


def seq_logp(task, theta):
    """log pi(y|x) of every response `(N, Rn)` and the token log-probs `(N, Rn, T)`."""
    f = lambda a: a.reshape(task["N"] * task["Rn"], -1)
    logp, seq = TabularPolicy(theta).logp(f(task["states"]), f(task["tokens"]), f(task["mask"]))
    return seq.reshape(task["N"], task["Rn"]), logp.reshape(task["N"], task["Rn"], -1)


def measure(task, theta):
    """(H, J, KL): mean token entropy of the responses, mean reward, KL(pi || pi_ref) of responses."""
    seq, _ = seq_logp(task, theta)
    ref, _ = seq_logp(task, task["theta_ref"])
    py = np.exp(seq)  # (N, Rn)
    Hs = entropy_table(theta)[task["states"]] * task["mask"]  # (N, Rn, T)
    H = ((py * Hs.sum(2)).sum(1) / (py * task["mask"].sum(2)).sum(1)).mean()
    J = (py * task["R"]).sum(1).mean()
    KL = np.where(py > 0, py * (seq - ref), 0.0).sum(1).mean()
    return float(H), float(J), float(KL)


# ---- one knob's loss on one batch --------------------------------------------------------------
def knob_grad(knob, logp, logp_old, seqp, seqp_ref, R, mask, Hs, coef):
    """(dloss/dlogp (B, T), the bonus's per-token weight (B, T)) of a batch, B = N*K rows."""
    r = R - C_ENT * seqp if knob == "bonus_reward" else R - BETA * (seqp - seqp_ref) if knob == "kl_ref" else R
    A = standardized(r).reshape(-1)  # (B,) eq. (pg_normalized)
    lp, lo, m = (a.reshape(-1, a.shape[-1]) for a in (logp, logp_old, mask))
    if knob == "clip_cov":
        g = clip_cov_loss(lp, lo, A, m, **CLIP_COV)[1]
    elif knob == "kl_cov":
        g = kl_cov_loss(lp, lo, A, m, **KL_COV)[1]
    elif knob == "entropy_mask":
        g = entropy_masked_loss(lp, lo, A, m, Hs.reshape(lp.shape), rho_h=0.5)[1]
    else:
        g = clipped_surrogate(lp, lo, A, m, eps_high=0.28 if knob == "clip_higher" else None)[1]
    c = {"bonus_loss": C_ENT, "adaptive": coef}.get(knob, 0.0)
    return g, c * m / m.sum()  # token_mean weights of the bonus


def expected_update(task, theta, knob, K, coef):
    """E[g] over every group of K responses of each prompt (each group a batch), mean over prompts."""
    pi = TabularPolicy(theta).probs()
    seq, logp = seq_logp(task, theta)
    ref, _ = seq_logp(task, task["theta_ref"])
    gH = entropy_grad_table(theta)  # (S, V) eq. (entropy_grad)
    Hrow = entropy_table(theta)
    S, V, T = task["S"], task["V"], task["T"]
    out = np.zeros(S * V)
    for n in range(task["N"]):
        st, tk, mk = task["states"][n], task["tokens"][n], task["mask"][n]
        Y, P = group_law(np.exp(seq[n]), K)  # (M, K), (M,) eq. (exact_multinomial)
        co, cb = np.zeros(Y.shape + (T,)), np.zeros(Y.shape + (T,))
        for i, y in enumerate(Y):
            g, b = knob_grad(knob, logp[n][y], logp[n][y], seq[n][y][None], ref[n][y][None],
                             task["R"][n][y][None], mk[y], Hrow[st[y]] * mk[y], coef)  # fmt: skip
            co[i], cb[i] = -g, b  # the update is minus the gradient
        basis_s = token_scores(pi, st, tk, mk)  # (Rn, T, S*V) eq. (exact_score)
        basis_h = np.zeros((len(st), T, S, V))
        basis_h[np.arange(len(st))[:, None], np.arange(T)[None, :], st] = gH[st]
        basis_h = basis_h.reshape(len(st), T, S * V) * mk[:, :, None]
        mean, _ = group_moments(P, Y, [co, cb], [basis_s, basis_h], second=False)  # eq. (exact_group)
        out += mean / task["N"]
    return out.reshape(S, V)


def run_exact(task, knob, K, steps):
    theta = task["theta_ref"].copy()
    coef, applied, target = 0.0, 0.0, 0.9 * measure(task, theta)[0]
    trace = [measure(task, theta)]
    for _ in range(steps):
        theta = theta + LR * expected_update(task, theta, knob, K, applied)
        trace.append(measure(task, theta))
        if knob == "adaptive":  # the controller reads this step's entropy, eq. (ent_adaptive)
            coef, applied = adaptive_entropy_coef(coef, trace[-1][0], target, 0.02, 0.0, 1.0)
    return theta, np.array(trace)


# ---- the sampled run: one batch of all prompts, two epochs ------------------------------------
def run_sampled(task, knob, K, steps, rng, epochs=2):
    theta = task["theta_ref"].copy()
    N, Rn = task["N"], task["Rn"]
    coef, applied, target = 0.0, 0.0, 0.9 * measure(task, theta)[0]
    for _ in range(steps):
        seq, logp = seq_logp(task, theta)
        ref, _ = seq_logp(task, task["theta_ref"])
        idx = np.array([rng.choice(Rn, K, p=np.exp(seq[n]) / np.exp(seq[n]).sum()) for n in range(N)])  # (N, K)
        at = lambda a: a[np.arange(N)[:, None], idx].reshape(N * K, *a.shape[2:])
        st, tk, mk = at(task["states"]), at(task["tokens"]), at(task["mask"])
        old = at(logp)
        for _ in range(epochs):
            pol = TabularPolicy(theta)
            lp, _ = pol.logp(st, tk, mk)
            Hs = entropy_table(theta)[st] * mk
            g, b = knob_grad(knob, lp, old, at(seq).reshape(N, K), at(ref).reshape(N, K),
                             at(task["R"]).reshape(N, K), mk, Hs, applied)  # fmt: skip
            d = -pol.backward(st, tk, mk, g)
            if b.any():
                d -= b.sum() * entropy_bonus(theta, st, mk)[1]  # token_mean bonus, eq. (entropy_bonus)
            theta = theta + LR_SAMPLED * d
        if knob == "adaptive":
            coef, applied = adaptive_entropy_coef(coef, measure(task, theta)[0], target, 0.02, 0.0, 1.0)
    return measure(task, theta)


# ---- the identity ----------------------------------------------------------------------------
def identity(K=4):
    task = make_task("toy")
    theta = task["theta_ref"]
    for _ in range(WARM):  # off the uniform start, where Cov(log pi, .) vanishes
        theta = theta + LR * expected_update(task, theta, "none", K, 0.0)
    d = expected_update(task, theta, "none", K, 0.0)  # E[g] (S, V)
    rows = []
    for eta in ETAS:
        exact, first, _ = entropy_step(theta, eta * d)
        rows.append((eta, first.sum(), exact.sum(), abs(exact.sum() - first.sum()) / abs(exact.sum())))
        print(f"entropy identity: eta {eta:.0e}: predicted {rows[-1][1]:.4e}, exact {rows[-1][2]:.4e}, "
              f"rel err {rows[-1][3]:.1e}")  # fmt: skip
    rel = np.array([r[3] for r in rows])
    claim(
        bool(np.all(np.abs(rel[2:] / rel[1:-1] - 0.1) < 0.01)),
        "the relative error falls tenfold per tenfold smaller eta",
    )
    claim(
        bool(np.all(np.array([r[2] for r in rows]) < 0)),
        "the exact step lowers the entropy at every eta",
        negation="the exact step does not lower the entropy at every eta",
    )
    return rows


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--steps",
        type=integer(1, 40),
        default=None,
        help="exact steps per knob (default 40, 5 with --quick; at most 40: a step of the exact update "
        "visits every group of K responses of every prompt, for each of the nine knobs on both tasks, "
        "about a second at K = 2; at K = 3 or 4 the groups cap it lower)",
    )
    p.add_argument("--K", type=integer(2, 4), default=2, help="responses per prompt (default 2)")
    p.add_argument(
        "--seeds", type=integer(1, 50), default=None, help="seeds of the sampled run (default 4; 1 with --quick)"
    )
    p.add_argument("--seed", type=seed, default=0, help="first seed of the sampled run")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a short run for the tests (the page's claims unchecked): --steps 5 --seeds 1 unless given "
        "(an explicit value wins)",
    )
    p.add_argument("--plot", type=plot_path, default=None, help="write the figure to this path")
    a = p.parse_args(argv)
    # --quick sets the defaults; a value given on the command line wins
    steps = a.steps if a.steps is not None else 5 if a.quick else 40
    seeds = a.seeds if a.seeds is not None else 1 if a.quick else 4
    groups = sum(math.comb(n + a.K - 1, a.K) * prompts for n, prompts in GROUP_SIZES)
    check_work(
        p, "--steps, --K", f"groups per knob in the exact runs (steps x {groups} groups of K)", steps * groups, 1e4
    )
    identity()
    toy = make_task("toy")
    print(
        f"task toy: the chapter's toy (gold grader), K = {a.K}, lr {LR}, c {C_ENT}, beta {BETA}, "
        "exact expected update"
    )
    toy_end = {}
    for knob in KNOBS:
        _, tr = run_exact(toy, knob, a.K, steps)
        toy_end[knob] = tr[-1]
        print(f"entropy knob {knob:<12s}: H {tr[0, 0]:.3f} -> {tr[-1, 0]:.3f} after {steps} steps, "
              f"J {tr[0, 1]:.3f} -> {tr[-1, 1]:.3f}, KL to ref {tr[-1, 2]:.3f}")  # fmt: skip
    if not a.quick:  # what the page says of the toy, checked
        near = [k for k in KNOBS if abs(toy_end[k][0] - toy_end["none"][0]) < 0.01]
        above = [k for k in KNOBS if toy_end[k][0] > toy_end["none"][0] + 0.01]
        print("toy: within 0.01 of none's entropy: " + ", ".join(near) + "; above it: " + ", ".join(above))
        claim(
            {"bonus_loss", "adaptive", "clip_cov"} <= set(above) and {"bonus_reward", "kl_ref"} <= set(near),
            "on the toy the loss-side knobs keep entropy and the reward-side ones barely move it",
        )
    task = make_task("chain")
    print(
        f"task chain: 2 prompts, V = 3, two tokens, K = {a.K}, lr {LR}, c {C_ENT}, beta {BETA}, "
        "exact expected update"
    )
    res, traces = {}, {}
    for knob in KNOBS:
        theta, tr = run_exact(task, knob, a.K, steps)
        res[knob], traces[knob] = theta, tr
        print(f"entropy knob {knob:<12s}: H {tr[0, 0]:.3f} -> {tr[-1, 0]:.3f} after {steps} steps, "
              f"J {tr[0, 1]:.3f} -> {tr[-1, 1]:.3f}, KL to ref {tr[-1, 2]:.3f}")  # fmt: skip
    conclude(task, res, traces, a.quick)
    print(
        f"sampled: K = {a.K} per prompt, one batch, 2 epochs per batch, {steps} steps, "
        f"seeds {a.seed}..{a.seed + seeds - 1}"
    )
    samp = {}
    for knob in KNOBS:
        v = np.array(
            [run_sampled(task, knob, a.K, steps, np.random.default_rng(a.seed + s)) for s in range(seeds)]
        )
        samp[knob] = v
        print(f"sampled knob {knob:<12s}: H {v[:, 0].mean():.3f} +- {v[:, 0].std():.3f}, "
              f"J {v[:, 1].mean():.3f} +- {v[:, 1].std():.3f}")  # fmt: skip
    if not a.quick:
        end = {k: traces[k][-1, 0] for k in KNOBS}
        more = [k for k in KNOBS if end[k] > end["none"] + 0.02]
        claim(
            all(samp[k][:, 0].mean() > samp["none"][:, 0].mean() for k in more),
            "every knob that keeps more entropy than none in the exact run does so in the sampled mean too",
        )
        claim(
            bool(samp["kl_cov"][:, 0].mean() > samp["none"][:, 0].mean()),
            "with two epochs KL-Cov keeps more entropy than none",
            negation="with two epochs KL-Cov does not keep more entropy than none",
        )
    if a.plot:
        plot(traces, a.plot)


def conclude(task, res, tr, quick):
    end = {k: tr[k][-1] for k in KNOBS}
    H0 = tr["none"][0, 0]
    for k in ("clip_higher", "kl_cov"):
        claim(bool(np.abs(tr[k] - tr["none"]).max() < 1e-12), f"{k} equals none on the first epoch of every batch")
    if quick:
        return
    claim(
        bool(end["none"][0] < 0.5 * H0),
        "without a knob the entropy falls below half its start",
        negation="without a knob the entropy does not fall below half its start",
    )
    keep = [k for k in KNOBS if end[k][0] > end["none"][0] + 0.02 and end[k][1] >= end["none"][1] - 0.02]
    cost = [k for k in KNOBS if end[k][0] > end["none"][0] + 0.02 and k not in keep]
    print("more entropy than none, reward within 0.02: " + (", ".join(keep) or "(none)"))
    claim(keep == ["bonus_reward"], "only the bonus in the reward keeps entropy with the reward within 0.02")
    claim(
        bool(end["adaptive"][1] == min(end[k][1] for k in KNOBS)),
        "the adaptive coefficient ends with the least reward",
    )
    claim(
        bool(max(end["clip_cov"][1], end["entropy_mask"][1]) < end["none"][1]),
        "Clip-Cov and masking end with less reward",
    )
    print("more entropy than none, reward lower by more than 0.02: " + (", ".join(cost) or "(none)"))
    pref = np.exp(seq_logp(task, task["theta_ref"])[0])
    for k, q in (("bonus_reward", (np.ones_like(pref) / pref.shape[1], C_ENT)), ("kl_ref", (pref, BETA))):
        star = tilted_optimum(q[0], task["R"], q[1])  # eq. (kl_optimum) / eq. (ent_optimum)
        tv = lambda th: 0.5 * np.abs(np.exp(seq_logp(task, th)[0]) - star).sum(1).mean()
        Hs = -(star * np.log(np.where(star > 0, star, 1.0))).sum(1).mean()
        print(
            f"optimum of {k}: H(pi*(.|x)) {Hs:.3f}, J {(star * task['R']).sum(1).mean():.3f}; "
            f"TV to it {tv(task['theta_ref']):.3f} at the start, {tv(res[k]):.3f} at the end"
        )
        claim(bool(tv(res[k]) < tv(task["theta_ref"])), f"{k} moves towards its closed-form optimum")
    for k in ("clip_cov", "entropy_mask"):
        claim(
            bool((tr[k][:, 0] >= tr["none"][:, 0] - 1e-12).all()),
            f"{k} keeps at least none's entropy at every step",
        )


def plot(traces, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "entropy"
    fig, ax = plt.subplots(3, 1, figsize=(6.0, 9.0))
    for k, tr in traces.items():
        ls = "--" if k in ("clip_higher", "kl_cov") else "-"
        ax[0].plot(tr[:, 0], ls, label=k)
        ax[1].plot(tr[:, 1], ls, label=k)
        ax[2].plot(tr[-1, 1], tr[-1, 0], "o")
        ax[2].annotate(k, (tr[-1, 1], tr[-1, 0]), xytext=(3, 3), textcoords="offset points", fontsize=7)
    ax[0].set_ylabel("entropy H")
    ax[1].set_ylabel("reward J")
    ax[1].set_xlabel("exact steps")
    ax[2].set_xlabel("reward J at the end")
    ax[2].set_ylabel("entropy H at the end")
    ax[0].legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
