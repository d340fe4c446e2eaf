"""The atlas: the exact expected update of every configuration, against the intended gradient.

A small token MDP where every group of K responses can be enumerated: 3 prompts, tokens EOS, a, b,
length cap 3, and five possible responses per prompt (EOS | a EOS | a a EOS | a a a | b EOS, the
others have probability 0 under the reference), of lengths 1 to 3, one of them cut by the cap.
Rewards take three levels (0, 0.5, 1). The intended objective, per prompt x, averaged over the
prompts:

    J(theta) = E_{y~pi}[R(x, y)] - beta KL(pi(.|x) || pi_ref(.|x)) + c H(pi(.|x))

(c = 0 except in the entropy rows), with optimum pi*(y|x) proportional to
pi_ref(y|x)^(beta/(beta+c)) exp(R(x, y)/(beta+c)). A configuration is an advantage estimator x a
loss aggregation x a KL placement x a sampling rule; its update g is minus the gradient of its
loss on the whole table theta for one batch of K responses to each prompt. Every group of K is a
multiset of responses with a multinomial probability, so E[g] and E|g|^2 are finite sums. Batch
statistics (batch std, REINFORCE++ whitening, the token count of token_mean) couple the prompts:
those rows sum over the law of the batch's summed statistics (convolved prompt by prompt where
they lie on a grid: token counts, rewards 0, 0.5, 1), or over the joint outcome of the whole batch
(every combination of the three groups) where the KL in the reward makes them real-valued,
exactly, with no approximation. Printed per configuration:

    scale           <E g, grad J> / |grad J|^2
    cosine          cos(E g, grad J)
    variance        trace Cov[g] for one batch
    fixed point TV  the exact expected update iterated to convergence (then Newton-polished),
                    mean over prompts of the total-variation distance of its response
                    distribution to pi*; above K = 4 a row a batch statistic couples is
                    continued from its fixed point at K = 4 (quasi-Newton at K), and searched
                    from pi_ref where that does not converge

    $ python examples/atlas.py                 # the table on the page (K = 3)
    $ python examples/atlas.py --K 4 --task binary --plot atlas.svg

Tasks: "main" (above), "binary" (the same with reward 1 only for the best answer, 0 otherwise),
"bandit" (one-token responses, V = 4, no EOS: there the per-token entropy bonus is the gradient
of the entropy of the response distribution). The two-reward rows (GDPO) run on "main" with a
second reward, the format reward F = 1 if the response ends with EOS, 0 if the cap cut it, and
J with R + F; the pass@k rows are also measured against the gradient of pass@k, k = K.
"""

import argparse
import functools
import itertools
import os
import sys

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy, log_softmax_table
from minirl_lm.exact.batch import batch_moments
from minirl_lm.exact.groups import group_law, multisets
from minirl_lm.exact.scores import token_scores
from minirl_lm.pg.advantages import (
    batch_std,
    centred,
    leave_one_out,
    no_baseline,
    opo,
    reinforce_pp,
    reinforce_pp_baseline,
    remax,
    standardized,
)
from minirl_lm.pg.entropy import entropy_bonus, entropy_grad_table
from minirl_lm.pg.kl import kl_penalty, kl_penalty_is, kl_penalty_straight_through
from minirl_lm.pg.multireward import gdpo
from minirl_lm.pg.reinforce import reinforce_loss
from minirl_lm.pg.seqclip import luspo_surrogate
from minirl_lm.pg.shaping import filter_groups, mask_truncated, overlong_penalty
from minirl_lm.pg.targets import maxrl, passk_advantages
from minirl_lm.pg.tokenbaseline import otb_advantages

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import integer, plot_path, quiet_pipe, seed  # noqa: E402

BETA, C_ENT = 0.5, 0.2  # KL coefficient; entropy coefficient (entropy rows)
OVERLONG = dict(buffer_len=1, penalty_factor=0.5)
ADVS = ("none", "mean", "loo", "std", "batch_std", "reinforce_pp", "rpp_baseline", "remax", "opo")
AGGS = ("seq_sum", "token_mean", "seq_mean_token_mean", "constant")
KLS = ("kl_reward", "none", "k1", "k2", "k3", "k1+", "k3+", "rho_k3", "ent_bonus", "ent_reward")
SAMPS = ("all", "dapo", "trunc", "overlen")
COUPLED_ADVS = ("batch_std", "reinforce_pp", "rpp_baseline")
FOLDED = ("kl_reward", "ent_bonus", "ent_reward")  # the KL folded into the reward: real-valued rewards
WARM = 4  # above this group size the fixed-point search continues from the fixed point at K = WARM

CONFIGS = [  # (advantage, aggregation, KL placement, sampling)
    *[(a, "seq_sum", "kl_reward", "all") for a in ADVS],
    *[
        (a, g, "kl_reward", "all")
        for a in ("loo", "std")
        for g in ("token_mean", "seq_mean_token_mean", "constant")
    ],
    ("reinforce_pp", "token_mean", "kl_reward", "all"),
    ("opo", "token_mean", "kl_reward", "all"),
    *[("loo", "seq_sum", k, "all") for k in KLS[1:]],
    *[(a, "seq_sum", "kl_reward", "dapo") for a in ("mean", "loo", "std")],
    *[(a, "seq_sum", "kl_reward", s) for s in ("trunc", "overlen") for a in ("loo", "std")],
    ("std", "seq_mean_token_mean", "k3", "all"),  # GRPO as published
    ("std", "token_mean", "none", "dapo"),  # DAPO: token-mean, dynamic sampling
    ("mean", "constant", "k3", "all"),  # Dr. GRPO
    ("batch_std", "token_mean", "k3", "all"),  # TRL scale_rewards="batch"
    ("rpp_baseline", "token_mean", "k3", "all"),  # verl reinforce_plus_plus_baseline
]
FIRST_TABLE = len(CONFIGS)  # the rows above: the page's first table and its sentences
CONFIGS += [  # the objectives of 2025-26, appended (the rows above keep their index)
    ("maxrl", "seq_sum", "none", "all"),  # MaxRL: A / mean(R); R >= 0, so no KL in the reward
    ("passk", "seq_sum", "none", "all"),  # pass@k, k = K, eq. (passk)
    ("otb", "seq_sum", "kl_reward", "all"),  # the optimal token baseline, exact, eq. (otb)
    ("otb_group", "seq_sum", "kl_reward", "all"),  # verl's estimate of it from the group
    ("loo", "luspo", "kl_reward", "all"),  # LUSPO: GSPO's weight times |y|
    ("loo", "token_sum", "kl_reward", "all"),  # verl token-sum: no normalizer
]
# two rewards (correctness R and the format reward F), J with R + F: the sum's baselines and GDPO
TWO_REWARDS = [(a, "seq_sum", "kl_reward", "all") for a in ("loo_sum", "std_sum", "gdpo")]


# ---- the task ---------------------------------------------------------------------------------
def two_rewards(task):
    """The task with a second reward, F = 1 if EOS ends the response (0 if the cap cut it):
    `R` is the sum R + F (J's reward), `parts` the two rewards (N, Rn, 2)."""
    F = (~task["trunc"]).astype(float) * (task["lengths"] > 0)  # (N, Rn) the format reward
    return dict(task, R=task["R"] + F, parts=np.stack([task["R"], F], axis=-1))


def make_task(name="main"):
    """The MDP, reference logits and the reward of every possible response."""
    if name == "bandit":
        mdp = TokenMDP(["x0", "x1", "x2"], V=4, eos=None, max_len=1)
        theta = np.tile([0.5, 0.0, -0.5, 0.2], (mdp.S, 1))
        R = np.array([[1.0, 0.5, 0.0, 0.0], [0.0, 1.0, 0.5, 0.0], [0.5, 0.0, 0.0, 1.0]])
    else:
        mdp = TokenMDP(["one a", "two a", "no a"], V=3, eos=0, max_len=3)
        theta = np.zeros((mdp.S, mdp.V))
        for n in range(mdp.N):  # EOS, a, b
            theta[mdp.state_id(n, ())] = [0.0, 0.5, -0.5]
            theta[mdp.state_id(n, (1,))] = [0.3, 0.0, -np.inf]
            theta[mdp.state_id(n, (1, 1))] = [0.0, 0.2, -np.inf]
            theta[mdp.state_id(n, (2,))] = [0.0, -np.inf, -np.inf]
        # responses in all_responses order (kept ones): EOS | a EOS | a a EOS | a a a | b EOS
        R = np.array([[0.0, 1.0, 0.5, 0.0, 0.0], [0.0, 0.5, 1.0, 0.5, 0.0], [0.5, 0.0, 0.0, 0.0, 1.0]])
        if name == "binary":
            R = (R == 1.0).astype(float)
    ro = mdp.all_responses()
    logp_ref, seq_ref = TabularPolicy(theta).logp(ro.states, ro.tokens, ro.mask)
    keep = np.isfinite(seq_ref)  # responses pi_ref can emit
    N, T = mdp.N, mdp.max_len
    Rn = int(keep.sum()) // N
    pick = lambda a: a[keep].reshape((N, Rn) + a.shape[1:])
    trunc = mask_truncated(ro.tokens, ro.mask, mdp.eos) if mdp.eos is not None else ro.mask
    visited = np.isin(np.arange(mdp.S), pick(ro.states)[pick(ro.mask) > 0])  # (S,)
    active = visited[:, None] & np.isfinite(theta)  # the entries an update can move
    block = np.array([mdp.prefix_of(s)[0] for s in range(mdp.S)])[:, None].repeat(mdp.V, 1)[active]
    color = np.zeros(block.size, np.int64)  # rank of an entry within its prompt
    for n in range(N):
        color[block == n] = np.arange((block == n).sum())
    return dict(
        name=name,
        mdp=mdp,
        active=active,
        block=block,
        color=color,
        theta_ref=theta,
        R=R,
        N=N,
        Rn=Rn,
        T=T,
        states=pick(ro.states),
        tokens=pick(ro.tokens),
        mask=pick(ro.mask),
        lengths=pick(ro.lengths),
        trunc=pick(trunc.sum(1) == 0) & (pick(ro.lengths) > 0),
    )


# ---- everything that depends on theta ---------------------------------------------------------
def tables(theta, task, entropy=True):
    """Per-response log-probs, probabilities, and the bases of the updates: each token's score
    and (for the entropy rows) the entropy's gradient at its state, (N, Rn, T, D)."""
    S, V = theta.shape
    logpi = log_softmax_table(theta)  # (S, V)
    pi = np.exp(logpi)
    logpi_ref = log_softmax_table(task["theta_ref"])
    st, tk, m = task["states"], task["tokens"], task["mask"]  # (N, Rn, T)
    lp = np.where(m > 0, logpi[st, tk], 0.0)  # (N, Rn, T)
    u = lp - np.where(m > 0, logpi_ref[st, tk], 0.0)  # log pi/pi_ref
    N, Rn, T = st.shape
    flat = lambda a: a.reshape(N * Rn, T)  # noqa: E731
    score = token_scores(pi, flat(st), flat(tk), flat(m)).reshape(N, Rn, T, S * V)  # eq. (exact_score)
    s2 = np.where(m > 0, (pi * pi).sum(1)[st], 0.0)  # (N, Rn, T) sum_v pi(v|s_t)^2
    out = dict(lp=lp, u=u, seq=lp.sum(-1), py=np.exp(lp.sum(-1)), score=score, s2=s2)
    if entropy:
        hg = entropy_grad_table(theta)[st] * m[..., None]  # (N, Rn, T, V) dH(s_t)/dtheta[s_t]
        rows = np.zeros((N, Rn, T, S, V))
        idx = np.indices(st.shape)
        rows[idx[0], idx[1], idx[2], st] = hg
        out["hg"] = rows.reshape(N, Rn, T, S * V)
    return out


def greedy_index(theta, task):
    """Index of each prompt's greedy (argmax-decoded) response among the Rn responses."""
    mdp, out = task["mdp"], []
    for n in range(task["N"]):
        prefix = ()
        while not mdp.is_terminal(prefix):
            prefix = prefix + (int(np.argmax(theta[mdp.state_id(n, prefix)])),)
        toks = [tuple(row[:L]) for row, L in zip(task["tokens"][n], task["lengths"][n])]
        out.append(toks.index(prefix))
    return np.array(out)


def intended(theta, task, c):
    """grad J (D,) and J, exactly, eq. (atlas_objective); c the entropy coefficient."""
    tb = tables(theta, task, entropy=False)
    Rt = task["R"] - BETA * tb["u"].sum(-1) - c * tb["seq"]  # (N, Rn)
    J = (tb["py"] * Rt).sum(1)  # (N,)
    seq_score = tb["score"].sum(2)  # (N, Rn, D)
    g = np.einsum("ny,nyd->d", tb["py"] * (Rt - J[:, None]), seq_score) / task["N"]
    return g, J.mean()


def passk_target(theta, task, k):
    """grad of mean_x pass@k(x) = E[max(R_1, ..., R_k)] (D,), exactly: E[max_Y R sum_i score(y_i)]
    over the multisets of k draws, eq. (exact_group); no KL, the task's raw reward."""
    tb = tables(theta, task, entropy=False)
    out = 0.0
    for n in range(task["N"]):
        Y, p = group_law(tb["py"][n], k)  # (M, k), (M,) eq. (exact_multinomial)
        coef = task["R"][n][Y].max(1)[:, None, None] * task["mask"][n][Y]  # (M, k, T)
        out = out + p @ collapse(Y, [coef], [tb["score"][n]])[0]  # (D,)
    return out / task["N"]


def optimum(task, c):
    """pi*(y|x) (N, Rn): pi_ref^(beta/(beta+c)) exp(R/(beta+c)), normalized."""
    seq_ref = tables(task["theta_ref"], task, entropy=False)["seq"]
    z = (BETA * seq_ref + task["R"]) / (BETA + c)
    z -= z.max(1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(1, keepdims=True)


# ---- one configuration: the exact first two moments of g --------------------------------------
def collapse(Y, coefs, bases):
    """Every multiset's update on each basis family, `(F, M, D)`, eq. (exact_group): the
    coefficients of a multiset's K slots summed onto its distinct responses first, `C (M, R T)`,
    then one product with the basis `(R T, D)` (work `M R T D`, not the `M K T D` of gathering
    the basis slot by slot as `minirl_lm.exact.groups.group_updates` does; the same sums)."""
    *lead, R, T, D = bases[0].shape  # lead: () or (N,), prompts side by side
    M, K = Y.shape
    if Y is not multisets(R, K)[0] and not np.array_equal(Y, multisets(R, K)[0]):  # onehot's order
        raise ValueError(f"Y: expected the multisets of {K} out of {R} in multisets' order, got another table")
    C = (onehot(R, K) @ np.stack(coefs)).reshape(len(coefs), *lead, M, R * T)  # (F, ..., M, R T)
    return C @ np.stack(bases).reshape(len(bases), *lead, R * T, D)  # (F, ..., M, D)


@functools.lru_cache(maxsize=16)
def onehot(R, K):
    """`(M, R, K)` float: slot k of multiset m holds response r (the multisets of K out of R)."""
    return (multisets(R, K)[0][:, None, :] == np.arange(R)[:, None]).astype(float)


def parts(cfg, theta, task, K):
    """Per prompt: multisets, their probabilities and the pieces of each group's update."""
    adv, agg, kl, samp = cfg
    tb = tables(theta, task, entropy=kl == "ent_bonus")
    T = task["T"]
    R_raw = task["R"].copy()
    if samp == "overlen":
        pen = overlong_penalty(task["lengths"].reshape(-1), T, **OVERLONG)  # eq. (overlong)
        R_raw = R_raw + pen.reshape(R_raw.shape)
    fold = BETA * tb["u"].sum(-1) if kl in FOLDED else 0.0
    r_fold = R_raw - fold - (C_ENT * tb["seq"] if kl == "ent_reward" else 0.0)  # (N, Rn)
    c_bonus = C_ENT if kl == "ent_bonus" else 0.0
    u = tb["u"]
    with np.errstate(over="ignore"):  # dk/dlogp per token, eq. (kl_k1)-(kl_is)
        d = {"k1": np.ones_like(u), "k2": u, "k1+": u, "k3+": u, "k3": -np.expm1(-u), "rho_k3": u}.get(
            kl, np.zeros_like(u)
        ) * task["mask"]  # rho = 1: k3 + 1 - e^-u = u
    beta_loss = BETA if kl in ("k1", "k2", "k3", "k1+", "k3+", "rho_k3") else 0.0
    if adv == "reinforce_pp":  # eq. (rpp) returns
        tok_r = -(BETA * u if kl in ("kl_reward", "ent_bonus") else 0.0) * task["mask"]
        last = task["lengths"] - 1
        n_i, y_i = np.indices(last.shape)
        tok_r[n_i, y_i, last] += R_raw
        G = np.flip(np.cumsum(np.flip(tok_r, -1), -1), -1) * task["mask"]  # (N, Rn, T)
    greedy = greedy_index(theta, task) if adv == "remax" else None
    if adv == "gdpo":  # the KL folded into the first reward, each standardized on its own
        r_parts = task["parts"] - np.stack([fold + 0 * R_raw, 0 * R_raw], -1)  # (N, Rn, 2)
    if adv == "otb":  # eq. (otb) per position: b_t = E[G W_t] / E[W_t], W_t = sum_{j<=t} |s_j|^2
        W = np.cumsum((1.0 - 2.0 * np.exp(tb["lp"]) + tb["s2"]) * task["mask"], -1)  # (N, Rn, T)
        Wm = tb["py"][..., None] * W * task["mask"]  # (N, Rn, T)
        num, den = (Wm * r_fold[..., None]).sum(1), Wm.sum(1)  # (N, T) E over the responses
        b_otb = np.divide(num, den, out=np.zeros_like(num), where=den > 0)  # (N, T)
    joint = coupled(cfg)  # moments reads the batch statistics
    N = task["N"]
    m, lm, w = weights(task, K, agg, samp)  # (N, M, K, T) each
    Y, p = group_law(tb["py"], K)  # (M, K), (N, M) eq. (exact_multinomial), every prompt at once
    M = len(Y)
    flat = lambda a: a.reshape((N * M,) + a.shape[2:])  # noqa: E731  (N, M, ...) -> (N M, ...)
    if samp == "dapo":  # eq. (dapo_reweight)
        p = p * filter_groups(flat(R_raw[:, Y])).reshape(N, M)
        mass = p.sum(1, keepdims=True)
        p = np.divide(p, mass, out=p, where=mass > 0)  # never accepted: no update
    rs = r_fold[:, Y]  # (N, M, K)
    if adv == "reinforce_pp":
        X = G[:, Y]  # (N, M, K, T)
    elif adv == "otb":
        X = (rs[..., None] - b_otb[:, None, None, :]) * m  # (N, M, K, T)
    elif adv == "otb_group":  # eq. (otb_group), each group its own baseline
        fl = lambda a: a.reshape(N * M * K, T)  # noqa: E731
        X = otb_advantages(rs.reshape(-1), fl(m), fl(tb["lp"][:, Y]), fl(tb["s2"][:, Y]), K).reshape(m.shape)
    else:
        A = {
            "none": no_baseline,
            "mean": centred,
            "loo": leave_one_out,
            "std": standardized,
            "batch_std": centred,
            "rpp_baseline": centred,
            "remax": lambda r: remax(r, np.repeat(R_raw[np.arange(N), greedy], M)),
            "opo": lambda r: opo(r, flat(task["lengths"][:, Y])),
            "maxrl": maxrl,  # eq. (maxrl)
            "passk": lambda r: K * passk_advantages(r, K),  # eq. (passk): sum_k, not the mean
            "loo_sum": leave_one_out,
            "std_sum": standardized,
            "gdpo": lambda r: gdpo(flat(r_parts[:, Y])),  # eq. (gdpo), (N M, K, 2) -> (N M, K)
        }[adv](flat(rs)).reshape(rs.shape)  # (N, M, K), one group per row
        X = A[..., None] * m
    sc = tb["score"]  # (N, Rn, T, D) the basis, eq. (exact_group)
    coefs, bases = [w * X, -beta_loss * w * d[:, Y]] + [w] * joint, [sc, sc] + [sc] * joint
    if c_bonus:  # the entropy's gradient: a second basis
        coefs, bases = coefs + [w], bases + [tb["hg"]]
    parts_all = collapse(Y, coefs, bases)  # (2 to 4, N, M, D)
    Rg = parts_all[1] + c_bonus * parts_all[-1] if c_bonus else parts_all[1]
    out = []
    for n in range(N):
        q = dict(p=p[n], P=parts_all[0, n], Rg=Rg[n])
        if not joint:  # the prompts independent: the plain scores and the statistics unread
            out.append(q)
            continue
        if adv in ("reinforce_pp", "rpp_baseline"):  # token whitening stats
            mn, Xn = m[n], X[n]
            stats = (mn.sum((1, 2)), (Xn * mn).sum((1, 2)), (Xn * Xn * mn).sum((1, 2)))
        else:  # batch std of rewards
            stats = (np.full(M, K), rs[n].sum(1), (rs[n] * rs[n]).sum(1))
        out.append(dict(q, Q=parts_all[2, n], ntok=lm[n].sum((1, 2)), stats=stats))
    return out


def coupled(cfg):
    """Whether a batch statistic couples the prompts (batch std, whitening, token_mean's count)."""
    return cfg[0] in COUPLED_ADVS or cfg[1] == "token_mean"


def weights(task, K, agg, samp):
    """For every prompt and multiset of K: the mask `m`, the loss mask `lm` and the aggregation
    weight `w`, each `(N, M, K, T)`, eq. (pg_agg); they do not depend on theta, so a task keeps them
    (the fixed point asks for them at every step)."""
    key = ("weights", K, agg, samp)
    if key not in task:
        B, T, out = task["N"] * K, task["T"], []
        Y = multisets(task["Rn"], K)[0]
        for n in range(task["N"]):
            m = task["mask"][n][Y]  # (M, K, T)
            lm = m * (~task["trunc"][n][Y])[..., None] if samp == "trunc" else m
            L = task["lengths"][n][Y][..., None]
            w = {
                "seq_sum": lambda: lm / B,
                "token_mean": lambda: lm,
                "constant": lambda: lm / (B * T),
                "seq_mean_token_mean": lambda: lm / (B * np.maximum(L, 1)),
                "token_sum": lambda: lm,
                "luspo": lambda: lm / (B * np.maximum(L, 1)) * L,  # eq. (luspo), rho = 1: GSPO's times |y|
            }[agg]()  # (M, K, T) eq. (pg_agg)
            out.append((m, lm, w))
        task[key] = tuple(np.stack(a) for a in zip(*out))  # (N, M, K, T) each
    return task[key]


def moments(cfg, theta, task, K, second=True):
    """E[g] (D,) and trace Cov[g] for one batch (0.0 unless `second`), exactly.

    Prompts independent: each group's law, eq. (exact_group). Coupled by a batch statistic
    (batch std, REINFORCE++'s whitening, token_mean's token count): per-prompt marginals, eq.
    (exact_batch), through the law of the summed statistics, eq. (exact_batch_conv)."""
    adv, agg = cfg[0], cfg[1]
    pr = parts(cfg, theta, task, K)
    if not coupled(cfg):  # prompts independent
        Eg, Eg2 = 0.0, 0.0
        for q in pr:
            g = q["P"] + q["Rg"]  # (M, D)
            Eg = Eg + q["p"] @ g
            if second:
                Eg2 += q["p"] @ (g * g).sum(1)
        return Eg, (Eg2 - Eg @ Eg if second else 0.0)
    kind = {"batch_std": "batch_std", "reinforce_pp": "whiten", "rpp_baseline": "whiten"}.get(adv, "none")
    Eg, Eg2 = batch_moments(
        [q["p"] for q in pr],
        [np.stack(list(q["stats"]) + [q["ntok"]]) for q in pr],  # (4, M): cnt, S1, S2, ntok
        [(q["P"], q["Q"], q["Rg"]) for q in pr],
        kind=kind,
        token_mean=agg == "token_mean",
        second=second,
    )
    return Eg, (Eg2 - Eg @ Eg if second else 0.0)


# ---- the fixed point --------------------------------------------------------------------------
def fixed_point(cfg, task, K, iters=100, decay=200, newton=25, tol=1e-12):
    """The exact expected update iterated to convergence from pi_ref: (theta, max |E g|).

    A constant step for `iters` steps, then Newton on E[g] = 0 over the visited entries (finite-
    difference Jacobian of each prompt's block, exact when prompts are independent, the diagonal
    blocks only when batch statistics couple them; pseudo-inverse for the softmax's shift
    freedom), kept while each step moves no logit by more than 0.5 and cuts max |E g| by 10%.
    Where E[g] does not vanish smoothly (a standardized advantage keeps unit size as the spread
    goes to 0, so the field jumps at its zero), a step decaying geometrically to 1e-4 of the
    first follows instead: the iterate then stops within ~1e-4 steps of the zero. A row a batch
    statistic couples that ends there above 1e-6 is polished once more with the full Jacobian
    (`jacobian`, `broyden`), kept if that reaches 1e-9: the diagonal blocks alone can miss a zero.
    """
    act = task["active"]
    c = C_ENT if cfg[2] in ("ent_bonus", "ent_reward") else 0.0
    Eg = lambda th: moments(cfg, th, task, K, second=False)[0].reshape(th.shape)[act]
    theta = task["theta_ref"].copy()
    g = Eg(theta)
    gJ = intended(theta, task, c)[0].reshape(theta.shape)[act]
    lr = 20.0 * np.linalg.norm(gJ) / max(np.linalg.norm(g), 1e-300)  # ~ 20 grad J per step
    for _ in range(iters):
        if np.abs(g).max() < tol:
            return theta, float(np.abs(g).max())
        theta[act] += lr * g
        g = Eg(theta)
        if not np.isfinite(g).all():
            raise FloatingPointError(f"{cfg}: the expected update overflowed")
    th_n, g_n = theta.copy(), g
    color = task["color"]  # entries perturbed together
    for _ in range(newton):  # Newton on E[g] = 0
        if np.abs(g_n).max() < tol:
            break
        x, h = th_n[act], 1e-6
        Jac = np.zeros((x.size, x.size))
        for col in range(color.max() + 1):  # one prompt's states never move
            th = th_n.copy()  # another prompt's E[g] unless
            th[act] = x + h * (color == col)  # batch statistics couple them
            dg = (Eg(th) - g_n) / h
            for i in np.flatnonzero(color == col):
                same = task["block"] == task["block"][i]
                Jac[same, i] = dg[same]
        step = -np.linalg.pinv(Jac, rcond=1e-9) @ g_n
        if np.abs(step).max() > 0.5:  # trust region: a jump is no polish
            break
        th = th_n.copy()
        th[act] = x + step
        g_new = Eg(th)
        if not np.abs(g_new).max() < 0.9 * np.abs(g_n).max():
            break
        th_n, g_n = th, g_new
    if np.abs(g_n).max() < 1e-9:
        return th_n, float(np.abs(g_n).max())
    for k in range(decay):  # no smooth zero: decay
        theta[act] += lr * 1e-4 ** (k / decay) * g
        g = Eg(theta)
        if not np.isfinite(g).all():
            raise FloatingPointError(f"{cfg}: the expected update overflowed")
    if coupled(cfg) and np.abs(g).max() > 1e-6:  # the diagonal blocks may have missed a zero
        th_b, g_b = broyden(Eg, theta, act, jacobian(Eg, theta, act), newton, tol)
        if np.abs(g_b).max() < 1e-9:
            return th_b, float(np.abs(g_b).max())
    return theta, float(np.abs(g).max())


def jacobian(Eg, theta, act, h=1e-6):
    """The finite-difference Jacobian of `Eg` (theta -> E[g] over the visited entries `act`) at
    theta, every visited entry perturbed alone: prompts coupled by a batch statistic included."""
    x, g0 = theta[act], Eg(theta)
    J = np.zeros((x.size, x.size))
    for i in range(x.size):
        th = theta.copy()
        th[act] = x + h * (np.arange(x.size) == i)
        J[:, i] = (Eg(th) - g0) / h
    return J


def broyden(Eg, theta, act, J, steps, tol):
    """Newton steps on E[g] = 0 from theta: `(theta, E[g])` where they stop.

    Each step goes through J's pseudo-inverse (the softmax's shift freedom; singular values below
    1e-6 of the largest, finite-difference noise, dropped); after it, J takes the rank-one
    correction that makes it reproduce the observed change of E[g] (Broyden's method). The steps
    stop at max |E g| < tol, or before a step that would move a logit by more than 0.5 or not
    lower max |E g|."""
    x, g = theta[act], Eg(theta)
    for _ in range(steps):
        if np.abs(g).max() < tol:
            break
        step = -np.linalg.pinv(J, rcond=1e-6) @ g
        if np.abs(step).max() > 0.5:  # trust region: a jump is no polish
            break
        th = theta.copy()
        th[act] = x + step
        g_new = Eg(th)
        if not np.abs(g_new).max() < np.abs(g).max():
            break
        J = J + np.outer(g_new - g - J @ step, step) / (step @ step)  # Broyden: J step = the change of E[g]
        theta, x, g = th, x + step, g_new
    return theta, g


def continued(cfg, task, K, steps=25, tol=1e-12):
    """The fixed point at K continued from the one at K = WARM: (theta, max |E g|), or None.

    Newton's method needs a start near the zero: this one starts at the fixed point at K = WARM
    and takes E[g]'s Jacobian there (`jacobian`, at K = WARM, where an update is cheap), then
    takes Newton steps at K correcting the Jacobian as it goes (`broyden`).

    None (the caller then searches from pi_ref) when the search at K = WARM overflows, or when
    max |E g| at K does not end below 1e-9, the bar a Newton-polished fixed point meets (a row
    with no smooth zero never does: a standardized advantage's update jumps at its zero).

    `measure` takes this road above K = WARM for the rows a batch statistic couples: each of
    their updates at K = 8 sums over the law of the batch's statistics, or walks up to 495^3
    joint outcomes where those are real-valued, and `fixed_point` asks for one per step. Where
    both roads are cheap (K = 5, tests/examples/test_atlas.py) they reach the same zero.
    """
    act = task["active"]
    Eg = lambda k: lambda th: moments(cfg, th, task, k, second=False)[0].reshape(th.shape)[act]  # noqa: E731
    try:
        theta, _ = fixed_point(cfg, task, WARM)
    except FloatingPointError:  # the search at K = WARM overflowed: none to continue from
        return None
    theta, g = broyden(Eg(K), theta, act, jacobian(Eg(WARM), theta, act), steps, tol)
    return (theta, float(np.abs(g).max())) if np.abs(g).max() < 1e-9 else None


def tv_to_optimum(theta, task, c):
    py = tables(theta, task, entropy=False)["py"]
    return float(0.5 * np.abs(py - optimum(task, c)).sum(1).mean())


def probe(task, seed):
    """The policy the bias and variance are measured at: pi_ref with its visited logits moved by
    N(0, 0.5^2) draws of np.random.default_rng(seed) (at pi_ref itself every KL gradient is 0)."""
    theta = task["theta_ref"].copy()
    rng = np.random.default_rng(seed)
    theta[task["active"]] += 0.5 * rng.standard_normal(int(task["active"].sum()))
    return theta


def measure(cfg, task, K, theta, fixed=True):
    """One row of the atlas at the probe theta: scale, cosine, variance, fixed point TV.

    With `fixed`, also `tv` and `residual` (max |E g| where the search stopped) and `continued`:
    whether the fixed point came from `continued` (above K = WARM, a row a batch statistic
    couples, where it converges) rather than from `fixed_point`'s search from pi_ref."""
    c = C_ENT if cfg[2] in ("ent_bonus", "ent_reward") else 0.0
    Eg, var = moments(cfg, theta, task, K)
    gJ, _ = intended(theta, task, c)
    ng, nJ = np.linalg.norm(Eg), np.linalg.norm(gJ)
    row = dict(
        cfg=cfg,
        scale=float(Eg @ gJ / (gJ @ gJ)),
        cosine=float(Eg @ gJ / (ng * nJ)) if ng > 0 else 0.0,
        variance=float(var),
        bias=float(np.linalg.norm(Eg - gJ) / nJ),
    )
    if fixed:  # above K = WARM a coupled row's update walks up to C(K+4, K)^3 joint outcomes
        found = continued(cfg, task, K) if K > WARM and coupled(cfg) else None
        th, res = found if found is not None else fixed_point(cfg, task, K)
        row.update(tv=tv_to_optimum(th, task, c), residual=res, continued=found is not None)
    return row


def line(row):
    adv, agg, kl, samp = row["cfg"]
    return (
        f"atlas {adv:<15}{agg:<20}{kl:<11}{samp:<8}: scale {row['scale']:.6f}, "
        f"cosine {row['cosine']:.6f}, variance {row['variance']:.2e}, "
        f"fixed point TV {row['tv']:.1e}"
    )


# ---- the same expectation the slow way: every joint outcome through the library ----------------
def library_update(cfg, theta, task, K, groups):
    """g for one batch (one multiset index tuple per prompt), with the library's own functions."""
    adv, agg, kl, samp = cfg
    mdp, N, T = task["mdp"], task["N"], task["T"]
    pol, ref = TabularPolicy(theta), TabularPolicy(task["theta_ref"])
    rows = [(n, y) for n in range(N) for y in groups[n]]  # prompt-major, B = N*K
    states = np.stack([task["states"][n, y] for n, y in rows])  # (B, T)
    tokens = np.stack([task["tokens"][n, y] for n, y in rows])
    mask = np.stack([task["mask"][n, y] for n, y in rows])
    lengths = mask.sum(1).astype(np.int64)
    R = np.array([task["R"][n, y] for n, y in rows])
    if samp == "overlen":
        R = R + overlong_penalty(lengths, T, **OVERLONG)
    logp, seq = pol.logp(states, tokens, mask)
    logp_ref, seq_ref = ref.logp(states, tokens, mask)
    r = R.copy()
    if kl in ("kl_reward", "ent_bonus", "ent_reward"):
        r = r - BETA * (seq - seq_ref)  # eq. (kl_reward)
    if kl == "ent_reward":
        r = r - C_ENT * seq
    rg = r.reshape(N, K)
    lmask = mask_truncated(tokens, mask, mdp.eos) if samp == "trunc" else mask
    if adv == "reinforce_pp":
        tok_r = -BETA * (logp - logp_ref) * mask if kl in ("kl_reward", "ent_bonus") else 0 * mask
        tok_r[np.arange(len(R)), lengths - 1] += R
        A = reinforce_pp(tok_r, mask)
    elif adv == "otb_group":
        s2 = (pol.probs() ** 2).sum(1)[states] * mask  # (B, T) sum_v pi(v|s_t)^2
        A = otb_advantages(r, mask, logp, s2, K)
    elif adv == "gdpo":
        F = np.stack([task["parts"][n, y, 1] for n, y in rows])  # (B,) the format reward
        A = gdpo(np.stack([r - F, F], -1).reshape(N, K, 2)).reshape(-1)
    elif adv == "rpp_baseline":
        A = reinforce_pp_baseline(rg, mask)
    else:
        greedy = greedy_index(theta, task)
        A = {
            "none": no_baseline,
            "mean": centred,
            "loo": leave_one_out,
            "std": standardized,
            "batch_std": batch_std,
            "remax": lambda x: remax(x, task["R"][np.arange(N), greedy]),
            "opo": lambda x: opo(x, lengths.reshape(N, K)),
            "maxrl": maxrl,
            "passk": lambda x: K * passk_advantages(x, K),
            "loo_sum": leave_one_out,
            "std_sum": standardized,
        }[adv](rg).reshape(-1)
    if agg == "luspo":  # eq. (luspo): mean over B of |y| times GSPO's term
        _, dlogp = luspo_surrogate(logp, logp, A, lmask)
    else:
        _, dlogp = reinforce_loss(logp, A, lmask, agg=agg, max_len=T)
    if kl in ("k1", "k2", "k3"):
        dlogp = dlogp + BETA * kl_penalty(logp, logp_ref, lmask, kl, agg, T)[1]
    elif kl in ("k1+", "k3+"):
        dlogp = dlogp + BETA * kl_penalty_straight_through(logp, logp_ref, lmask, kl[:2], agg, T)[1]
    elif kl == "rho_k3":
        dlogp = dlogp + BETA * kl_penalty_is(logp, logp, logp_ref, lmask, agg, T)[1]
    dtheta = pol.backward(states, tokens, mask, dlogp)
    if kl == "ent_bonus":
        dtheta = dtheta + C_ENT * entropy_bonus(theta, states, lmask, agg, T)[1]
    return -dtheta.reshape(-1)  # ascent direction


def brute_force_moments(cfg, theta, task, K):
    """E[g], trace Cov[g] by looping over every joint outcome through library_update (slow)."""
    py = tables(theta, task, entropy=False)["py"]
    probs = []
    for n in range(task["N"]):
        Y, p = group_law(py[n], K)
        if cfg[3] == "dapo":
            R = task["R"][n][Y]
            p = p * filter_groups(R)
            p = p / p.sum()
        probs.append(p)
    Eg, Eg2 = 0.0, 0.0
    for idx in itertools.product(range(len(Y)), repeat=task["N"]):
        p = np.prod([probs[n][i] for n, i in enumerate(idx)])
        if p == 0:
            continue
        g = library_update(cfg, theta, task, K, [Y[i] for i in idx])
        Eg = Eg + p * g
        Eg2 += p * (g @ g)
    return Eg, Eg2 - Eg @ Eg


# ---- what the table says ----------------------------------------------------------------------
TOL_DIR, TOL_FP = 1e-9, 1e-3


def knob(row):
    """Which of direction / scale / fixed point a configuration changes (thresholds stated)."""
    moved = []
    if row["cosine"] < 1 - TOL_DIR:
        moved.append("direction")
    elif abs(row["scale"] - 1) > TOL_DIR:
        moved.append("scale")
    if row["tv"] > TOL_FP:
        moved.append("fixed point")
    return moved


def summary(rows, K):
    """Printed lines the page's prose is computed from."""
    out = []
    unbiased = [r for r in rows if not knob(r)]
    scale_only = [r for r in rows if knob(r) == ["scale"]]
    direction = [r for r in rows if "direction" in knob(r)]
    fixed = [r for r in rows if "fixed point" in knob(r)]
    name = lambda r: " ".join(x for x in r["cfg"])
    out.append(f"unbiased (|scale - 1| and 1 - cosine <= {TOL_DIR:g}), same fixed point: {len(unbiased)} rows")
    out.append(
        f"scale only (cosine 1, scale != 1): {len(scale_only)} rows: "
        + "; ".join(f"{name(r)} ({r['scale']:.4f})" for r in scale_only)
    )
    out.append(
        f"direction changed (cosine < 1 - {TOL_DIR:g}): {len(direction)} rows, "
        f"lowest cosine {min(r['cosine'] for r in rows):.4f} "
        f"({name(min(rows, key=lambda r: r['cosine']))})"
    )
    out.append(
        f"fixed point moved (TV > {TOL_FP:g}): {len(fixed)} rows: "
        + "; ".join(f"{name(r)} ({r['tv']:.3f})" for r in fixed)
    )
    nofix = [r for r in rows if r["residual"] > 1e-6]
    out.append(
        "rows whose max |E g| stays > 1e-6 at the end (no smooth zero): "
        + "; ".join(f"{name(r)} ({r['residual']:.1e})" for r in nofix)
    )
    if K > WARM:  # measure continued the coupled rows from K = WARM
        joint = [r for r in rows if coupled(r["cfg"])]
        cont = [r for r in joint if r["continued"]]
        out.append(
            f"fixed points continued from K = {WARM} (the {len(joint)} rows a batch statistic couples): "
            f"{len(cont)} rows, max |E g| at most {max([r['residual'] for r in cont], default=0.0):.1e}; "
            f"searched from pi_ref instead (the continuation did not reach 1e-9): "
            + ("; ".join(name(r) for r in joint if not r["continued"]) or "none")
        )
    loo = [r for r in rows if r["cfg"] == ("loo", "seq_sum", "kl_reward", "all")][0]
    mean = [r for r in rows if r["cfg"] == ("mean", "seq_sum", "kl_reward", "all")][0]
    out.append(
        f"mean-centring scale {mean['scale']:.12f} against (K-1)/K = {(K - 1) / K:.12f}; "
        f"leave-one-out scale {loo['scale']:.12f}"
    )
    lo = min(rows, key=lambda r: r["variance"])
    hi = max(rows, key=lambda r: r["variance"])
    out.append(f"variance from {lo['variance']:.2e} ({name(lo)}) to {hi['variance']:.2e} ({name(hi)})")
    return out


def page_claims(rows, K, task):
    """The sentences of the atlas page about its run (K = 3, task main), checked."""
    by = {r["cfg"]: r for r in rows}
    unbiased = [r for r in rows if not knob(r)]
    scale_only = [r for r in rows if knob(r) == ["scale"]]
    direction = [r for r in rows if "direction" in knob(r)]
    moved = [r for r in rows if "fixed point" in knob(r)]
    stuck = [r for r in rows if r["residual"] > 1e-6]
    claim(
        all(
            r["cfg"][0] in ("none", "loo", "remax") and r["cfg"][2] in ("kl_reward", "ent_reward")
            for r in unbiased
        )
        and {r["cfg"][0] for r in unbiased} == {"none", "loo", "remax"},
        "the unbiased rows are no baseline, leave-one-out and ReMax with the KL (or the entropy) in the reward",
    )
    claim("opo" in {r["cfg"][0] for r in direction}, "OPO changes the direction: it is biased")
    T_max = task["T"]
    claim(
        all(
            np.isclose(
                r["scale"],
                ((K - 1) / K if r["cfg"][0] == "mean" else 1) / (T_max if r["cfg"][1] == "constant" else 1),
            )
            for r in scale_only
        ),
        "scale only: mean-centring shrinks by (K-1)/K, the constant aggregation divides by the length cap",
    )
    dapo = by[("mean", "seq_sum", "kl_reward", "dapo")]
    claim(
        dapo in direction and dapo not in moved, "dynamic sampling turns the direction and keeps the fixed point"
    )
    claim(any(r not in moved for r in direction), "some rows change the direction and still train to pi*")
    objective = ("k2", "k3", "k1+", "k3+", "rho_k3", "ent_bonus")
    claim(
        all(
            r["cfg"][2] in objective or r["cfg"][3] == "overlen" or r["cfg"][0] == "reinforce_pp" or r in stuck
            for r in moved
        ),
        "what moves the fixed point: a per-token KL or entropy term, the overlong penalty, "
        "REINFORCE++'s whitening, or no smooth zero",
    )
    claim(
        all(r["cfg"][2] in ("none", "k1") or r["cfg"][0] == "std" for r in stuck),
        "the rows with no smooth zero have no KL gradient in expectation or a standardized advantage",
    )
    k2 = by[("loo", "seq_sum", "k2", "all")]
    same = [
        k
        for k in ("k1+", "k3+", "rho_k3")
        if all(by[("loo", "seq_sum", k, "all")][f] == k2[f] for f in ("scale", "cosine", "variance", "tv"))
    ]
    claim(len(same) == 3, "k1+, k3+ and rho_k3 print exactly the numbers of k2")
    ent, bonus = by[("loo", "seq_sum", "ent_reward", "all")], by[("loo", "seq_sum", "ent_bonus", "all")]
    claim(
        ent["tv"] <= TOL_FP < bonus["tv"],
        "the entropy in the reward reaches the closed form; the per-token bonus misses it",
    )
    k1, none_ = by[("loo", "seq_sum", "k1", "all")], by[("loo", "seq_sum", "none", "all")]
    claim(
        abs(k1["scale"] - none_["scale"]) < 1e-9 and k1["variance"] > none_["variance"],
        "k1 in the loss has the expected update of none and a larger variance",
    )
    claim(
        min(r["variance"] for r in unbiased) > min(r["variance"] for r in rows),
        "the unbiased rows are not the quietest",
    )
    kept = [r["bias"] for r in rows if "direction" in knob(r) and r not in moved]
    claim(max(kept) > min(r["bias"] for r in moved), "the size of the bias does not tell where training ends")
    v = np.array([r["variance"] for r in rows])
    v2 = v / np.array([r["scale"] for r in rows]) ** 2
    claim(
        bool(v.max() / v.min() > v2.max() / v2.min()),
        "variance / scale^2 spans a smaller range than the variance",
    )


def new_rows(rows, two, theta, task, task2, K, check):
    """The lines on the objectives of 2025-26 (rows: the whole table; two: the two-reward rows),
    every comparison the page states about them checked (`page`: the page's run)."""
    by = {r["cfg"]: r for r in rows}
    name = lambda r: " ".join(r["cfg"])  # noqa: E731
    out = []
    unbiased = [r for r in rows if not knob(r)]
    otb, grp = by[("otb", "seq_sum", "kl_reward", "all")], by[("otb_group", "seq_sum", "kl_reward", "all")]
    rest = sorted((r for r in unbiased if r is not otb), key=lambda r: r["variance"])
    out.append(
        f"optimal token baseline (exact b_t): variance {otb['variance']:.3e}, the lowest of the "
        f"{len(unbiased)} unbiased rows (next {rest[0]['variance']:.3e}, {name(rest[0])}; leave-one-out "
        f"{by[('loo', 'seq_sum', 'kl_reward', 'all')]['variance']:.3e}); verl's estimate from the group: "
        f"scale {grp['scale']:.4f}, cosine {grp['cosine']:.4f}, variance {grp['variance']:.3e}, "
        f"variance / scale^2 {grp['variance'] / grp['scale'] ** 2:.3e} (leave-one-out's, scale 1: "
        f"{by[('loo', 'seq_sum', 'kl_reward', 'all')]['variance']:.3e})"
    )
    loo = by[("loo", "seq_sum", "kl_reward", "all")]
    lu, ts = by[("loo", "luspo", "kl_reward", "all")], by[("loo", "token_sum", "kl_reward", "all")]
    d_lu = max(abs(lu[f] - loo[f]) / abs(loo[f]) for f in ("scale", "cosine", "variance"))
    B = task["N"] * K
    out.append(
        f"luspo: loo seq_sum's numbers to {d_lu:.0e} (relative); token_sum: scale {ts['scale']:.6f} "
        f"(B = N K = {B}), variance {ts['variance'] / loo['variance']:.4f} x loo seq_sum's (B^2 = {B * B})"
    )
    mx, pk = by[("maxrl", "seq_sum", "none", "all")], by[("passk", "seq_sum", "none", "all")]
    targets = {"pass@1": passk_target(theta, task, 1), f"pass@{K}": passk_target(theta, task, K)}
    against = {}
    for cfg in (("loo", "seq_sum", "none", "all"), pk["cfg"], mx["cfg"]):
        Eg = moments(cfg, theta, task, K, second=False)[0]
        for t, gt in targets.items():
            against[cfg[0], t] = (Eg @ gt / (gt @ gt), Eg @ gt / (np.linalg.norm(Eg) * np.linalg.norm(gt)))
    out.append("rewards of the task: " + ", ".join(f"{v:g}" for v in np.unique(task["R"])))
    for t in targets:
        out.append(
            f"target {t} (no KL): "
            + "; ".join(
                f"{a} scale {against[a, t][0]:.6f}, cosine {against[a, t][1]:.6f}"
                for a in ("loo", "passk", "maxrl")
            )
        )
    # two rewards: where the format reward is constant in a group, GDPO is the standardized sum
    tb = tables(theta, task2, entropy=False)
    r1 = task2["parts"][..., 0] - BETA * tb["u"].sum(-1)  # (N, Rn) the KL in the first reward
    F = task2["parts"][..., 1]
    p_const, d_const, d_vary = [], 0.0, 0.0
    for n in range(task2["N"]):
        Y, p = group_law(tb["py"][n], K)
        const = np.ptp(F[n][Y], axis=1) == 0  # (M,)
        diff = np.abs(gdpo(np.stack([r1[n][Y], F[n][Y]], -1)) - standardized(r1[n][Y] + F[n][Y])).max(1)
        p_const.append(float(p @ const))
        d_const = max(d_const, float(diff[const & (p > 0)].max()))
        d_vary = max(d_vary, float(diff[~const & (p > 0)].max()))
    out.append(
        "format reward F constant in a group with probability "
        + ", ".join(f"{q:.3f}" for q in p_const)
        + f" (by prompt): there GDPO's advantage is the standardized sum's to {d_const:.0e}; "
        f"where F varies they differ by up to {d_vary:.3f}"
    )
    ls, ss, gd = two
    if not check:
        return out
    claim(
        otb in unbiased and otb["variance"] == min(r["variance"] for r in unbiased),
        "the optimal token baseline is unbiased and has the lowest variance of the unbiased rows",
    )
    claim(grp["cosine"] < 1 - TOL_DIR, "verl's group estimate of the baseline turns the direction")
    claim(
        grp["variance"] / grp["scale"] ** 2 >= loo["variance"],
        "per unit scale squared, verl's group estimate is no quieter than leave-one-out",
    )
    claim(d_lu < 1e-12, "on-policy LUSPO is leave-one-out with seq_sum")
    claim(
        abs(ts["scale"] - B) < 1e-9
        and ts["cosine"] > 1 - TOL_DIR
        and abs(ts["variance"] / loo["variance"] - B * B) < 1e-6,
        "token_sum multiplies the update by B and its variance by B^2",
    )
    claim(
        abs(against["passk", f"pass@{K}"][0] - 1) < 1e-12 and abs(against["passk", f"pass@{K}"][1] - 1) < 1e-12,
        "the pass@k advantages are unbiased for the gradient of pass@k",
    )
    claim(
        against["passk", "pass@1"][1] < 1 - TOL_DIR and against["loo", f"pass@{K}"][1] < 1 - TOL_DIR,
        "pass@k's update is not pass@1's direction, and leave-one-out's is not pass@k's",
    )
    claim(abs(against["loo", "pass@1"][0] - 1) < 1e-12, "leave-one-out is exact for pass@1")
    smtm = by[("loo", "seq_mean_token_mean", "kl_reward", "all")]
    claim(smtm["cosine"] < 1 - TOL_DIR < lu["cosine"], "LUSPO restores the direction GSPO's 1/|y| turns")
    claim(
        mx["cosine"] < 1 - TOL_DIR and mx["tv"] > TOL_FP,
        "MaxRL changes the direction and, with no KL, the fixed point",
    )
    claim(not knob(ls), "leave-one-out on the sum is unbiased for J with R + F")
    claim(d_const < 1e-12 < d_vary, "GDPO equals the standardized sum where F is constant, not elsewhere")
    claim(gd["tv"] > TOL_FP >= ss["tv"], "GDPO moves the fixed point; standardizing the sum does not")
    claim(ls["tv"] < 1e-12, "the unbiased two-reward row lands on the optimum to rounding")
    return out


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "atlas"
    fig, ax = plt.subplots(figsize=(6.0, 5.6))
    styles = {
        "fixed point moved": ("o", "tab:red"),
        "direction changed, same fixed point": ("s", "tab:orange"),
        "same direction, same fixed point": ("^", "tab:blue"),
    }
    for r in rows:
        moved = knob(r)
        lab = (
            "fixed point moved"
            if "fixed point" in moved
            else "direction changed, same fixed point"
            if "direction" in moved
            else "same direction, same fixed point"
        )
        ax.plot(r["variance"], r["bias"], styles[lab][0], color=styles[lab][1], ms=6, alpha=0.8)
    for i, r in enumerate(rows, 1):  # each point numbered by its row of the table
        ax.annotate(str(i), (r["variance"], r["bias"]), xytext=(3, 3), textcoords="offset points", fontsize=6)
    for lab, (m, c) in styles.items():
        ax.plot([], [], m, color=c, label=lab)
    zero = [r for r in rows if r["bias"] < 1e-9]
    if zero:  # the unbiased rows, named once
        ax.annotate(
            "bias 0: "
            + ", ".join(r["cfg"][0] + ("" if r["cfg"][2] == "kl_reward" else " + " + r["cfg"][2]) for r in zero),
            (min(r["variance"] for r in zero), 0.0),
            xytext=(-6, 10),
            textcoords="offset points",
            fontsize=8,
            ha="right",
        )
    worst = max(rows, key=lambda r: r["bias"])
    ax.annotate(
        " ".join(worst["cfg"]),
        (worst["variance"], worst["bias"]),
        xytext=(-10, 8),
        textcoords="offset points",
        fontsize=8,
        ha="right",
    )
    ax.set_xscale("log")
    ax.set_ylim(bottom=-0.05)
    ax.set_xlabel("variance: trace Cov[Δθ] for one batch")
    ax.set_ylabel("bias: |E Δθ - grad J| / |grad J|")
    fig.legend(fontsize=9, loc="lower center", ncol=1, frameon=False)
    fig.tight_layout(rect=(0, 0.15, 1, 1))
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--K",
        type=integer(2, 8),
        default=3,
        help="responses per prompt, 2..8 (leave-one-out needs K >= 2; TRL's default group is 8; "
        "a row whose batch statistic is real-valued sums C(K+4, K)^3 joint outcomes per update), default 3",
    )
    p.add_argument("--task", default="main", choices=("main", "binary", "bandit"))
    p.add_argument("--seed", type=seed, default=0, help="seed of the probe policy (default 0)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="no fixed points (TV printed as nan): the bias and variance columns only",
    )
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="write the bias-variance figure (SVG or PNG)")
    args = p.parse_args(argv)
    task = make_task(args.task)
    theta = probe(task, args.seed)
    print(
        f"task {args.task}: {task['N']} prompts, {task['Rn']} responses each (lengths "
        f"{sorted(set(task['lengths'][0].tolist()))}), K = {args.K}, beta = {BETA}, entropy "
        f"coefficient c_H = {C_ENT}; "
        f"probe: np.random.default_rng({args.seed})"
    )
    print(
        f"multisets per prompt {len(multisets(task['Rn'], args.K)[0])}, joint batch outcomes "
        f"{len(multisets(task['Rn'], args.K)[0]) ** task['N']}"
    )
    print()
    rows = []
    for cfg in CONFIGS:
        row = measure(cfg, task, args.K, theta, fixed=not args.quick)
        if args.quick:
            row.update(tv=float("nan"), residual=float("nan"))
        rows.append(row)
        if len(rows) <= FIRST_TABLE:
            print(line(row), flush=True)
    if not args.quick:
        print()
        for s in summary(rows[:FIRST_TABLE], args.K):
            print(s)
        if args.task == "main" and args.K == 3:  # the page's run
            page_claims(rows[:FIRST_TABLE], args.K, task)
    print("\nthe objectives of 2025-26: MaxRL, pass@k (k = K), the optimal token baseline, LUSPO, token-sum")
    for row in rows[FIRST_TABLE:]:
        print(line(row))
    two = []
    if task["mdp"].eos is not None:  # the format reward needs an EOS
        task2 = two_rewards(task)
        print(
            "\ntwo rewards: correctness R and format F (1 if EOS ends the response, 0 if the cap cut it), "
            "J with R + F, the KL in the first reward; std_sum standardizes R + F, gdpo each reward"
        )
        for cfg in TWO_REWARDS:
            row = measure(cfg, task2, args.K, theta, fixed=not args.quick)
            if args.quick:
                row.update(tv=float("nan"), residual=float("nan"))
            two.append(row)
            print(line(row), flush=True)
    if not args.quick and two:
        print()
        for s in new_rows(rows, two, theta, task, task2, args.K, args.task == "main" and args.K == 3):
            print(s)
    if args.plot:  # the first table (the new rows have targets and scales of their own)
        plot(rows[:FIRST_TABLE], args.plot)
        print(f"\nfigure written to {args.plot}")


if __name__ == "__main__":
    main()
