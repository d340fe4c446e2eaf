"""The bundles of the network part (minirl_lm/nn/checks.py): what they return."""

import numpy as np

from minirl_lm.nn import checks as NC
from minirl_lm.nn.model import Transformer
from quiet import raises


def test_bundles_return_their_arguments_checked():
    model = Transformer(4, 4, 2, 1, 5, np.random.default_rng(0))
    prompt, tokens, mask, dlogp = NC.batch_args(model, [[1, 2]], [[0, 3]], [[1, 0]])
    assert prompt.dtype == np.int64 and mask.dtype == np.float64 and dlogp is None
    assert NC.generate_args(model, [[1]], 5, np.random.default_rng(0), None)[1] == 5
    assert raises(TypeError, lambda: NC.grad_args(np.ones(2), ("x",), "mlp")).startswith("cache: expected")
    assert NC.adamw_args({"a": np.zeros(1)}, 1, 0.5, 0.5, 1e-8, 0)[0] == 1.0
