"""What `minirl_lm.reward.checks` still imports from the multi-turn part, until it reads its
arguments with the kinds of `minirl_lm.multiturn.env` (`MULTITURN_MDP`, `EPISODES`, the relation
`episodes_of`). The rest of the part declares its boundary beside each function."""

from minirl_lm.multiturn.env import EPISODES, episodes_of

__all__ = ["MT_ATTRS", "episodes"]

MT_ATTRS = ("children", "is_policy", "loglik", "p_obs", "S", "V")  # what a MultiTurnMDP has


def episodes(env, ep):
    """`ep` if it is a batch of episodes of `env` (`episodes_of`), else the error naming the field."""
    EPISODES(ep, "ep", {})
    if (msg := episodes_of(env, ep)) is not None:
        raise ValueError(msg)
    return ep
