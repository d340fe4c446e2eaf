"""Argument types shared by the examples' command lines.

Each function here is an ``argparse`` ``type=``: it turns the text of one argument into a value
or raises ``argparse.ArgumentTypeError``, which argparse reports as a usage error (exit status 2,
the usage line and the message, no traceback). NaN and inf are never accepted as numbers.
``plot_path`` checks that the figure can be written before the run starts.

The examples import it as ``from _cli import ...`` after putting their own folder on
``sys.path``, so ``python examples/X.py`` works from any directory.
"""

import argparse
import math
import os

PLOT_FORMATS = ("svg", "png", "pdf", "jpg", "jpeg", "eps", "ps")


def _parse(text, kind):
    try:
        return kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def int_at_least(low):
    """Type: an integer >= low."""
    def parse(text):
        x = _parse(text, int)
        if x < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {x}")
        return x
    parse.__name__ = f"integer >= {low}"
    return parse


def real(low=None, high=None, low_open=False, high_open=False):
    """Type: a finite number in the interval given by low / high (open ends if *_open)."""
    lo = "" if low is None else ("(" if low_open else "[") + f"{low:g}"
    hi = "" if high is None else f"{high:g}" + (")" if high_open else "]")
    where = (f" in {lo}, {hi}" if low is not None and high is not None else
             f" {'>' if low_open else '>='} {low:g}" if low is not None else
             f" {'<' if high_open else '<='} {high:g}" if high is not None else "")

    def parse(text):
        x = _parse(text, float)
        ok = math.isfinite(x)
        if ok and low is not None:
            ok = x > low if low_open else x >= low
        if ok and high is not None:
            ok = x < high if high_open else x <= high
        if not ok:
            raise argparse.ArgumentTypeError(f"expected a finite number{where}, got {text!r}")
        return x
    parse.__name__ = f"number{where}"
    return parse


def reals(low=None, low_open=False, allow_empty=False):
    """Type: comma-separated finite numbers (each checked as ``real(low, ...)``), as a tuple."""
    one = real(low=low, low_open=low_open)

    def parse(text):
        if not text.strip():
            if allow_empty:
                return ()
            raise argparse.ArgumentTypeError("expected comma-separated numbers, got ''")
        return tuple(one(x) for x in text.split(","))
    return parse


seed = int_at_least(0)
seed.__doc__ = "Type: a seed of np.random.default_rng, an integer >= 0."


def plot_path(text):
    """Type: a file path whose folder exists and whose extension matplotlib can write."""
    folder = os.path.dirname(os.path.abspath(text)) or "."
    if not text or os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"expected a file path, got {text!r}")
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"expected a path in an existing folder, got {text!r} "
                                         f"({folder} does not exist)")
    ext = os.path.splitext(text)[1].lstrip(".").lower()
    if ext not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(f"expected a file name ending in one of "
                                         f".{', .'.join(PLOT_FORMATS)}, got {text!r}")
    return text
