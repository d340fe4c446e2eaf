"""Distillation on the chapter's toy, exactly: where each distiller's student ends, full or limited.

The teacher is a good policy: the KL-regularized optimum (eq. kl_optimum) of the toy's grader
(--grader, default gold) at --beta over the toy's reference. Two students: FULL has a row of
logits per prompt (it can match any teacher); LIMITED has one row for all four prompts (it cannot
see the prompt), so it must choose one distribution of answers for every question. For each
distiller, the exact expected gradient (minirl_lm.exact over every response,
distill/student.py) is run to its fixed point:

  forward_kl   maximum likelihood on the teacher's samples (off-policy), eq. (distill_nll)
  reverse_kl   the student's samples, reward log t - log pi per token (on-policy), eq. (distill_reward)
  gkd_B        GKD's generalized JSD with beta B on the student's samples, eq. (distill_gkd)

One line per distiller and student:

  distill NAME student FULL|LIMITED: TV to teacher X, success Y

(TV: the total variation to the teacher, averaged over the prompts; success: the gold grader's
expected reward, exactly.) Then, for the limited students, the answers each keeps (those with at
least --keep of its mass) and its perplexity exp(H), and the claims the page states.

The toy's responses are one token, where the per-token reward of eq. (distill_reward) and the
sequence-level reverse KL have the same gradient. The `multi-token` lines take a task with
responses of up to three tokens (two prompts, V = 3, token 0 ends) and a teacher drawn once:
the two expected gradients against the derivative of E_x KL(pi || T) over whole responses (central
differences of exact.tree.tree_sum, an independent computation), and the fixed points of both
for a student tied by depth (its next token cannot depend on the earlier ones).

    $ python examples/distill.py
    $ python examples/distill.py --grader sloppy       # a teacher that hedges
    $ python examples/distill.py --quick               # forward, reverse and gkd_0.5 only
    $ python examples/distill.py --plot distill.svg
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm import tasks
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.distill.student import expected_gradient, fixed_point, tied_probs
from minirl_lm.exact.tree import children, tree_sum
from minirl_lm.values.optimum import tilted_optimum

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim, stated  # noqa: E402
from _cli import plot_path, quiet_pipe, real, reals  # noqa: E402

N, V = len(tasks.PROMPTS), len(tasks.RESPONSES)
STUDENTS = {"FULL": np.arange(N), "LIMITED": np.zeros(N, np.int64)}  # tie: state -> row


def teacher(grader, beta):
    """The tilted optimum of the toy's grader over its reference, (N, V)."""
    ref = np.exp(tasks.reference_theta())
    ref /= ref.sum(axis=1, keepdims=True)
    return tilted_optimum(ref, tasks.reward_table(grader), beta)


def distill(t, gkd_betas):
    """{(name, student): (N, V) probabilities at the fixed point}."""
    mdp = TokenMDP(tasks.PROMPTS, V=V, eos=None, max_len=1)  # one token: a state per prompt
    runs = [("forward_kl", "forward_kl", 0.5), ("reverse_kl", "reverse_kl", 0.5)]
    runs += [(f"gkd_{b:g}", "gkd", b) for b in gkd_betas]
    out = {}
    for name, objective, b in runs:
        for student, tie in STUDENTS.items():
            theta, steps = fixed_point(objective, np.zeros((tie.max() + 1, V)), tie, t, mdp, beta=b)
            claim(steps < 10000, f"{name}'s {student} student reaches its fixed point")
            out[name, student] = tied_probs(theta, tie)
    return out


def success(p):
    return float(tasks.evaluate(TabularPolicy(np.log(p)))["success"])


def tv(p, t):
    return float(0.5 * np.abs(p - t).sum(axis=1).mean())


def perplexity(row):
    return float(np.exp(-(row * np.log(row)).sum()))


# ---- several tokens: the per-token reward is not the sequence-level reverse KL's gradient ------
MULTI = TokenMDP(["ab", "b"], V=3, eos=0, max_len=3)  # S = 14 states, 15 responses a prompt


def multi_teacher():
    """A teacher on MULTI's states, (S, V): softmax of 1.5 x standard normal logits, drawn once."""
    z = 1.5 * np.random.default_rng(0).standard_normal((MULTI.S, MULTI.V))  # (S, V)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def seq_kl(theta, tie, t):
    """E_x KL(pi(.|x) || T(.|x)) over whole responses, by the prefix tree (eq. tree_sum)."""
    child, roots = children(MULTI)
    p = tied_probs(theta, tie)  # (S, V)
    return float(tree_sum(child, roots, p, np.log(p) - np.log(t)).mean())


def seq_kl_grad(theta, tie, t, h=1e-6):
    """Its derivative in theta by central differences in float64 (truncation ~h^2, rounding ~1e-10)."""
    g = np.zeros_like(theta)  # (G, V)
    for i in np.ndindex(theta.shape):
        d = np.zeros_like(theta)
        d[i] = h
        g[i] = (seq_kl(theta + d, tie, t) - seq_kl(theta - d, tie, t)) / (2 * h)
    return g


def multi_token():
    t = multi_teacher()
    depth = np.array([len(prefix) for _, prefix in MULTI.all_states()])  # (S,) a row per depth
    print(
        f"multi-token: prompts {list(MULTI.prompts)}, V = {MULTI.V} (token 0 ends), up to {MULTI.max_len} "
        f"tokens, S = {MULTI.S}; a teacher drawn once; students FULL (a row per state) and DEPTH (a row per depth)"
    )
    for student, tie in (("FULL", np.arange(MULTI.S)), ("DEPTH", depth)):
        theta = np.zeros((tie.max() + 1, MULTI.V))  # (G, V) the uniform student
        tok = expected_gradient("reverse_kl", theta, tie, t, MULTI)  # eq. (distill_reward)
        togo = expected_gradient("reverse_kl_to_go", theta, tie, t, MULTI)  # eq. (distill_to_go)
        seq = seq_kl_grad(theta, tie, t)
        cos = float((tok * seq).sum() / np.linalg.norm(tok) / np.linalg.norm(seq))
        print(
            f"multi-token {student} at the uniform student: |grad seq KL| {np.linalg.norm(seq):.4f}; "
            f"to-go reward: max diff to it {np.abs(togo - seq).max():.1e}; per-token reward: "
            f"|g| {np.linalg.norm(tok):.4f}, max diff {np.abs(tok - seq).max():.4f}, "
            f"|diff| {np.linalg.norm(tok - seq):.4f}, cosine {cos:.3f}"
        )
        claim(
            bool(np.abs(togo - seq).max() < 1e-8), f"{student}: the to-go reward's gradient is the sequence KL's"
        )
        claim(bool(np.abs(tok - seq).max() > 1e-2), f"{student}: the per-token reward's gradient is not")
    ends = {}
    for name in ("reverse_kl", "reverse_kl_to_go"):
        theta, steps = fixed_point(name, np.zeros((depth.max() + 1, MULTI.V)), depth, t, MULTI)
        claim(steps < 10000, f"the DEPTH student under {name} reaches its fixed point")
        ends[name] = (seq_kl(theta, depth, t), float(np.abs(seq_kl_grad(theta, depth, t)).max()))
    (k_tok, g_tok), (k_togo, g_togo) = ends["reverse_kl"], ends["reverse_kl_to_go"]
    print(
        f"multi-token DEPTH fixed points: per-token reward seq KL {k_tok:.4f}, max |grad seq KL| there "
        f"{g_tok:.4f}; to-go reward seq KL {k_togo:.4f}, max |grad seq KL| there {g_togo:.1e}"
    )
    claim(bool(g_togo < 1e-8), "the to-go reward's fixed point is a stationary point of the sequence KL")
    claim(
        bool(g_tok > 1e-2 and k_tok > k_togo),
        "the per-token reward's fixed point is not, and its sequence KL is higher",
    )


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--grader", choices=("gold", "sloppy"), default="gold", help="the teacher's grader")
    p.add_argument("--beta", type=real(0.02, 10.0), default=0.1, help="the teacher's KL coefficient (0.1)")
    p.add_argument("--gkd-betas", type=reals(0.0, 1.0, most=9), default=(0.1, 0.5, 0.9), help="GKD's betas")
    p.add_argument("--keep", type=real(0.0, 1.0, low_open=True), default=0.05, help="mass of a kept answer (0.05)")
    p.add_argument("--quick", action="store_true", help="forward, reverse and gkd_0.5 only")
    p.add_argument("--plot", type=plot_path, default=None, help="write the figure to this path")
    a = p.parse_args(argv)
    gkd_betas = (0.5,) if a.quick else tuple(a.gkd_betas)

    t = teacher(a.grader, a.beta)
    print(f"teacher: the {a.grader} grader's KL-regularized optimum at beta {a.beta:g}, success {success(t):.3f}")
    res = distill(t, gkd_betas)
    for (name, student), q in res.items():
        print(f"distill {name} student {student}: TV to teacher {tv(q, t):.3g}, success {success(q):.3f}")
    print()
    kept = {}
    for name in dict.fromkeys(n for n, _ in res):
        row = res[name, "LIMITED"][0]  # every prompt gets the same row
        kept[name] = [tasks.RESPONSES[y] for y in np.flatnonzero(row >= a.keep)]
        n, listed = len(kept[name]), ", ".join(map(repr, kept[name]))
        print(
            f"keeps {name}: {n} answer{'s' * (n != 1)} at >= {a.keep:g} ({listed}), "
            f"perplexity {perplexity(row):.2f}, hedge {row[tasks.HEDGE]:.3f}"
        )
    checks(res, t, kept, a.grader, gkd_betas)
    print()
    multi_token()
    if a.plot:
        plot(res, t, a.plot)


def checks(res, t, kept, grader, gkd_betas):
    full = max(tv(res[n, "FULL"], t) for n, s in res if s == "FULL")
    claim(full < 1e-8, "every full student reaches the teacher (TV below 1e-8)")
    fwd, rev = res["forward_kl", "LIMITED"][0], res["reverse_kl", "LIMITED"][0]
    geo = np.exp(np.log(t).mean(axis=0))  # the normalized geometric mean of the teacher's rows
    claim(bool(np.abs(fwd - t.mean(axis=0)).max() < 1e-10), "forward KL's limited student is the mixture")
    claim(bool(np.abs(rev - geo / geo.sum()).max() < 1e-10), "reverse KL's limited student is the geometric mean")
    claim(len(kept["reverse_kl"]) < len(kept["forward_kl"]), "reverse KL's limited student keeps fewer answers")
    claim(perplexity(rev) < perplexity(fwd), "reverse KL's limited student has the lower perplexity")
    order = sorted(dict.fromkeys(n for n, _ in res), key=lambda n: perplexity(res[n, "LIMITED"][0]))
    print(f"- the limited students from the fewest answers to the most (perplexity): {', '.join(order)}")
    # TRL's beta_JSD: 0 is the forward KL, 1 the reverse KL, GKD's betas in between
    slider = [("forward_kl", 0.0)] + [(f"gkd_{b:g}", b) for b in sorted(gkd_betas)] + [("reverse_kl", 1.0)]
    ppl = np.array([perplexity(res[n, "LIMITED"][0]) for n, _ in slider])
    monotone = bool((np.diff(ppl) <= 1e-9).all() or (np.diff(ppl) >= -1e-9).all())  # ties: beta 0 or 1 given
    print(
        f"- perplexity against beta_JSD ({grader} teacher): "
        + ", ".join(f"{v:.2f} at {b:g}" for v, (_, b) in zip(ppl, slider))
        + (": monotone, a slider from forward to reverse" if monotone else ": not monotone")
    )
    ends = {n: success(res[n, "LIMITED"]) for n in ("forward_kl", "reverse_kl")}
    better = max(ends, key=ends.get)
    if grader == "gold":  # the page's reading of the first run
        claim(better == "reverse_kl", "with the gold teacher, reverse KL's limited student succeeds more")
        if ("gkd_0.5", "LIMITED") in res:
            jsd = perplexity(res["gkd_0.5", "LIMITED"][0])
            claim(
                jsd > max(perplexity(fwd), perplexity(rev)),
                "with the gold teacher, GKD at 0.5 spreads its limited student more than either KL",
            )
            claim(not monotone, "with the gold teacher, the perplexity is not monotone in beta_JSD")
    else:  # the sloppy teacher: the hedge is what every prompt's teacher allows
        hedge = tasks.RESPONSES[tasks.HEDGE]
        claim(
            kept["reverse_kl"] == [hedge],
            "with the sloppy teacher, reverse KL's limited student keeps the hedge alone",
        )
        claim(
            {"4", "12"} <= set(kept["forward_kl"]), "forward KL's limited student keeps the gold answers 4 and 12"
        )
        claim(better == "forward_kl", "with the sloppy teacher, forward KL's limited student succeeds more")
        claim(
            monotone and bool(ppl[0] > ppl[-1]),
            "with the sloppy teacher, the perplexity falls monotonically from forward to reverse KL",
        )
    print(
        stated(
            ends[better] > min(ends.values()),
            f"- the limited student of {better} succeeds more: "
            f"{ends['reverse_kl']:.3f} (reverse) against {ends['forward_kl']:.3f} (forward)",
        )
    )


def plot(res, t, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "distill"
    names = list(dict.fromkeys(n for n, _ in res))
    fig, ax = plt.subplots(2, 1, figsize=(6.0, 6.5))
    x = np.arange(V)
    for n in range(N):
        ax[0].plot(x, t[n], "o-", label=f"teacher on {tasks.PROMPTS[n]}")
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        ax[1].bar(x + (i - (len(names) - 1) / 2) * width, res[name, "LIMITED"][0], width, label=name)
    for a in ax:
        a.set_xticks(x, [r if len(r) < 4 else "hedge" for r in tasks.RESPONSES], fontsize=8)
        a.set_ylabel("probability")
        a.legend(fontsize=7)
    ax[0].set_title("the teacher, prompt by prompt", fontsize=9)
    ax[1].set_title("the limited (prompt-blind) students at their fixed points", fontsize=9)
    ax[1].set_xlabel("answer")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
