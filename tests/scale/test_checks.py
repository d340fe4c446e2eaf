"""The bundles of the real-vocabulary part (minirl_lm/scale/checks.py)."""

import numpy as np

from minirl_lm.scale import checks as SC
from quiet import raises


def test_chunked_bundles_return_their_arguments_checked():
    h, W = np.ones((3, 2)), np.ones((4, 2))
    hh, WW, tokens, real, chunk = SC.chunked_args(h, W, [0, 1, 3], [1, 0, 1], 8)
    assert hh is h and real.tolist() == [0, 2] and tokens.dtype == np.int64 and chunk == 8
    assert raises(TypeError, lambda: SC.chunked_args(h, W, [0, 1, 3], None, 8, loss_fn=None)).startswith(
        "loss_fn: expected a callable"
    )
    rows = np.arange(2)
    loss, g = SC.loss_fn_result((np.float32(1.5), [1, 2]), rows)
    assert loss == 1.5 and g.dtype == np.float64 and g.flags.c_contiguous
    assert (
        raises(TypeError, lambda: SC.loss_fn_result([1.0, rows], rows))
        == "loss_fn: expected it to return (loss, dloss_dlogp), got list"
    )
