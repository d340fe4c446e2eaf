"""The group-level bundles of the pg part (minirl_lm/pg/validate.py)."""

from minirl_lm.pg import validate as PV
from quiet import raises


def _message(exc_type, f, *args, **kwargs):
    """The message of the `exc_type` that `f(*args, **kwargs)` raises, silently."""
    return raises(exc_type, lambda: f(*args, **kwargs))


def test_group_rewards_bound_is_inclusive():
    assert PV.group_rewards([[1e150, -1e150]], 1e150).shape == (1, 2)
    assert _message(ValueError, PV.group_rewards, [[2e150]], 1e150) == (
        "rewards: expected |r| <= 1e+150 (the standardized baseline squares the spread, which "
        "overflows float64 beyond ~1e154), got max |r| = 2e+150"
    )
