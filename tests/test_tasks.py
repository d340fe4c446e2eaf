"""The chapter's toy (minirl_lm/tasks.py): the graders, the reward table, the reference, the exact
evaluation, and training (deterministic, its defaults pinned, bad input named)."""

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from minirl_lm import tasks
from minirl_lm.core.policy import TabularPolicy
from quiet import names, raises, silent

GOLD_IDS = {"2+2": 2, "3*4": 4}  # RESPONSES[2] = "4", RESPONSES[4] = "12"


def test_graders_on_every_prompt_and_response():
    for x in tasks.PROMPTS:
        for y in range(len(tasks.RESPONSES)):
            gold = tasks.gold_grader(x, (y,))
            assert gold == float(GOLD_IDS.get(x) == y)
            # sloppy = gold + hedge: the hedge contains every answer
            assert tasks.sloppy_grader(x, (y,)) == gold + (y == tasks.HEDGE)
    assert tasks.gold_grader("2+2", np.array([2])) == 1.0  # any length-1 sequence


@pytest.mark.parametrize("grader", [tasks.gold_grader, tasks.sloppy_grader])
def test_graders_name_bad_prompts_and_responses(grader):
    names("prompt", "expected one of ['2+2', '3*4', '8*8', '9*9']", lambda: grader("1+1", (2,)))
    names("response", "expected a tuple of one token id", lambda: grader("2+2", (2, 3)))
    names("response", "expected a tuple of one token id", lambda: grader("2+2", "2"))
    names("response", "expected an integer token id", lambda: grader("2+2", (True,)), TypeError)
    names("response", "expected a token id in [0, 9)", lambda: grader("2+2", (9,)))


def test_reward_table_by_name_and_by_callable():
    gold = tasks.reward_table("gold")
    want = np.zeros((4, 9))
    want[0, 2] = want[1, 4] = 1.0  # no honest answer to 8*8, 9*9
    assert np.array_equal(gold, want)
    sloppy = tasks.reward_table("sloppy")
    assert np.array_equal(sloppy - gold, np.eye(9)[[tasks.HEDGE] * 4])  # the hedge column
    assert np.array_equal(tasks.reward_table(tasks.gold_grader), gold)
    assert np.array_equal(tasks.reward_table(lambda x, y: 0.5 * y[0]), np.tile(np.arange(9) / 2, (4, 1)))
    names("grader", "expected one of ['gold', 'sloppy']", lambda: tasks.reward_table("verifier"))
    names("grader", "or a callable grader(prompt, response)", lambda: tasks.reward_table(3), TypeError)
    names(
        "grader",
        "expected a finite number (a finite reward) for '2+2', 0",
        lambda: tasks.reward_table(lambda x, y: np.inf),
    )


def test_reference_theta_is_zero_with_the_hedge_at_minus_four():
    theta = tasks.reference_theta()
    assert theta.shape == (4, 9) and theta.dtype == np.float64
    assert (theta[:, tasks.HEDGE] == -4.0).all() and tasks.HEDGE_LOGIT == -4.0
    assert (np.delete(theta, tasks.HEDGE, axis=1) == 0.0).all()


def test_evaluate_the_reference_exactly():
    out = tasks.evaluate(TabularPolicy(tasks.reference_theta()))
    z = 8.0 + np.exp(-4.0)  # the softmax normalizer of every row
    np.testing.assert_allclose(out["per_prompt"], [1 / z, 1 / z, 0.0, 0.0], rtol=1e-15)
    np.testing.assert_allclose(out["success"], 0.5 / z, rtol=1e-15)
    np.testing.assert_allclose(out["sloppy"], (0.5 + np.exp(-4.0)) / z, rtol=1e-15)
    np.testing.assert_allclose(out["hedge"], np.exp(-4.0) / z, rtol=1e-15)
    names(
        "policy",
        "expected a TabularPolicy of shape (4, 9) for the toy",
        lambda: tasks.evaluate(TabularPolicy(np.zeros((4, 3)))),
    )
    names("policy", "expected a TabularPolicy (with probs(), theta)", lambda: tasks.evaluate(None), TypeError)


def test_train_is_deterministic_and_records_the_curve():
    p1, ref, curve = tasks.train(4, 40, 0, record_at=[1, 10])
    p2, _, _ = tasks.train(4, 40, 0)
    assert np.array_equal(p1.theta, p2.theta)  # same seed, same bits
    assert np.array_equal(ref.theta, tasks.reference_theta())
    assert [n for n, _ in curve] == [4, 40]  # responses drawn per prompt
    assert curve[-1][1] == tasks.evaluate(p1)["success"] > curve[0][1]
    p3, _, _ = tasks.train(4, 40, 1)
    assert not np.array_equal(p1.theta, p3.theta)
    p4, _, _ = tasks.train(4, 43, 0)  # n_responses // K steps
    assert np.array_equal(p1.theta, p4.theta)


def test_train_defaults_are_pinned():
    base, _, _ = tasks.train(4, 40, 0)
    same, _, _ = tasks.train(4, 40, 0, grader="gold", beta=0.0, lr=2.0, baseline="standardized")
    assert np.array_equal(base.theta, same.theta)
    assert np.array_equal(base.theta, tasks.train(4, 40, 0, grader=tasks.gold_grader)[0].theta)
    for kw in (dict(grader=lambda x, y: float(y[0] == 0)), dict(beta=0.1), dict(lr=1.0), dict(baseline="mean")):
        other, _, _ = tasks.train(4, 40, 0, **kw)
        assert not np.array_equal(base.theta, other.theta), kw
    still, _, _ = tasks.train(4, 40, 0, lr=0.0)  # lr = 0: the reference
    assert np.array_equal(still.theta, tasks.reference_theta())


def test_train_sloppy_grader_learns_the_hedge():
    sloppy = tasks.evaluate(tasks.train(8, 2000, 0, grader="sloppy")[0])
    gold = tasks.evaluate(tasks.train(8, 2000, 0, grader="gold")[0])
    assert sloppy["hedge"] > 0.4 and gold["hedge"] < 0.01 < gold["success"]


def test_train_names_bad_arguments():
    names("K", "expected an integer >= 1", lambda: tasks.train(0, 4, 0))
    names("n_responses", "expected an integer >= 2", lambda: tasks.train(2, 1, 0))
    names("baseline", "expected one of", lambda: tasks.train(2, 4, 0, baseline="none"))
    names("baseline", "leave-one-out needs K >= 2", lambda: tasks.train(1, 4, 0, baseline="loo"))
    names("grader", "expected 'gold', 'sloppy' or a callable", lambda: tasks.train(2, 4, 0, grader=3), TypeError)
    names(
        "record_at", "expected a collection of step counts", lambda: tasks.train(2, 4, 0, record_at=3), TypeError
    )
    names("record_at", "expected an integer <= 2", lambda: tasks.train(2, 4, 0, record_at=[3]))


def test_train_overflow_is_named_after_beta_or_the_grader():
    # beta = 1e308 shapes the rewards beyond the advantages' domain; it named rewards
    msg = names("beta", "shaped rewards stay within |r| <= 1e+150", lambda: tasks.train(2, 4, 0, beta=1e308))
    assert "got beta = 1e+308" in msg
    # a grader's reward beyond the domain is the grader's (it named rewards, not a parameter)
    names("grader", "expected rewards |R| <= 1e+150", lambda: tasks.train(2, 4, 0, grader=lambda x, y: 1e200))
    for kw in (dict(lr=1e308), dict(beta=1e3)):  # large but within: no warning
        pol, _, _ = silent(lambda: tasks.train(2, 40, 0, **kw))
        assert np.isfinite(pol.theta[:, :-1]).all()


# ---- the training step: the policy's sampling and backward, written out for the toy


def test_train_step_is_the_policys_sampling_and_numpy_backward_bit_for_bit():
    """Ten steps of `train` against the same steps taken with the policy's pieces: its draws
    (`TabularPolicy.sample`, i.e. rng.choice per prompt), the advantages, and the NumPy path of its
    backward (core/_tabular.py), bit for bit; that backward equals the Numba kernels' to rounding."""
    from minirl_lm.core import _tabular
    from minirl_lm.pg.advantages import standardized

    for K, beta in ((4, 0.0), (8, 0.3), (2, 0.0)):
        steps = 10
        got, _, _ = tasks.train(K, K * steps, 5, grader="sloppy", beta=beta)
        rng = np.random.default_rng(5)
        R = tasks.reward_table("sloppy")
        ref = TabularPolicy(tasks.reference_theta())
        theta = ref.theta.copy()
        states = np.repeat(np.arange(4), K)[:, None]  # (B, 1)
        mask = np.ones(states.shape)
        for _ in range(steps):
            pol = TabularPolicy(theta)
            y = pol.sample(states, rng)  # (B, 1)
            lp, _ = _tabular._tabular_logp(theta, states, y, mask)
            lp_ref, _ = _tabular._tabular_logp(ref.theta, states, y, mask)
            r = R[states[:, 0], y[:, 0]] - beta * (lp - lp_ref)[:, 0]  # (B,)
            w = -standardized(r.reshape(4, K)).reshape(-1, 1) / K  # (B, 1)
            dtheta = _tabular._tabular_backward(theta, states, y, mask, w)
            np.testing.assert_allclose(dtheta, pol.backward(states, y, mask, w), rtol=1e-12, atol=1e-15)
            theta = theta - 2.0 * dtheta
        assert got.theta.tobytes() == theta.tobytes(), (K, beta)


def test_train_draws_as_rng_choice_per_prompt():
    """The first step's draws are `rng.choice(9, K, p=pi(.|x))` for x = 0..3 in order."""
    rng, pi = np.random.default_rng(9), TabularPolicy(tasks.reference_theta()).probs()
    want = np.stack([rng.choice(9, 6, p=pi[x]) for x in range(4)])  # (N, K)
    seen = []
    real = tasks.advantages.core  # the body train calls on its own rewards

    def spy(r, *args):
        seen.append(r.copy())
        return real(r, *args)

    tasks.advantages.core = spy
    try:
        tasks.train(6, 6, 9, grader=lambda x, y: float(y[0]))  # reward = the token id
    finally:
        tasks.advantages.core = real
    assert np.array_equal(seen[0], want.astype(float))


def test_train_never_imports_numba():
    """The toy runs the NumPy cores: a process that trains and evaluates has not imported Numba."""
    code = (
        "import sys; from minirl_lm import tasks; p, _, _ = tasks.train(4, 400, 0, beta=0.1); "
        "tasks.evaluate(p); print('numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_long_responses_are_shown_in_messages_of_200_characters():
    msg = raises(ValueError, lambda: tasks.gold_grader("2+2", tuple(range(100))))
    assert msg.startswith(
        "response: expected a tuple of one token id (the toy's responses are one token), got (0, 1,"
    )
    assert len(msg) == 200
    msg = raises(TypeError, lambda: tasks.gold_grader("2+2", ("x" * 300,)))
    assert msg.startswith("response: expected an integer token id, got 'xxx") and len(msg) == 200


def test_bad_graders_and_record_steps_are_named_exactly():
    assert raises(TypeError, lambda: tasks.reward_table(lambda x: 0.0)) == (
        "grader: expected a callable grader(prompt, response) taking 2 positional arguments, "
        "got one with signature (x)"
    )
    assert raises(TypeError, lambda: tasks.reward_table(3)) == (
        "grader: expected 'gold', 'sloppy' or a callable grader(prompt, response), got int"
    )
    for record_at, exc, msg in (
        (3, TypeError, "expected a collection of step counts, got int"),
        ([0], ValueError, "expected an integer >= 1, got 0"),
        ([1.5], TypeError, "expected an integer, got float 1.5"),
        ([3], ValueError, "expected an integer <= 2 (the steps), got 3"),  # 5 // 2 steps
    ):
        assert raises(exc, lambda r=record_at: tasks.train(2, 5, 0, record_at=r)) == "record_at: " + msg


def test_evaluate_names_a_policy_of_another_shape_exactly():
    assert raises(ValueError, lambda: tasks.evaluate(TabularPolicy(np.zeros((4, 3))))) == (
        "policy: expected a TabularPolicy of shape (4, 9) for the toy, got TabularPolicy with shape (4, 3)"
    )
    duck = SimpleNamespace(theta=[[0.0] * 9] * 4, probs=lambda: None)  # a theta without a shape
    assert raises(ValueError, lambda: tasks.evaluate(duck)) == (
        "policy: expected a TabularPolicy of shape (4, 9) for the toy, got SimpleNamespace with shape None"
    )


def test_one_response_per_step_never_moves_the_reference():
    policy, _, _ = tasks.train(1, 3, 0)  # K = 1: every group equal, every advantage 0
    assert np.array_equal(policy.theta, tasks.reference_theta())


def test_rewards_at_the_edge_of_the_advantages_domain_are_accepted():
    policy, _, _ = tasks.train(2, 2, 0, grader=lambda x, y: 1e150, beta=0.1)  # |R| = 1e150 exactly
    assert np.array_equal(policy.theta, tasks.reference_theta())  # equal rewards: no step


def test_trained_logits_beyond_float64_are_named_after_train():
    assert raises(
        ValueError,
        lambda: tasks.train(2, 2, 0, grader=lambda x, y: float(y[0]) * 1e149, baseline="mean", lr=1e200),
    ) == ("train: expected a finite the trained logits, got inf (beyond float64) from beta = 0, lr = 1e+200")
