"""Hardening: every bad input a clear error, nothing returned as inf or NaN, nothing changed by
a call that fails.

The bad inputs are generated from one table of argument kinds (tests/contract/battery.py): for each
public function and each of its arguments, every bad value of the argument's kind must raise a
ValueError or TypeError whose message starts with the argument's name, leave every array passed
in unchanged, every generator's state unchanged and every policy's theta unchanged. Then one
test per class of failure the battery was built against, and the overflow cases per function.
"""

import copy
import inspect
import tracemalloc

import numpy as np
import pytest

from battery import GRADER, MDP, POLICY, RNG, TABLE, cases, counts, fname
from minirl_lm import kernels, tasks
from minirl_lm.boundary import one_of
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.direct import dpo
from minirl_lm.pg import grpo, kl, reinforce
from minirl_lm.pg.advantages import advantages, standardized
from minirl_lm.values import critic, optimum

CASES = cases()


def _snapshot(kw):
    """Copies of what a call must not change: arrays, generator states, policy tables."""
    snap = {}
    for k, v in kw.items():
        if k == "out":  # an output buffer is written
            continue
        if isinstance(v, np.ndarray):
            snap[k] = ("array", v.copy())
        elif isinstance(v, np.random.Generator):
            snap[k] = ("rng", copy.deepcopy(v.bit_generator.state))
        elif isinstance(v, TabularPolicy):
            snap[k] = ("theta", v.theta.copy())
        elif isinstance(v, TokenMDP) and v.ids == "lazy":
            snap[k] = ("lazy", v.checkpoint())
    return snap


def _unchanged(kw, snap):
    for k, (what, old) in snap.items():
        v = kw[k]
        if what == "array":
            assert v.shape == old.shape and np.array_equal(v, old, equal_nan=True), k
        elif what == "rng":
            assert v.bit_generator.state == old, f"{k}: generator advanced"
        elif what == "theta":
            assert np.array_equal(v.theta, old), f"{k}: theta written"
        else:
            assert v.checkpoint() == old, f"{k}: lazy ids handed out"


def test_battery_valid_arguments_work():
    """Every row of the table runs with its valid arguments (so each bad case below fails
    because of its one bad argument)."""
    seen = set()
    for name, func, valid, *_ in CASES:
        if name not in seen:
            seen.add(name)
            func(**valid())


@pytest.mark.parametrize("name, func, valid, arg, label, bad", CASES, ids=[f"{c[0]}-{c[3]}-{c[4]}" for c in CASES])
def test_bad_input(name, func, valid, arg, label, bad):
    kw = valid()
    kw[arg] = bad
    snap = _snapshot(kw)
    with pytest.raises((ValueError, TypeError)) as e:
        func(**kw)
    msg = str(e.value)
    if label == "empty":  # the error may name the array it is compared with
        assert any(msg.startswith(a + ":") or msg.startswith(a + " ") for a in kw), msg
    else:
        assert msg.startswith(arg + ":"), f"{name}({arg}={label}): {msg}"
    assert "expected" in msg, msg  # says what was expected
    assert type(e.value) in (ValueError, TypeError)
    _unchanged(kw, snap)


def test_case_counts():
    c = counts()
    assert sum(c.values()) == len(CASES) and len(c) >= 70
    assert min(c.values()) >= 4


# ---------------------------------------------------------------- masks: holes, or right padding said so

HOLES = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])  # (B, T): a hole at (0, 1), a leading 0 in row 1


def _rows(kind):
    return [(func, args) for func, args in TABLE if any(k == kind for k, _ in args.values())]


def _valid(args, kind, mask):
    return {k: (mask.copy() if k_ == kind else f()) for k, (k_, f) in args.items()}


@pytest.mark.parametrize("func, args", _rows("mask"), ids=[fname(f) for f, _ in _rows("mask")])
def test_every_token_level_mask_takes_holes(func, args):
    """Every argument of kind "mask" (a token-level mask) accepts a mask with holes: the call
    that works with the right-padded mask works with HOLES, and returns finite values."""
    out = func(**_valid(args, "mask", HOLES))
    leaves = list(out) if isinstance(out, tuple) else [out]
    leaves = [x for o in leaves for x in (o if isinstance(o, tuple) else (o,))]  # (loss, (dc, dr))
    assert all(np.isfinite(np.asarray(x, dtype=np.float64)).all() for x in leaves)


PG_MASKS = [(f, a) for f, a in _rows("mask") if f.__module__.startswith("minirl_lm.pg.")]


@pytest.mark.parametrize("func, args", PG_MASKS, ids=[fname(f) for f, _ in PG_MASKS])
def test_a_docstring_says_holes_where_holes_are_accepted(func, args):
    """A pg function whose mask takes holes does not tell its reader the mask is right-padded."""
    doc = inspect.getdoc(func) or ""
    assert "right-padded" not in doc and "right padded" not in doc, fname(func)


@pytest.mark.parametrize("func, args", _rows("pmask"), ids=[fname(f) for f, _ in _rows("pmask")])
def test_every_prefix_mask_refuses_holes_and_says_where_they_go(func, args):
    """Every argument of kind "pmask" (a mask read as a prefix) refuses HOLES with a message that
    says what needs right padding and names the function that takes a mask with holes."""
    with pytest.raises(ValueError) as e:
        func(**_valid(args, "pmask", HOLES))
    msg = str(e.value)
    assert msg.startswith("mask: expected right padding (1s then 0s in each row) for "), msg
    assert "; a mask with holes (tool outputs) is accepted by the token-level objectives; here use " in msg
    where = msg.rsplit("here use ", 1)[1]
    assert "action_mask" in where or "action_view" in where, where  # the multi-turn tools, named


def test_the_mask_kinds_cover_both_sides():
    assert len(_rows("mask")) >= 30 and len(_rows("pmask")) >= 10


# ---------------------------------------------------------------- class 1: overflow is an error

B1 = np.array([[1.0]])
OVERFLOW = [
    (
        "kl_objective",
        lambda: optimum.kl_objective([[0.5, 0.5]], [[0.999, 0.001]], [[0.0, 0.0]], 1e308),
        "kl_objective",
    ),
    ("exploit_threshold", lambda: optimum.exploit_threshold(1e308, 1e-10), "exploit_threshold"),
    ("hedge_odds", lambda: optimum.hedge_odds(1.0, 4.0, 1e-10), "hedge_odds"),
    (
        "per_token_rewards",
        lambda: critic.per_token_rewards([0.0], [[-1e308]], [[1e308]], [[1.0]], 1.0),
        "per_token_rewards",
    ),
    (
        "per_token_rewards beta",
        lambda: critic.per_token_rewards([0.0], [[-100.0]], [[0.0]], [[1.0]], 1e307),
        "per_token_rewards",
    ),
    ("value_loss", lambda: critic.value_loss([1e308], [[0]], [[-1e308]], [[1.0]]), "value_loss"),
    ("fit_values", lambda: critic.fit_values([0.0], [[0]], [[1e100]], [[1.0]], lr=1e300), "fit_values"),
    (
        "fit_values rewards",
        lambda: critic.fit_values([0.0], [[0, 0]], [[1e308, 1e308]], [[1.0, 1.0]]),
        "fit_values",
    ),
    ("td_errors", lambda: critic.td_errors([1e308, -1e308], [[1, 0]], [[1e308, 0.0]], [[1.0, 1.0]]), "td_errors"),
    (
        "monte_carlo_returns",
        lambda: critic.monte_carlo_returns([[1e308, 1e308]], [[1.0, 1.0]]),
        "monte_carlo_returns",
    ),
    ("gae", lambda: critic.gae([[1e308, 1e308]], [[1.0, 1.0]]), "gae"),
    # a function that declares its boundary (boundary.py) names itself for an overflow
    ("dpo beta", lambda: dpo.dpo_loss([-2.0], [0.0], [0.0], [0.0], 1e308), "dpo_loss"),
    ("ipo beta", lambda: dpo.dpo_loss([-1.0], [0.0], [0.0], [0.0], 5e-324, variant="ipo"), "dpo_loss"),
    ("dpo margin", lambda: dpo.dpo_loss([-1e308], [1e308], [0.0], [0.0], 1.0), "dpo_loss"),
    ("bradley_terry", lambda: dpo.bradley_terry_loss([-1e308], [1e308]), "bradley_terry_loss"),
    (
        "reward_table_loss",
        lambda: dpo.reward_table_loss([[-6e307, 6e307]], [0, 0], [0, 0], [1, 1]),
        "reward_table_loss",
    ),
    ("kl_per_token", lambda: kl.kl_per_token([[-1e308]], [[-1.0]], [[1.0]]), "kl_per_token"),
    ("kl_per_token k2", lambda: kl.kl_per_token([[-1e308]], [[1e308]], [[1.0]], "k2"), "kl_per_token"),
    ("kl_penalty", lambda: kl.kl_penalty([[-800.0]], [[0.0]], [[1.0]]), "kl_penalty"),
    ("kl_in_reward", lambda: kl.kl_in_reward([1.0], [[-2.0]], [[0.0]], [[1.0]], 1e308), "kl_in_reward"),
    (
        "sequence_reinforce_loss",
        lambda: reinforce.sequence_reinforce_loss([1e308, 1e308], [-1e308, -1e308]),
        "sequence_reinforce_loss",
    ),
    ("reinforce_loss", lambda: reinforce.reinforce_loss([[-1e308]], [1e308], [[1.0]]), "reinforce_loss"),
    (
        "exact_kl_grad_theta",
        lambda: kl.exact_kl_grad_theta([[0.0, 0.0]], [[0.0, -1e5]], [1e308]),
        "exact_kl_grad_theta",
    ),
    (
        "TabularPolicy.backward",
        lambda: TabularPolicy(np.zeros((1, 2))).backward([[0, 0]], [[0, 0]], [[1.0, 1.0]], [[1e308, 1e308]]),
        "TabularPolicy.backward",
    ),
    (
        "tabular_backward",
        lambda: kernels.tabular_backward(
            np.zeros((1, 2)),
            np.zeros((1, 2), np.int64),
            np.zeros((1, 2), np.int64),
            np.ones((1, 2)),
            np.full((1, 2), 1e308),
        ),
        "tabular_backward",
    ),
]


@pytest.mark.parametrize("label, call, name", OVERFLOW, ids=[o[0] for o in OVERFLOW])
def test_overflow_is_a_value_error_naming_the_driver(label, call, name):
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value).startswith(name + ":"), str(e.value)


def test_tilted_optimum_is_computed_stably():
    """-inf + inf inside used to give NaN; the answer is well defined: pi_ref's support only."""
    pi = optimum.tilted_optimum([[0.0, 0.3, 0.7]], [[1e300, 0.0, 0.0]], 1e-10)
    np.testing.assert_allclose(pi, [[0.0, 0.3, 0.7]], rtol=1e-15)
    pi = optimum.tilted_optimum([[0.0, 0.3, 0.7]], [[1e300, 1.0, 0.0]], 1e-10)
    assert np.array_equal(pi, [[0.0, 1.0, 0.0]])


# ---------------------------------------------------------------- class 2: failing calls change nothing


def test_grpo_step_failing_in_a_later_epoch_changes_nothing():
    mdp, pol, ref, rng = MDP(), POLICY(), POLICY(), RNG()
    theta, state = pol.theta.copy(), copy.deepcopy(rng.bit_generator.state)
    with pytest.raises(ValueError, match="^grpo_step: expected a finite .* epoch"):
        grpo.grpo_step(pol, ref, mdp, GRADER, rng, K=4, mu=2, lr=1e308)
    assert np.array_equal(pol.theta, theta) and rng.bit_generator.state == state
    out = grpo.grpo_step(pol, ref, mdp, GRADER, rng, K=4, mu=2, lr=0.1)  # then it works
    assert np.isfinite(pol.theta).all() and len(out["loss"]) == 2


def test_grpo_step_lazy_ids_taken_back():
    mdp = TokenMDP(["a", "b"], V=3, eos=0, max_len=3, ids="lazy", capacity=30)
    pol, ref, rng = TabularPolicy(np.zeros((30, 3))), TabularPolicy(np.zeros((30, 3))), RNG()
    with pytest.raises(TypeError, match="^grader:"):
        grpo.grpo_step(pol, ref, mdp, lambda p, r: None, rng, K=3)
    assert mdp.checkpoint() == 2 and len(mdp._ids._index) == 2  # only the prompts


def test_grpo_step_success_updates_in_place():
    pol = POLICY()
    arr = pol.theta
    grpo.grpo_step(pol, POLICY(), MDP(), GRADER, RNG(), K=2)
    assert pol.theta is arr and not np.array_equal(arr, POLICY().theta)


def test_bt_sample_preferences_checks_rows_before_drawing():
    rng = RNG()
    state = copy.deepcopy(rng.bit_generator.state)
    mu = np.array([[0.5, 0.5 + 1e-6], [0.5, 0.5]])
    with pytest.raises(ValueError, match="^mu:"):
        dpo.bt_sample_preferences(np.zeros((2, 2)), mu, 5, rng)
    assert rng.bit_generator.state == state
    # anything that passes is accepted by rng.choice (tolerance 1e-9 < its ~1.5e-8)
    mu = np.array([[0.5, 0.5 + 5e-10], [0.5, 0.5]])
    dpo.bt_sample_preferences(np.zeros((2, 2)), mu, 5, rng)


# ---------------------------------------------------------------- class 3: errors name the argument


@pytest.mark.parametrize(
    "call, name, exc",
    [
        (lambda: one_of({"mean"})(["mean"], "baseline", {}), "baseline", TypeError),
        (lambda: advantages(np.ones((2, 2)), ["mean"]), "baseline", TypeError),
        (lambda: dpo.dpo_loss([0.0], [0.0], [0.0], [0.0], 1.0, variant=["dpo"]), "variant", TypeError),
        (lambda: TokenMDP(["a"], V=3, ids=["lazy"]), "ids", TypeError),
        (lambda: standardized(np.zeros((0, 3))), "rewards", ValueError),
        (lambda: kl.exact_kl(np.zeros((2, 0)), np.zeros((2, 0))), "p", ValueError),
        (
            lambda: optimum.kl_objective(np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 2)), 1.0),
            "pi",
            ValueError,
        ),
        (lambda: grpo.grpo_step(POLICY(), POLICY(), None, GRADER, RNG(), K=2), "mdp", TypeError),
        (lambda: grpo.grpo_step(POLICY(), POLICY(), MDP(), lambda p: 1.0, RNG(), K=2), "grader", TypeError),
        (lambda: tasks.train(2, 4, 0, grader=lambda p, r: "1"), "grader", TypeError),
        (lambda: tasks.train(2, 4, 0, grader=lambda p, r: None), "grader", TypeError),
    ],
)
def test_errors_name_the_argument(call, name, exc):
    with pytest.raises(exc) as e:
        call()
    assert str(e.value).startswith(name + ":"), str(e.value)


# ---------------------------------------------------------------- class 4: nothing ignored or misread


def test_prefixes_are_validated():
    mdp = TokenMDP(["p"], V=8, eos=1, max_len=3)
    for call in (
        lambda: mdp.step((7, -1), 1),
        lambda: mdp.step((0, 1), 2),
        lambda: mdp.state_id(0, (0.9,)),
        lambda: mdp.is_terminal((9,)),
    ):
        with pytest.raises((ValueError, TypeError), match="^prefix:"):
            call()
    assert mdp.is_terminal((7, 1)) and not mdp.is_terminal((7,)) and mdp.is_terminal((7, 2, 3))
    assert mdp.step((7,), 1) == (7, 1)


def test_options_checked_whatever_the_mode():
    for call, name in [
        (lambda: advantages(np.ones((1, 2)), "mean", std_eps=-1.0), "std_eps"),
        (lambda: advantages(np.ones((1, 2)), "none", ddof=2), "ddof"),
        (lambda: reinforce.token_weights(np.ones((1, 2)), "seq_sum", max_len=0), "max_len"),
        (lambda: TokenMDP(["a"], V=2, capacity=-1, ids="enumerate"), "capacity"),
        (lambda: tasks.train(2, 4, 0, record_at=[-1]), "record_at"),
    ]:
        with pytest.raises((ValueError, TypeError)) as e:
            call()
        assert str(e.value).startswith(name + ":"), str(e.value)


def test_gold_grader_checks_the_response():
    assert tasks.gold_grader("2+2", (2,)) == 1.0 and tasks.gold_grader("8*8", (8,)) == 0.0
    for resp in [(-1,), (2, 3), (9,)]:
        with pytest.raises(ValueError, match="^response:"):
            tasks.gold_grader("2+2", resp)


def test_reward_table_rejects_a_nan_grader():
    with pytest.raises(ValueError, match="^grader:"):
        tasks.reward_table(lambda p, r: float("nan"))


# ---------------------------------------------------------------- class 5: no hangs


def test_huge_max_len_fails_fast_or_works_lazily():
    tracemalloc.start()  # refused, or built lazily: nothing of the size of 10**12 is allocated
    with pytest.raises(ValueError, match="^max_len:"):
        TokenMDP(("a",), V=3, max_len=10**12)
    mdp = TokenMDP(("a",), V=3, max_len=10**12, ids="lazy", capacity=10)
    assert mdp.state_id(0, (1, 2)) == 1
    m1 = TokenMDP(("a",), V=2, eos=0, max_len=1000)  # A = 1: a chain
    assert m1.S == 1000 and m1.prefix_of(999) == (0, (1,) * 999)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2**26


# ---------------------------------------------------------------- class 6: the kernels


def test_kernel_shape_mismatch_is_an_error_not_a_crash():
    with pytest.raises(ValueError, match="^tokens:"):
        kernels.dense_logp(np.zeros((3, 4, 5)), np.zeros((0, 4), np.int64), np.ones((3, 4)))
    with pytest.raises(ValueError, match="^tokens:"):
        kernels.tabular_logp(
            np.zeros((2, 3)), np.zeros((1, 2), np.int64), np.full((1, 2), 3, np.int64), np.ones((1, 2))
        )


def test_kernel_padding_is_never_read():
    """Ids at padding may hold anything (the cores never read them): not an error."""
    tok = np.array([[1, 99]], np.int64)
    logp, _ = kernels.dense_logp(np.zeros((1, 2, 4)), tok, np.array([[1.0, 0.0]]))
    assert logp[0, 1] == 0.0


def test_public_kernels_equal_their_cores():
    rng = np.random.default_rng(0)
    lg = rng.standard_normal((3, 4, 5))
    tok = rng.integers(0, 5, (3, 4))
    m = np.ones((3, 4))
    w = rng.standard_normal((3, 4))
    for a, b in zip(kernels.dense_logp(lg, tok, m), kernels._dense_logp(lg, tok, m)):
        assert np.array_equal(a, b)
    assert np.array_equal(kernels.dense_backward(lg, tok, m, w), kernels._dense_backward(lg, tok, m, w))
