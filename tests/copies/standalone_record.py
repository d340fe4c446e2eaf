"""A pytest plugin that records the calls the tests make to one package module.

Loaded by tests/copies/test_standalone.py in a subprocess (`pytest -p standalone_record ...`) with
MINIRL_RECORD_MODULES (dotted, e.g. "pg.clip,pg.kl") and MINIRL_RECORD_OUT (a file) set. At start-up it wraps
every public function of each `minirl_lm.<module>` in place, before any test module imports it, and
keeps, per function, the first calls whose arguments and result are plain data (NumPy arrays,
numbers, strings, generators) or objects of the copyable modules themselves (an MDP, say, which
the copy defines too; a policy, which needs the Numba kernels, is not such an object): the pickled
arguments as they were before the call, and the pickled result or the exception's type and
message. At the end of the session it writes them to MINIRL_RECORD_OUT, for a standalone copy
of the module to replay.
"""

import functools
import importlib
import inspect
import io
import os
import pickle

MODULES = os.environ["MINIRL_RECORD_MODULES"].split(",")
OUT = os.environ["MINIRL_RECORD_OUT"]
CAP = int(os.environ.get("MINIRL_RECORD_CAP", "25"))  # calls kept per function and outcome

_records = {}  # (module, name) -> {"return": [(args, result)], "raise": [(args, (type, message))]}
# Recording on or off: always on in the subprocess; in a whole-suite session tests/conftest.py
# turns it on only while a test file that covers a copyable module runs (the files the subprocess
# would run), so the other tests call the package's functions at their own speed.
ACTIVE = [True]


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles NumPy and built-in objects, and objects of the copyable modules (a standalone
    copy's process maps those to the copy's own classes)."""

    def find_class(self, module, name):
        parts = module.split(".")
        ours = parts[0] == "minirl_lm" and ".".join(parts[1:]) in MODULES
        if not ours and parts[0] not in ("numpy", "builtins", "copyreg", "collections", "_codecs"):
            raise pickle.UnpicklingError(f"{module}.{name} is not plain data")
        return super().find_class(module, name)


def _plain(obj):
    """Pickled bytes of obj if it unpickles from NumPy and built-ins alone, else None."""
    try:
        data = pickle.dumps(obj)
        _PlainUnpickler(io.BytesIO(data)).load()
    except Exception:
        return None
    return data


def _wrap(key, f):
    @functools.wraps(f)
    def recorded(*args, **kwargs):
        if not ACTIVE[0]:
            return f(*args, **kwargs)
        kept = _records.setdefault(key, {"return": [], "raise": []})
        # the arguments as they were before the call, pickled only while returns are still kept;
        # a call that raises has changed nothing (the project's rule, tested on its own), so once
        # the returns are full a raising call's arguments are pickled after it
        payload = _plain((args, kwargs)) if len(kept["return"]) < CAP else None
        try:
            result = f(*args, **kwargs)
        except Exception as e:
            if len(kept["raise"]) < CAP:
                payload = payload if payload is not None else _plain((args, kwargs))
                if payload is not None:
                    kept["raise"].append((payload, (type(e).__name__, str(e))))
            raise
        if payload is not None and len(kept["return"]) < CAP:
            res = _plain(result)
            if res is not None:
                kept["return"].append((payload, res))
        return result

    return recorded


PUBLIC = {}
for _m in MODULES:
    _mod = importlib.import_module(f"minirl_lm.{_m}")
    _stem = _m.rsplit(".", 1)[-1]  # a copy is named by its file's stem
    PUBLIC[_stem] = sorted(
        n
        for n, f in vars(_mod).items()
        if not n.startswith("_") and inspect.isfunction(f) and f.__module__ == _mod.__name__
    )
    for _name in PUBLIC[_stem]:
        setattr(_mod, _name, _wrap((_stem, _name), getattr(_mod, _name)))


def pytest_sessionfinish(session, exitstatus):
    with open(OUT, "wb") as fh:
        pickle.dump({"public": PUBLIC, "records": _records, "exitstatus": int(exitstatus)}, fh)
