"""Claims a page makes about a run, checked by that run.

A docs page states comparisons taken from an example's output: "lower than", "never", "most
of", a sign, an ordering. Such a sentence is either printed by the run (computed from its
results) or asserted by it. This module is the second half: the example states each claim next
to the numbers it is about,

    from _claims import claim
    claim(var_tok < var_seq, "token IS has lower variance than sequence IS at every level")

A claim binds the page, not the reader. Where the site and the tests run the example, the
environment has ``MINIRL_CLAIMS_STRICT=1`` (``scripts/mkdocs_hooks.py`` and ``tests/conftest.py``
set it): there a claim that no longer holds stops the run with ``ClaimFailed`` (an
``AssertionError``, so the example exits with status 1 and a page that runs it fails ``mkdocs
build --strict``). Anywhere else (a reader's own flags) the run goes on and exits 0 as usual:
``claim`` prints one plain line to standard output, beside the table the claim is about, saying
that the sentence does not hold at these settings (its ``negation`` if the example words one,
``at these settings: <negation>``, else ``at these settings, this does not hold: <sentence>``)
and returns that line. A claim that holds prints nothing and returns its sentence. An example
that prints the sentence itself calls ``print(stated(ok, sentence))`` instead: ``stated`` returns
the same line and prints nothing.

``held()`` lists the claims that held so far in this process, in order (``failed()`` the ones
that did not); ``python examples/X.py`` with the environment variable ``MINIRL_CLAIMS=1`` prints
both to standard error at exit.
"""

import atexit
import os
import sys

STRICT_ENV = "MINIRL_CLAIMS_STRICT"
NOT_HERE = "at these settings, this does not hold: "

_HELD = []
_FAILED = []


class ClaimFailed(AssertionError):
    """A sentence of a page no longer holds for the run that backs it."""


def strict():
    """Whether a claim that does not hold stops the run (``MINIRL_CLAIMS_STRICT=1``)."""
    return os.environ.get(STRICT_ENV) == "1"


def stated(ok, sentence, negation=None):
    """A claim whose sentence the example prints itself: ``print(stated(ok, sentence))``.

    Returns ``sentence`` if ``ok`` (a bool or a NumPy bool) holds. If it does not: raises
    ``ClaimFailed`` in strict mode; otherwise returns the line that says so (``negation``, a
    sentence that states the opposite, after ``at these settings: ``, or ``NOT_HERE`` before
    ``sentence``), for the example to print where the sentence would have been.
    """
    if not isinstance(sentence, str) or not sentence:
        raise TypeError(f"sentence: expected a non-empty str, got {sentence!r}")
    if negation is not None and (not isinstance(negation, str) or not negation):
        raise TypeError(f"negation: expected a non-empty str or None, got {negation!r}")
    if type(ok).__name__ not in ("bool", "bool_"):
        raise TypeError(f"ok: expected a bool (the claim's condition), got {type(ok).__name__}")
    if ok:
        _HELD.append(sentence)
        return sentence
    if strict():
        raise ClaimFailed(f"claim no longer holds: {sentence}")
    _FAILED.append(sentence)
    return f"at these settings: {negation}" if negation else NOT_HERE + sentence


def claim(ok, sentence, negation=None):
    """A claim the page states and the example does not print: as ``stated``, but a claim that
    does not hold (outside strict mode) prints its line itself, then returns it."""
    line = stated(ok, sentence, negation)
    if line is not sentence:
        print(line, flush=True)
    return line


def held():
    """The claims that held so far in this process, in the order they were checked."""
    return list(_HELD)


def failed():
    """The claims that did not hold so far in this process (outside strict mode), in order."""
    return list(_FAILED)


def _list_at_exit():
    if os.environ.get("MINIRL_CLAIMS") == "1":
        for i, sentence in enumerate(_HELD, 1):
            print(f"claim {i}: {sentence}", file=sys.stderr)
        for sentence in _FAILED:
            print(f"claim not held: {sentence}", file=sys.stderr)


atexit.register(_list_at_exit)
