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
from minirl_lm.direct.family import dpo_family_loss
from minirl_lm.direct.family_div import sync_reference
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
from _cli import check_work, integer, plot_path, quiet_pipe, real, seed  # noqa: E402

LOSSES = ("dpo", "cdpo", "ipo_sum", "ipo_avg", "simpo", "orpo", "kto")
FAMILY = {  # row: (TRL loss_type, f_divergence_type, labels flipped at rate eps)
    "robust": ("robust", "reverse_kl", False),
    "robust_flip": ("robust", "reverse_kl", True),
    "exo_pair": ("exo_pair", "reverse_kl", False),
    "discopop": ("discopop", "reverse_kl", False),
    "bco_pair": ("bco_pair", "reverse_kl", False),
    "nca_pair": ("nca_pair", "reverse_kl", False),
    "sppo_hard": ("sppo_hard", "reverse_kl", False),
    "apo_zero": ("apo_zero", "reverse_kl", False),
    "apo_down": ("apo_down", "reverse_kl", False),
    "fdpo_fkl": ("sigmoid", "forward_kl", False),
    "fdpo_js": ("sigmoid", "js_divergence", False),
    "fdpo_alpha": ("sigmoid", "alpha_divergence", False),
}
DIVERGING = ("robust",)  # no finite optimum and no vanishing gradient: a fixed iteration budget


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
        c, r, w, w_rev = [], [], [], []
        for x in range(self.N):
            a, b = pairs[self.R.prompt[pairs[:, 0]] == x].T
            draw = prob[self.R.prompt[pairs[:, 0]] == x] / self.N  # mu_0 pi_ref(a) pi_ref(b)
            p = _sigmoid(self.reward[a] - self.reward[b])  # eq. (bradley_terry)
            c += [a, b]
            r += [b, a]
            w += [draw * p, draw * (1.0 - p)]  # a chosen, or b chosen
            w_rev += [draw * (1.0 - p), draw * p]  # the weight of the same pair, labels swapped
        self.c, self.r, self.w, self.w_rev = (np.concatenate(v) for v in (c, r, w, w_rev))

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

    def loss(self, name, policy, beta, gamma, lam, z0, ls, fam=None):
        """The population loss `name` at the policy and its gradient on theta (S, V)."""
        R, c, r, w = self.R, self.c, self.r, self.w
        logp, seq = policy.logp(R.states, R.tokens, R.mask)  # (M, T), (M,)
        G = np.zeros(logp.shape)  # (M, T) dloss/dlogp
        if name in FAMILY:  # TRL's loss_type on the same pairs (labels flipped at rate eps: *_flip)
            loss_type, div, flip = FAMILY[name]
            eps = {"robust": fam.label_smoothing, "exo_pair": fam.exo_eps}.get(loss_type, 0.0)
            loss, (d_c, d_r) = dpo_family_loss(
                seq[c],
                seq[r],
                self.seq_ref[c],
                self.seq_ref[r],
                beta,
                loss_type,
                label_smoothing=eps,
                tau=fam.tau,
                divergence=div,
                alpha=fam.alpha,
                weights=(1.0 - eps) * w + eps * self.w_rev if flip else w,
            )
            dseq = np.bincount(c, d_c, minlength=self.M) + np.bincount(r, d_r, minlength=self.M)  # (M,)
            G = dseq[:, None] * R.mask  # ds/dlogp_t = mask_t (dpo.token_grad)
        elif name in ("dpo", "cdpo"):
            loss, (d_c, d_r) = dpo_loss(
                seq[c],
                seq[r],
                self.seq_ref[c],
                self.seq_ref[r],
                beta,
                variant="dpo" if name == "dpo" else "conservative",
                label_smoothing=0.0 if name == "dpo" else ls,
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
                z0=z0,
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
                loss, (d_c, d_r) = simpo_loss(*args, beta, gamma=gamma, weights=w)
            else:
                loss, (d_c, d_r) = orpo_loss(*args, lam=lam, weights=w)
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


def land(pop, name, theta_ref, args, max_iter=None):
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
            fam=args,
        )
        return loss, dtheta.ravel()

    flat, gmax, it = lbfgs(f, theta_ref.ravel().copy(), max_iter=max_iter or args.max_iter)
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


# ---------------------------------------------------------------- part 3: the rest of the DPO family


def win_rate(pop):
    """P(y) = E_{b ~ pi_ref} P(y > b) (M,): a response's weight as chosen over its weight in pairs."""
    a = np.bincount(pop.c, pop.w, minlength=pop.M)  # (M,)
    return a / (a + np.bincount(pop.r, pop.w, minlength=pop.M))


def expected_reward(pop, pi):
    return float(np.bincount(pop.R.prompt, pi * pop.reward).mean())


def response_constant(pop, pi, loss_type, beta):
    """BCO, NCA, SPPO fit each response on its own: g(phi(y)) = kappa(x) e^phi(y) with one kappa per
    prompt, the multiplier of the normalization. kappa(x) (N,) and its largest spread over a prompt."""
    P, phi = win_rate(pop), np.log(pi) - pop.seq_ref  # (M,)
    u = _sigmoid(beta * phi)
    g = {"bco_pair": u - P, "nca_pair": u * (P + 0.5) - P, "sppo_hard": phi - (P - 0.5) / beta}[loss_type]
    lam = g / np.exp(phi)  # (M,)
    x = pop.R.prompt
    spread = max(np.ptp(lam[x == n]) for n in range(pop.N))
    return np.bincount(x, lam) / np.bincount(x), spread


def f_optimum(pop, divergence, alpha, beta):
    """The optimum of E[R] - beta D_f(pi || pi_ref), eq. (f_optimum): beta s(log pi/pi_ref) = R + C(x),
    C(x) by bisection so that each prompt's probabilities sum to 1 (alpha < 1: s is bounded above)."""
    inv = {  # s^-1(v): the log-ratio of the score v, eq. (f_score)
        "forward_kl": lambda v: -np.log1p(-v),
        "js_divergence": lambda v: v - np.log(2.0) - np.log1p(-np.exp(v) / 2.0),
        "alpha_divergence": lambda v: np.log1p((alpha - 1.0) * v) / (alpha - 1.0),
    }[divergence]
    top = {"forward_kl": 1.0, "js_divergence": np.log(2.0), "alpha_divergence": 1.0 / (1.0 - alpha)}[divergence]
    pi = np.empty(pop.M)
    for n in range(pop.N):
        at = pop.R.prompt == n
        R, q = pop.reward[at], np.exp(pop.seq_ref[at])
        lo, hi = -1e3, beta * top - R.max()  # sum q e^phi: below 1 at lo, +inf at hi
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if (q * np.exp(inv((R + mid) / beta))).sum() < 1.0 else (lo, mid)
        pi[at] = q * np.exp(inv((R + lo) / beta))
    return pi


def hinge_vertex(pop, beta):
    """An exact minimizer of the population hinge loss, and the other lattice minimizers beside it.

    The loss sum_{c,r} w relu(1 - beta (phi_c - phi_r)) is convex and symmetric in the responses of
    one class (prompt, length, reward): a minimizer constant on classes exists. In psi = beta phi it
    is L-natural convex with integer breakpoints, so an integer psi with no better psi +- chi_S
    (S any set of classes) is a global minimizer (Murota, Discrete Convex Analysis, Thm. 7.14).
    Returns pi (M,), and per prompt the moves +-chi_S that keep the loss (other minimizers)."""
    x, key = pop.R.prompt, pop.R.prompt * 1000 + pop.R.lengths * 100 + pop.reward.astype(int) + 50
    classes, cls = np.unique(key, return_inverse=True)
    W = np.zeros((classes.size, classes.size))  # class-pair weights of (chosen, rejected)
    np.add.at(W, (cls[pop.c], cls[pop.r]), pop.w)
    psi, ties = np.zeros(classes.size), []
    for n in range(pop.N):
        k = np.unique(cls[x == n])  # this prompt's classes
        Wn = W[np.ix_(k, k)]
        S = ((np.arange(2**k.size)[:, None] >> np.arange(k.size)) & 1).astype(float)  # (2^K, K)
        moves = np.concatenate([S[1:-1], -S[1:-1]])  # chi_S and -chi_S, S neither empty nor all

        def cheap(p):  # +-e_k and +-(the classes at or above a level): few moves that do most of the work
            levels = (p[None, :] >= np.unique(p)[1:, None]).astype(float)  # (levels, K)
            base = np.concatenate([np.eye(k.size), levels])
            return np.concatenate([base, -base])

        def L(p):  # (..., K) -> (...,) eq. (slic) on the classes
            return (Wn * np.maximum(0.0, 1.0 - (p[..., :, None] - p[..., None, :]))).sum((-2, -1))

        p = np.zeros(k.size)
        while True:  # steepest descent on the lattice: cheap moves first, every move to certify
            for cand in (cheap(p), moves):
                vals = np.concatenate([L(p + m) for m in np.array_split(cand, max(1, len(cand) // 4096))])
                if vals.min() < L(p) - 1e-14:
                    p = p + cand[np.argmin(vals)]
                    break
            else:
                break
        ties.append(moves[vals <= L(p) + 1e-14])
        psi[k] = p
    phi = psi[cls] / beta  # (M,)
    pi = np.exp(pop.seq_ref + phi)
    return pi / np.bincount(x, pi)[x], ties, (psi, cls)


def tr_dpo(pop, theta_ref, args):
    """TR-DPO, exactly: `tr_steps` full-batch DPO steps against the current reference, then the
    reference's soft update, eq. (tr_dpo_sync); E_pi[R] and pi at each sync."""
    R, c, r, w = pop.R, pop.c, pop.r, pop.w
    theta, ref = theta_ref.copy(), theta_ref.copy()
    rewards = []
    for _ in range(args.tr_syncs):
        _, seq_ref = TabularPolicy(ref).logp(R.states, R.tokens, R.mask)  # (M,) the moving reference
        for _ in range(args.tr_steps):
            policy = TabularPolicy(theta)
            _, seq = policy.logp(R.states, R.tokens, R.mask)
            _, (d_c, d_r) = dpo_loss(seq[c], seq[r], seq_ref[c], seq_ref[r], args.beta, weights=w)
            dseq = np.bincount(c, d_c, minlength=pop.M) + np.bincount(r, d_r, minlength=pop.M)  # (M,)
            theta = theta - args.lr * policy.backward(R.states, R.tokens, R.mask, dseq[:, None] * R.mask)
        ref = sync_reference(ref, theta, args.tr_alpha)  # eq. (tr_dpo_sync)
        rewards.append(expected_reward(pop, pop.probs(TabularPolicy(theta))))
    return pop.probs(TabularPolicy(theta)), rewards


def family(pop, ref, pi_star, args, print):
    """Part 3: every other TRL loss_type on the same pairs; returns what the page's claims need."""
    print(
        f"\nthe DPO family on the same pairs (TRL loss_type, beta = {args.beta:g}; robust eps "
        f"{args.label_smoothing:g}, exo_pair eps {args.exo_eps:g}, discopop tau {args.tau:g}, "
        f"alpha-divergence alpha {args.alpha:g}, tr_dpo alpha {args.tr_alpha:g} every {args.tr_steps} steps)"
    )
    rows, notes, facts = {}, [], {}

    def row(name, pi):
        rows[name] = compare(pop, pi, pi_star)
        tv, kl, m, m_star = rows[name]
        print(
            f"preference {name:<11s}: TV to pi* {tv:.1e}, KL(pi*||pi) {kl:.1e}, "
            f"mean length {m:.2f} (pi* {m_star:.2f})"
        )

    pi, ties, _ = hinge_vertex(pop, args.beta)
    row("hinge", pi)
    facts["hinge"] = rows["hinge"]
    facts["hinge_ties"] = sum(len(t) for t in ties)
    tie = (
        "none ties (the only class-constant minimizer)"
        if facts["hinge_ties"] == 0
        else f"{facts['hinge_ties']} tie (other minimizers)"
    )
    notes.append(
        f"hinge: an exact minimizer, its margins beta Delta integers; of its lattice neighbours "
        f"constant on (length, reward) classes, {tie}; minimizers that split a class not checked"
    )
    P, x = win_rate(pop), pop.R.prompt
    best = np.zeros(pop.M, bool)
    best[[np.flatnonzero(x == n)[np.argmax(pop.reward[x == n])] for n in range(pop.N)]] = True
    for name, (loss_type, div, _) in FAMILY.items():
        budget = args.diverge_iter if name in DIVERGING else None
        policy, gmax, it = land(pop, name, ref.theta, args, budget)
        pi = pop.probs(policy)
        row(name, pi)
        if name in DIVERGING:
            half, _, _ = land(pop, name, ref.theta, args, budget // 2)
            grow = (np.abs(half.theta).max(), np.abs(policy.theta).max())
            facts["robust_grow"] = (grow, pi[best].sum() / pop.N)
            notes.append(
                f"robust: no finite optimum on clean labels: max |theta| {grow[0]:.0f} after {budget // 2} "
                f"L-BFGS iterations, {grow[1]:.0f} after {budget}; mass {pi[best].sum() / pop.N:.4f} on the "
                f"best response (pairs with p > 1 - eps ask for sigma(beta Delta) > 1)"
            )
        elif gmax >= 1e-9:
            notes.append(f"{name}: not stationary after {it} L-BFGS iterations (max |gradient| {gmax:.1e})")
        if loss_type in ("bco_pair", "nca_pair", "sppo_hard"):
            lam, spread = response_constant(pop, pi, loss_type, args.beta)
            facts.setdefault("spread", []).append(spread)
            notes.append(
                f"{name}: one equation per response, kappa(x) e^phi(y) on its right, with kappa = "
                f"{', '.join(f'{v:+.4f}' for v in lam)} (spread over responses {spread:.0e})"
            )
        if div != "reverse_kl":
            tv_f = 0.5 * np.bincount(x, np.abs(pi - f_optimum(pop, div, args.alpha, args.beta))).mean()
            facts.setdefault("tv_f", []).append(tv_f)
            notes.append(f"{name}: TV to the closed-form optimum of E[R] - beta D_f(pi || pi_ref) {tv_f:.0e}")
        if name == "apo_zero":
            facts["apo_zero_mass"] = pi[P < 0.5 - 1e-9].sum() / pop.N
            notes.append(
                f"apo_zero: no interior optimum; mass {facts['apo_zero_mass']:.0e} left on the "
                f"{int((P < 0.5 - 1e-9).sum())} responses that lose to pi_ref more often than they win"
            )
        if name == "apo_down":
            facts["apo_down_mass"] = pi[best].sum() / pop.N
            notes.append(
                f"apo_down: no interior optimum here; mass {facts['apo_down_mass']:.6f} on the best response "
                f"of each prompt (stopped at |gradient| {gmax:.0e} as sigma' vanishes)"
            )
        facts[name] = rows[name]
    pi, rewards = tr_dpo(pop, ref.theta, args)
    row("tr_dpo", pi)
    facts["tr_dpo"], facts["tr_rewards"], facts["star_reward"] = (
        rows["tr_dpo"],
        rewards,
        expected_reward(pop, pi_star),
    )
    notes.append(
        f"tr_dpo: no fixed point; E_pi[R] at each sync {', '.join(f'{v:.3f}' for v in rewards)} "
        f"(pi*: {facts['star_reward']:.3f}): the reference chases the policy"
    )
    for note in notes:
        print(note)
    return facts


# ---------------------------------------------------------------- the program


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--beta", type=real(0.05, 100), default=1.0, help="beta of every loss, and of pi* (0.05..100)")
    p.add_argument(
        "--gamma", type=real(0, 100), default=0.5, help="SimPO's target margin zeta (TRL's simpo_gamma)"
    )
    p.add_argument("--lam", type=real(0, 100), default=0.1, help="ORPO's odds-ratio weight chi (TRL's beta)")
    p.add_argument("--z0", type=real(0, 100), default=0.0, help="KTO's reference point, held fixed")
    p.add_argument(
        "--label-smoothing",
        type=real(0, 0.5, high_open=True),
        default=0.1,
        help="conservative DPO's, also robust DPO's in the family (below 0.5: at 0.5 the labels are coin flips "
        "and robust DPO divides by 1 - 2 eps = 0)",
    )
    p.add_argument(
        "--max-iter",
        type=integer(1, 100000),
        default=None,
        help="L-BFGS iterations per loss (default 3000, quick 300)",
    )
    p.add_argument(
        "--steps",
        type=integer(1, 1000),
        default=None,
        help="online and offline DPO steps (default 300, quick 60; at most 1000, about 40 ms each: under a "
        "minute)",
    )
    p.add_argument(
        "--pairs",
        type=integer(1, 600),
        default=8,
        help="online pairs per prompt and step (at most 600, and steps x pairs at most 2e5: each sampled pair "
        "costs about 0.15 ms)",
    )
    p.add_argument(
        "--offline-pairs",
        type=integer(1, 10000),
        default=40,
        help="fixed offline pairs per prompt (at most 10000: every offline step reads all of them)",
    )
    p.add_argument("--lr", type=real(0, 100, low_open=True), default=2.0, help="online / offline DPO step size")
    p.add_argument(
        "--exo-eps", type=real(1e-6, 0.5), default=1e-3, help="EXO's label smoothing eps (the paper's 1e-3)"
    )
    p.add_argument("--tau", type=real(0.01, 10), default=0.05, help="DiscoPOP's temperature (TRL's discopop_tau)")
    p.add_argument("--alpha", type=real(0.05, 0.95), default=0.5, help="the alpha-divergence's alpha (< 1)")
    p.add_argument(
        "--tr-alpha", type=real(0, 1, low_open=True), default=0.6, help="TR-DPO's ref_model_mixup_alpha"
    )
    p.add_argument(
        "--tr-steps",
        type=integer(1, 320),
        default=32,
        help="TR-DPO's ref_model_sync_steps (at most 320, and tr-steps x tr-syncs at most 2560: ten times the "
        "default run, about half a minute)",
    )
    p.add_argument("--tr-syncs", type=integer(1, 80), default=8, help="TR-DPO's reference updates (at most 80)")
    p.add_argument(
        "--diverge-iter",
        type=integer(2, 2000),
        default=200,
        help="L-BFGS budget of robust DPO (at most 2000, ten times the default, about ten seconds)",
    )
    p.add_argument("--seed", type=seed, default=0, help="np.random.default_rng(seed) for part 2")
    p.add_argument("--no-family", action="store_true", help="skip part 3, the rest of the DPO family")
    p.add_argument(
        "--quick",
        action="store_true",
        help="fewer steps (a smoke run): --steps 60 --max-iter 300 unless given (an explicit value wins)",
    )
    p.add_argument("--takeaway", action="store_true", help="print only three lines that sum the run up")
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="draw each loss's length distribution vs pi*'s")
    args = p.parse_args(argv)
    # --quick sets the defaults; a value given on the command line wins
    if args.steps is None:
        args.steps = 60 if args.quick else 300
    if args.max_iter is None:
        args.max_iter = 300 if args.quick else 3000
    check_work(
        p,
        "--steps, --pairs",
        "sampled online pairs per prompt in all (steps x pairs)",
        args.steps * args.pairs,
        2e5,
    )
    check_work(
        p, "--tr-steps, --tr-syncs", "TR-DPO steps (tr-steps x tr-syncs)", args.tr_steps * args.tr_syncs, 2560
    )
    return args


def main(argv=None):
    quiet_pipe()
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

    # part 3: the rest of the DPO family, printed after everything above (whose lines are fixed)
    facts = None if args.takeaway or args.no_family else family(pop, ref, pi_star, args, print)

    page_run = {k: v for k, v in vars(args).items() if k not in ("plot", "takeaway")} == {
        k: v for k, v in vars(parse_args([])).items() if k not in ("plot", "takeaway")
    }
    if page_run or args.takeaway:  # the page's claims are about its run, the defaults
        summary = conclusions(res, trace, kto_mass)
        if page_run and facts is not None:
            family_conclusions(facts)
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


def family_conclusions(f):
    """The claims of the page's section on the DPO family, checked on this run."""
    claim(bool(f["robust_flip"][0] < 1e-6), "robust DPO on labels flipped at rate eps lands on pi*")
    grow, mass = f["robust_grow"]
    claim(
        bool(grow[1] > 1.5 * grow[0] and mass > 0.999),
        "on clean labels robust DPO has no finite optimum: its logits keep growing, onto the best response",
    )
    claim(bool(max(f["tv_f"]) < 1e-6), "each f-DPO lands on its closed-form optimum")
    claim(
        bool(min(f[k][0] for k in ("fdpo_fkl", "fdpo_js", "fdpo_alpha")) > 1e-2),
        "each f-DPO lands away from pi*",
    )
    claim(bool(max(f["spread"]) < 1e-6), "BCO, NCA and SPPO satisfy one equation per response")
    claim(bool(f["apo_zero_mass"] < 1e-12), "APO-zero leaves almost no mass on the responses that lose to pi_ref")
    claim(bool(f["apo_down_mass"] > 0.999), "APO-down ends on the best response of each prompt")
    claim(f["hinge_ties"] == 0, "no other class-constant minimizer ties with hinge's")
    others = ("hinge", "exo_pair", "discopop", "bco_pair", "nca_pair", "sppo_hard")
    claim(bool(min(f[k][0] for k in others) > 1e-2), "the other losses land away from pi*")
    rest = [k for k in (*FAMILY, "hinge", "tr_dpo") if k != "robust_flip"]
    claim(
        bool(min(f[k][0] for k in rest) > 1e-2), "in the DPO family only robust DPO on flipped labels lands on pi*"
    )
    r = f["tr_rewards"]
    claim(
        bool(all(b > a for a, b in zip(r, r[1:])) and r[-1] > f["star_reward"]),
        "TR-DPO's mean reward rises at every reference update, past pi*'s",
    )


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
