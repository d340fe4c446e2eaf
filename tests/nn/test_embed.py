"""embed.py: the embeddings' backward against central finite differences in float64.

The loss `sum(C * y)` is linear in the tables, so central differences are exact up to rounding
(~1e-10 at h = 1e-6): tolerance 1e-8."""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.nn import embed
from minirl_lm.nn.embed import embed_backward, embed_forward
from quiet import raises


def test_embed_backward_matches_finite_differences():
    rng = np.random.default_rng(0)
    wte, wpe = rng.normal(size=(5, 3)), rng.normal(size=(6, 3))
    ids = np.array([[1, 1, 4, 0], [2, 1, 1, 3]])  # repeated tokens: the scatter-add
    C = rng.normal(size=(2, 4, 3))
    y, cache = embed_forward(wte, wpe, ids)
    dwte, dwpe = embed_backward(C, cache)
    assert np.allclose(dwte, fd_grad(lambda w: (C * embed_forward(w, wpe, ids)[0]).sum(), wte), atol=1e-8)
    assert np.allclose(dwpe, fd_grad(lambda w: (C * embed_forward(wte, w, ids)[0]).sum(), wpe), atol=1e-8)
    assert (dwpe[4:] == 0).all() and (dwte[[0, 1]] != 0).all()
    assert np.array_equal(y[1, 2], wte[1] + wpe[2])


def test_embed_errors():
    wte, wpe = np.ones((5, 3)), np.ones((2, 3))
    assert raises(ValueError, lambda: embed_forward(wte, wpe, np.zeros((1, 3), int))) == (
        "ids: expected at most max_len = 2 positions, got 3"
    )
    assert (
        raises(ValueError, lambda: embed_forward(wte, wpe, np.array([[0, 5]])))
        == "ids: expected ids < 5, got max 5"
    )
    assert raises(TypeError, lambda: embed_backward(np.ones((1, 2, 3)), None)).startswith("cache: expected")
    _, cache = embed_forward(wte, wpe, np.zeros((1, 2), int))
    with pytest.raises(ValueError, match="^dy: "):
        embed_backward(np.ones((1, 3, 3)), cache)


def test_the_checked_entries_run_the_trusted_cores():
    rng = np.random.default_rng(8)
    wte, wpe, ids, C = (
        rng.normal(size=(5, 3)),
        rng.normal(size=(4, 3)),
        rng.integers(0, 5, (2, 3)),
        rng.normal(size=(2, 3, 3)),
    )
    y, cache = embed.embed_forward.core(wte, wpe, ids)
    assert np.array_equal(y, embed_forward(wte, wpe, ids)[0])
    for a, b in zip(embed.embed_backward.core(C, cache), embed_backward(C, embed_forward(wte, wpe, ids)[1])):
        assert np.array_equal(a, b)
