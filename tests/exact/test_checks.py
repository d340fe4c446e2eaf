"""minirl_lm.exact.checks: the token MDP `distill/` still reads through it, enumerated, named
`mdp` (the engine's functions declare their own arguments; their cases are in their files)."""

import pytest

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.exact.checks import children_args


def test_children_args_needs_an_enumerated_token_mdp():
    mdp = TokenMDP(["a"], V=2, eos=0, max_len=2)
    assert children_args(mdp) is mdp
    with pytest.raises(ValueError, match="^mdp: expected ids='enumerate'"):
        children_args(TokenMDP(["a"], V=2, eos=0, max_len=3, ids="lazy", capacity=16))
    with pytest.raises(TypeError, match="^mdp: expected a TokenMDP, got str 'mdp' without S, V"):
        children_args("mdp")
