"""One table of the public functions' arguments and their kinds, and the bad inputs made from it.

``TABLE`` lists every public function with a factory of valid arguments and, per argument, its
kind (``float2``: a finite float array of fixed shape, ``mask``: a token-level 0/1 mask, holes
allowed, ``pmask``: one read as a prefix, right-padded, ``ids``, ``pos``: a finite
number > 0, ``option``, ``generator``, ``policy``, ``grader``, ...). ``BAD[kind]`` turns a valid
value into bad ones (wrong type, NaN, inf, wrong shape, empty, out of range, unhashable option,
...), each with the argument whose name must start the error message. ``cases()`` crosses the
two; ``tests/contract/test_hardening.py`` runs every case. A new public function gets its cases by being
listed in ``TABLE``.

The table is kept by part, one file each: ``battery_<part>.py`` (core, kernels, pg, direct, distill,
values, multiturn, scale, tasks, exact, nn, select, reward) holds its part's rows; ``battery_data.py``
the valid values and
``battery_kinds.py`` the bad values per kind. This file joins them: ``cases()`` and ``counts()``
are the one entry.

    $ python tests/contract/battery.py          # the number of bad-input cases by function
"""

import inspect
from collections import Counter

import battery_core
import battery_direct
import battery_distill
import battery_exact
import battery_kernels
import battery_multiturn
import battery_nn
import battery_pg
import battery_reward
import battery_scale
import battery_select
import battery_tasks
import battery_values
from battery_data import GRADER, MDP, POLICY, RNG  # noqa: F401 (test_hardening's set-ups)
from battery_kinds import BAD

PARTS = (
    battery_pg,
    battery_values,
    battery_direct,
    battery_distill,
    battery_core,
    battery_tasks,
    battery_kernels,
    battery_multiturn,
    battery_scale,
    battery_exact,
    battery_nn,
    battery_select,
    battery_reward,
)
TABLE = [row for part in PARTS for row in part.TABLE]


def fname(func):
    mod = getattr(func, "__module__", "") or ""
    short = mod.rsplit(".", 1)[-1] if mod.startswith("minirl_lm") else ""
    name = func.__name__
    return f"{short}.{name}" if short and "." not in name else name


def cases():
    """Every (function name, func, valid-args factory, arg, label, bad value): one per bad input."""
    out = []
    for func, args in TABLE:
        params = inspect.signature(func).parameters

        def valid(args=args):
            return {k: f() for k, (kind, f) in args.items()}

        for arg, (kind, factory) in args.items():
            if kind is None:
                continue
            optional = arg in params and params[arg].default is None  # None is the default
            for label, bad in BAD[kind](factory()):
                if not (optional and bad is None):
                    out.append((fname(func), func, valid, arg, label, bad))
    return out


def counts():
    return Counter(c[0] for c in cases())


if __name__ == "__main__":
    c = counts()
    for name, n in sorted(c.items()):
        print(f"{name:45s} {n:4d}")
    print(f"{'total':45s} {sum(c.values()):4d} bad-input cases over {len(c)} public functions")
