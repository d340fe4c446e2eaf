"""Replay recorded calls against a standalone copy, in a process where the package cannot load.

    python -I tests/standalone_replay.py FOLDER MODULE RECORDS [RTOL]

FOLDER holds the copy MODULE.py; RECORDS is what tests/standalone_record.py wrote. Any import of
minirl_lm or numba fails here, and the import path holds FOLDER, the standard library and the
installed third-party packages (NumPy) only. Every recorded call is made again on the copy and its
result compared with the package's bit for bit (arrays: dtype, shape and bytes; floats: their
bits), and every recorded error by type and message. With RTOL > 0, float arrays and floats are
compared norm-wise instead, max |copy - package| <= RTOL max |package| (a copy that runs the
policy's NumPy path where the package ran the Numba kernels). Prints a JSON summary on stdout.
"""

import importlib.abc
import io
import json
import pickle
import struct
import sys


class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("minirl_lm", "numba"):
            raise ImportError(f"{name} is not importable beside a standalone copy")
        return None


sys.meta_path.insert(0, _Blocked())
folder, module, records_path = sys.argv[1:4]
RTOL = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
here = sys.path[0]
sys.path[:] = [folder] + [p for p in sys.path[1:] if p != here]

import numpy as np  # noqa: E402

copy = importlib.import_module(module)
assert copy.__file__.startswith(folder), copy.__file__


def close(a, b):
    """Norm-wise equality to RTOL; non-finite entries must match exactly."""
    fin = np.isfinite(b)
    if not np.array_equal(np.isfinite(a), fin) or not np.array_equal(a[~fin], b[~fin], equal_nan=True):
        return False
    return np.abs(a[fin] - b[fin]).max(initial=0.0) <= RTOL * max(np.abs(b[fin]).max(initial=0.0), 1e-300)


def same(a, b):
    """Bit-for-bit equality of two results."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if not (a.dtype == b.dtype and a.shape == b.shape):
            return False
        return a.tobytes() == b.tobytes() or (RTOL > 0 and a.dtype.kind == "f" and close(a, b))
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (RTOL > 0 and close(np.array(a), np.array(b)))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.generic):
        return a.tobytes() == b.tobytes()
    if hasattr(a, "__dict__") and not isinstance(a, type):
        return same(vars(a), vars(b))  # an object of the copy's classes
    return a == b


class _CopyUnpickler(pickle.Unpickler):
    """Objects of the package's classes come back as instances of the copy's own classes."""

    def find_class(self, module_name, name):
        if module_name.split(".")[0] == "minirl_lm":
            if not hasattr(copy, name):
                raise pickle.UnpicklingError(f"{module_name}.{name} is not in the copy")
            return getattr(copy, name)
        return super().find_class(module_name, name)


def load(data):
    return _CopyUnpickler(io.BytesIO(data)).load()


with open(records_path, "rb") as fh:
    data = pickle.load(fh)
summary = {"missing": [], "calls": {}, "mismatches": [], "skipped": 0}
for name in data["public"][module]:
    if not hasattr(copy, name):
        summary["missing"].append(name)
        continue
    fn = getattr(copy, name)
    kept = data["records"].get((module, name), {"return": [], "raise": []})
    usable = {"return": [], "raise": []}
    for outcome, calls in kept.items():  # calls whose objects the copy can rebuild
        for payload, res in calls:
            try:
                usable[outcome].append((load(payload), res))
            except pickle.UnpicklingError:
                summary["skipped"] += 1
    summary["calls"][name] = [len(usable["return"]), len(usable["raise"])]
    for (args, kwargs), res in usable["return"]:
        try:
            got = fn(*args, **kwargs)
        except Exception as e:
            summary["mismatches"].append(f"{name}: raised {type(e).__name__}: {e}; the package returned")
            continue
        if not same(got, load(res)):
            summary["mismatches"].append(f"{name}: result differs from the package's")
    for (args, kwargs), (etype, msg) in usable["raise"]:
        try:
            fn(*args, **kwargs)
        except Exception as e:
            if (type(e).__name__, str(e)) != (etype, msg):
                summary["mismatches"].append(
                    f"{name}: raised {type(e).__name__}: {e}; the package raised {etype}: {msg}"
                )
            continue
        summary["mismatches"].append(f"{name}: returned; the package raised {etype}: {msg}")
print(json.dumps(summary))
