"""The token-level bundles of the pg part (minirl_lm/pg/checks.py): each returns its arguments
checked; the estimators' own tests and the bad-input battery test them through every public
function."""

import numpy as np

from minirl_lm.pg import checks as PC
from quiet import raises


def _message(exc_type, f, *args, **kwargs):
    """The message of the `exc_type` that `f(*args, **kwargs)` raises, silently."""
    return raises(exc_type, lambda: f(*args, **kwargs))


def test_token_batch_checks_in_order_and_returns_the_trusted_arrays():
    m = [[1.0, 0.0]]
    logp, old, mask, adv, max_len = PC.token_batch(
        {"logp": [[0, 1]], "logp_old": [[2, 3]]}, m, [1], "constant", 2, ("constant",)
    )
    assert logp.dtype == old.dtype == mask.dtype == adv.dtype == np.float64
    assert adv.shape == (1,) and max_len == 2
    assert PC.token_batch({"logp": [[0.0]]}, [[1.0]])[-2:] == (None, None)  # nothing else asked
    # the first array is the shape of reference; an adv of neither shape names adv
    assert (
        _message(ValueError, PC.token_batch, {"logp": [[0.0]], "w": [[0.0, 0.0]]}, [[1.0]])
        == "w: expected the shape of logp (1, 1), got (1, 2)"
    )
    assert (
        _message(ValueError, PC.token_batch, {"logp": [[0.0]]}, [[1.0]], [1.0, 2.0])
        == "adv: expected shape (1,) or (1, 1), got (2,)"
    )
    assert (
        _message(ValueError, PC.token_batch, {"logp": [[0.0]]}, [[1.0]], [[1.0]], per_token=False)
        == "adv: expected shape (1,), got (1, 1)"
    )
    assert (
        _message(
            ValueError, PC.token_batch, {"logp": [[0.0, 0.0]]}, [[1.0, 1.0]], [1.0], "constant", 1, ("constant",)
        )
        == "max_len: expected >= the longest response (2 trained tokens), got 1"
    )
    # None is an input like any other (rejected), not "not given"
    assert (
        _message(TypeError, PC.token_batch, {"logp": [[0.0]]}, [[1.0]], None)
        == "adv: expected a real-valued array, got NoneType None"
    )
