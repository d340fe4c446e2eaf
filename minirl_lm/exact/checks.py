"""What `minirl_lm/distill/checks.py` still reads of the exact engine's old bundles: the token
MDP a tree table needs. The engine declares its own arguments (`boundary`); this file goes when
`distill/` does too."""

__all__ = ["children_args"]


def children_args(mdp):
    """A token MDP whose states are enumerated (a tree table needs every state); by the names
    `children` calls, so a copy's TokenMDP and the package's both pass."""
    need = ("S", "V", "N", "ids", "all_states", "is_terminal", "state_id")
    missing = [a for a in need if not hasattr(mdp, a)]
    if missing:
        raise TypeError(
            f"mdp: expected a TokenMDP, got {type(mdp).__name__} {mdp!r}"[:120] + f" without {', '.join(missing)}"
        )
    if mdp.ids != "enumerate":
        raise ValueError(f"mdp: expected ids='enumerate' (every state listed), got {mdp.ids!r}")
    return mdp
