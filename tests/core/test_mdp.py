"""The token MDP: state ids, transitions by concatenation, rollouts, masks, determinism."""

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minirl_lm.core.mdp import Rollout, TokenMDP
from minirl_lm.core.policy import TabularPolicy
from quiet import raises


def random_policy(mdp, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return TabularPolicy(scale * rng.normal(size=(mdp.S, mdp.V)))


@pytest.mark.parametrize("V,eos,max_len", [(4, 3, 3), (3, None, 2), (5, 0, 2), (2, 1, 4), (9, None, 1), (3, 0, 3)])
def test_enumerated_ids_are_a_bijection_onto_0_S(V, eos, max_len):
    mdp = TokenMDP(["p", "q", "r"], V=V, eos=eos, max_len=max_len)
    A = V - (eos is not None)
    assert mdp.S == 3 * sum(A**t for t in range(max_len))
    seen = set()
    cont = [y for y in range(V) if y != eos]
    for n in range(3):
        for t in range(max_len):
            for prefix in itertools.product(cont, repeat=t):
                s = mdp.state_id(n, prefix)
                assert mdp.prefix_of(s) == (n, prefix)
                seen.add(s)
    assert seen == set(range(mdp.S))


def test_transition_is_concatenation_and_terminal_rules():
    mdp = TokenMDP(["p"], V=4, eos=3, max_len=3)
    assert mdp.step((0, 2), 1) == (0, 2, 1)
    assert mdp.is_terminal((0, 3)) and mdp.is_terminal((0, 1, 2)) and not mdp.is_terminal((0, 1))
    with pytest.raises(ValueError, match="prefix"):
        mdp.state_id(0, (0, 3))
    with pytest.raises(ValueError, match="prefix"):
        mdp.state_id(0, (0, 1, 2))


@pytest.mark.parametrize("ids", ["enumerate", "lazy"])
def test_rollout_invariants(ids):
    kw = dict(capacity=400) if ids == "lazy" else {}
    mdp = TokenMDP(["a", "b", "c"], V=4, eos=3, max_len=4, ids=ids, **kw)
    S = mdp.S
    pol = TabularPolicy(np.random.default_rng(3).normal(size=(S, 4)))
    ro = mdp.rollout(pol, K=5, rng=np.random.default_rng(7))
    assert isinstance(ro, Rollout)
    B, T = 15, 4
    assert ro.states.shape == ro.tokens.shape == ro.mask.shape == (B, T)
    np.testing.assert_array_equal(ro.prompt, np.repeat(np.arange(3), 5))  # prompt-major
    np.testing.assert_array_equal(ro.lengths, ro.mask.sum(1))
    assert (np.diff(ro.mask, axis=1) <= 0).all()  # right-padded
    for b in range(B):
        L = ro.lengths[b]
        resp = tuple(ro.tokens[b, :L])
        # EOS ends a response; without EOS it runs to the cap
        assert (resp[-1] == 3) or L == T
        assert 3 not in resp[:-1]
        # the state before token t is the state of the concatenated prefix y_<t
        for t in range(L):
            assert ro.states[b, t] == mdp.state_id(ro.prompt[b], resp[:t])
        assert (ro.tokens[b, L:] == 0).all() and (ro.states[b, L:] == 0).all()


def test_rollout_is_deterministic_and_seed_dependent():
    mdp = TokenMDP(["a", "b"], V=5, eos=4, max_len=5)
    pol = random_policy(mdp)
    r1 = mdp.rollout(pol, 8, np.random.default_rng(11))
    r2 = mdp.rollout(pol, 8, np.random.default_rng(11))
    r3 = mdp.rollout(pol, 8, np.random.default_rng(12))
    for f in ("states", "tokens", "mask", "prompt", "lengths"):
        assert np.array_equal(getattr(r1, f), getattr(r2, f))
    assert not np.array_equal(r1.tokens, r3.tokens)


def test_one_token_bandit_without_eos():
    mdp = TokenMDP(["2+2", "3*4"], V=9, eos=None, max_len=1)
    assert mdp.S == 2
    ro = mdp.rollout(TabularPolicy(np.zeros((2, 9))), 3, np.random.default_rng(0))
    assert (ro.lengths == 1).all() and (ro.states[:, 0] == ro.prompt).all()


def test_score_calls_grader_on_prompt_and_response():
    mdp = TokenMDP(["a", "b"], V=3, eos=2, max_len=3)
    ro = mdp.rollout(random_policy(mdp), 4, np.random.default_rng(1))
    r = mdp.score(lambda p, y: len(y) + (p == "b"), ro)
    np.testing.assert_array_equal(r, ro.lengths + (ro.prompt == 1))


@settings(max_examples=30, deadline=None)
@given(
    V=st.integers(2, 5),
    max_len=st.integers(1, 4),
    K=st.integers(1, 4),
    seed=st.integers(0, 10_000),
    use_eos=st.booleans(),
)
def test_rollout_property(V, max_len, K, seed, use_eos):
    eos = V - 1 if use_eos else None
    mdp = TokenMDP(["x", "y"], V=V, eos=eos, max_len=max_len)
    ro = mdp.rollout(random_policy(mdp, seed, 2.0), K, np.random.default_rng(seed))
    assert (np.diff(ro.mask, axis=1) <= 0).all()
    assert ((ro.lengths >= 1) & (ro.lengths <= max_len)).all()
    if eos is None:
        assert (ro.lengths == max_len).all()
    else:
        last = ro.tokens[np.arange(2 * K), ro.lengths - 1]
        assert ((last == eos) | (ro.lengths == max_len)).all()


def test_lazy_ids_assigned_on_first_visit_and_capacity():
    mdp = TokenMDP(["a", "b"], V=3, eos=2, max_len=6, ids="lazy", capacity=5)
    assert mdp.state_id(1, ()) == 1 and mdp.state_id(0, (0,)) == 2
    assert mdp.state_id(0, (0,)) == 2 and mdp.prefix_of(2) == (0, (0,))
    mdp.state_id(0, (1,)), mdp.state_id(1, (1,))
    with pytest.raises(ValueError, match="^capacity: expected a free state id"):
        mdp.state_id(1, (0,))


BAD = [
    (lambda: TokenMDP([], V=3), ValueError, "prompts"),
    (lambda: TokenMDP("abc", V=3), TypeError, "prompts"),
    (lambda: TokenMDP(["a"], V=0), ValueError, "V"),
    (lambda: TokenMDP(["a"], V=2.5), TypeError, "V"),
    (lambda: TokenMDP(["a"], V=3, eos=3), ValueError, "eos"),
    (lambda: TokenMDP(["a"], V=3, eos=-1), ValueError, "eos"),
    (lambda: TokenMDP(["a"], V=3, max_len=0), ValueError, "max_len"),
    (lambda: TokenMDP(["a"], V=3, max_len=-2), ValueError, "max_len"),
    (lambda: TokenMDP(["a"], V=3, ids="tree"), ValueError, "ids"),
    (lambda: TokenMDP(["a"], V=3, ids="lazy"), ValueError, "capacity"),
    (lambda: TokenMDP(["a"], V=50, eos=0, max_len=8), ValueError, "max_len"),
    (lambda: TokenMDP(["a"], V=3).state_id(1, ()), ValueError, "n"),
    (lambda: TokenMDP(["a"], V=3, max_len=2).state_id(0, (3,)), ValueError, "prefix"),
    (lambda: TokenMDP(["a"], V=3).prefix_of(5), ValueError, "s"),
    (
        lambda: TokenMDP(["a"], V=3).rollout(TabularPolicy(np.zeros((1, 3))), 0, np.random.default_rng()),
        ValueError,
        "K",
    ),
    (lambda: TokenMDP(["a"], V=3).rollout(TabularPolicy(np.zeros((1, 3))), 2, 42), TypeError, "rng"),
    (
        lambda: TokenMDP(["a"], V=3).rollout(
            TabularPolicy(np.zeros((1, 3))), 2, np.random.default_rng(), prompts=[1]
        ),
        ValueError,
        "prompts",
    ),
    (lambda: TokenMDP(["a"], V=3).score("grader", None), TypeError, "grader"),
    (lambda: TokenMDP(["a"], V=3, max_states="x"), TypeError, "max_states"),
    (lambda: TokenMDP(["a"], V=3, max_len=2).step((0,), 3), ValueError, "y"),
    (lambda: TokenMDP(["a"], V=3, max_len=2).step((0,), -1), ValueError, "y"),
    (
        lambda: TokenMDP(["a", "b"], V=3, eos=2, max_len=2).rollout(
            TabularPolicy(np.zeros((100, 8))), 2, np.random.default_rng()
        ),
        ValueError,
        "policy",
    ),
    (
        lambda: TokenMDP(["a", "b"], V=3, eos=2, max_len=2).rollout(
            TabularPolicy(np.zeros((6, 2))), 2, np.random.default_rng()
        ),
        ValueError,
        "policy",
    ),
    (lambda: TokenMDP(["a"], V=3).rollout("policy", 2, np.random.default_rng()), TypeError, "policy"),
]


@pytest.mark.parametrize("call,exc,name", BAD)
def test_bad_input_is_rejected_with_a_named_error(call, exc, name):
    with pytest.raises(exc, match=rf"^{name}:"):
        call()


def test_grader_returning_a_string_is_rejected():
    mdp = TokenMDP(["a"], V=3)
    ro = mdp.rollout(TabularPolicy(np.zeros((1, 3))), 2, np.random.default_rng(0))
    with pytest.raises(TypeError, match="^grader:"):
        mdp.score(lambda p, y: "1", ro)


def test_grader_returning_nan_is_rejected():
    mdp = TokenMDP(["a"], V=3)
    ro = mdp.rollout(TabularPolicy(np.zeros((1, 3))), 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="grader"):
        mdp.score(lambda p, y: float("nan"), ro)


@pytest.mark.parametrize("V,eos,max_len", [(3, 2, 3), (4, None, 2), (2, 0, 4)])
def test_all_responses_enumerates_every_response_once_and_probabilities_sum_to_one(V, eos, max_len):
    mdp = TokenMDP(["a", "b"], V=V, eos=eos, max_len=max_len)
    ro = mdp.all_responses()
    resp = list(zip(ro.prompt.tolist(), ro.responses()))
    assert len(set(resp)) == len(resp)
    A = V - (eos is not None)
    per_prompt = A**max_len + (sum(A**t for t in range(max_len)) if eos is not None else 0)
    assert len(resp) == 2 * per_prompt
    pol = random_policy(mdp, seed=4, scale=2.0)
    _, seq = pol.logp(ro.states, ro.tokens, ro.mask)
    for n in range(2):
        assert abs(np.exp(seq[ro.prompt == n]).sum() - 1.0) < 1e-12
    for b, (n, y) in enumerate(resp):
        assert mdp.is_terminal(y) and all(ro.states[b, t] == mdp.state_id(n, y[:t]) for t in range(len(y)))


# ---- the two id schemes behind one interface; the residue of bad input
def test_lazy_and_enumerated_ids_name_the_same_states():
    kw = dict(prompts=["a", "b"], V=4, eos=3, max_len=3)
    enum, lazy = TokenMDP(**kw), TokenMDP(**kw, ids="lazy", capacity=enum_S(kw))
    pol_e, pol_l = TabularPolicy(np.zeros((enum.S, 4))), TabularPolicy(np.zeros((lazy.S, 4)))
    ro_e = enum.rollout(pol_e, 6, np.random.default_rng(2))
    ro_l = lazy.rollout(pol_l, 6, np.random.default_rng(2))  # uniform: the same draws
    assert np.array_equal(ro_e.tokens, ro_l.tokens) and np.array_equal(ro_e.mask, ro_l.mask)
    real = ro_e.mask > 0
    for s_e, s_l in zip(ro_e.states[real], ro_l.states[real]):
        assert enum.prefix_of(int(s_e)) == lazy.prefix_of(int(s_l))
    assert enum.all_states()[enum.state_id(1, (2, 0))] == (1, (2, 0))
    with pytest.raises(ValueError, match="^ids: all_states needs ids='enumerate'"):
        lazy.all_states()
    with pytest.raises(ValueError, match="^ids: all_responses needs ids='enumerate'"):
        lazy.all_responses()
    with pytest.raises(ValueError, match="^s: expected a visited state id"):
        lazy.prefix_of(lazy.S - 1)


def enum_S(kw):
    return TokenMDP(**kw).S


def test_a_full_capacity_during_a_rollout_takes_its_ids_back():
    mdp = TokenMDP(["a"], V=3, eos=0, max_len=4, ids="lazy", capacity=3)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="^capacity: expected a free state id for"):
        mdp.rollout(TabularPolicy(np.zeros((3, 3))), 20, rng)
    assert mdp.checkpoint() == 1 and rng.bit_generator.state == state


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(ids="lazy", capacity=10, max_len=2**63), "max_len"),  # T = 2**63: no allocation
        (dict(K=10**12), "K"),
    ],
)
def test_huge_rollouts_are_refused_before_any_allocation(kw, name):
    kw = dict(kw)  # a copy: the parameter is shared by every run of the test in one process
    K = kw.pop("K", 2)
    mdp = TokenMDP(["a"], V=3, **kw)
    msg = raises(ValueError, lambda: mdp.rollout(TabularPolicy(np.zeros((mdp.S, 3))), K, np.random.default_rng(0)))
    assert msg.startswith(f"{name}: expected") and "at most 2**31 entries" in msg, msg


def test_prompt_indices_may_not_be_bools():
    mdp = TokenMDP(["a", "b"], V=3)
    pol = TabularPolicy(np.zeros((2, 3)))
    msg = raises(TypeError, lambda: mdp.rollout(pol, 1, np.random.default_rng(0), [True, 0]))
    assert msg == "prompts: expected integer ids, got a bool in [True, 0]"
    assert mdp.rollout(pol, 1, np.random.default_rng(0), [1, 0]).prompt.tolist() == [1, 0]


@pytest.mark.parametrize(
    "value, exc",
    [
        (None, TypeError),
        (np.array([1.0]), TypeError),
        (np.array(1.0), TypeError),
        ("1.0", TypeError),
        (np.inf, ValueError),
        (10**400, ValueError),
    ],
)
def test_score_rejects_every_grader_result_but_a_finite_number(value, exc):
    mdp = TokenMDP(["a"], V=3)
    ro = mdp.rollout(TabularPolicy(np.zeros((1, 3))), 2, np.random.default_rng(0))
    msg = raises(exc, lambda: mdp.score(lambda p, y: value, ro))
    assert msg.startswith("grader: expected a") and "for response" in msg, msg


def test_rollout_responses_are_the_unpadded_rows():
    mdp = TokenMDP(["a"], V=3, eos=0, max_len=3)
    ro = mdp.rollout(random_policy(mdp), 5, np.random.default_rng(4))
    resp = ro.responses()
    assert [len(y) for y in resp] == ro.lengths.tolist()
    assert all(list(y) == ro.tokens[b, : len(y)].tolist() for b, y in enumerate(resp))


def test_state_id_and_step_check_their_arguments_in_one_pass():
    mdp = TokenMDP(["a", "b"], V=3, eos=0, max_len=3)
    assert mdp.state_id(1, [2, np.int64(1)]) == mdp.state_id(1, (2, 1))
    assert (
        raises(TypeError, lambda: mdp.state_id(0, [True]))
        == "prefix: expected integer token ids, got True in [True]"
    )
    assert raises(ValueError, lambda: mdp.step((1,), 3)) == "y: expected an integer <= 2, got 3"
    assert raises(ValueError, lambda: mdp.state_id(2, ())) == "n: expected an integer <= 1, got 2"


def test_rollback_takes_only_a_checkpoint_in_range_and_changes_nothing_when_it_refuses():
    """Lazy mode: cp=None used to wipe every id (the prompts' roots too), cp=-1 or True to
    delete ids, a cp beyond the ids to do nothing, cp="a" to raise a slicing error."""
    mdp = TokenMDP(["a", "b"], V=3, max_len=3, ids="lazy", capacity=50)
    cp = mdp.checkpoint()
    assert cp == 2  # the prompts' roots
    mdp.state_id(0, (1,))
    mdp.state_id(1, (2, 0))
    before = (dict(mdp._ids._index), list(mdp._ids._prefix))
    for bad, exc in [
        (None, ValueError),
        (-1, ValueError),
        (1, ValueError),
        (5, ValueError),
        (True, TypeError),
        ("a", TypeError),
        (2.0, TypeError),
    ]:
        msg = raises(exc, lambda b=bad: mdp.rollback(b))
        assert msg.startswith("cp: expected"), msg
        assert (mdp._ids._index, mdp._ids._prefix) == before
    mdp.rollback(4)  # the ids handed out now: nothing to take back
    assert mdp.checkpoint() == 4
    mdp.rollback(cp)
    assert mdp.checkpoint() == 2 and mdp.state_id(1, ()) == 1
    enum = TokenMDP(["a"], V=3)
    enum.rollback(enum.checkpoint())  # None: nothing to roll back
    assert raises(ValueError, lambda: enum.rollback(0)).startswith("cp: expected None")


def test_a_tree_of_exactly_max_states_is_accepted_and_a_larger_one_named_with_its_size():
    assert TokenMDP(["a"], V=3, max_len=3, max_states=13).S == 13  # 1 + 3 + 9
    tail = "; use ids='lazy' with a capacity"
    for max_states, max_len, size in ((12, 3, "13"), (4, 3, "13"), (12, 5, "more")):  # 4: 1 + 3 = 4 goes on
        assert raises(ValueError, lambda: TokenMDP(["a"], V=3, max_len=max_len, max_states=max_states)) == (
            f"max_len: expected a prefix tree of at most max_states={max_states} states, got {size} "
            f"(max_len={max_len})" + tail
        )


def test_lazy_prefix_of_the_next_unvisited_id_is_named():
    mdp = TokenMDP(["a", "b"], V=3, eos=2, max_len=6, ids="lazy", capacity=5)  # ids 0 and 1 handed out
    assert raises(ValueError, lambda: mdp.prefix_of(2)) == "s: expected a visited state id < 2, got 2"


def test_bad_constructions_and_prefixes_are_named_exactly():
    assert raises(TypeError, lambda: TokenMDP((c for c in "ab"), V=3)) == (
        "prompts: expected a sequence of prompts, got generator"
    )
    assert (
        raises(ValueError, lambda: TokenMDP(["a"], V=3, eos=3))
        == "eos: expected an integer <= 2 (a token id), got 3"
    )
    assert raises(ValueError, lambda: TokenMDP(["a"], V=3, ids="lazy")) == (
        "capacity: expected an integer >= the number of prompts for ids='lazy', got None"
    )
    assert TokenMDP(["a"], V=1, max_len=2).S == 2  # one token and no EOS: allowed
    assert TokenMDP(["a", "b"], V=3, ids="lazy", capacity=2).S == 2  # a row per prompt's root: enough
    mdp = TokenMDP(["a", "b"], V=3, eos=2, max_len=4)
    assert raises(TypeError, lambda: mdp.state_id(0, iter([1]))) == (
        "prefix: expected a tuple of token ids, got list_iterator"
    )
    assert raises(TypeError, lambda: mdp.state_id(0, "ab")) == "prefix: expected a tuple of token ids, got str"
    for prefix in ((2, 0), (0, 2, 1)):
        assert raises(ValueError, lambda p=prefix: mdp.state_id(0, p)) == (
            f"prefix: expected no token after EOS (2), got {prefix}"
        )
    assert raises(ValueError, lambda: TokenMDP(["a"], V=3).prefix_of(1)) == "s: expected an integer <= 0, got 1"


def test_long_prefixes_are_shown_in_messages_of_200_characters():
    lazy = TokenMDP(["a"], V=3, eos=2, ids="lazy", capacity=10, max_len=100)
    for exc, prefix, head in (
        (TypeError, (True,) + (0,) * 99, "prefix: expected integer token ids, got True in (True, 0, 0,"),
        (ValueError, (5,) * 100, "prefix: expected token ids in [0, 3), got (5, 5,"),
        (ValueError, (2,) + (0,) * 99, "prefix: expected no token after EOS (2), got (2, 0, 0,"),
        (ValueError, (0,) * 100, "prefix: expected a non-terminal prefix, got (0, 0,"),
    ):
        msg = raises(exc, lambda p=prefix: lazy.state_id(0, p))
        assert msg.startswith(head) and len(msg) == 200, msg


def test_a_policy_table_for_another_mdp_or_with_bad_entries_is_named():
    mdp = TokenMDP(["a", "b"], V=3, eos=2, max_len=4)
    assert raises(
        ValueError, lambda: mdp.rollout(TabularPolicy(np.zeros((5, 3))), 1, np.random.default_rng(0))
    ) == (
        "policy: expected a policy with a table of shape (S, V) = (30, 3) for this MDP, "
        "got TabularPolicy with shape (5, 3)"
    )
    bad = "policy: expected a table theta with a finite entry in every row and no NaN or +inf"
    tables = [np.zeros((mdp.S, 3), np.int64)] + [np.zeros((mdp.S, 3)) for _ in range(3)]
    tables[1][1] = -np.inf  # a row without a finite entry (the other rows fine)
    tables[2][1, 0] = np.nan  # a NaN in rows that all have a finite entry
    tables[3][1, 0] = np.inf
    for theta in tables:  # a policy that is not a TabularPolicy (which refuses these itself)
        duck = SimpleNamespace(theta=theta, sample=lambda s, rng: np.zeros(len(s), np.int64))
        assert raises(ValueError, lambda d=duck: mdp.rollout(d, 1, np.random.default_rng(0))) == bad


def test_rollout_draws_with_the_policys_trusted_core_when_it_has_one():
    mdp = TokenMDP(["a", "b"], V=3, eos=2, max_len=4)

    class Core:
        theta = np.zeros((mdp.S, 3))

        def _sample(self, states, rng):
            return np.zeros(len(states), np.int64)

        def sample(self, states, rng):
            return np.ones(len(states), np.int64)

    assert (mdp.rollout(Core(), 1, np.random.default_rng(0)).tokens == 0).all()
    duck = SimpleNamespace(theta=np.zeros((mdp.S, 3)), sample=lambda s, rng: np.ones(len(s), np.int64))
    ro = mdp.rollout(duck, 1, np.random.default_rng(0))  # no core: its sample()
    assert (ro.tokens == 1).all() and ro.states.dtype == np.int64 and ro.lengths.tolist() == [4, 4]


def test_score_names_a_rollout_not_of_this_mdp_exactly():
    mdp = TokenMDP(["a", "b"], V=3, eos=2, max_len=4)
    ro = mdp.rollout(TabularPolicy(np.zeros((mdp.S, 3))), 2, np.random.default_rng(0))
    fields = dict(states=ro.states, tokens=ro.tokens, mask=ro.mask, prompt=ro.prompt, lengths=ro.lengths)
    zero = lambda p, y: 0.0  # noqa: E731
    duck = SimpleNamespace(prompt=ro.prompt, tokens=ro.tokens, lengths=ro.lengths)
    assert raises(ValueError, lambda: mdp.score(zero, duck)) == "rollout: expected a Rollout, got SimpleNamespace"
    head = "rollout: expected "
    for change, msg in (
        (dict(prompt=np.array([0, 0, 1, 2])), "prompt indices in [0, 2), got 2"),
        (dict(prompt=np.array([0, 0, -1, 1])), "prompt indices in [0, 2), got -1"),
        (dict(prompt=np.array([[0, 0, 1, 1]])), "prompt indices of integers and shape (B,), got int64 (1, 4)"),
        (dict(tokens=np.full((4, 4), 3)), "token ids in [0, 3), got 3"),
        (dict(tokens=ro.tokens[:3]), "token ids of integers and shape (B, T), got int64 (3, 4)"),
        (dict(tokens=ro.tokens.astype(float)), "token ids of integers and shape (B, T), got float64 (4, 4)"),
        (dict(lengths=np.array([0, 5, 1, 1])), "lengths in [0, 5), got 5"),
        (dict(lengths=np.array([1, 1, 1, -2])), "lengths in [0, 5), got -2"),
        (dict(lengths=np.array([[1, 1, 1, 1]])), "lengths of integers and shape (B,), got int64 (1, 4)"),
    ):
        bad = Rollout(**{**fields, **change})
        assert raises(ValueError, lambda b=bad: mdp.score(zero, b)) == head + msg


def test_rollout_sizes_and_prompts_are_named_exactly():
    rng = np.random.default_rng(0)
    mdp = TokenMDP(["a", "b"], V=3, eos=2, max_len=4)
    pol = TabularPolicy(np.zeros((mdp.S, 3)))
    for prompts, got in (([-1, 1], -1), ([0, 2], 2)):  # the offending end named
        assert raises(ValueError, lambda p=prompts: mdp.rollout(pol, 1, rng, prompts=p)) == (
            f"prompts: expected prompt indices in [0, 2), got {got}"
        )
    cap = " whose (B, T) rollout arrays are of at most 2**31 entries, got "
    lazy = TokenMDP(["a"], V=3, ids="lazy", capacity=10, max_len=2**31)  # max_len alone: exactly 2**31
    pol = TabularPolicy(np.zeros((10, 3)))
    assert raises(ValueError, lambda: lazy.rollout(pol, 2, rng)) == "K: expected responses per prompt" + cap + str(
        2**32
    )
    lazy = TokenMDP(["a"], V=3, ids="lazy", capacity=10, max_len=2**30)  # three rows of the one prompt
    assert raises(ValueError, lambda: lazy.rollout(pol, 4, rng, prompts=[0, 0, 0])) == (
        "max_len: expected a length cap" + cap + str(3 * 2**30)
    )
    small = TokenMDP(["a"], V=3, max_len=2)
    assert raises(ValueError, lambda: small.rollout(TabularPolicy(np.zeros((4, 3))), 10**12, rng)) == (
        "K: expected responses per prompt" + cap + "2000000000000"
    )


def test_the_continuing_tokens_are_the_vocabulary_without_eos():
    assert TokenMDP(["a"], V=4, eos=3).A == 3 and TokenMDP(["a"], V=4).A == 4
