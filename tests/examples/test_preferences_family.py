"""The DPO family's landing points (examples/preferences.py, part 3), each checked independently of
the L-BFGS run: the exact population gradient vanishes at each closed form, the hinge vertex is a
minimizer, and the losses with no finite optimum keep moving."""

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import preferences as ex  # noqa: E402

from minirl_lm.core.policy import TabularPolicy  # noqa: E402
from minirl_lm.direct.family import dpo_family_loss  # noqa: E402

ARGS = SimpleNamespace(beta=1.0, gamma=0.5, lam=0.1, z0=0.0, label_smoothing=0.1, exo_eps=1e-3, tau=0.05)
ARGS.alpha, ARGS.tr_alpha, ARGS.tr_steps, ARGS.tr_syncs, ARGS.lr, ARGS.max_iter = 0.5, 0.6, 8, 4, 2.0, 300


@pytest.fixture(scope="module")
def task():
    mdp, ref, grader = ex.make_task()
    return mdp, ref, ex.Population(mdp, ref, grader)


def grad_at(pop, name, pi, args=ARGS):
    """The exact population gradient of `name` on theta at the policy with response probabilities pi:
    the tabular policy of pi is built by its logits log pi(a|s) (prefix sums of pi)."""
    theta = logits_of(pop, pi)
    return pop.loss(
        name, TabularPolicy(theta), args.beta, args.gamma, args.lam, args.z0, args.label_smoothing, args
    )[1]


def logits_of(pop, pi):
    """Logits theta (S, V) whose policy gives every complete response the probability pi (M,)."""
    R = pop.R
    S, V = int(R.states.max()) + 1, int(R.tokens.max()) + 1
    mass = np.zeros((S, V))  # mass through (s, a): sum of pi over responses through it
    for b in range(pop.M):
        for t in range(int(R.lengths[b])):
            mass[R.states[b, t], R.tokens[b, t]] += pi[b]
    with np.errstate(divide="ignore"):
        theta = np.log(mass)
    theta[~np.isfinite(theta).any(axis=1)] = 0.0  # states no response reaches
    return theta


def test_logits_of_round_trips(task):
    _, _, pop = task
    pi = np.exp(pop.seq_ref)
    assert np.abs(pop.probs(TabularPolicy(logits_of(pop, pi))) - pi).max() < 1e-15


@pytest.mark.parametrize("name, div", [("fdpo_fkl", "forward_kl"), ("fdpo_js", "js_divergence")])
def test_f_dpo_is_stationary_at_its_closed_form(task, name, div):
    _, _, pop = task
    pi = ex.f_optimum(pop, div, ARGS.alpha, ARGS.beta)
    assert np.abs(np.bincount(pop.R.prompt, pi) - 1).max() < 1e-12
    assert np.abs(grad_at(pop, name, pi)).max() < 1e-10


def test_f_dpo_alpha_is_stationary_at_its_closed_form(task):
    _, _, pop = task
    pi = ex.f_optimum(pop, "alpha_divergence", ARGS.alpha, ARGS.beta)
    assert np.abs(grad_at(pop, "fdpo_alpha", pi)).max() < 1e-10
    assert np.abs(grad_at(pop, "dpo", pi)).max() > 1e-3  # and it is not DPO's optimum


def test_robust_on_flipped_labels_is_stationary_at_pi_star_and_on_clean_labels_is_not(task):
    mdp, ref, pop = task
    star = ex.tilted_optimum_tree(mdp, ref.probs(), ex.make_task()[2], 1.0)
    pi_star = pop.probs(TabularPolicy(np.log(star)))
    assert np.abs(grad_at(pop, "robust_flip", pi_star)).max() < 1e-12
    assert np.abs(grad_at(pop, "robust", pi_star)).max() > 1e-3


def test_robust_on_clean_labels_keeps_growing(task):
    _, ref, pop = task
    sizes = [np.abs(ex.land(pop, "robust", ref.theta, ARGS, n)[0].theta).max() for n in (20, 40, 80)]
    assert sizes[0] < sizes[1] < sizes[2] and sizes[2] > 20


def test_nca_at_beta_one_lands_on_twice_the_win_rate(task):
    # sigma(phi) (P + 1/2) = P gives e^phi = 2 P; sum_y pi_ref 2 P(y) = 1 (a response beats another
    # half the time on average): normalized already, lambda = 0
    _, _, pop = task
    pi = 2.0 * ex.win_rate(pop) * np.exp(pop.seq_ref)
    assert np.abs(np.bincount(pop.R.prompt, pi) - 1).max() < 1e-12
    assert np.abs(grad_at(pop, "nca_pair", pi)).max() < 1e-12


@pytest.mark.parametrize("name", ["bco_pair", "sppo_hard"])
def test_one_equation_per_response_holds_at_the_landing_point(task, name):
    _, ref, pop = task
    pi = pop.probs(ex.land(pop, name, ref.theta, ARGS)[0])
    lam, spread = ex.response_constant(pop, pi, name, 1.0)
    assert spread < 1e-8 and np.abs(lam).min() > 1e-3  # one lambda per prompt, not 0


def test_hinge_vertex_is_a_minimizer(task):
    _, _, pop = task
    pi, ties, (psi, cls) = ex.hinge_vertex(pop, 1.0)
    assert sum(len(t) for t in ties) == 0 and (psi == np.round(psi)).all()

    def full(phi):  # the full population loss at log-ratios phi (M,), no class structure
        s = pop.seq_ref + phi
        return dpo_family_loss(
            s[pop.c], s[pop.r], pop.seq_ref[pop.c], pop.seq_ref[pop.r], 1.0, "hinge", weights=pop.w
        )[0]

    phi = np.log(pi) - pop.seq_ref
    best = full(phi)
    rng = np.random.default_rng(0)
    for _ in range(200):  # no perturbation of any response, class-breaking ones included, does better
        d = rng.normal(size=pop.M) * rng.choice([1e-3, 1e-2, 0.3])
        assert full(phi + d) >= best - 1e-13


def test_apo_zero_filters_and_apo_down_collapses(task):
    _, ref, pop = task
    P = ex.win_rate(pop)
    pi = pop.probs(ex.land(pop, "apo_zero", ref.theta, ARGS)[0])
    assert pi[P < 0.5 - 1e-9].sum() < 1e-6 and (P < 0.5 - 1e-9).sum() > 0
    pi = pop.probs(ex.land(pop, "apo_down", ref.theta, ARGS)[0])
    x = pop.R.prompt
    top = [np.flatnonzero(x == n)[np.argmax(pop.reward[x == n])] for n in range(pop.N)]
    assert pi[top].sum() / pop.N > 0.99


def test_tr_dpo_reward_rises_at_every_sync(task):
    _, ref, pop = task
    _, rewards = ex.tr_dpo(pop, ref.theta, ARGS)
    assert all(b > a for a, b in zip(rewards, rewards[1:]))
