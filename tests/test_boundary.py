"""The declared boundary (minirl_lm/boundary.py): binding by keyword, the kinds' coercions
and messages, shape letters across arguments, relations, no mutation, and the one result check."""

import warnings

import numpy as np
import pytest

from minirl_lm.boundary import (
    ADVANTAGE,
    DDOF,
    EPS,
    MASK,
    MAX_LEN,
    NONNEGATIVE,
    POSITIVE,
    TOKENS,
    array,
    boundary,
    finite,
    flag,
    function,
    generator,
    has,
    longest_response,
    number,
    one_of,
    optional,
    padded,
    right_padded,
    simplex,
)


def _msg(exc, call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(exc) as e:
            call()
    return str(e.value)


@boundary(
    x=TOKENS,
    adv=ADVANTAGE,
    m=MASK,
    eps=EPS,
    c=optional(POSITIVE),
    how=one_of(("sum", "mean")),
    n=MAX_LEN,
    returns="total grad",
)
def toy(x, adv, m, eps=0.5, c=None, how="sum", n=None):
    """A toy with every kind: total = sum x * A * m (or the mean), and its gradient."""
    A = adv[:, None] if adv.ndim == 1 else adv
    t = (x * A * m).sum()
    return float(t if how == "sum" else t / x.size), A * m


X, M = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[1, 1, 0], [1, 0, 0]]


def test_arguments_are_bound_by_keyword_and_coerced_to_fresh_float64_arrays():
    seen = {}

    @boundary(x=TOKENS, m=MASK)
    def spy(x, m):
        seen.update(x=x, m=m)
        x[...] = 0.0  # the body may write into what it got: a copy
        return 0.0

    x = np.array([[1, 2]])  # ints
    spy(m=[[True, False]], x=x)
    assert seen["x"].dtype == seen["m"].dtype == np.float64 and seen["m"].tolist() == [[1.0, 0.0]]
    assert x.tolist() == [[1, 2]]  # the caller's array is unchanged
    xf = np.array([[1.5, 2.5]])  # already float64: still a copy
    spy(xf, [[1, 1]])
    assert xf.tolist() == [[1.5, 2.5]] and seen["x"] is not xf
    a, b = toy(X, [1, 2], M), toy(x=np.array(X), m=np.array(M, float), adv=np.array([1.0, 2.0]))
    assert a[0] == b[0] == 11.0  # 1 + 2 + 2 * 4 and np.array_equal(a[1], b[1])


def test_shape_letters_bind_across_arguments():
    assert _msg(ValueError, lambda: toy(X, [1.0, 2.0], [[1, 1]])) == "m: expected shape (2, 3), got (1, 2)"
    assert _msg(ValueError, lambda: toy(X, [1.0, 2.0, 3.0], M)) == "adv: expected shape (2,) or (2, 3), got (3,)"
    assert _msg(ValueError, lambda: toy([1.0], [1.0], [[1]])) == "x: expected shape (B, T), got (1,)"
    assert toy(X, np.ones((2, 3)), M)[1].shape == (2, 3)  # the second form of ADVANTAGE
    # a letter's first length must be >= 1
    assert _msg(ValueError, lambda: toy(np.zeros((0, 3)), [], M)).startswith(
        "x: expected a non-empty array (every axis of length >= 1), got shape (0, 3)"
    )
    # array() of any letters: a (K,) pair tied to nothing else
    pair = boundary(a=array("K"), b=array("K"))(lambda a, b: 0.0)
    assert _msg(ValueError, lambda: pair([1.0, 2.0], [1.0])) == "b: expected shape (2,), got (1,)"


@pytest.mark.parametrize(
    "kw, exc, start",
    [
        (dict(x="x"), TypeError, "x: expected a real-valued array, got str 'x'"),
        (dict(x=None), TypeError, "x: expected a real-valued array, got NoneType None"),
        (dict(x=[[1.0], [1.0, 2.0]]), TypeError, "x: expected a real-valued array"),
        (dict(x=np.ones((2, 3)) * 1j), TypeError, "x: expected a real-valued array, got array of shape (2, 3)"),
        (dict(x=[[np.nan, 0, 0], [0, 0, 0]]), ValueError, "x: expected no NaN, got 1 NaN entries"),
        (dict(adv=[np.inf, 0]), ValueError, "adv: expected finite values (no +-inf), got 1 such entries"),
        (dict(m=[[0.5, 1, 0], [1, 0, 0]]), ValueError, "m: expected only 0 and 1, got value 0.5"),
        (dict(eps=0.0), ValueError, "eps: expected a number > 0 and <= 1, got 0.0"),
        (dict(eps=1.5), ValueError, "eps: expected a number > 0 and <= 1, got 1.5"),
        (dict(eps=True), TypeError, "eps: expected a real number, got bool True"),
        (dict(eps=np.nan), ValueError, "eps: expected a finite number, got nan"),
        (dict(eps=10**400), ValueError, "eps: expected a finite number, got 1000"),
        (dict(c=-1.0), ValueError, "c: expected a number > 0, got -1.0"),
        (dict(how="max"), ValueError, "how: expected one of ['sum', 'mean'], got 'max'"),
        (dict(how=["sum"]), TypeError, "how: expected one of ['sum', 'mean'], got unhashable list ['sum']"),
        (dict(n=0), ValueError, "n: expected an integer >= 1, got 0"),
        (dict(n=2.0), TypeError, "n: expected an integer, got float 2.0"),
    ],
)
def test_each_kind_names_the_argument_and_says_what_came(kw, exc, start):
    args = dict(x=X, adv=[1.0, 2.0], m=M) | kw
    assert _msg(exc, lambda: toy(**args)).startswith(start)


def test_kinds_read_alone():
    dims = {}
    assert number(0, 1)(1, "p", dims) == 1.0 and isinstance(number(0, 1)(1, "p", dims), float)
    assert one_of((1, 2))(2, "k", dims) == 2
    with pytest.raises(ValueError, match="^k: expected one of"):
        one_of((1, 2))(True, "k", dims)  # True == 1 must not pick option 1
    assert MAX_LEN(None, "n", dims) is None and number(2, integer=True)(3, "n", dims) == 3
    assert NONNEGATIVE(0, "p", dims) == 0.0 and POSITIVE(1e-300, "c", dims) == 1e-300
    assert DDOF(1, "ddof", dims) == 1 and _msg(ValueError, lambda: DDOF(2, "ddof", {})) == (
        "ddof: expected an integer >= 0 and <= 1, got 2"
    )
    assert MASK([[1, 0]], "m", dims).tolist() == [[1.0, 0.0]] and dims == {"B": 1, "T": 2}
    assert TOKENS([[3, 4]], "x", dims).shape == ADVANTAGE([[1, 1]], "a", dims).shape == (1, 2)


def test_objects_are_read_by_what_the_body_uses_of_them():
    class Policy:
        theta = np.zeros((1, 2))

        def logp(self):
            return 0.0

    dims, pol = {}, Policy()
    assert has("a policy", "logp() theta")(pol, "policy", dims) is pol
    assert _msg(TypeError, lambda: has("a policy", "logp() copy() theta")(3, "p", dims)) == (
        "p: expected a policy (with logp(), copy(), theta), got int without logp, copy, theta"
    )
    pol.copy = 1  # an attribute that is not callable is not a method
    assert _msg(TypeError, lambda: has("a policy", "copy()")(pol, "p", dims)).endswith("without copy")
    grader = function("grader(prompt, response)", 2)
    assert grader(max, "g", dims) is max  # a builtin without a signature is taken at its word
    assert _msg(TypeError, lambda: grader(lambda x: x, "g", dims)) == (
        "g: expected a callable grader(prompt, response) taking 2 positional arguments, got one with signature (x)"
    )
    assert _msg(TypeError, lambda: grader(int, "g", dims)).startswith("g: expected a callable grader(prompt, ")
    rng = np.random.default_rng(0)
    assert generator(rng, "rng", dims) is rng
    assert _msg(TypeError, lambda: generator(0, "rng", dims)) == (
        "rng: expected a numpy.random.Generator (np.random.default_rng(seed)), got int 0"
    )


def test_relations_are_named_predicates():
    m = np.array([[1.0, 0.0, 1.0], [1.0, 0.0, 0.0]])  # a hole: 2 trained tokens in row 0
    assert longest_response(m, "constant", 2) is None and longest_response(m, "seq_sum", 1) is None
    assert longest_response(m, "constant", None) is None
    assert (
        longest_response(m, "constant", 1) == "max_len: expected >= the longest response (2 trained tokens), got 1"
    )

    @boundary(mask=MASK, agg=one_of(("constant", "seq_sum")), max_len=MAX_LEN, where=[longest_response])
    def w(mask, agg, max_len=None):
        return mask

    assert np.array_equal(w(m, "constant", 2), m)
    assert _msg(ValueError, lambda: w(m, "constant", 1)).startswith("max_len: expected >= the longest response")

    # a relation's parameter the function lacks takes the relation's default
    def pairs(x, at_least=2):
        return None if x.shape[1] >= at_least else f"x: expected >= {at_least} columns, got {x.shape[1]}"

    one = boundary(x=array("N K"), where=[pairs])(lambda x: 0.0)
    assert one([[1.0, 2.0]]) == 0.0 and _msg(ValueError, lambda: one([[1.0]])) == "x: expected >= 2 columns, got 1"


def test_an_overflow_is_one_error_naming_the_function_and_the_inputs():
    big = [[1e308, 1e308, 0.0], [0.0, 0.0, 0.0]]
    msg = _msg(ValueError, lambda: toy(big, [2.0, 1.0], M, c=3.0))
    assert msg == (
        "toy: expected a finite total, got inf (beyond float64) from x in [0, 1e+308], adv in [1, 2], "
        "m in [0, 1], eps = 0.5, c = 3"
    )  # the gradient A m is finite; the options, the integer n and c=None are not listed
    msg = _msg(ValueError, lambda: toy([[1e308, -1e308, 0], [0, 0, 0]], [1e308, 1.0], M))
    assert msg.startswith("toy: expected a finite total, got NaN (beyond float64)")  # inf - inf


def test_a_body_that_checks_its_own_result_declares_returns_none():
    stepped = boundary(x=TOKENS, returns=None)(lambda x: {"x": x * np.inf})
    assert np.isinf(stepped([[1.0]])["x"]).all()  # not read: the body checks what it commits


def test_finite_passes_finite_results_through_and_numbers_unnamed_results():
    out = (1.0, np.zeros(2))
    assert finite(out, "f", [], {}) is out and finite(2.0, "f", [], {}) == 2.0
    msg = _msg(ValueError, lambda: finite((1.0, np.array([np.inf])), "f", [], {"x": np.array([1.0, 3.0])}))
    assert msg == "f: expected a finite result 1, got inf (beyond float64) from x in [1, 3]"


def test_the_body_stays_reachable_and_the_signature_is_the_functions():
    import inspect

    total, grad = toy.core(np.ones((1, 1)), np.ones(1), np.ones((1, 1)))  # no boundary: no defaults read
    assert total == 1.0 and np.array_equal(grad, np.ones((1, 1)))
    assert list(inspect.signature(toy).parameters) == ["x", "adv", "m", "eps", "c", "how", "n"]
    assert toy.__name__ == "toy" and toy.__doc__.startswith("A toy")
    with pytest.raises(TypeError):
        toy(X, [1.0, 2.0])  # a missing argument: Python's own binding error


def test_integer_arrays_fixed_lengths_and_bounds():
    ids = array("B T", integer=True, low=0)
    dims = {}
    out = ids([[0, 3]], "y", dims)
    assert out.dtype == np.int64 and dims == {"B": 1, "T": 2}
    with pytest.raises(
        TypeError, match=r"^y: expected an integer array, got array of shape \(1,\) and dtype float64"
    ):
        ids(np.array([0.0]).reshape(1, 1)[0], "y", {})
    with pytest.raises(ValueError, match=r"^y: expected entries >= 0, got min -1"):
        ids([[-1, 2]], "y", {})
    pairs = array("N 2")
    assert pairs([[1.0, 2.0]], "p", {}).shape == (1, 2)
    with pytest.raises(ValueError, match=r"^p: expected shape \(N, 2\), got \(1, 3\)"):
        pairs([[1.0, 2.0, 3.0]], "p", {})
    with pytest.raises(ValueError, match=r"^p: expected entries > 0, got min 0.0"):
        array("N", low=0.0, low_open=True)([0.0, 1.0], "p", {})
    with pytest.raises(ValueError, match=r"^p: expected entries <= 0, got max 0.5"):
        array("N", high=0.0)([-1.0, 0.5], "p", {})
    assert array("N", empty=True)([], "p", {}).shape == (0,)


def test_simplex_and_flag():
    p = simplex("S V")
    assert p([[0.25, 0.75]], "probs", {}).dtype == np.float64
    with pytest.raises(
        ValueError, match=r"^probs: expected rows summing to 1 \(within 1e-9\), got a row summing to 0.75"
    ):
        p([[0.25, 0.5]], "probs", {})
    with pytest.raises(ValueError, match=r"^probs: expected entries >= 0"):
        p([[-0.5, 1.5]], "probs", {})
    assert flag(np.bool_(True), "f", {}) is True
    with pytest.raises(TypeError, match=r"^f: expected True or False, got int 1"):
        flag(1, "f", {})
    half = number(0.0, 1.0, high_open=True)
    with pytest.raises(ValueError, match=r"^x: expected a number >= 0 and < 1, got 1.0"):
        half(1.0, "x", {})


def test_huge_integers_nested_results_and_objects_without_addresses():
    count = number(1, 10**6, integer=True)
    with pytest.raises(ValueError, match=r"^G: expected an integer >= 1 and <= 1000000, got 10{30}"):
        count(10**30, "G", {})
    assert number(1, integer=True)(10**30, "G", {}) == 10**30  # an int is finite however large

    @boundary(x=array("N"), returns="loss grads")
    def nested(x):
        return float(x.sum()), (x * 0.0, np.full(3, x[0] * 1e308))

    assert nested([1e-308])[0] == 1e-308
    with pytest.raises(ValueError, match=r"^nested: expected a finite grads, got inf"):
        nested([10.0])

    class Thing:
        pass

    with pytest.raises(TypeError, match=r"^rng: expected a numpy.random.Generator .*, got a Thing object$"):
        generator(Thing(), "rng", {})


def test_an_argument_named_like_a_keyword_is_declared_in_args():
    @boundary(x=array("B T"), args={"returns": array("B T")}, returns="loss")
    def f(x, returns):
        return float((x - returns).sum())

    assert f([[1.0, 2.0]], [[0.5, 0.5]]) == 2.0 and set(f.kinds) == {"x", "returns"}
    assert f.returns == ["loss"]  # the results' names, beside the argument named `returns`
    with pytest.raises(ValueError, match=r"^returns: expected shape \(1, 2\), got \(1, 3\)"):
        f([[1.0, 2.0]], [[0.5, 0.5, 0.5]])


def test_logits_keep_neginf_and_need_a_finite_entry_per_row():
    read = array("S V", neginf=True)
    z = read([[0.0, -np.inf], [1.0, 2.0]], "theta", {})
    assert z.dtype == np.float64 and z[0, 1] == -np.inf and z[1].tolist() == [1.0, 2.0]
    assert _msg(ValueError, lambda: read([[0.0, np.inf]], "theta", {})) == (
        "theta: expected finite values or -inf (no +inf), got 1 such entries"
    )
    assert _msg(ValueError, lambda: read([[0.0, 1.0], [-np.inf, -np.inf]], "theta", {})) == (
        "theta: expected a finite entry in every row (-inf everywhere has no softmax), got 1 all -inf rows, "
        "the first at (1,)"
    )
    assert _msg(ValueError, lambda: read([[np.nan, 0.0]], "theta", {})).startswith("theta: expected no NaN")
    assert _msg(ValueError, lambda: array("S V")([[0.0, -np.inf]], "x", {})).startswith(
        "x: expected finite values (no +-inf)"
    )  # without neginf, -inf is refused


def test_right_padded_masks_as_a_kind_and_as_a_relation():
    read = right_padded("B T", "a sum over the later tokens", "another function")
    assert read([[1, 1, 0], [0, 0, 0]], "mask", {}).tolist() == [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    msg = _msg(ValueError, lambda: read([[1, 1, 0], [1, 0, 1]], "m", {}))
    assert msg.startswith("m: expected right padding (1s then 0s in each row) for a sum over the later tokens, ")
    assert "row 1 is [1, 0, 1]" in msg and msg.endswith("here use another function")
    assert _msg(ValueError, lambda: read([[1, 2]], "m", {})).startswith("m: expected only 0 and 1")
    long = np.ones((1, 50))
    long[0, 10] = 0.0
    assert "row 0 has a 1 after a 0 at column 11;" in _msg(ValueError, lambda: read(long, "m", {}))  # a long row
    rule = padded("a sum", "elsewhere")
    assert rule(np.array([[1.0, 0.0]])) is None
    assert _msg(ValueError, lambda: rule(np.array([[0.0, 1.0]]))).startswith("mask: expected right padding")


def test_the_declaration_keeps_the_results_names():
    assert boundary(returns="loss dloss_dlogp")(lambda x: x).returns == ["loss", "dloss_dlogp"]
    assert boundary(returns=None)(lambda x: x).returns is None  # checked by the body: no names
    assert boundary()(lambda x: x).returns is None


def test_number_messages_bounds_and_edges_exactly():
    assert _msg(TypeError, lambda: number()("a", "z", {})) == "z: expected a real number, got str 'a'"
    assert _msg(TypeError, lambda: number(integer=True)(1.5, "z", {})) == "z: expected an integer, got float 1.5"
    assert _msg(TypeError, lambda: number()(True, "z", {})) == "z: expected a real number, got bool True"
    assert _msg(ValueError, lambda: number()(np.inf, "z", {})) == "z: expected a finite number, got inf"
    assert (
        _msg(ValueError, lambda: number()(10**400, "z", {}))
        == ("z: expected a finite number, got " + "1" + "0" * 400)[:200]
    )
    assert number(integer=True)(10**400, "z", {}) == 10**400  # an int is finite however large
    assert _msg(ValueError, lambda: number(high=1.0)(2.0, "z", {})) == "z: expected a number <= 1, got 2.0"
    assert _msg(ValueError, lambda: number(0.0)(-1.0, "z", {})) == "z: expected a number >= 0, got -1.0"
    assert _msg(ValueError, lambda: number(0.0, 1.0, low_open=True, high_open=True)(1.0, "z", {})) == (
        "z: expected a number > 0 and < 1, got 1.0"
    )
    assert _msg(ValueError, lambda: number(1, integer=True)(0, "z", {})) == "z: expected an integer >= 1, got 0"
    assert number(0.0)(0.0, "z", {}) == 0.0 and number(high=1.0)(1.0, "z", {}) == 1.0  # closed ends
    assert (
        _msg(ValueError, lambda: number(0.0, low_open=True)(0.0, "z", {})) == "z: expected a number > 0, got 0.0"
    )


def test_one_of_and_optional_exactly():
    read = one_of(("a", "b"))
    assert _msg(TypeError, lambda: read([1], "z", {})) == "z: expected one of ['a', 'b'], got unhashable list [1]"
    assert (
        _msg(ValueError, lambda: read("c" * 300, "z", {}))
        == ("z: expected one of ['a', 'b'], got " + repr("c" * 300))[:200]
    )
    maybe = optional(array("B"))
    dims = {}
    assert maybe(None, "z", dims) is None and dims == {}
    assert maybe([1, 2], "z", dims).tolist() == [1.0, 2.0] and dims == {"B": 2}
    assert _msg(ValueError, lambda: maybe([1, 2, 3], "w", dims)) == "w: expected shape (2,), got (3,)"


def test_array_messages_dtypes_and_edges_exactly():
    assert _msg(TypeError, lambda: array("B")("abc", "z", {})) == "z: expected a real-valued array, got str 'abc'"
    assert _msg(TypeError, lambda: array("B")([[1], [2, 3]], "z", {})) == (
        "z: expected a real-valued array, got list [[1], [2, 3]]"
    )
    assert _msg(TypeError, lambda: array("B", integer=True)([1.5], "z", {})) == (
        "z: expected an integer array, got list [1.5]"
    )
    for x in ([1, 2], [True, False], np.array([1, 2], np.int8)):
        assert array("B")(x, "z", {}).dtype == np.float64
    assert array("B", integer=True)([1, 2], "z", {}).dtype == np.int64
    assert _msg(ValueError, lambda: array("B", "B T")(np.zeros((2, 3, 4)), "z", {})) == (
        "z: expected shape (B,) or (B, T), got (2, 3, 4)"
    )
    assert (
        _msg(ValueError, lambda: array("B 2")(np.zeros((3, 3)), "z", {})) == "z: expected shape (B, 2), got (3, 3)"
    )
    assert _msg(ValueError, lambda: array("B")([], "z", {})) == (
        "z: expected a non-empty array (every axis of length >= 1), got shape (0,)"
    )
    assert _msg(ValueError, lambda: array("B", values=(0.0, 1.0))([1.0, 0.5, 1.0], "z", {})) == (
        "z: expected only 0 and 1, got value 0.5"
    )
    assert array("B", high=1.0)([1.0], "z", {}).tolist() == [1.0]  # the upper end is closed
    dead = np.zeros((1, 2, 2))
    dead[0, 0, :] = -np.inf  # a row of the last axis; no column of axis 1 is -inf everywhere
    assert _msg(ValueError, lambda: array("B T V", neginf=True)(dead, "z", {})) == (
        "z: expected a finite entry in every row (-inf everywhere has no softmax), got 1 all -inf rows, the first "
        "at (0, 0)"
    )
    column = np.zeros((1, 2, 2))
    column[0, :, 0] = -np.inf  # -inf down axis 1 only: every row of the last axis has a finite entry
    assert np.array_equal(array("B T V", neginf=True)(column, "z", {}), column)


def test_simplex_rows_within_1e_9_and_the_worst_row_named():
    read = simplex("N V")
    assert read([[0.5, 0.5], [0.25, 0.75]], "p", {}).tolist() == [[0.5, 0.5], [0.25, 0.75]]
    assert _msg(ValueError, lambda: read([[0.5, 0.5], [0.5, 0.0]], "p", {})) == (
        "p: expected rows summing to 1 (within 1e-9), got a row summing to 0.5"
    )
    assert _msg(ValueError, lambda: read([[0.25, 0.0], [0.75, 1.0]], "p", {})) == (  # columns sum to 1
        "p: expected rows summing to 1 (within 1e-9), got a row summing to 0.25"
    )
    assert _msg(ValueError, lambda: read([[0.5, 1.2], [0.5, 0.0]], "p", {})) == (  # the farther of 1.7 and 0.5
        "p: expected rows summing to 1 (within 1e-9), got a row summing to 1.7"
    )
    for off in (1e-6, 5e-9):  # beyond 1e-9: no relative slack, and not NumPy's default 1e-8 either
        assert _msg(ValueError, lambda off=off: read([[0.5, 0.5 + off]], "p", {})).startswith("p: expected rows")
    assert read([[0.5, 0.5 + 5e-10]], "p", {}).shape == (1, 2)


def test_right_padded_shows_a_row_of_up_to_20_columns():
    read = right_padded("B T", "x", "y")
    for T, shown in ((20, "is [0, 1" + ", 1" * 18 + "]"), (21, "has a 1 after a 0 at column 1")):
        m = np.ones((1, T))
        m[0, 0] = 0.0
        assert f"row 0 {shown};" in _msg(ValueError, lambda m=m: read(m, "m", {}))
    rule = padded("a sum over the later tokens", "another function")
    assert _msg(ValueError, lambda: rule(np.array([[0.0, 1.0]]))) == (
        "mask: expected right padding (1s then 0s in each row) for a sum over the later tokens, row 0 is [0, 1]; "
        "a mask with holes (tool outputs) is accepted by the token-level objectives; here use another function"
    )


def test_objects_callables_and_results_messages_exactly():
    read = has("a thing", "fooX() bar")
    assert (
        _msg(TypeError, lambda: read(3, "z", {}))
        == "z: expected a thing (with fooX(), bar), got int without fooX, bar"
    )
    call = function("grader(prompt, response)", 2)
    assert (
        _msg(TypeError, lambda: call("abc", "g", {}))
        == "g: expected a callable grader(prompt, response), got str 'abc'"
    )
    assert _msg(TypeError, lambda: call(lambda a: a, "g", {})) == (
        "g: expected a callable grader(prompt, response) taking 2 positional arguments, got one with signature (a)"
    )
    long = "x" * 300
    assert (
        _msg(TypeError, lambda: flag(long, "f", {}))
        == "f: expected True or False, got " + ("str " + repr(long))[:120]
    )
    names = ["loss"]
    assert _msg(ValueError, lambda: finite((np.inf, np.nan), "f", names + ["grad"], {})) == (
        "f: expected a finite loss and grad, got NaN (beyond float64) from "
    )
    assert _msg(ValueError, lambda: finite((1.0, np.inf), "f", names, {"x": 2.0})) == (
        "f: expected a finite result 1, got inf (beyond float64) from x = 2"
    )
    assert finite((), "f", [], {}) == () and finite(((), 1.0), "f", [], {}) == ((), 1.0)  # no entry is finite
    assert finite(2**70, "f", ["n"], {}) == 2**70  # a count beyond int64 is finite too
    grader = lambda prompt, response: 0.0  # noqa: E731
    assert call(grader, "g", {}) is grader


def test_simplex_rows_are_the_last_axis():
    p = np.array([[[0.5, 0.5], [0.5, 0.5]]])  # axis 1 sums to (1, 1) too; axis 2 is what counts
    assert simplex("N K V")(p, "p", {}).shape == (1, 2, 2)
    q = np.array([[[0.5, 0.5], [0.25, 0.25]]])  # rows (last axis) 1 and 0.5; axis 1: 0.75 and 0.75
    assert _msg(ValueError, lambda: simplex("N K V")(q, "p", {})) == (
        "p: expected rows summing to 1 (within 1e-9), got a row summing to 0.5"
    )
