"""The atlas's fixed points, as a command the test session runs beside the in-process tests.

    python tests/examples/_atlas_fixed_points.py 0 2 4

prints, as JSON, the fixed-point TV and residual at K = 3 of the atlas's configurations of those
indices (`atlas.measure` at probe(main, 0); seconds in all), as float.hex strings, so that
tests/examples/test_exact_fixtures.py compares the exact values.
"""

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("atlas", ROOT / "examples" / "atlas.py")
atlas = importlib.util.module_from_spec(spec)
spec.loader.exec_module(atlas)


def main(indices):
    task = atlas.make_task("main")
    theta = atlas.probe(task, 0)
    rows = [atlas.measure(atlas.CONFIGS[int(i)], task, 3, theta) for i in indices]
    print(json.dumps([[float(r["tv"]).hex(), float(r["residual"]).hex()] for r in rows]))


if __name__ == "__main__":
    main(sys.argv[1:])
