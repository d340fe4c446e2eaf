"""layer.py: a cache is opaque to the result check, a dict of arrays shows its extremes, a
backward's cache fixes the shape of its dy, and the relations name their argument."""

import numpy as np

from minirl_lm.boundary import boundary
from minirl_lm.nn.layer import (
    ACTS,
    KV,
    START,
    Arrays,
    Cache,
    cache_of,
    heads_divide_width,
    ids_in,
    kv_fits,
    start_before_end,
)
from minirl_lm.nn.mlp import mlp_forward
from quiet import raises


def test_a_cache_is_empty_to_the_result_check_and_arrays_show_their_extremes():
    c = Cache(("mlp", (1, 2, 3), np.full(2, np.nan)))
    assert np.asarray(c, dtype=np.float64).shape == (0,) and c[2].shape == (2,)
    a = Arrays(w=np.array([[1.0, -2.0]]), b=np.array([np.inf, 0.0]), e=np.zeros(0))
    assert np.asarray(a, dtype=np.float64).tolist() == [-2.0, 1.0, 0.0, np.inf]


def test_a_backward_reads_its_forwards_cache_and_the_matching_dy():
    @boundary(cache=cache_of("mlp"), dy=ACTS, start=START, returns="total")
    def total(dy, cache, start=0):
        return float(dy[:, start:].sum())

    _, c = mlp_forward(np.ones((1, 2, 3)), np.ones((3, 4)), np.ones((4, 3)))
    assert total(np.ones((1, 2, 3)), c) == 6.0 and total(np.ones((1, 2, 3)), c, start=1) == 3.0
    assert raises(ValueError, lambda: total(np.ones((1, 2, 4)), c)).startswith("dy: expected shape (1, 2, 3)")
    assert raises(TypeError, lambda: total(np.ones((1, 2, 3)), tuple(c))).startswith(
        "cache: expected the cache returned by mlp_forward, got tuple"
    )
    other = Cache(("embed", (1, 2, 3), None))
    assert raises(TypeError, lambda: total(np.ones((1, 2, 3)), other)).endswith("got a cache of embed_forward")
    assert raises(ValueError, lambda: total(np.ones((1, 2, 3)), c, start=-1)).startswith("start:")


def test_the_relations_name_their_argument():
    x = np.zeros((2, 3, 6))
    assert heads_divide_width(x, 3) is None and heads_divide_width(x, 4).startswith(
        "n_head: expected a divisor of d = 6"
    )
    assert start_before_end(x, 2) is None and start_before_end(x, 3).startswith(
        "start: expected a position < L = 3"
    )
    assert (
        ids_in("ids", np.array([[0, 4]]), 5) is None
        and ids_in("ids", np.array([[5]]), 5) == "ids: expected ids < 5, got max 5"
    )
    kv = np.zeros((2, 2, 3, 5, 2))
    assert KV(kv, "kv", {}) is kv  # written in place: not a copy
    assert kv_fits(x, 3, kv, 2) is None and kv_fits(x, 3, kv, 3).startswith("pos: expected pos + L <= 5")
    assert kv_fits(x, 2, kv, 0).startswith("kv: expected shape (2, B, H, max_len, e) = (2, 2, 2, 5, 3)")
    for bad in (kv.astype(np.float32), kv[0], [1.0]):
        assert raises(TypeError, lambda bad=bad: KV(bad, "kv", {})).startswith(
            "kv: expected a writable float64 array"
        )


def test_a_cache_needs_its_layer_its_shape_and_an_array():
    read, dims = cache_of("mlp"), {}
    three = Cache(("mlp", (1, 2, 3), np.zeros(1)))
    assert read(three, "cache", dims) is three and dims == {"B": 1, "L": 2, "D": 3}
    short = Cache(("mlp", (1, 2, 3)))
    assert raises(TypeError, lambda: read(short, "cache", {})) == (
        "cache: expected the cache returned by mlp_forward, got a cache of mlp_forward"
    )


def test_arrays_give_their_extremes_in_the_dtype_asked_for():
    # each extreme converted as it is read: an int beyond int32 is refused, not wrapped
    a = Arrays(w=np.array([2**40, -3]))
    assert np.asarray(a, dtype=np.int64).tolist() == [-3, 2**40]
    raises(OverflowError, lambda: np.asarray(a, dtype=np.int32))


def test_the_kv_messages_say_what_came():
    kv = np.zeros((2, 2, 3, 5, 2))
    assert raises(TypeError, lambda: KV(kv.astype(np.float32), "kv", {})) == (
        "kv: expected a writable float64 array (2, B, H, max_len, e), got shape (2, 2, 3, 5, 2), float32"
    )
    assert raises(TypeError, lambda: KV([1.0], "kv", {})).endswith("(2, B, H, max_len, e), got list")
    assert kv_fits(np.zeros((2, 3, 6)), 2, kv, 0) == (
        "kv: expected shape (2, B, H, max_len, e) = (2, 2, 2, 5, 3), got (2, 2, 3, 5, 2)"
    )
    # the head width is d // n_head, also where n_head does not divide d (heads_divide_width's to say)
    assert kv_fits(np.zeros((2, 3, 6)), 4, np.zeros((2, 2, 4, 5, 1)), 0) is None
