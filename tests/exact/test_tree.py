"""minirl_lm.exact.tree: recursions over the prefix tree against the list of every response."""

import numpy as np
import pytest

from minirl_lm.boundary import array
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.exact.tree import allowing_inf, children, tree_product, tree_sum


def _setup(max_len, eos=0, seed=0):
    mdp = TokenMDP(["ab", "b", "x"], V=3, eos=eos, max_len=max_len)
    rng = np.random.default_rng(seed)
    pi, mu = (TabularPolicy(rng.normal(size=(mdp.S, mdp.V))) for _ in range(2))
    return mdp, pi, mu


def test_children_follow_the_mdp():
    mdp, _, _ = _setup(3)
    child, roots = children(mdp)
    for s, (n, prefix) in enumerate(mdp.all_states()):
        for y in range(mdp.V):
            nxt = prefix + (y,)
            assert child[s, y] == (-1 if mdp.is_terminal(nxt) else mdp.state_id(n, nxt))
    assert [mdp.prefix_of(r) for r in roots] == [(n, ()) for n in range(mdp.N)]


@pytest.mark.parametrize("max_len, eos", [(1, 0), (4, 0), (3, None)])
def test_tree_sum_and_product_equal_the_list(max_len, eos):
    mdp, pi, mu = _setup(max_len, eos)
    ro = mdp.all_responses()
    lp_pi, seq_pi = pi.logp(ro.states, ro.tokens, ro.mask)
    lp_mu, seq_mu = mu.logp(ro.states, ro.tokens, ro.mask)
    q = np.exp(seq_mu)  # mu(y|x)
    child, roots = children(mdp)
    kl = tree_sum(child, roots, mu.probs(), np.log(mu.probs() / pi.probs()))
    np.testing.assert_allclose(kl, np.bincount(ro.prompt, q * (seq_mu - seq_pi)), rtol=1e-12)
    w2 = tree_product(child, roots, mu.probs(), (pi.probs() / mu.probs()) ** 2)
    np.testing.assert_allclose(w2, np.bincount(ro.prompt, np.exp(seq_pi) ** 2 / q), rtol=1e-12)
    ones = tree_product(child, roots, mu.probs(), np.ones((mdp.S, mdp.V)))
    np.testing.assert_allclose(ones, 1.0, rtol=0, atol=1e-14)  # the responses' probabilities sum to 1


def test_zero_probability_tokens_are_ignored_even_if_their_values_are_infinite():
    mdp, pi, _ = _setup(2)
    theta = pi.theta.copy()
    theta[:, 2] = -np.inf  # token 2 never drawn
    q = TabularPolicy(theta).probs()
    f = np.zeros((mdp.S, mdp.V))
    f[:, 2] = np.inf
    child, roots = children(mdp)
    assert np.isfinite(tree_sum(child, roots, q, f)).all()
    with pytest.raises(ValueError, match="^f: expected finite values wherever q > 0"):
        tree_sum(child, roots, pi.probs(), f)


def test_children_needs_an_enumerated_mdp():
    with pytest.raises(ValueError, match="^mdp: expected ids='enumerate'"):
        children(TokenMDP(["a"], V=2, eos=0, max_len=3, ids="lazy", capacity=16))
    with pytest.raises(TypeError, match="^mdp: expected a TokenMDP"):
        children("mdp")


def test_a_state_with_two_parents_is_refused_even_without_a_cycle():
    q, zero = np.full((3, 2), 0.5), np.zeros((3, 2))
    two = np.array([[1, 2], [-1, -1], [1, -1]])  # 0 -> 1, 0 -> 2 -> 1: no cycle, but 1 has two parents
    for f in (tree_sum, tree_product):
        msg = str(pytest.raises(ValueError, f, two, np.array([0]), q, zero).value)
        assert msg == "child: expected a tree (each state the child of one entry), got state 1 the child of 2"
    two = np.array([[-1, -1], [0, 2], [0, -1]])  # root 1: 1 -> 0, 1 -> 2 -> 0: state 0 has two parents
    msg = str(pytest.raises(ValueError, tree_sum, two, np.array([1]), q, zero).value)
    assert msg == "child: expected a tree (each state the child of one entry), got state 0 the child of 2"
    msg = str(
        pytest.raises(ValueError, tree_sum, np.array([[3, -1], [-1, -1], [-1, -1]]), np.array([0]), q, zero).value
    )
    assert msg == "child: expected ids < 3 (the states of q), got max 3"


def test_a_child_table_with_a_cycle_is_refused_before_any_walk():
    q, zero = np.full((3, 2), 0.5), np.zeros((3, 2))
    around = np.array([[1, -1], [2, -1], [0, -1]])  # 0 -> 1 -> 2 -> 0: the root is a child
    below = np.array([[1, -1], [2, -1], [1, -1]])  # 0 -> 1 -> 2 -> 1: state 1 has two parents
    for f in (tree_sum, tree_product):
        with pytest.raises(ValueError, match=r"^child: expected a tree \(no root a child\), got root 0 .*a cycle"):
            f(around, np.array([0]), q, zero)
        with pytest.raises(ValueError, match=r"^child: expected a tree .*got state 1 the child of 2"):
            f(below, np.array([0]), q, zero)
    with pytest.raises(ValueError, match="^roots: expected ids < 3"):
        tree_sum(np.full((3, 2), -1), np.array([3]), q, zero)


def test_allowing_inf_lets_through_the_signs_it_lists_only():
    read = allowing_inf(array("B"), signs=(-1.0,))
    out = read([0.5, -np.inf], "logq", {})
    assert out.dtype == np.float64 and out.tolist() == [0.5, -np.inf]
    with pytest.raises(ValueError, match="^logq: expected finite values"):
        read([np.inf], "logq", {})
    with pytest.raises(ValueError, match="^logq: expected no NaN"):
        read([np.nan, -np.inf], "logq", {})
    with pytest.raises(TypeError, match="^logq: expected a real-valued array"):
        read("x", "logq", {})


def test_the_values_are_named_by_their_role():
    q = np.array([[0.5, 0.5]])
    with pytest.raises(ValueError, match="^h: expected finite values wherever q > 0"):
        tree_product(np.array([[-1, -1]]), np.array([0]), q, np.array([[np.inf, 0.0]]))
    with pytest.raises(ValueError, match="^child: "):
        tree_sum(np.array([[-2, -1]]), np.array([0]), q, np.zeros((1, 2)))


def test_a_tree_whose_state_0_is_no_root_is_walked_through_it():
    """Root 3; 3 -0-> 0, 3 -1-> end; 0 -0-> 1, 0 -1-> 2; 1 and 2 end. State 0 is a child with
    children of its own, so a walk that took id 0 for "no child" would stop at it. By hand:
    E[sum f] = 0.6 * 2 + 0.4 * (1 + 0.25 (3 + 5.5) + 0.75 (4 + 7.9)) = 6.02 and
    E[prod f] = 0.6 * 2 + 0.4 * 1 * (0.25 * 3 * 5.5 + 0.75 * 4 * 7.9) = 12.33."""
    child = np.array([[1, 2], [-1, -1], [-1, -1], [0, -1]])
    q = np.array([[0.25, 0.75], [0.5, 0.5], [0.1, 0.9], [0.4, 0.6]])
    f = np.array([[3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [1.0, 2.0]])
    np.testing.assert_allclose(tree_sum(child, np.array([3]), q, f), [6.02], rtol=1e-14)
    np.testing.assert_allclose(tree_product(child, np.array([3]), q, f), [12.33], rtol=1e-14)


def test_the_first_value_not_finite_where_q_is_positive_is_named():
    child, roots = np.array([[-1, -1]]), np.array([0])
    msg = str(
        pytest.raises(ValueError, tree_sum, child, roots, np.array([[0.5, 0.5]]), np.array([[0.0, np.inf]])).value
    )
    assert msg == "f: expected finite values wherever q > 0, got inf at (0, 1)"
    msg = str(
        pytest.raises(ValueError, tree_product, child, roots, np.array([[0.0, 1.0]]), [[np.inf, -np.inf]]).value
    )
    assert msg == "h: expected finite values wherever q > 0, got -inf at (0, 1)"  # the inf at q = 0 is not named


def test_tree_product_ignores_infinite_factors_where_q_is_zero():
    child, roots = np.array([[1, -1], [-1, -1]]), np.array([0])
    q = np.array([[1.0, 0.0], [0.25, 0.75]])
    h = np.array([[2.0, np.inf], [4.0, -np.inf]])  # -inf where q > 0 is refused, where q = 0 it is unread
    assert (
        pytest.raises(ValueError, tree_product, child, roots, q, h).value.args[0].startswith("h: expected finite")
    )
    h[1, 1] = 3.0
    assert tree_product(child, roots, q, h).tolist() == [2.0 * (0.25 * 4.0 + 0.75 * 3.0)]


def test_allowing_inf_gives_other_inputs_to_the_kind_as_they_are():
    read = allowing_inf(array("B", high=0.5), signs=(-1.0,))
    assert read([0.2, -np.inf], "logq", {}).tolist() == [0.2, -np.inf]  # the -inf entry is not held to high
    msg = str(pytest.raises(TypeError, read, [[1.0], [1.0, 2.0]], "logq", {}).value)  # ragged: no array
    assert msg == "logq: expected a real-valued array, got list [[1.0], [1.0, 2.0]]"
    msg = str(pytest.raises(ValueError, read, [0, 1], "logq", {"B": 3}).value)  # ints: the kind reads the shape
    assert msg == "logq: expected shape (3,), got (2,)"
