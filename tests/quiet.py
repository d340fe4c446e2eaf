"""Helpers for tests that a call stays silent: every warning turned into an error while it runs.

The library never warns (an overflow is a ValueError naming the argument that drove it), so
these run a call with `warnings.simplefilter("error")` and return its result or its message.
"""

import warnings

import pytest


def silent(call):
    """The result of `call()`, with every warning an error (so none escapes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call()


def raises(exc, call):
    """The message of the `exc` that `call()` raises, with every warning an error."""
    with pytest.raises(exc) as e:
        silent(call)
    return str(e.value)


def overflow(name, what, kind="inf"):
    """The text of `checks.finite_result`'s error: `what` came out `kind` ("inf" or "NaN")."""
    return (
        f"{name}: expected a value for which {what} is finite in float64, got one that makes it {kind} (overflow)"
    )


def names(arg, fragment, call, exc=ValueError):
    """The message of the `exc` that `call()` raises (silently), checked to name `arg` first and
    to contain `fragment`: a pin of what the message says, not of NumPy's print format."""
    msg = raises(exc, call)
    assert msg.startswith(f"{arg}: ") and fragment in msg, msg
    return msg


def kind_message(read, x, dims=None):
    """`type: message` of the error a kind `read` (of `boundary` or a part's kinds) raises on `x`,
    read as the argument "z"; an AssertionError if it accepts `x`."""
    try:
        read(x, "z", {} if dims is None else dims)
    except (TypeError, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    raise AssertionError(f"accepted {x!r}")
