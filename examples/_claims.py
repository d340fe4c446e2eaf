"""Claims a page makes about a run, checked by that run.

A docs page states comparisons taken from an example's output: "lower than", "never", "most
of", a sign, an ordering. Such a sentence is either printed by the run (computed from its
results) or asserted by it. This module is the second half: the example states each claim next
to the numbers it is about,

    from _claims import claim
    claim(var_tok < var_seq, "token IS has lower variance than sequence IS at every level")

and a claim that no longer holds stops the run with ``ClaimFailed`` (an ``AssertionError``, so
``python examples/X.py`` exits with status 1 and a page that runs it fails ``mkdocs build
--strict``). ``claim`` returns its sentence, so a page can print what was checked.

``held()`` lists the claims checked so far in this process, in order; ``python examples/X.py``
with the environment variable ``MINIRL_CLAIMS=1`` prints them to standard error at exit.
"""

import atexit
import os
import sys

_HELD = []


class ClaimFailed(AssertionError):
    """A sentence of a page no longer holds for the run that backs it."""


def claim(ok, sentence):
    """Check ``ok`` (a bool or a NumPy bool); return ``sentence``, or raise ``ClaimFailed``."""
    if not isinstance(sentence, str) or not sentence:
        raise TypeError(f"sentence: expected a non-empty str, got {sentence!r}")
    if type(ok).__name__ not in ("bool", "bool_"):
        raise TypeError(f"ok: expected a bool (the claim's condition), got {type(ok).__name__}")
    if not ok:
        raise ClaimFailed(f"claim no longer holds: {sentence}")
    _HELD.append(sentence)
    return sentence


def held():
    """The claims checked so far in this process, in the order they were checked."""
    return list(_HELD)


def _list_at_exit():
    if os.environ.get("MINIRL_CLAIMS") == "1":
        for i, sentence in enumerate(_HELD, 1):
            print(f"claim {i}: {sentence}", file=sys.stderr)


atexit.register(_list_at_exit)
