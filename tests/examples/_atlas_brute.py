"""The atlas's slow computations, as commands the test session runs beside the in-process tests.

    python tests/examples/_atlas_brute.py main reinforce_pp token_mean kl_reward all
    python tests/examples/_atlas_brute.py fixed 0 1 2

The first prints, as JSON, E[g] and trace Cov[g] of one configuration at K = 2 on the atlas's main
task (`two`: with the second, format reward), at probe(task, 1): every joint outcome of the batch,
each through the library's own functions (`atlas.brute_force_moments`, seconds a configuration).
The second prints the fixed-point TV and residual at K = 3 of the atlas's configurations of those
indices (`atlas.measure` at probe(main, 0)). The floats are written with float.hex, so that the
tests compare the exact values.
"""

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("atlas", ROOT / "examples" / "atlas.py")
atlas = importlib.util.module_from_spec(spec)
spec.loader.exec_module(atlas)


def main(argv):
    which, cfg = argv[0], tuple(argv[1:])
    if which == "fixed":
        task = atlas.make_task("main")
        theta = atlas.probe(task, 0)
        rows = [atlas.measure(atlas.CONFIGS[int(i)], task, 3, theta) for i in cfg]
        print(json.dumps([[float(r["tv"]).hex(), float(r["residual"]).hex()] for r in rows]))
        return
    task = atlas.make_task("main")
    if which == "two":
        task = atlas.two_rewards(task)
    Eb, vb = atlas.brute_force_moments(cfg, atlas.probe(task, 1), task, 2)
    print(json.dumps({"Eg": [float(x).hex() for x in Eb], "var": float(vb).hex()}))


if __name__ == "__main__":
    main(sys.argv[1:])
