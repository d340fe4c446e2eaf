"""Entropy: why it collapses, and what each knob does, measured with the exact expected update.

First the identity of `minirl_lm/pg/entropy_knobs.py`, eq. (ent_identity): on the chapter's toy
(gold grader, K = 4) the exact expected update `E[g]` of one group-standardized policy-gradient
step, scaled by eta, changes the entropy of every row by exactly `H(theta + eta E[g]) - H(theta)`;
the first-order prediction `-eta Cov(log pi, E[g])` misses by a relative error linear in eta.

Then every knob, run for a fixed number of steps of the exact expected update (the expectation
over every group of K responses of each prompt, by `minirl_lm.exact`: the groups' multinomial law,
the token scores and the entropy's gradient as the bases). Each prompt's group is one batch
(token_mean within it), one gradient step per batch (so `rho = 1`), and Clip-Cov's random subset
enters through its exact expectation over the selection (`clip_cov_loss(..., rng=None)`). The
strengths (the `knob ...:` lines print them beside the frameworks' defaults):

    none          REINFORCE with the group-standardized advantage (the PPO clip, eps 0.2)
    clip_higher   the clipped surrogate with eps_high = 0.28 (DAPO's value)
    bonus_loss    + c H(s_t) per token in the loss (pg/entropy.py), c = C_ENT
    bonus_reward  the reward R - c log pi(y): the objective E[R] + c H(pi(.|x))
    adaptive      the bonus with the adaptive coefficient (target 0.6 H at the start, step 0.02)
    clip_cov      Clip-Cov at verl's defaults (ratio 2e-4, band 1 < c_t < 5)
    kl_cov        KL-Cov at verl's defaults (ratio 2e-4, k = 0.1, no clip)
    entropy_mask  the top rho_h = 0.2 of the batch's tokens by entropy (the paper's value)
    kl_ref        R - beta log(pi/pi_ref) in the reward, beta = BETA

A sampled run follows: K responses per prompt, all prompts in one batch (the selections act on
the whole batch, as the frameworks do), two epochs per batch (the second one off-policy, where
clip-higher and KL-Cov act), over several seeds, with two more rows: `unclipped` (the surrogate
rho A with no clip, KL-Cov without its penalty: the base verl's KL-Cov adds its penalty to) and
`kl_cov_k1` (KL-Cov with k = 1, the value verl's function falls back to when the setting is None).

    $ python examples/entropy.py                # the page's run (about half a minute)
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
from minirl_lm.tasks import HEDGE, reference_theta, reward_table
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
SAMPLED = KNOBS + ("unclipped", "kl_cov_k1")  # the sampled run's two extra rows
C_ENT, BETA, LR, LR_SAMPLED = 0.2, 0.2, 3.0, 1.0
EPS, EPS_HIGH, RHO_H = 0.2, 0.28, 0.2
CLIP_COV = dict(ratio=2e-4, cov_lb=1.0, cov_ub=5.0)  # verl 0.9.1's defaults (actor.yaml)
KL_COV = dict(ratio=2e-4, kl_coef=0.1)  # verl 0.9.1's defaults (actor.yaml: ppo_kl_coef 0.1)
KL_COV_K1 = dict(ratio=2e-4, kl_coef=1.0)  # the coefficient verl's function falls back to on None
UNCLIPPED = dict(ratio=2e-4, kl_coef=0.0)  # KL-Cov without its penalty: rho A, no clip
ADAPT = dict(frac=0.6, delta=0.02, lo=0.0, hi=1.0)  # target = frac * the entropy at the start
ETAS = (1.0, 1e-1, 1e-2, 1e-3, 1e-4)
WARM = 3  # exact steps before the identity check
GROUP_SIZES = ((9, 4), (7, 2))  # (responses per prompt, prompts) of the toy and the chain: the groups enumerated
LAST = 10  # the convergence check: the change over the last LAST steps


def settings(tokens):
    """Each knob's strength here and the framework's default, one line each (batches of at most
    `tokens` tokens: the number of tokens Clip-Cov and KL-Cov select, max(floor(ratio n), 1))."""
    m = lambda c: max(int(c["ratio"] * tokens), 1)
    cc, kc = CLIP_COV, KL_COV
    return {
        "none": (f"the clipped surrogate, eps {EPS} (inactive at rho = 1)", "verl vanilla, clip_ratio 0.2"),
        "clip_higher": (f"eps {EPS}, eps_high {EPS_HIGH}", "verl clip_ratio_high 0.2; 0.28 is DAPO's"),
        "bonus_loss": (f"c {C_ENT}, token_mean", "verl entropy_coeff 0, TRL entropy_coef 0.0: off"),
        "bonus_reward": (f"c {C_ENT}", "no setting in either framework"),
        "adaptive": (
            f"target {ADAPT['frac']} H at the start, delta {ADAPT['delta']}, c in [{ADAPT['lo']}, {ADAPT['hi']}]",
            "TRL entropy_target 0.2, entropy_coef_delta 0.005, c in [0.0, 1.0]",
        ),
        "clip_cov": (
            f"ratio {cc['ratio']:g} (m = {m(cc)} token), band {cc['cov_lb']:g} < c_t < {cc['cov_ub']:g}, "
            f"eps {EPS}",
            "verl's defaults",
        ),
        "kl_cov": (f"ratio {kc['ratio']:g} (m = {m(kc)} token), k {kc['kl_coef']:g}, no clip", "verl's defaults"),
        "entropy_mask": (f"rho_H {RHO_H}, eps {EPS}", "TRL top_entropy_quantile 1.0 (off); 0.2 is the paper's"),
        "kl_ref": (f"beta {BETA} in the reward", "verl kl_ctrl.kl_coef 0.001 (use_kl_in_reward off)"),
        "unclipped": ("rho A, no clip: KL-Cov with k 0", "verl's KL-Cov without its penalty"),
        "kl_cov_k1": (f"ratio {KL_COV_K1['ratio']:g}, k {KL_COV_K1['kl_coef']:g}, no clip", "verl's fallback k"),
    }


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
def shaped(knob, R, seqp, seqp_ref):
    """The reward the advantage is computed from: R, or R with the knob's term folded in."""
    if knob == "bonus_reward":
        return R - C_ENT * seqp
    return R - BETA * (seqp - seqp_ref) if knob == "kl_ref" else R


def knob_grad(knob, logp, logp_old, seqp, seqp_ref, R, mask, Hs, coef):
    """(dloss/dlogp (B, T), the bonus's per-token weight (B, T)) of a batch, B = N*K rows."""
    A = standardized(shaped(knob, R, seqp, seqp_ref)).reshape(-1)  # (B,) eq. (pg_normalized)
    lp, lo, m = (a.reshape(-1, a.shape[-1]) for a in (logp, logp_old, mask))
    if knob == "clip_cov":
        g = clip_cov_loss(lp, lo, A, m, eps=EPS, **CLIP_COV)[1]
    elif knob in ("kl_cov", "kl_cov_k1", "unclipped"):
        g = kl_cov_loss(lp, lo, A, m, **{"kl_cov": KL_COV, "kl_cov_k1": KL_COV_K1, "unclipped": UNCLIPPED}[knob])[
            1
        ]
    elif knob == "entropy_mask":
        g = entropy_masked_loss(lp, lo, A, m, Hs.reshape(lp.shape), rho_h=RHO_H, eps=EPS)[1]
    else:
        g = clipped_surrogate(lp, lo, A, m, eps=EPS, eps_high=EPS_HIGH if knob == "clip_higher" else None)[1]
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


def changed_groups(task, theta, knob, K):
    """Per prompt, the probability of drawing a group of K whose advantage the knob's reward term
    changes (against the plain reward's): `(N,)`."""
    seq, _ = seq_logp(task, theta)
    ref, _ = seq_logp(task, task["theta_ref"])
    out = np.zeros(task["N"])
    for n in range(task["N"]):
        Y, P = group_law(np.exp(seq[n]), K)  # (M, K), (M,)
        R = task["R"][n][Y]
        d = np.abs(standardized(shaped(knob, R, seq[n][Y], ref[n][Y])) - standardized(R)).max(1)
        out[n] = P[d > 1e-6].sum()
    return out


def ties(task, theta):
    """(the largest logit spread among each prompt's equally rewarded responses of one token
    other than the hedge, the largest change of a row of a prompt no response is rewarded on)."""
    spread, hard = 0.0, 0.0
    for n in range(task["N"]):
        for r in np.unique(task["R"][n]):
            same = (task["R"][n] == r) & (np.arange(task["V"]) != HEDGE)
            spread = max(spread, float(np.ptp(theta[n][same]))) if same.sum() > 1 else spread
        if task["R"][n].max() == 0:
            hard = max(hard, float(np.abs(theta[n] - task["theta_ref"][n]).max()))
    return spread, hard


def run_exact(task, knob, K, steps, watch=False):
    """theta after `steps` exact steps, the trace of (H, J, KL), and with `watch` (a reward-side
    knob) the largest share of changed groups of any prompt at any step, and on the toy the
    largest spread of the tied logits and change of the unrewarded prompts' rows at any step."""
    theta = task["theta_ref"].copy()
    coef, applied, target = 0.0, 0.0, ADAPT["frac"] * measure(task, theta)[0]
    trace, seen = [measure(task, theta)], np.zeros(3)
    for _ in range(steps):
        if watch:
            seen[0] = max(seen[0], changed_groups(task, theta, knob, K).max())
        theta = theta + LR * expected_update(task, theta, knob, K, applied)
        trace.append(measure(task, theta))
        if watch and task["name"] == "toy":
            seen[1:] = np.maximum(seen[1:], ties(task, theta))
        if knob == "adaptive":  # the controller reads this step's entropy, eq. (ent_adaptive)
            coef, applied = adaptive_entropy_coef(
                coef, trace[-1][0], target, ADAPT["delta"], ADAPT["lo"], ADAPT["hi"]
            )
    return theta, np.array(trace), seen


# ---- the sampled run: one batch of all prompts, two epochs ------------------------------------
def run_sampled(task, knob, K, steps, rng, epochs=2):
    theta = task["theta_ref"].copy()
    N, Rn = task["N"], task["Rn"]
    coef, applied, target = 0.0, 0.0, ADAPT["frac"] * measure(task, theta)[0]
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
            coef, applied = adaptive_entropy_coef(
                coef, measure(task, theta)[0], target, ADAPT["delta"], ADAPT["lo"], ADAPT["hi"]
            )
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
        negation="the relative error does not fall tenfold per tenfold smaller eta",
    )
    claim(
        bool(np.all(np.array([r[2] for r in rows]) < 0)),
        "the exact step lowers the entropy at every eta",
        negation="the exact step does not lower the entropy at every eta",
    )
    return rows


def row(prefix, knob, tr, steps):
    """One knob's exact run: start -> end, and the change over the last LAST steps."""
    d = tr[-1] - tr[max(len(tr) - 1 - LAST, 0)]
    return (
        f"{prefix} {knob:<12s}: H {tr[0, 0]:.3f} -> {tr[-1, 0]:.3f}, J {tr[0, 1]:.3f} -> {tr[-1, 1]:.3f} "
        f"after {steps} steps; last {LAST} steps: H {d[0]:+.3f}, J {d[1]:+.3f}; KL to ref {tr[-1, 2]:.3f}"
    )


def verdict(d):
    """The ordering a paired difference over seeds supports: its mean beyond its spread (std), or not."""
    if d.mean() - d.std() > 0:
        return "more, beyond the spread"
    return "less, beyond the spread" if d.mean() + d.std() < 0 else "indistinguishable at this budget"


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--steps",
        type=integer(1, 2000),
        default=None,
        help="exact steps on the two-token task (default 200, 5 with --quick)",
    )
    p.add_argument(
        "--toy-steps",
        type=integer(1, 2000),
        default=None,
        help="exact steps on the toy (default 40, 3 with --quick)",
    )
    p.add_argument(
        "--sampled-steps",
        type=integer(1, 2000),
        default=None,
        help="steps of the sampled run (default 40, 5 with --quick)",
    )
    p.add_argument("--K", type=integer(2, 4), default=2, help="responses per prompt (default 2)")
    p.add_argument(
        "--seeds", type=integer(2, 100), default=None, help="seeds of the sampled run (default 30, 2 with --quick)"
    )
    p.add_argument("--seed", type=seed, default=0, help="first seed of the sampled run")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a short run for the tests (the page's claims unchecked): --steps 5 --toy-steps 3 "
        "--sampled-steps 5 --seeds 2 unless given (an explicit value wins)",
    )
    p.add_argument("--plot", type=plot_path, default=None, help="write the figure to this path")
    a = p.parse_args(argv)
    # --quick sets the defaults; a value given on the command line wins
    pick = lambda v, quick, full: v if v is not None else quick if a.quick else full
    steps, toy_steps = pick(a.steps, 5, 200), pick(a.toy_steps, 3, 40)
    s_steps, seeds = pick(a.sampled_steps, 5, 40), pick(a.seeds, 2, 30)
    groups = [math.comb(n + a.K - 1, a.K) * prompts for n, prompts in GROUP_SIZES]  # toy, chain
    check_work(
        p,
        "--steps, --toy-steps, --K",
        f"groups per knob in the exact runs (toy-steps x {groups[0]} + steps x {groups[1]} groups of K)",
        toy_steps * groups[0] + steps * groups[1],
        3e4,
    )
    check_work(
        p, "--sampled-steps, --seeds", "sampled steps per knob (sampled-steps x seeds)", s_steps * seeds, 5e3
    )
    identity()
    toy, task = make_task("toy"), make_task("chain")
    tokens = max(task["N"] * a.K * task["T"], toy["N"] * a.K * toy["T"])
    for k, (ours, theirs) in settings(tokens).items():
        print(f"knob {k:<12s}: {ours}; framework: {theirs}")
    print(
        f"(m: the tokens Clip-Cov and KL-Cov select in a batch of at most {tokens} tokens, max(floor(ratio n), 1))"
    )
    print(f"task toy: the chapter's toy (gold grader), K = {a.K}, lr {LR}, exact expected update")
    toy_end, seen = {}, {}
    for knob in KNOBS:
        _, tr, seen[knob] = run_exact(toy, knob, a.K, toy_steps, watch=knob in ("bonus_reward", "kl_ref"))
        toy_end[knob] = tr[-1]
        print(row("entropy knob", knob, tr, toy_steps))
    near = [k for k in KNOBS if abs(toy_end[k][0] - toy_end["none"][0]) < 0.01]
    above = [k for k in KNOBS if toy_end[k][0] > toy_end["none"][0] + 0.01]
    print("toy: within 0.01 of none's entropy: " + ", ".join(near) + "; above it: " + ", ".join(above))
    for k in ("bonus_reward", "kl_ref"):
        print(f"toy {k}: groups whose advantage the reward term changes: at most {seen[k][0]:.3f} of a prompt's "
              f"draws at any step; logits of the equally rewarded answers (hedge aside) tied within "
              f"{seen[k][1]:.1e}; unrewarded prompts' rows moved by at most {seen[k][2]:.3f}")  # fmt: skip
    print(f"task chain: 2 prompts, V = 3, two tokens, K = {a.K}, lr {LR}, exact expected update")
    res, traces = {}, {}
    for knob in KNOBS:
        theta, tr, seen_c = run_exact(task, knob, a.K, steps, watch=knob in ("bonus_reward", "kl_ref"))
        res[knob], traces[knob] = theta, tr
        print(row("entropy knob", knob, tr, steps))
        if knob in ("bonus_reward", "kl_ref"):
            seen[knob + "_chain"] = seen_c
    for k in ("bonus_reward", "kl_ref"):
        print(f"chain {k}: groups whose advantage the reward term changes: at most {seen[k + '_chain'][0]:.3f} "
              "of a prompt's draws at any step")  # fmt: skip
    if not a.quick:  # what the page says of the toy, checked
        claim(
            {"bonus_loss", "adaptive", "clip_cov"} <= set(above) and {"bonus_reward", "kl_ref"} <= set(near),
            "on the toy the loss-side knobs keep entropy and the reward-side ones barely move it",
            negation="on the toy the loss-side knobs do not all keep entropy, or a reward-side one moves it",
        )
        br, kr = seen["bonus_reward"], seen["kl_ref"]
        claim(
            bool(br[0] < 0.01 and br[1] < 1e-12),
            "on the toy the bonus in the reward changes the advantage of fewer than one group in a hundred "
            "at every step, and the wrong answers' logits stay tied to rounding",
            negation="on the toy the bonus in the reward changes the advantage of one group in a hundred or more, "
            "or the wrong answers' logits come apart",
        )
        claim(
            bool(kr[2] == 0.0),
            "the KL in the reward leaves the unrewarded prompts' rows exactly where they start",
            negation="the KL in the reward moves the unrewarded prompts' rows",
        )
        claim(
            all(seen[k + "_chain"][0] > 0.3 for k in ("bonus_reward", "kl_ref")),
            "on the chain each reward-side term changes the advantage of more than three groups in ten "
            "at some step",
            negation="on the chain a reward-side term changes the advantage of at most three groups in ten",
        )
    conclude(task, res, traces, steps, a.quick)
    print(
        f"sampled: K = {a.K} per prompt, one batch, 2 epochs per batch, lr {LR_SAMPLED}, {s_steps} steps, "
        f"seeds {a.seed}..{a.seed + seeds - 1}; H - none's H paired by seed"
    )
    samp = {}
    for knob in SAMPLED:
        samp[knob] = np.array(
            [run_sampled(task, knob, a.K, s_steps, np.random.default_rng(a.seed + s)) for s in range(seeds)]
        )
    for knob in SAMPLED:
        v, d = samp[knob], samp[knob][:, 0] - samp["none"][:, 0]
        print(f"sampled knob {knob:<12s}: H {v[:, 0].mean():.3f} +- {v[:, 0].std():.3f} "
              f"({v[:, 0].min():.3f}..{v[:, 0].max():.3f}), J {v[:, 1].mean():.3f} +- {v[:, 1].std():.3f}; "
              f"H - none's {d.mean():+.3f} +- {d.std():.3f}, above in {(d > 0).sum()}/{seeds}"
              + ("" if knob == "none" else f": {verdict(d)}"))  # fmt: skip
    pairs = (("unclipped", "none"), ("kl_cov", "unclipped"), ("kl_cov_k1", "unclipped"), ("kl_cov", "none"))
    for x, y in pairs:
        d = samp[x][:, 0] - samp[y][:, 0]
        print(f"sampled {x} - {y}: H {d.mean():+.3f} +- {d.std():.3f} over {seeds} seeds, above in "
              f"{(d > 0).sum()}/{seeds}: {verdict(d)}")  # fmt: skip
    if not a.quick:
        dv = lambda x, y: verdict(samp[x][:, 0] - samp[y][:, 0])
        claim(
            dv("unclipped", "none").startswith("less"),
            "without the clip the entropy ends lower",
            negation="without the clip the entropy does not end lower beyond the spread",
        )
        claim(
            dv("clip_higher", "none").startswith("indistinguishable"),
            "clip-higher's effect is inside the spread",
            negation="clip-higher's effect is beyond the spread",
        )
        claim(
            dv("kl_cov", "unclipped").startswith("indistinguishable")
            and dv("kl_cov_k1", "unclipped").startswith("more"),
            "KL-Cov at verl's k keeps the entropy of its unclipped base within the spread; at k = 1 it keeps more",
            negation="KL-Cov against its unclipped base is not: within the spread at verl's k, and more at k = 1",
        )
    if a.plot:
        plot(traces, a.plot)


def conclude(task, res, tr, steps, quick):
    end = {k: tr[k][-1] for k in KNOBS}
    H0 = tr["none"][0, 0]
    for k in ("clip_higher", "kl_cov"):
        claim(
            bool(np.abs(tr[k] - tr["none"]).max() < 1e-12),
            f"{k} equals none on the first epoch of every batch",
            negation=f"{k} differs from none on the first epoch",
        )
    if quick:
        return
    claim(
        bool(end["none"][0] < 0.5 * H0),
        "without a knob the entropy falls below half its start",
        negation="without a knob the entropy does not fall below half its start",
    )
    moving = [k for k in KNOBS if np.ptp(tr[k][-1 - LAST :, 0]) >= 0.005]
    print(f"chain: H ranging over 0.005 or more in the last {LAST} steps: " + (", ".join(moving) or "(none)"))
    gain = {k: end[k][0] - end["none"][0] for k in KNOBS}
    cost = {k: end["none"][1] - end[k][1] for k in KNOBS}
    keep = [k for k in KNOBS if gain[k] > 0.02]
    print(
        f"after {steps} steps, against none: "
        + "; ".join(f"{k} H {gain[k]:+.3f}, J {-cost[k]:+.3f}" for k in keep)
    )
    claim(
        all(cost[k] > 0 for k in keep),
        f"after {steps} steps every knob that keeps entropy has less reward than none",
        negation=f"after {steps} steps some knob keeps entropy with at least none's reward",
    )
    claim(
        bool(end["adaptive"][1] == min(end[k][1] for k in KNOBS)),
        f"after {steps} steps the adaptive coefficient has the least reward",
        negation=f"after {steps} steps another knob has less reward than the adaptive coefficient",
    )
    target = ADAPT["frac"] * H0
    last = tr["adaptive"][-1 - LAST :, 0]
    print(f"adaptive: target {target:.3f}; H over the last {LAST} steps {last.min():.3f}..{last.max():.3f}")
    claim(
        bool(np.abs(last - target).max() < 0.05),
        "the adaptive coefficient holds the entropy within 0.05 of its target",
        negation="the adaptive coefficient does not hold the entropy within 0.05 of its target",
    )
    pref = np.exp(seq_logp(task, task["theta_ref"])[0])
    best = task["R"].max(1).mean()
    for k, q in (("bonus_reward", (np.ones_like(pref) / pref.shape[1], C_ENT)), ("kl_ref", (pref, BETA))):
        star = tilted_optimum(q[0], task["R"], q[1])  # eq. (kl_optimum) / eq. (ent_optimum)
        tv = lambda th: 0.5 * np.abs(np.exp(seq_logp(task, th)[0]) - star).sum(1).mean()
        Hs = -(star * np.log(np.where(star > 0, star, 1.0))).sum(1).mean()
        print(
            f"optimum of {k}: H(pi*(.|x)) {Hs:.3f}, J {(star * task['R']).sum(1).mean():.3f} "
            f"(the best J {best:.3f}); "
            f"TV to it {tv(task['theta_ref']):.3f} at the start, {tv(res[k]):.3f} after {steps} steps"
        )
        claim(
            bool(tv(res[k]) < 0.1 * tv(task["theta_ref"])),
            f"{k} ends within a tenth of its starting total variation to its closed-form optimum",
            negation=f"{k} does not end within a tenth of its starting total variation to its optimum",
        )
        claim(
            bool((star * task["R"]).sum(1).mean() < best - 0.02),
            f"{k}'s optimum gives up more than 0.02 of reward",
            negation=f"{k}'s optimum gives up at most 0.02 of reward",
        )
    for k in ("clip_cov", "entropy_mask"):
        claim(
            bool((tr[k][:, 0] >= tr["none"][:, 0] - 1e-12).all()),
            f"{k} keeps at least none's entropy at every step",
            negation=f"{k} falls below none's entropy at some step",
        )


def plot(traces, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "entropy"
    fig, ax = plt.subplots(3, 1, figsize=(6.0, 9.0))
    marks = "osD^v<>ph"
    for i, (k, tr) in enumerate(traces.items()):
        ls, col = ("--" if k in ("clip_higher", "kl_cov") else "-"), f"C{i}"
        ax[0].plot(tr[:, 0], ls, color=col, label=k)
        ax[1].plot(tr[:, 1], ls, color=col, label=k)
        if k in ("clip_higher", "kl_cov"):  # at none's point: one marker, named in none's entry
            continue
        name = "none = clip_higher = kl_cov" if k == "none" else k
        ax[2].plot(tr[-1, 1], tr[-1, 0], marks[i], color=col, label=name, markersize=7)
    ax[0].set_ylabel("entropy H")
    ax[1].set_ylabel("reward J")
    ax[1].set_xlabel("exact steps")
    ax[2].set_xlabel("reward J at the end")
    ax[2].set_ylabel("entropy H at the end")
    ax[0].legend(fontsize=7, ncol=3)
    ax[2].legend(fontsize=7, loc="lower left")  # the corner no run ends in
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
