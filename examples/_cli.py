"""Argument types shared by the examples' command lines.

Each function here is an ``argparse`` ``type=``: it turns the text of one argument into a value
or raises ``argparse.ArgumentTypeError``, which argparse reports as a usage error (exit status 2,
the usage line and ``error: argument --X: expected ..., got ...``, no traceback). Every check
runs while the command line is parsed, so a bad argument fails before the run starts:

- numbers are finite and inside a stated range (NaN and inf are never accepted);
- counts have an upper bound too, so that no command line can hang a run or exhaust memory;
- ``plot_path`` checks that the figure can be written (an existing, writable folder, an
  extension matplotlib writes) and that matplotlib imports, before the run it would plot.

``quiet_pipe()``, called first in every example's ``main()``, lets ``python examples/X.py | head``
end quietly when its reader closes the pipe.

The examples import it as ``from _cli import ...`` after putting their own folder on
``sys.path``, so ``python examples/X.py`` works from any directory.
"""

import argparse
import math
import os
import signal
import sys
import threading

PLOT_FORMATS = ("svg", "png", "pdf", "jpg", "jpeg", "eps", "ps")
INSTALL_MATPLOTLIB = 'pip install -e ".[docs]" or pip install matplotlib'


def quiet_pipe():
    """End quietly, not with a BrokenPipeError traceback, when standard output's reader goes
    away (``python examples/k_sweep.py | head -5``): SIGPIPE gets its default action back, as
    for any other command of a pipeline (Python sets it to raise instead).

    Only in the program itself (an example run as ``__main__``, from its main thread): a test
    that calls an example's ``main()`` in its own process keeps that process's handler. A
    platform without SIGPIPE (Windows) keeps Python's behaviour.
    """
    main = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    here = os.path.dirname(os.path.abspath(__file__))
    if not hasattr(signal, "SIGPIPE") or os.path.dirname(os.path.abspath(main)) != here:
        return
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)


def _show(text, width=40):
    """repr of a number's text, shortened: a 5000-digit integer is not echoed whole."""
    return repr(text) if len(text) <= width else repr(text[:width]) + f" ({len(text)} characters)"


def _parse(text, kind):
    try:
        return kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {what}, got {_show(text)}") from None


def integer(low, high=None):
    """Type: an integer in [low, high] (no upper end if high is None)."""
    where = f">= {low}" if high is None else f"in [{low}, {high}]"

    def parse(text):
        x = _parse(text, int)
        if x < low or (high is not None and x > high):
            raise argparse.ArgumentTypeError(f"expected an integer {where}, got {x}")
        return x

    parse.__name__ = f"integer {where}"
    return parse


def int_at_least(low):
    """Type: an integer >= low (the same as ``integer(low)``)."""
    return integer(low)


def real(low=None, high=None, low_open=False, high_open=False):
    """Type: a finite number in the interval given by low / high (open ends if *_open)."""
    lo = "" if low is None else ("(" if low_open else "[") + f"{low:g}"
    hi = "" if high is None else f"{high:g}" + (")" if high_open else "]")
    where = (
        f" in {lo}, {hi}"
        if low is not None and high is not None
        else f" {'>' if low_open else '>='} {low:g}"
        if low is not None
        else f" {'<' if high_open else '<='} {high:g}"
        if high is not None
        else ""
    )

    def parse(text):
        x = _parse(text, float)
        ok = math.isfinite(x)
        if ok and low is not None:
            ok = x > low if low_open else x >= low
        if ok and high is not None:
            ok = x < high if high_open else x <= high
        if not ok:
            raise argparse.ArgumentTypeError(f"expected a finite number{where}, got {_show(text)}")
        return x

    parse.__name__ = f"number{where}"
    return parse


def reals(low=None, high=None, low_open=False, high_open=False, allow_empty=False, most=64):
    """Type: 1..most comma-separated finite numbers (each checked as ``real(...)``), as a tuple."""
    one = real(low=low, high=high, low_open=low_open, high_open=high_open)

    def parse(text):
        if not text.strip():
            if allow_empty:
                return ()
            raise argparse.ArgumentTypeError("expected comma-separated numbers, got ''")
        parts = text.split(",")
        if len(parts) > most:
            raise argparse.ArgumentTypeError(f"expected at most {most} comma-separated numbers, got {len(parts)}")
        return tuple(one(x) for x in parts)

    return parse


seed = integer(0)
seed.__doc__ = "Type: a seed of np.random.default_rng, an integer >= 0."


def check_work(parser, names, what, total, limit):
    """Usage error unless the run's total work (a product of counts, each in range) <= limit.

    Each count has its own bound; their product is what a run costs, so an example checks it
    once after parsing: names are the options it multiplies, what says the product in words.
    """
    if total > limit:
        parser.error(f"{names}: expected at most {limit:.0e} {what}, got {total:.3g}")


def plot_path(text):
    """Type: a path matplotlib can write a figure to, checked before the run.

    The folder exists and is writable, the extension is one of ``PLOT_FORMATS``, and
    ``import matplotlib`` works (else the message says how to install it).
    """
    if not text or os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"expected a file path, got {text!r}")
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(
            f"expected a path in an existing folder, got {text!r} ({folder} does not exist)"
        )
    ext = os.path.splitext(text)[1].lstrip(".").lower()
    if ext not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(
            f"expected a file name ending in one of .{', .'.join(PLOT_FORMATS)}, got {text!r}"
        )
    target = text if os.path.exists(text) else folder
    if not os.access(target, os.W_OK):
        raise argparse.ArgumentTypeError(
            f"expected a path this user can write, got {text!r} ({target} is not writable)"
        )
    try:
        import matplotlib  # noqa: F401  (imported here so that a missing one fails before the run)
    except Exception as e:  # ImportError, or a broken installation failing on import
        raise argparse.ArgumentTypeError(
            f"expected matplotlib to draw the figure ({INSTALL_MATPLOTLIB}), got {type(e).__name__}: {e}"
        ) from None
    return text


def record_path(text):
    """Type: a file a run's record can be written to (in an existing, writable folder), checked
    before the run."""
    if not text or os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"expected a file path, got {text!r}")
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(
            f"expected a path in an existing folder, got {text!r} ({folder} does not exist)"
        )
    target = text if os.path.exists(text) else folder
    if not os.access(target, os.W_OK):
        raise argparse.ArgumentTypeError(
            f"expected a path this user can write, got {text!r} ({target} is not writable)"
        )
    return text
