"""The contract: DPO recovers the tilted optimum; a learned reward is an estimate an optimizer exploits.

A one-token task with a known true reward r(x, y): N = 4 prompts, Y = 10 responses each. Four
responses are common under pi_ref (logit 0) and carry r = 0, 1, 2, 3; six are rare (logit -3,
about 1% each) and carry r = -2 .. 1, rotated from prompt to prompt. Preference pairs are drawn
from pi_ref and labelled by a Bradley-Terry model of r, eq. (bradley_terry), so the rare
responses are compared only a handful of times.

1. DPO, eq. (dpo), fitted by full-batch gradient descent on a tabular policy (the gradient is
   dpo_loss's, reaching theta through policy.backward). With Bradley-Terry temperature 1 its
   population optimum is the tilted optimum pi* = pi_ref exp(r / beta) / Z at the DPO beta,
   eq. (kl_optimum). KL(pi_theta || pi*) is printed as training goes, on the sample and on the
   population loss (infinite data): the population column is optimization error alone; the
   sample column adds estimation error, which shows once optimization has run its course (early
   on the two fits follow different gradients, and the sample one can be the closer).
2. A tabular Bradley-Terry reward model r_phi fitted on the same pairs (Newton's method to
   convergence, a weak Gaussian prior of std --prior-std so that a response that won every
   comparison it was in has a finite estimate). r is identifiable up to a per-prompt constant:
   errors are printed after centring each prompt's row.
3. The contract: optimize hard against r_phi. The tilted optimum of r_phi, traced from large beta
   to small, climbs the proxy reward monotonically; the true reward rises, peaks and falls as
   KL(pi || pi_ref) grows, because the optimizer finds the rare responses r_phi overrates. The
   column "best" is the most true reward any policy gets within the same KL (the tilted optimum
   of r itself, or its greedy limit once the KL exceeds what that limit needs).

    $ python examples/dpo.py
    $ python examples/dpo.py --pairs 30000          # more data: smaller errors, later peak
    $ python examples/dpo.py --plot contract.svg

The page's comparisons are checked with _claims.claim for the page's two runs, the default and
--pairs 30000: in strict mode (MINIRL_CLAIMS_STRICT=1, the site's build and the tests) a claim that
no longer holds stops the run with exit status 1; at a reader's own flags it prints a line saying
so and the run goes on.
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm.core.policy import TabularPolicy, softmax_table
from minirl_lm.direct.dpo import bt_sample_preferences, dpo_loss, reward_table_loss, token_grad
from minirl_lm.pg.kl import exact_kl
from minirl_lm.values.optimum import tilted_optimum

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import integer, plot_path, quiet_pipe, real, seed  # noqa: E402

N, N_COMMON, N_RARE = 4, 4, 6
Y = N_COMMON + N_RARE
RARE_LOGIT = -3.0
R_COMMON = np.array([0.0, 1.0, 2.0, 3.0])
R_RARE = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0])


def make_task():
    """True reward r (N, Y) and reference logits theta_ref (N, Y)."""
    r = np.empty((N, Y))
    for x in range(N):  # rotate so prompts differ
        r[x, :N_COMMON] = np.roll(R_COMMON, x)
        r[x, N_COMMON:] = np.roll(R_RARE, x)
    theta_ref = np.zeros((N, Y))
    theta_ref[:, N_COMMON:] = RARE_LOGIT
    return r, theta_ref


def _sigmoid(z):
    return np.exp(-np.logaddexp(0.0, -z))


# ---------------------------------------------------------------- preference data as weighted triples


def sample_triples(prompt, chosen, rejected):
    """Distinct (x, y_c, y_r) triples of a sample and their frequencies (weights summing to 1)."""
    key = (prompt * Y + chosen) * Y + rejected  # (P,)
    uniq, counts = np.unique(key, return_counts=True)
    return uniq // (Y * Y), (uniq // Y) % Y, uniq % Y, counts / key.size


def population_triples(reward, mu):
    """Every (x, a, b), a != b, with weight mu_0(x) mu(a|x) mu(b|x) sigma(r_a - r_b): infinite data."""
    x, a, b = np.meshgrid(np.arange(N), np.arange(Y), np.arange(Y), indexing="ij")  # (N, Y, Y)
    keep = a != b  # a tie teaches nothing
    x, a, b = x[keep], a[keep], b[keep]
    w = mu[x, a] * mu[x, b] * _sigmoid(reward[x, a] - reward[x, b]) / N  # eq. (bradley_terry)
    return x, a, b, w


# ---------------------------------------------------------------- 1. DPO by gradient descent


def fit_dpo(theta_ref, triples, beta, lr, checkpoints, pi_star):
    """Full-batch gradient descent on the weighted DPO loss; KL(pi_theta || pi*) at checkpoints."""
    x, c, rj, w = triples
    policy, ref = TabularPolicy(theta_ref), TabularPolicy(theta_ref)
    states = np.concatenate([x, x])[:, None]  # (2P, 1) one token per response
    tokens = np.concatenate([c, rj])[:, None]  # (2P, 1) chosen, then rejected
    mask = np.ones(states.shape)  # (2P, 1)
    P = x.size
    _, seq_ref = ref.logp(states, tokens, mask)  # (2P,) data: no gradient
    trace = []
    for step in range(max(checkpoints) + 1):
        if step in checkpoints:
            pi = policy.probs()
            trace.append((step, exact_kl(pi, pi_star).mean(), 0.5 * np.abs(pi - pi_star).sum(1).mean()))
        _, seq = policy.logp(states, tokens, mask)  # (2P,) log pi_theta(y | x)
        _, (d_c, d_r) = dpo_loss(seq[:P], seq[P:], seq_ref[:P], seq_ref[P:], beta, weights=w)  # eq. (dpo)
        dlogp = token_grad(np.concatenate([d_c, d_r]), mask)  # (2P, 1)
        policy.theta -= lr * policy.backward(states, tokens, mask, dlogp)  # (N, Y)
    return policy, trace


# ---------------------------------------------------------------- 2. Bradley-Terry reward model


def fit_reward_model(prompt, chosen, rejected, prior_std, iters=50):
    """MAP tabular r_phi: mean BT loss + ||r_phi||^2 / (2 prior_std^2 P), by Newton's method.

    Gradient from reward_table_loss; the Hessian of the mean BT loss is, per prompt,
    (1/P) sum_p sigma(m_p) sigma(-m_p) (e_c - e_r)(e_c - e_r)^T, m_p = r_c - r_r.
    """
    P = prompt.size
    lam = 1.0 / (prior_std**2 * P)
    r_phi = np.zeros((N, Y))
    for _ in range(iters):
        _, grad = reward_table_loss(r_phi, prompt, chosen, rejected)  # (N, Y)
        grad = grad + lam * r_phi
        m = r_phi[prompt, chosen] - r_phi[prompt, rejected]  # (P,)
        s = _sigmoid(m) * _sigmoid(-m) / P  # (P,) curvature
        H = np.zeros((N, Y, Y))
        np.add.at(H, (prompt, chosen, chosen), s)
        np.add.at(H, (prompt, rejected, rejected), s)
        np.add.at(H, (prompt, chosen, rejected), -s)
        np.add.at(H, (prompt, rejected, chosen), -s)
        H += lam * np.eye(Y)  # (N, Y, Y)
        r_phi = r_phi - np.linalg.solve(H, grad[..., None])[..., 0]
        if np.abs(grad).max() < 1e-12:
            break
    _, grad = reward_table_loss(r_phi, prompt, chosen, rejected)
    return r_phi, np.abs(grad + lam * r_phi).max()  # stationarity of the final iterate


# ---------------------------------------------------------------- 3. optimize against r_phi


def tilt_curve(pi_ref, reward, betas):
    """Tilted optima of ``reward`` for each beta: (KL(pi || pi_ref) mean over prompts, pi)."""
    out = []
    for beta in betas:
        pi = tilted_optimum(pi_ref, reward, beta)  # eq. (kl_optimum)
        out.append((exact_kl(pi, pi_ref).mean(), pi))
    return out


def best_at_kl(pi_ref, r, kl_target):
    """True reward of the tilted optimum of r whose KL to pi_ref is kl_target (bisection on log beta)."""
    lo, hi = -8.0, 8.0  # KL falls as log beta grows
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        pi = tilted_optimum(pi_ref, r, np.exp(mid))
        lo, hi = (mid, hi) if exact_kl(pi, pi_ref).mean() > kl_target else (lo, mid)
    return gain(tilted_optimum(pi_ref, r, np.exp(hi)), pi_ref, r)


def gain(pi, pi_ref, reward):
    """Mean over prompts of E_pi reward - E_pi_ref reward (free of any per-prompt constant)."""
    return float(((pi - pi_ref) * reward).sum(axis=1).mean())


# ---------------------------------------------------------------- the program


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pairs", type=integer(1, 10**6), default=300, help="preference pairs sampled from pi_ref")
    p.add_argument("--seed", type=seed, default=0, help="np.random.default_rng(seed) for the pairs")
    p.add_argument("--beta", type=real(0.01, 100), default=1.0, help="the DPO beta")
    p.add_argument("--lr", type=real(0, 100, low_open=True), default=4.0, help="DPO gradient-descent step size")
    p.add_argument(
        "--steps",
        type=integer(1, 20000),
        default=2000,
        help="DPO gradient steps (default 2000; at most 20000, ten times the default, about half a minute)",
    )
    p.add_argument(
        "--prior-std",
        type=real(0.01, 1000),
        default=10.0,
        help="std of the Gaussian prior on each r_phi entry (reward model)",
    )
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="draw true and proxy reward against KL")
    args = p.parse_args(argv)
    return args


def main(argv=None):
    quiet_pipe()
    args = parse_args(argv)
    r, theta_ref = make_task()
    pi_ref = softmax_table(theta_ref)  # (N, Y)
    rng = np.random.default_rng(args.seed)
    prompt, chosen, rejected = bt_sample_preferences(r, pi_ref, args.pairs, rng)
    rare = np.arange(Y) >= N_COMMON
    seen = np.zeros((N, Y), int)
    np.add.at(seen, (prompt, chosen), 1)
    np.add.at(seen, (prompt, rejected), 1)
    print(
        f"task: N = {N} prompts, Y = {Y} responses; pi_ref mass of one common response "
        f"{pi_ref[0, 0]:.3f}, of one rare response {pi_ref[0, -1]:.4f}"
    )
    print(
        f"{args.pairs} pairs from pi_ref (seed {args.seed}): a common response appears in "
        f"{seen[:, ~rare].mean():.1f} pairs on average, a rare one in {seen[:, rare].mean():.1f} "
        f"({(seen[:, rare] == 0).sum()} of {rare.sum() * N} rare responses never)"
    )

    # 1. DPO on the sample and on the population, against the tilted optimum at the same beta
    pi_star = tilted_optimum(pi_ref, r, args.beta)  # eq. (kl_optimum)
    checkpoints = sorted({0, 1, 10, 30, 100, 300, 1000, args.steps} & set(range(args.steps + 1)))
    _, trace_s = fit_dpo(
        theta_ref, sample_triples(prompt, chosen, rejected), args.beta, args.lr, checkpoints, pi_star
    )
    _, trace_p = fit_dpo(theta_ref, population_triples(r, pi_ref), args.beta, args.lr, checkpoints, pi_star)
    print(
        f"\n1. DPO (beta = {args.beta:g}, lr = {args.lr:g}) against pi* = pi_ref exp(r/beta)/Z: "
        f"KL(pi_theta || pi*) and total variation, mean over prompts"
    )
    print(f"{'step':>6s}  {'KL sample':>10s}  {'TV sample':>10s}  {'KL population':>14s}  {'TV population':>14s}")
    for (step, kl_s, tv_s), (_, kl_p, tv_p) in zip(trace_s, trace_p):
        print(f"{step:6d}  {kl_s:10.2e}  {tv_s:10.2e}  {kl_p:14.2e}  {tv_p:14.2e}")
    below = [step for (step, kl_s, _), (_, kl_p, _) in zip(trace_s, trace_p) if step > 0 and kl_s < kl_p]
    print(
        "steps at which the sample KL is below the population KL: "
        + (", ".join(str(b) for b in below) if below else "none")
    )
    j = int(np.argmin([t[1] for t in trace_s]))
    d = chosen != rejected  # (P,) a tie teaches nothing
    won, lost = np.zeros((N, Y), int), np.zeros((N, Y), int)
    np.add.at(won, (prompt[d], chosen[d]), 1)
    np.add.at(lost, (prompt[d], rejected[d]), 1)
    undefeated = int(((won > 0) & (lost == 0)).sum())  # its logit lowers the loss forever
    print(
        f"sample KL is smallest at step {trace_s[j][0]} ({trace_s[j][1]:.2e}); "
        f"{undefeated} responses won comparisons and never lost one",
        end="",
    )
    print(": the sample DPO loss has no finite minimizer, descent keeps pushing them up" if undefeated else "")

    # 2. the Bradley-Terry reward model, errors after centring each prompt's row
    r_phi, g_max = fit_reward_model(prompt, chosen, rejected, args.prior_std)
    err = (r_phi - r_phi.mean(1, keepdims=True)) - (r - r.mean(1, keepdims=True))  # (N, Y)
    top = r_phi.argmax(axis=1)  # (N,) what a greedy optimizer picks
    print(
        f"\n2. Bradley-Terry reward model r_phi (Newton, prior std {args.prior_std:g}, "
        f"max |gradient| {g_max:.1e}); error after centring each prompt"
    )
    print(f"{'responses':>10s}  {'rms error':>10s}  {'max error':>10s}")
    for name, sel in (("common", ~rare), ("rare", rare), ("all", np.ones(Y, bool))):
        e = err[:, sel]
        print(f"{name:>10s}  {np.sqrt((e**2).mean()):10.3f}  {e.max():10.3f}")
    print(
        f"argmax of r_phi per prompt: response {top.tolist()} "
        f"(rare: {rare[top].tolist()}), true reward {r[np.arange(N), top].tolist()}; "
        f"true best {r.max(axis=1).tolist()}"
    )

    # 3. the contract: the tilted optimum of r_phi from large beta to small
    rows = contract_rows(pi_ref, r_phi, r, np.geomspace(10.0, 0.03, 11))
    print("\n3. optimize against r_phi: pi = pi_ref exp(r_phi/beta)/Z; rewards are gains over pi_ref")
    print(f"{'beta':>7s}  {'KL':>6s}  {'proxy':>6s}  {'true':>6s}  {'best':>6s}")
    for b, kl, proxy, true, best in rows:
        print(f"{b:7.3f}  {kl:6.3f}  {proxy:6.3f}  {true:6.3f}  {best:6.3f}")
    i = int(np.argmax([row[3] for row in rows]))
    if rows[i][3] - rows[-1][3] >= 5e-4:  # a fall that shows in the printed digits
        print(
            f"true reward peaks inside the sweep, at beta = {rows[i][0]:.3f} (KL {rows[i][1]:.3f}, "
            f"true {rows[i][3]:.3f}), and falls to {rows[-1][3]:.3f}; the proxy ends at "
            f"{rows[-1][2]:.3f}"
        )
    else:
        print(
            f"true reward has no peak inside the sweep: it rises to {rows[-1][3]:.3f} at the smallest "
            f"beta, {rows[-1][0]:.3f}, within the printed digits of its largest value; the proxy ends "
            f"at {rows[-1][2]:.3f}"
        )

    settings = (args.seed, args.beta, args.lr, args.steps, args.prior_std) == (0, 1.0, 4.0, 2000, 10.0)
    if settings and args.pairs == 300:  # the page's first run
        check_scarce(trace_s, trace_p, below, undefeated, err, rare, top, r, rows)
    if settings and args.pairs == 30000:  # the page's second run
        claim(
            bool(trace_s[-1][1] < 1e-3 and max(abs(row[2] - row[3]) for row in rows) < 0.01),
            "with 30000 pairs the sample fit stays close to pi* and the proxy tracks the true reward",
        )

    if args.plot:
        plot(rows, contract_rows(pi_ref, r_phi, r, np.geomspace(10.0, 0.03, 60)), args.plot)


def check_scarce(trace_s, trace_p, below, undefeated, err, rare, top, r, rows):
    """The page's sentences about the default run (300 pairs), checked."""
    kl_p = [t[1] for t in trace_p]
    claim(
        all(a > b for a, b in zip(kl_p, kl_p[1:])) and kl_p[-1] < 1e-3,
        "on the population loss the KL to pi* falls toward zero",
    )
    kl_s = [t[1] for t in trace_s]
    j = int(np.argmin(kl_s))
    claim(0 < j < len(kl_s) - 1 and kl_s[-1] > kl_s[j], "on the sample the KL falls, then rises again")
    claim(
        bool(below) and kl_s[-1] > 100 * kl_p[-1], "the sample column is below early on and far above at the end"
    )
    claim(undefeated > 0, "some responses never lost a comparison")
    rms = [np.sqrt((err[:, sel] ** 2).mean()) for sel in (~rare, rare)]
    claim(bool(rms[0] < rms[1]), "the reward model's error is smaller on the common responses than on the rare")
    picked = rare[top]  # (N,) prompts whose argmax of r_phi is a rare response
    claim(
        bool(picked.any() and (r[np.arange(len(top)), top][picked] < r.max(axis=1)[picked]).all()),
        "where the argmax of r_phi is a rare response, its true reward is below the best",
    )
    proxy, true = [row[2] for row in rows], [row[3] for row in rows]
    claim(all(a <= b for a, b in zip(proxy, proxy[1:])), "the proxy rises monotonically as beta falls")
    i = int(np.argmax(true))
    claim(0 < i < len(true) - 1 and true[i] - true[-1] >= 5e-4, "the true reward peaks inside the sweep and falls")


def contract_rows(pi_ref, r_phi, r, betas):
    """(beta, KL, proxy gain, true gain, best true gain at that KL) along the tilted optima of r_phi."""
    return [
        (b, kl, gain(pi, pi_ref, r_phi), gain(pi, pi_ref, r), best_at_kl(pi_ref, r, kl))
        for b, (kl, pi) in zip(betas, tilt_curve(pi_ref, r_phi, betas))
    ]


def plot(rows, dense, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, kl, proxy, true, best = map(np.array, zip(*dense))  # curves
    _, kl_t, proxy_t, true_t, _ = map(np.array, zip(*rows))  # the table's rows as points
    fig, ax = plt.subplots(figsize=(5.4, 3.8))  # narrow: legible at phone width
    ax.plot(kl, proxy, color="C0", label=r"proxy: learned reward $R_\phi$")
    ax.plot(kl, true, color="C1", label=r"true reward $R$")
    ax.plot(kl, best, "--", color="gray", label="best true reward within this KL")
    ax.plot(kl_t, proxy_t, "o", color="C0", ms=4)
    ax.plot(kl_t, true_t, "o", color="C1", ms=4)
    ax.set_xlabel(r"$\mathrm{KL}(\pi\,\|\,\pi_{\mathrm{ref}})$, mean over prompts")
    ax.set_ylabel(r"reward gain over $\pi_{\mathrm{ref}}$")
    ax.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
