"""Reward models: fit from preferences or labels, then optimize against them; every RL number exact.

On the chapter's toy (four prompts, nine one-token responses, the gold grader a verifier) the
program fits reward models from data drawn from the reference policy, and puts each learned
reward into the exact KL-regularized optimum `pi*` (`values/optimum.py`, eq. (kl_optimum)):

  1. identifiability: a tabular Bradley-Terry fit on the exact expected loss recovers the gold
     reward up to a constant per prompt;
  2. per data size n (pairs), the gold reward of `pi*` against the learned reward, its KL to
     the reference, and the learned reward's error off a constant: the tabular and the linear
     BT models, the margin variant (its margin is the gold gap, oracle information), the
     outcome model (the same 2n responses, verifier labels); mean +- std over DRAWS data sets,
     then the over-optimization of the tabular model's optimum as beta sweeps;
  3. process reward models on the multi-turn calculator: per-step labels, the fit, and the
     soft optimum under their per-turn rewards (direct and progress) against the outcome's.

    $ python examples/reward_models.py
    $ python examples/reward_models.py --quick            # the tests' run
    $ python examples/reward_models.py --beta 0.5 --plot reward_models.svg
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm import tasks
from minirl_lm.core.policy import softmax_table
from minirl_lm.direct.dpo import bt_sample_preferences
from minirl_lm.multiturn.calculator import CALL, calculator, calculator_reference
from minirl_lm.multiturn.values import kl_objective, soft_optimum
from minirl_lm.reward.bt import bt_pair_law, error_off_constant, fit_bt, fit_outcome, one_hot_features
from minirl_lm.reward.prm import fit_prm, prm_data, process_env
from minirl_lm.values.optimum import tilted_optimum

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import plot_path, quiet_pipe, real, seed  # noqa: E402

NUMBERS = slice(0, tasks.HEDGE)  # the eight honest responses: every one but the hedge
FEATURES = ("1", "the answer's digits occur in the response", "length in characters / 10")
DRAWS = 10  # independent data sets per n (children of --seed): the spread of every learned line
BETAS = np.geomspace(0.02, 5.0, 40)  # the sweep of the figure and of the over-optimization lines


def toy_features():
    """(N, Y, 3) features of the toy: a constant, the sloppy grader's test, the length."""
    contains = tasks.reward_table("sloppy")  # (N, Y) 1 iff the answer occurs in the text
    length = np.array([len(t) for t in tasks.RESPONSES]) / 10.0  # (Y,)
    return np.stack([np.ones_like(contains), contains, np.broadcast_to(length, contains.shape)], axis=-1)


def optimum_stats(pi_ref, r_hat, gold, beta, hedge=False):
    """Gold reward and KL(pi* || pi_ref) of the tilted optimum against r_hat, mean over prompts
    (and with hedge=True the mean mass pi* puts on the hedge)."""
    pi = tilted_optimum(pi_ref, r_hat, beta)  # (N, Y)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(pi > 0, pi * np.log(pi / pi_ref), 0.0).sum(axis=1).mean()
    out = (float((pi * gold).sum(axis=1).mean()), float(kl))
    return out + (float(pi[:, tasks.HEDGE].mean()),) if hedge else out


def frontier(pi_ref, gold, kl):
    """The most gold reward any policy earns at KL <= kl: the gold optimum's, beta by bisection."""
    lo, hi = np.log(1e-4), np.log(1e4)  # KL of pi*(beta) falls as beta grows
    if optimum_stats(pi_ref, gold, gold, np.exp(lo))[1] <= kl:
        return optimum_stats(pi_ref, gold, gold, np.exp(lo))[0]
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if optimum_stats(pi_ref, gold, gold, np.exp(mid))[1] > kl else (lo, mid)
    return optimum_stats(pi_ref, gold, gold, np.exp(hi))[0]


def fit_models(pi_ref, gold, phi, n, rng):
    """The learned rewards (N, Y) of n pairs drawn from pi_ref: name -> table."""
    N, Y = gold.shape
    x, c, r = bt_sample_preferences(gold, pi_ref, n, rng)  # eq. (bradley_terry) on the gold reward
    hot = one_hot_features(N, Y)
    margin = np.abs(gold[x, c] - gold[x, r])  # the true gold gap: oracle information, no rater has it
    x2, y2 = np.concatenate([x, x]), np.concatenate([c, r])  # the same 2n responses
    logit = fit_outcome(hot, x2, y2, gold[x2, y2], kind="bce", l2=1.0 / (2 * n))
    return {
        "BT tabular": fit_bt(hot, x, c, r, l2=1.0 / n).reshape(N, Y),
        "BT linear": phi @ fit_bt(phi, x, c, r, l2=1.0 / n),
        "BT margin tabular": fit_bt(hot, x, c, r, margin=margin, l2=1.0 / n).reshape(N, Y),
        "outcome (bce) tabular": 1.0 / (1.0 + np.exp(-logit.reshape(N, Y))),  # P(right)
    }


def bandit_part(args, sizes):
    gold = tasks.reward_table("gold")  # (N, Y)
    pi_ref = softmax_table(tasks.reference_theta())
    phi = toy_features()
    N, Y = gold.shape

    # ---- 1. identifiability: the exact expected loss over a full-support pair law --------------
    x, c, r, p = bt_pair_law(gold, pi_ref)
    r_tab = fit_bt(one_hot_features(N, Y), x, c, r, weights=p).reshape(N, Y)
    w_lin = fit_bt(phi, x, c, r, weights=p)
    e_tab, e_lin = error_off_constant(r_tab, gold), error_off_constant(phi @ w_lin, gold)
    e_lin_num = error_off_constant((phi @ w_lin)[:, NUMBERS], gold[:, NUMBERS])
    print(
        f"identifiability (exact expected BT loss, pairs from pi_ref): max error off a constant "
        f"per prompt, tabular {e_tab:.1e}, linear {e_lin:.3f} ({e_lin_num:.3f} off the hedge)"
    )
    print(
        "linear model's weights on ("
        + "; ".join(FEATURES)
        + "): "
        + ", ".join(f"{v:.3f}" for v in w_lin)
        + " (the constant is not identified: BT sees only r_c - r_r, where the constant feature cancels, "
        "so the loss does not depend on its weight and the minimum-norm Newton step leaves it at 0)"
    )
    claim(bool(e_tab < 1e-8), "the tabular fit recovers the gold reward up to a constant per prompt")
    claim(
        bool(e_lin > 0.1 and e_lin_num < e_lin / 2), "the linear model cannot: most of its error sits on the hedge"
    )

    # ---- 2. per data size: pi* against the learned reward ----------------------------------------
    g_star, kl_star = optimum_stats(pi_ref, gold, gold, args.beta)
    print(f"gold reward, beta = {args.beta:g}: gold reward of pi* {g_star:.3f} at KL {kl_star:.2f}")
    rngs = [np.random.default_rng(ss) for ss in np.random.SeedSequence(args.seed).spawn(DRAWS)]
    table, tops = {}, {}  # (name, n) -> (DRAWS, 5); n -> (DRAWS, Y) BT tabular learned tables
    for n in sizes:
        rows = {}
        for rng in rngs:  # each draw's data stream runs through the sizes in turn
            models = fit_models(pi_ref, gold, phi, n, rng)
            for name, r_hat in models.items():
                g, kl, h = optimum_stats(pi_ref, r_hat, gold, args.beta, hedge=True)
                err = error_off_constant(r_hat, gold)
                err_num = error_off_constant(r_hat[:, NUMBERS], gold[:, NUMBERS])
                rows.setdefault(name, []).append((g, kl, h, err, err_num))
            tops.setdefault(n, []).append(models["BT tabular"])
        for name, v in rows.items():
            table[name, n] = v = np.array(v)  # (DRAWS, 5)
            m, sd = v.mean(axis=0), v.std(axis=0, ddof=1)
            print(
                f"reward model {name:<21} n={n:>6}: gold reward of pi* {m[0]:.3f}+-{sd[0]:.3f} at KL "
                f"{m[1]:.2f}+-{sd[1]:.2f}, hedge {m[2]:.2f}+-{sd[2]:.2f}, max error off a constant "
                f"{m[3]:.3f}+-{sd[3]:.3f} ({m[4]:.3f}+-{sd[4]:.3f} off the hedge)"
            )
    print(f"(mean +- std over {DRAWS} independent data sets per n)")
    big = sizes[-1]
    g_small, g_big = table["BT tabular", sizes[0]][:, 0], table["BT tabular", big][:, 0]
    claim(
        bool(g_big.mean() - g_big.std(ddof=1) > g_small.mean() + g_small.std(ddof=1)),
        "with more pairs the tabular model's optimum earns more gold reward, beyond the spread over data sets",
    )
    above = max(g - frontier(pi_ref, gold, kl) for v in table.values() for g, kl, *_ in v)
    claim(bool(above < 1e-9), "no learned reward's optimum earns more gold reward than the gold optimum at its KL")
    g_m, kl_m = table["BT margin tabular", big][:, :2].mean(axis=0)
    print(
        f"at n={big}: the margin model's pi* {g_m:.3f} at KL {kl_m:.2f} (means); the gold optimum at that KL "
        f"{frontier(pi_ref, gold, kl_m):.3f}; its margin is |R(x, y_c) - R(x, y_r)|, the true gold gap: "
        f"oracle information, not a rater's"
    )
    claim(
        bool((table["BT margin tabular", big][:, 1] > table["BT tabular", big][:, 1]).all()),
        "on every data set the margin model's optimum moves further from pi_ref",
    )
    overoptimization(pi_ref, gold, tops)
    return pi_ref, gold, {n: v[0] for n, v in tops.items()}, g_star


def overoptimization(pi_ref, gold, tops):
    """Gold reward of pi* against the BT tabular reward as beta sweeps BETAS: its peak, its end."""
    solvable = gold.max(axis=1) > 0  # (N,) the prompts with a right answer
    right = gold.argmax(axis=1)  # (N,)
    print(
        f"over-optimization: beta sweeps {len(BETAS)} values from {BETAS[-1]:g} down to {BETAS[0]:g}; "
        f"the reference writes the hedge with probability {pi_ref[:, tasks.HEDGE].mean():.4f}"
    )
    down = {}
    for n, r_hats in tops.items():
        out = []
        for r_hat in r_hats:
            g, kl = np.array([optimum_stats(pi_ref, r_hat, gold, b) for b in BETAS]).T  # (40,) each
            i = int(g.argmax())
            top = r_hat.max(axis=1)  # (N,) the beta -> 0 limit piles pi* on the responses at it
            r_right = r_hat[np.arange(len(right)), right]  # (N,)
            wrong = bool((r_right < top)[solvable].any())
            hedge = bool((r_right < r_hat[:, tasks.HEDGE])[solvable].any())  # the rarest response
            out.append((g[i], kl[i], g[0], kl[0], g[0] < g[i] - 1e-3, wrong, hedge))
        v = np.array(out)  # (DRAWS, 7) BETAS[0] is the smallest beta: the largest KL
        m, sd = v.mean(axis=0), v.std(axis=0, ddof=1)
        print(
            f"over-optimization BT tabular n={n:>6}: peak gold {m[0]:.3f}+-{sd[0]:.3f} "
            f"at KL {m[1]:.2f}+-{sd[1]:.2f}, at beta {BETAS[0]:g} {m[2]:.3f}+-{sd[2]:.3f} "
            f"at KL {m[3]:.2f}+-{sd[3]:.2f}; turns down in {int(v[:, 4].sum())} of {len(v)} data sets, "
            f"a response above the right answer on a solvable prompt in {int(v[:, 5].sum())} "
            f"(the hedge in {int(v[:, 6].sum())}); "
            f"the figure's (the first): peak {v[0, 0]:.3f} at KL {v[0, 1]:.2f}, then {v[0, 2]:.3f} "
            f"at KL {v[0, 3]:.2f}"
        )
        down[n] = v[:, 4]  # (DRAWS,) 1 where the curve turns down
        # beta -> 0 piles pi* on each prompt's learned top response, and the top's share rises
        # monotonically as beta falls: a right top on every solvable prompt cannot turn down
        claim(
            bool(not (v[:, 4] > v[:, 5]).any()),
            "no data set whose learned reward puts no response above the right answer on a solvable prompt "
            "turns down",
        )
    ns = list(down)
    claim(bool(any(v[0] for v in down.values())), "some curve of the figure (the first data sets) turns down")
    claim(
        bool(down[ns[-1]].sum() < down[ns[0]].sum()),
        "fewer data sets turn down at the largest n than at the smallest",
    )


def calls_env(env):
    """The calculator with reward 1 per call turn: its expected return is E[calls]."""
    one = np.zeros((env.S, env.V))
    one[:, CALL] = 1.0
    return process_env(env, np.zeros((env.S, env.V)), "direct", one)


def prm_part(args, sizes):
    env = calculator(args.q, args.cost)
    pi_ref = softmax_table(calculator_reference(env))
    ep = env.all_episodes()
    logp = np.log(pi_ref)[ep.states, ep.tokens] * ep.action_mask  # (B, T)
    pr = np.exp(ep.log_env + logp.sum(axis=1))  # (B,) eq. (traj_prob) under pi_ref
    calls = ((ep.tokens == CALL) * ep.action_mask).sum(axis=1)  # (B,)
    right = ep.R + args.cost * calls  # (B,) the verifier's outcome: 1 iff the answer is right
    assert np.isin(right.round(12), (0.0, 1.0)).all()
    price = np.zeros((env.S, env.V))
    price[:, CALL] = -args.cost  # the call's price stays the environment's
    counter = calls_env(env)

    def judge(p_step, mode):
        pi = soft_optimum(process_env(env, p_step, mode, price), pi_ref, args.beta)[2]
        j = kl_objective(env, pi, pi_ref, args.beta)  # the outcome's objective
        return pi, j, kl_objective(counter, pi, pi_ref, 0.0)

    v_star, _, pi_gold = soft_optimum(env, pi_ref, args.beta)
    n_gold = kl_objective(counter, pi_gold, pi_ref, 0.0)
    print(
        f"process rewards, calculator q = {args.q:g}, cost {args.cost:g}, beta = {args.beta:g}: outcome "
        f"soft optimum J {v_star[0]:.4f}, expected calls {n_gold:.3f}"
    )
    steps, labels = prm_data(env, ep, right)
    exact = fit_prm(env, ep.states, ep.tokens, steps, labels, weights=pr)
    pol = env.is_policy
    res = {}
    rng = np.random.default_rng(args.seed + 1)
    on = steps > 0  # (B, T) the steps of every episode
    mass = (pr[:, None] * on).sum()
    for n in ["exact"] + list(sizes):
        if n == "exact":
            p_step = exact
        else:  # n episodes of pi_ref: rows of the episode law (the same law as env.rollout)
            b = rng.choice(pr.size, size=n, p=pr / pr.sum())  # (n,)
            p_step = fit_prm(env, ep.states[b], ep.tokens[b], steps[b], labels[b], l2=1.0 / n)
        diff = np.abs(p_step - exact)[ep.states, ep.tokens]  # (B, T)
        err = float((pr[:, None] * on * diff).sum() / mass)  # mean over pi_ref's steps
        for mode in ("progress", "direct"):
            pi, j, n_calls = judge(p_step, mode)
            res[n, mode] = (j, n_calls, np.abs(pi - pi_gold)[pol].max())
        tag = f"n={n:>6}" if n != "exact" else "exact   "
        (j_p, c_p, _), (j_d, c_d, _) = res[n, "progress"], res[n, "direct"]
        print(
            f"PRM {tag}: error on pi_ref's steps {err:.3f}; progress: J(pi*) - J {v_star[0] - j_p:.2e}, "
            f"calls {c_p:.3f}; direct: J(pi*) - J {v_star[0] - j_d:.2e}, calls {c_d:.3f}"
        )
    print(f"exact progress PRM: max |pi - pi*| over the policy states {res['exact', 'progress'][2]:.1e}")
    claim(bool(res["exact", "progress"][2] < 1e-12), "the exact progress PRM's optimum is the outcome's")
    claim(
        bool(res["exact", "direct"][1] > n_gold and res["exact", "direct"][0] < v_star[0] - 1e-6),
        "direct per-turn PRM rewards buy more calls and lose outcome objective",
    )
    gaps = {n: v_star[0] - res[n, "progress"][0] for n in sizes}
    claim(bool(gaps[sizes[-1]] < gaps[sizes[0]]), "with more episodes the progress PRM's optimum comes closer")
    claim(
        bool(all(res[n, "direct"][0] < res[n, "progress"][0] for n in sizes)),
        "at every n the direct PRM's optimum is further from the outcome's than the progress PRM's",
    )


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--beta", type=real(0.01, 100), default=0.25, help="KL coefficient of pi* (0.01..100)")
    p.add_argument("--q", type=real(0, 1), default=0.8, help="probability the calculator's tool is right")
    p.add_argument("--cost", type=real(0, 1), default=0.1, help="price of a call (0..1)")
    p.add_argument(
        "--seed", type=seed, default=0, help=f"seed of the {DRAWS} preference data sets per n and of the episodes"
    )
    p.add_argument("--quick", action="store_true", help="n up to 1000 (the tests' run)")
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="write the figure (SVG/PNG) to PATH")
    args = p.parse_args(argv)
    sizes = (10, 100, 1000) if args.quick else (10, 100, 1000, 10000)
    pi_ref, gold, curves, _ = bandit_part(args, sizes)
    prm_part(args, sizes)
    if args.plot:
        plot(args, pi_ref, gold, curves)


def plot(args, pi_ref, gold, curves):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for n, r_hat in curves.items():  # the first data set of each n
        g, kl = zip(*(optimum_stats(pi_ref, r_hat, gold, b) for b in BETAS))
        ax.plot(kl, g, label=f"BT tabular, n = {n}")
    g, kl = zip(*(optimum_stats(pi_ref, gold, gold, b) for b in BETAS))
    ax.plot(kl, g, "k--", label="gold reward")
    ax.set_xlabel(r"KL($\pi^*$ || $\pi_{\mathrm{ref}}$), mean over prompts")
    ax.set_ylabel(r"gold reward of $\pi^*$")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    fig.savefig(args.plot)
    plt.close(fig)


if __name__ == "__main__":
    main()
