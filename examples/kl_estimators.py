"""k1, k2, k3 side by side, exact by enumeration, and the fixed point each KL placement trains to.

A two-state table, V = 4 tokens: the policy pi = softmax(theta), the frozen reference pi_ref, an
older policy pi_old that sampled an off-policy batch, and a reward r(s, y). With
u = log pi(y|s) - log pi_ref(y|s), kl.py's per-token estimators are

    k1 = u,   k2 = u^2 / 2,   k3 = exp(-u) - 1 + u           eqs. (kl_k1), (kl_k2), (kl_k3)

Part 1, the estimators. Every expectation is a sum over the V tokens of a state:
- E_pi[k] on-policy, beside KL(pi || pi_ref) and KL(pi_ref || pi) (kl.exact_kl);
- Var_pi[k], and a Monte-Carlo mean +- s.e. from --samples draws per state (np.random.default_rng);
- off-policy, y ~ pi_old: E_old[k] without a weight, and E_old[rho k] with rho = pi / pi_old.
Then the three estimators times the two placements: the KL part of the expected update (the term
that multiplies -beta), through TabularPolicy.backward, against its closed form and against
grad KL(pi || pi_ref), the gradient eq. (kl_objective) asks for:
- in the reward (the sample k is data in r~ = r - beta k, REINFORCE): E_pi[k grad log pi];
- in the loss (beta k a separate term, only logp carries a gradient): E_pi[grad k].
The closed forms use kl.exact_kl_grad_theta, kl.exact_reverse_kl_grad_theta, and grad E_pi[k2]
by central differences (step 1e-6, float64): an oracle independent of the enumeration.

Part 2, the six placements trained by exact expected gradient ascent (theta += lr * E[grad])
from pi_ref, each on E_pi r minus beta times its KL term. The step is scaled to the curvature:
the Hessian in theta of KL(pi_ref || pi) is exactly the softmax covariance diag(pi) - pi pi^T
(eigenvalues at most 1/2) at every theta, that of KL(pi || pi_ref) only at pi = pi_ref (the run
prints both, by central differences), so lr = 1/beta by default. A run that reaches the step cap
before max|E grad| < 1e-13, or whose estimate overflows float64, is reported as "did not
converge" with its final |grad|: its row is where it stopped, not a fixed point. Each end point
is compared with the tilted optimum pi* = pi_ref exp(r / beta) / Z (optimum.tilted_optimum), the
maximizer of E r - beta KL(pi || pi_ref), and with pi_fwd, the maximizer of
E r - beta KL(pi_ref || pi), pi_fwd(y) = beta pi_ref(y) / (nu - r(y)) with nu > max r fixed by
normalization (solved here by bisection: the library has no function for this maximizer). KL
columns are means over the two states (mu_0 uniform), as J is, so J(pi*) - J(pi) =
beta KL(pi || pi*) holds row by row as printed (checked by the run).

Part 3, a beta sweep: for each beta, the distance between the two optima pi_fwd and pi* (closed
forms), and k3 in the loss trained as in part 2, to check that it lands on pi_fwd at every beta.

Every comparison the page states is checked here with _claims.claim: a claim that no longer
holds stops the run (exit status 1).

    $ python examples/kl_estimators.py
    $ python examples/kl_estimators.py --beta 0.2 --plot kl.svg
    $ python examples/kl_estimators.py --sweep 0.1,1,10
"""

import argparse
import math
import os
import sys

import numpy as np

from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.kl import exact_kl, exact_kl_grad_theta, exact_reverse_kl_grad_theta, kl_in_reward, kl_per_token
from minirl_lm.values.optimum import kl_objective, tilted_optimum

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import integer, plot_path, quiet_pipe, real, reals, seed  # noqa: E402

THETA_REF = np.array([[0.5, 0.0, -0.5, -1.0], [0.0, 0.0, 0.0, 0.0]])
THETA = np.array(
    [
        [-0.5, 0.5, 0.0, 0.5],  # pi: where the estimators are read
        [1.0, -1.0, 0.5, 0.0],
    ]
)
THETA_OLD = np.array(
    [
        [0.0, 0.3, -0.3, 0.2],  # pi_old: sampled the off-policy batch
        [0.6, -0.6, 0.3, 0.0],
    ]
)
REWARD = np.array([[1.0, 0.0, 0.0, 0.5], [0.0, 1.0, 0.0, 0.0]])
EST = ("k1", "k2", "k3")
COLOR = {"k1": "C0", "k2": "C1", "k3": "C2"}  # one colour per estimator on every panel
PLACEMENTS = tuple(f"{e} in {where}" for where in ("reward", "loss") for e in EST)
SWEEP = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
MAX_LR_BETA = 100.0  # lr x beta: the default step is 1 (lr = 1/beta)
TOL = 1e-13  # max |E grad| at a fixed point


def enumeration(S, V):
    """Every (state, token) pair once, as a batch of B = S*V one-token responses (B, 1)."""
    states = np.repeat(np.arange(S), V)[:, None]  # (B, 1)
    tokens = np.tile(np.arange(V), S)[:, None]  # (B, 1)
    return states, tokens, np.ones((S * V, 1))


def per_state(x, S, V):
    """A (B, 1) per-token array back to (S, V)."""
    return x.reshape(S, V)


# ---------------------------------------------------------------- part 1: the estimators


def estimator_table(policy, ref, old, samples, seed):
    S, V = policy.theta.shape
    states, tokens, mask = enumeration(S, V)
    pi, pi_ref, pi_old = policy.probs(), ref.probs(), old.probs()  # (S, V) each
    logp, _ = policy.logp(states, tokens, mask)  # (B, 1)
    logp_ref, _ = ref.logp(states, tokens, mask)  # (B, 1)
    kl_pr, kl_rp = exact_kl(pi, pi_ref), exact_kl(pi_ref, pi)  # (S,) KL(pi||ref), KL(ref||pi)
    rng = np.random.default_rng(seed)
    draws = policy.sample(np.repeat(np.arange(S), samples), rng).reshape(S, samples)  # (S, n)
    rows = []
    for est in EST:
        k, _ = kl_per_token(logp, logp_ref, mask, est)  # (B, 1)
        k = per_state(k, S, V)  # (S, V)
        mean = (pi * k).sum(axis=1)  # (S,) E_pi[k]
        var = (pi * (k - mean[:, None]) ** 2).sum(axis=1)  # (S,) Var_pi[k]
        off = (pi_old * k).sum(axis=1)  # (S,) E_old[k], no weight
        off_is = (pi_old * (pi / pi_old) * k).sum(axis=1)  # (S,) E_old[rho k]
        mc = np.take_along_axis(k, draws, axis=1)  # (S, n) k of the sampled tokens
        for s in range(S):
            rows.append(
                {
                    "est": est,
                    "s": s,
                    "mean": mean[s],
                    "kl_pr": kl_pr[s],
                    "kl_rp": kl_rp[s],
                    "var": var[s],
                    "off": off[s],
                    "off_is": off_is[s],
                    "mc": mc[s].mean(),
                    "mc_se": mc[s].std(ddof=1) / math.sqrt(samples),
                }
            )
    return rows


def print_estimators(rows, samples, seed):
    print("Part 1. Per-token KL estimators on the table, exact by enumeration over tokens")
    print(f"(MC: {samples} draws per state from pi, np.random.default_rng({seed}), mean +- s.e.)")
    print()
    head = (
        f"{'est':>3} {'s':>2}  {'E_pi[k]':>9}  {'KL(pi||ref)':>11}  {'KL(ref||pi)':>11}  "
        f"{'Var_pi[k]':>9}  {'MC mean':>18}  {'E_old[k]':>9}  {'E_old[rho k]':>12}"
    )
    print(head)
    print("-" * len(head))
    for w in rows:
        mc = f"{w['mc']:.4f} +- {w['mc_se']:.4f}"
        print(
            f"{w['est']:>3} {w['s']:>2}  {w['mean']:9.6f}  {w['kl_pr']:11.6f}  {w['kl_rp']:11.6f}  "
            f"{w['var']:9.6f}  {mc:>18}  {w['off']:9.6f}  {w['off_is']:12.6f}"
        )
    by = {(w["est"], w["s"]): w for w in rows}
    states = sorted({w["s"] for w in rows})
    # the page's sentences about this table, checked
    claim(
        all(abs(by[e, s]["mean"] - by[e, s]["kl_pr"]) < 1e-12 for e in ("k1", "k3") for s in states)
        and all(abs(by["k2", s]["mean"] - by["k2", s]["kl_pr"]) > 1e-3 for s in states),
        "k1 and k3 average to KL(pi || pi_ref) on-policy, k2 does not",
    )
    claim(
        all(by["k2", s]["var"] < by["k3", s]["var"] < by["k1", s]["var"] for s in states),
        "on every state Var k2 < Var k3 < Var k1",
    )
    claim(
        all(
            abs(w["off_is"] - w["mean"]) < 1e-12
            and min(abs(w["off"] - w["kl_pr"]), abs(w["off"] - w["kl_rp"])) > 1e-3
            for w in rows
        ),
        "off-policy, E_old[k] matches neither KL and E_old[rho k] is E_pi[k] to rounding",
    )


def grad_expected_k2(policy, ref, h=1e-6):
    """grad_theta E_pi[k2] by central differences (S, V): an oracle apart from the enumeration."""
    S, V = policy.theta.shape
    states, tokens, mask = enumeration(S, V)
    logp_ref, _ = ref.logp(states, tokens, mask)

    def value(theta):  # (S,) E_pi[k2] per state
        p = TabularPolicy(theta)
        logp, _ = p.logp(states, tokens, mask)
        k2, _ = kl_per_token(logp, logp_ref, mask, "k2")
        return (p.probs() * per_state(k2, S, V)).sum(axis=1)

    g = np.empty((S, V))
    for v in range(V):  # the states are separate: one column of every state per pair of calls
        e = np.zeros((S, V))
        e[:, v] = h
        g[:, v] = (value(policy.theta + e) - value(policy.theta - e)) / (2 * h)
    return g


def kl_update(policy, ref, est, where):
    """The KL part of the expected update on theta (S, V): the term that multiplies -beta.

    where = "reward": k is data in r~ = r - beta k, so REINFORCE takes E_pi[k grad log pi];
    where = "loss": beta k is a loss term, only logp carries a gradient, E_pi[grad k].
    """
    S, V = policy.theta.shape
    states, tokens, mask = enumeration(S, V)
    pi = policy.probs().reshape(-1, 1)  # (B, 1) the expectation's weights
    logp, _ = policy.logp(states, tokens, mask)  # (B, 1)
    logp_ref, _ = ref.logp(states, tokens, mask)  # (B, 1)
    k, dk = kl_per_token(logp, logp_ref, mask, est)  # (B, 1) each
    return policy.backward(states, tokens, mask, pi * (k if where == "reward" else dk))


def update_table(policy, ref):
    """The 3 x 2 table: each cell's expected KL update against its closed form and grad KL(pi||ref)."""
    g_pr = exact_kl_grad_theta(policy.theta, ref.theta)  # (S, V) grad KL(pi || ref)
    g_rp = exact_reverse_kl_grad_theta(policy.theta, ref.theta)  # (S, V) grad KL(ref || pi)
    g_k2 = grad_expected_k2(policy, ref)  # (S, V) grad E_pi[k2]
    closed = {
        "k1 in reward": ("grad KL(pi||ref)", g_pr, 1e-12),
        "k2 in reward": ("grad E[k2] - grad KL(pi||ref)", g_k2 - g_pr, 1e-8),  # central differences
        "k3 in reward": ("grad KL(pi||ref) - grad KL(ref||pi)", g_pr - g_rp, 1e-12),
        "k1 in loss": ("0", np.zeros_like(g_pr), 1e-12),
        "k2 in loss": ("grad KL(pi||ref)", g_pr, 1e-12),
        "k3 in loss": ("grad KL(ref||pi)", g_rp, 1e-12),
    }
    print()
    print("The KL part of the expected update on theta (2 x 4), the term that multiplies -beta:")
    print("in the reward, E_pi[k grad log pi] (k is data in r - beta k); in the loss, E_pi[grad k]")
    print("(grad E[k2] by central differences, step 1e-6)")
    head = f"{'placement':>12}  {'closed form':>35}  {'from it':>7}  {'from grad KL(pi||ref)':>21}"
    print(head)
    print("-" * len(head))
    exact = []
    for placement in PLACEMENTS:
        est, _, where = placement.split()
        d = kl_update(policy, ref, est, where)
        name, form, tol = closed[placement]
        err, off = np.abs(d - form).max(), np.abs(d - g_pr).max()
        print(f"{placement:>12}  {name:>35}  {err:7.1e}  {off:21.1e}")
        claim(bool(err < tol), f"{placement}: the expected update is {name}")
        if off < 1e-12:
            exact.append(placement)
    claim(exact == ["k1 in reward", "k2 in loss"], "only k1 in the reward and k2 in the loss are exact")
    print(
        "exact for grad KL(pi||ref), the gradient eq. (kl_objective) asks for: "
        + " and ".join(exact)
        + f"; the other {len(PLACEMENTS) - len(exact)} cells differ from it"
    )


def hessian_check(policy, ref, h=1e-5):
    """max |H - (diag(pi) - pi pi^T)| over states, H by central differences of each exact gradient."""
    S, V = policy.theta.shape
    out = {}
    for name, grad in (("KL(ref||pi)", exact_reverse_kl_grad_theta), ("KL(pi||ref)", exact_kl_grad_theta)):
        worst = 0.0
        for v in range(V):
            e = np.zeros((S, V))
            e[:, v] = h
            col = (grad(policy.theta + e, ref.theta) - grad(policy.theta - e, ref.theta)) / (2 * h)  # (S, V)
            pi = policy.probs()
            cov = pi * ((np.arange(V) == v) - pi[:, v : v + 1])  # (S, V) column v of diag(pi) - pi pi^T
            worst = max(worst, np.abs(col - cov).max())
        out[name] = worst
    return out


# ---------------------------------------------------------------- part 2: the placements


def expected_ascent(policy, ref, reward, beta, placement):
    """E[grad] of E_pi r - beta * (the placement's KL term) on theta: (S, V)."""
    S, V = policy.theta.shape
    states, tokens, mask = enumeration(S, V)
    pi = policy.probs().reshape(-1, 1)  # (B, 1) the expectation's weights
    logp, _ = policy.logp(states, tokens, mask)  # (B, 1)
    logp_ref, _ = ref.logp(states, tokens, mask)  # (B, 1)
    r = reward.reshape(-1)  # (B,)
    est, _, where = placement.split()
    if placement == "k1 in reward":
        r_kl = kl_in_reward(r, logp, logp_ref, mask, beta)  # (B,) eq. (kl_reward), data
        return policy.backward(states, tokens, mask, pi * r_kl[:, None])  # REINFORCE on r~
    k, dk = kl_per_token(logp, logp_ref, mask, est)  # (B, 1) each
    if where == "reward":  # r~ = r - beta k, data: REINFORCE on r~
        return policy.backward(states, tokens, mask, pi * (r[:, None] - beta * k))
    # eq. (kl_objective) with beta k in the loss: REINFORCE on r, minus beta times E[grad k]
    return policy.backward(states, tokens, mask, pi * (r[:, None] - beta * dk))


def fwd_kl_optimum(pi_ref, reward, beta):
    """pi_fwd = argmax E_pi r - beta KL(pi_ref || pi), row-wise: beta pi_ref / (nu - r), (S, V)."""
    out = np.empty_like(pi_ref)
    for s in range(pi_ref.shape[0]):
        lo, hi = reward[s].max(), reward[s].max() + beta  # sum(pi) > 1 at lo+, <= 1 at hi
        for _ in range(200):  # bisection on nu
            nu = 0.5 * (lo + hi)  # the multiplier
            if (beta * pi_ref[s] / (nu - reward[s])).sum() > 1.0:
                lo = nu
            else:
                hi = nu
        p = beta * pi_ref[s] / (hi - reward[s])
        out[s] = p / p.sum()
    return out


def ascend(ref, reward, beta, placement, lr, iters):
    """Exact gradient ascent from pi_ref until max |E grad| < TOL, iters steps, or an overflow.

    Returns (policy, final max |E grad|, E_x KL(pi || pi*) after each step, overflowed).
    """
    pi_star = tilted_optimum(ref.probs(), reward, beta)  # eq. (kl_optimum)
    policy, hist, grad = ref.copy(), [], None  # start at the reference
    for _ in range(iters):
        try:
            grad = expected_ascent(policy, ref, reward, beta, placement)  # (S, V)
        except ValueError:  # the estimate left float64 (k3 of a token the policy has starved)
            return policy, np.abs(grad).max(), np.array(hist), True
        if np.abs(grad).max() < TOL:
            break  # a fixed point, to rounding
        policy.theta += lr * grad
        hist.append(exact_kl(policy.probs(), pi_star).mean())
    return policy, np.abs(grad).max(), np.array(hist), False


def train(ref, reward, beta, lr, iters):
    """Part 2: every placement from pi_ref; {placement: (policy, |grad| end, history, overflowed)}."""
    return tilted_optimum(ref.probs(), reward, beta), {
        p: ascend(ref, reward, beta, p, lr, iters) for p in PLACEMENTS
    }


NOTES = {
    "k1 in loss": "E[grad k1] = 0: no penalty reaches theta",
    "k2 in reward": "the penalty E[k2] - KL(pi||ref) does not hold pi near pi_ref",
    "k3 in reward": "E r - beta KL(pi||ref) + beta KL(ref||pi) has no maximum",
}


def converged(out):
    return [p for p in PLACEMENTS if out[p][1] < TOL]


def print_convergence(out):
    """Say loudly which runs stopped at the step cap (or at an overflow) rather than at a fixed point."""
    for placement in PLACEMENTS:
        _, gnorm, hist, overflowed = out[placement]
        if not gnorm < TOL:
            why = "; k3 overflows float64 at the next step" if overflowed else ""
            note = NOTES.get(placement, "its row is where it stopped, not a fixed point")
            print(f"did not converge: {placement}, {hist.size} steps, final max|E grad| {gnorm:.1e} ({note}{why})")


def print_placements(ref, reward, beta, lr, iters, pi_star, out):
    pi_ref = ref.probs()
    pi_fwd = fwd_kl_optimum(pi_ref, reward, beta)
    J_star = kl_objective(pi_star, pi_ref, reward, beta)
    print()
    print(f"Part 2. Where each placement trains to: beta = {beta}")
    print(f"exact expected gradient ascent from pi_ref, lr = {lr}, until max|E grad| < 1e-13 or {iters} steps")
    print("pi*    = pi_ref exp(r/beta) / Z maximizes E r - beta KL(pi||ref)")
    print("pi_fwd = beta pi_ref / (nu - r) maximizes E r - beta KL(ref||pi)")
    hess = hessian_check(TabularPolicy(THETA), ref)
    hess_ref = hessian_check(ref.copy(), ref)
    print(
        f"step scale: max|Hessian - (diag(pi) - pi pi^T)| in theta, central differences: "
        f"KL(ref||pi) {hess['KL(ref||pi)']:.1e} at part 1's pi; "
        f"KL(pi||ref) {hess['KL(pi||ref)']:.1e} there, {hess_ref['KL(pi||ref)']:.1e} at pi_ref"
    )
    claim(
        bool(hess["KL(ref||pi)"] < 1e-8 and hess_ref["KL(pi||ref)"] < 1e-8 and hess["KL(pi||ref)"] > 1e-3),
        "the Hessian of KL(pi_ref || pi) is the softmax covariance; that of KL(pi || pi_ref) only at pi_ref",
    )
    print("KL columns: means over the 2 states (mu_0 uniform), as J is")
    print()
    head = (
        f"{'placement':>12}  {'steps':>5}  {'|grad| end':>10}  {'KL(pi||pi*)':>11}  {'max|pi-pi*|':>11}  "
        f"{'J(pi*)-J(pi)':>12}  {'max|pi-pi_fwd|':>14}"
    )
    print(head)
    print("-" * len(head))
    gaps = []
    for placement in PLACEMENTS:
        policy, gnorm, hist, _ = out[placement]
        pi = policy.probs()
        kl = exact_kl(pi, pi_star).mean()
        gap = J_star - kl_objective(pi, pi_ref, reward, beta)
        gaps.append(abs(gap - beta * kl) <= 1e-12 * max(1.0, abs(gap)))
        print(
            f"{placement:>12}  {hist.size:5d}  {gnorm:10.1e}  {kl:11.2e}  "
            f"{np.abs(pi - pi_star).max():11.2e}  {gap:12.2e}  {np.abs(pi - pi_fwd).max():14.2e}"
        )
    claim(all(gaps), "J(pi*) - J(pi) = beta KL(pi || pi*) on every row")
    print_convergence(out)
    print("(every row: J(pi*) - J(pi) = beta KL(pi||pi*), checked to 1e-12; a row that did not")
    print(" converge shows where its run is after the last step)")
    print()
    print("pi at the end of each run, state 0 (reward " + ", ".join(f"{x:g}" for x in reward[0]) + ")")
    print(f"{'pi_ref':>12}  " + "  ".join(f"{p:.4f}" for p in pi_ref[0]))
    print(f"{'pi*':>12}  " + "  ".join(f"{p:.4f}" for p in pi_star[0]))
    print(f"{'pi_fwd':>12}  " + "  ".join(f"{p:.4f}" for p in pi_fwd[0]))
    for placement in PLACEMENTS:
        print(f"{placement:>12}  " + "  ".join(f"{p:.4f}" for p in out[placement][0].probs()[0]))
    return pi_fwd


def check_placements(out, pi_star, pi_fwd):
    """The page's sentences about part 2 at the default beta, checked."""
    probs = {p: out[p][0].probs() for p in PLACEMENTS}
    for p in ("k1 in reward", "k2 in loss"):
        claim(bool(out[p][1] < TOL and np.abs(probs[p] - pi_star).max() < 1e-10), f"{p} lands on pi*")
    claim(
        bool(out["k3 in loss"][1] < TOL and np.abs(probs["k3 in loss"] - pi_fwd).max() < 1e-10),
        "k3 in the loss lands on pi_fwd",
    )
    claim(bool(np.abs(pi_fwd - pi_star).max() > 1e-3), "pi_fwd is a nonzero distance from pi*")
    claim(
        set(converged(out)) == {"k1 in reward", "k2 in loss", "k3 in loss"},
        "the other three placements have no fixed point",
    )
    greedy = (np.arange(pi_star.shape[1]) == REWARD.argmax(axis=1)[:, None]).astype(float)  # (S, V)
    claim(
        all(np.abs(probs[p] - greedy).max() < 1e-2 for p in ("k1 in loss", "k2 in reward", "k3 in reward")),
        "k1 in the loss, k2 and k3 in the reward all end within 0.01 of the argmax of r",
    )


def sweep(ref, reward, betas, iters):
    """Part 3: pi_fwd against pi* over beta (closed forms), and where k3 in the loss lands."""
    pi_ref = ref.probs()
    print()
    print("Part 3. The two optima over beta: pi_fwd (where k3 in the loss lands) against pi*")
    print(f"(k3 in the loss trained as in part 2, lr = 1/beta, at most {iters} steps; KL: mean over states)")
    print()
    head = (
        f"{'beta':>6}  {'KL(pi_fwd||pi*)':>15}  {'max|pi_fwd-pi*|':>15}  "
        f"{'J(pi*)-J(pi_fwd)':>16}  {'k3 steps':>8}  {'|grad| end':>10}  {'max|pi_k3-pi_fwd|':>17}"
    )
    print(head)
    print("-" * len(head))
    rows = []
    for beta in betas:
        pi_star = tilted_optimum(pi_ref, reward, beta)
        pi_fwd = fwd_kl_optimum(pi_ref, reward, beta)
        policy, gnorm, hist, _ = ascend(ref, reward, beta, "k3 in loss", 1.0 / beta, iters)
        kl = exact_kl(pi_fwd, pi_star).mean()
        gap = kl_objective(pi_star, pi_ref, reward, beta) - kl_objective(pi_fwd, pi_ref, reward, beta)
        land = np.abs(policy.probs() - pi_fwd).max()
        flag = "" if gnorm < TOL else "  did not converge"
        print(
            f"{beta:6g}  {kl:15.3e}  {np.abs(pi_fwd - pi_star).max():15.3e}  "
            f"{gap:16.3e}  {hist.size:8d}  {gnorm:10.1e}  {land:17.1e}{flag}"
        )
        rows.append((beta, kl, np.abs(pi_fwd - pi_star).max(), gap, gnorm, land))
    claim(all(abs(g - b * k) <= 1e-12 * max(1.0, g) for b, k, _, g, _, _ in rows), "J gap = beta KL in part 3")
    return rows


def check_sweep(rows):
    """The page's sentences about part 3 at the default sweep, checked."""
    claim(all(g < TOL and d < 1e-10 for *_, g, d in rows), "k3 in the loss lands on pi_fwd at every beta")
    rows = sorted(rows)
    kl = [r[1] for r in rows]
    claim(all(a > b for a, b in zip(kl, kl[1:])), "KL(pi_fwd || pi*) falls over the whole sweep as beta grows")
    dist = [r[2] for r in rows]
    peak = int(np.argmax(dist))
    claim(
        0 < peak < len(dist) - 1
        and all(a < b for a, b in zip(dist[:peak], dist[1 : peak + 1]))
        and all(a > b for a, b in zip(dist[peak:], dist[peak + 1 :])),
        "max|pi_fwd - pi*| rises to a peak inside the sweep and falls on both sides",
    )


def plot(out, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "kl_estimators"
    fig, ax = plt.subplots(2, 1, figsize=(6.4, 6.4))  # stacked: readable on a phone
    u = np.linspace(-2.0, 2.0, 201)[:, None]  # log pi/pi_ref, (201, 1)
    for est in EST:
        k, _ = kl_per_token(u, np.zeros_like(u), np.ones_like(u), est)
        ax[0].plot(u[:, 0], k[:, 0], color=COLOR[est], label=est)
    ax[0].axhline(0.0, color="0.7", lw=0.8)
    ax[0].set_xlabel("u = log pi(y) / pi_ref(y)")
    ax[0].set_ylabel("per-token estimate")
    ax[0].legend(fontsize=8)
    for placement in PLACEMENTS:  # colour: the estimator; solid: in the reward, dashed: in the loss
        est, _, where = placement.split()
        hist = out[placement][2]
        style = "-" if where == "reward" else "--"
        ax[1].semilogy(
            np.arange(1, hist.size + 1), np.maximum(hist, 1e-18), style, color=COLOR[est], label=placement
        )
    ax[1].set_xlabel("exact gradient step")
    ax[1].set_ylabel("KL(pi || pi*), mean over states")
    ax[1].legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--beta", type=real(0.01, 100), default=0.5, help="KL coefficient (default 0.5)")
    p.add_argument(
        "--lr",
        type=real(0, 1000, low_open=True),
        default=None,
        help="step size of part 2 (default 1/beta, scaled to the KL term's curvature)",
    )
    p.add_argument(
        "--iters",
        type=integer(1, 10**4),
        default=1000,
        help="at most this many exact gradient steps (default 1000; at most 10^4, about half a minute: "
        "every run of the sweep takes them)",
    )
    p.add_argument(
        "--samples",
        type=integer(2, 10**7),
        default=10000,
        help="Monte-Carlo draws per state in part 1 (default 10000)",
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of the Monte-Carlo column")
    p.add_argument(
        "--sweep",
        type=reals(0.01, 100, allow_empty=True),
        default=SWEEP,
        help="comma-separated betas of part 3, '' to skip it (default " + ",".join(f"{b:g}" for b in SWEEP) + ")",
    )
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="write a figure (SVG or PNG by extension)")
    args = p.parse_args(argv)
    default_run = args.beta == 0.5 and args.lr is None and args.iters >= 1000  # the page's run
    if args.lr is None:
        args.lr = 1.0 / args.beta
    if args.lr * args.beta > MAX_LR_BETA:
        p.error(
            f"--lr: expected a step size with lr x beta <= {MAX_LR_BETA:g} (the KL term's "
            f"curvature is beta; a longer step overshoots until k3 overflows), got "
            f"{args.lr:g} at --beta {args.beta:g}"
        )
    policy, ref, old = TabularPolicy(THETA), TabularPolicy(THETA_REF), TabularPolicy(THETA_OLD)
    rows = estimator_table(policy, ref, old, args.samples, args.seed)
    print_estimators(rows, args.samples, args.seed)
    update_table(policy, ref)
    pi_star, out = train(ref, REWARD, args.beta, args.lr, args.iters)
    pi_fwd = print_placements(ref, REWARD, args.beta, args.lr, args.iters, pi_star, out)
    if default_run:  # the page's sentences are about the default beta and step
        check_placements(out, pi_star, pi_fwd)
    if args.sweep:
        swept = sweep(ref, REWARD, args.sweep, args.iters)
        if tuple(args.sweep) == SWEEP and args.iters >= 1000:
            check_sweep(swept)
    if args.plot:
        plot(out, args.plot)
        print(f"\nfigure written to {args.plot}")


if __name__ == "__main__":
    main()
