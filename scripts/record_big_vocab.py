"""Rerun the full big-vocabulary benchmark and write its record, or print the recorded run.

The full shapes of `examples/bench_big_vocab.py` (V = 151936, d = 256, N = 2048, float32) take
minutes, longer than a docs build should wait, so the page on real vocabularies renders a
committed record of one full run instead, beside the quick run it measures at build time. The
record (`docs/records/big_vocab.json`) holds the date, the machine (CPU, cores, memory), the
versions (Python, NumPy, Numba, PyTorch if it imports), the commit, and every figure: the floor,
each method's time and peak, the chunked products alone, and a sweep of the chunk size.

    $ python scripts/record_big_vocab.py            # measure (minutes) and write the record
    $ python scripts/record_big_vocab.py --torch-python /path/to/python   # PyTorch from another env
    $ python scripts/record_big_vocab.py --show     # print the record: table, sweep, chunk to use
    $ python scripts/record_big_vocab.py --takeaway # three lines from the record
    $ python scripts/record_big_vocab.py --plot sweep.svg   # the recorded chunk sweep, drawn
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import bench_big_vocab as bench  # noqa: E402
from _cli import plot_path  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--show", action="store_true", help="print the recorded run instead of measuring")
    p.add_argument("--takeaway", action="store_true", help="print three lines from the recorded run")
    p.add_argument(
        "--torch-python",
        metavar="PYTHON",
        help="the interpreter of the PyTorch row, if not this one (it needs torch and NumPy only)",
    )
    p.add_argument(
        "--plot",
        metavar="SVG",
        type=plot_path,
        help="draw the recorded chunk sweep to this file instead of measuring",
    )
    p.add_argument("--path", default=bench.RECORD, help="the record file (default docs/records/big_vocab.json)")
    args = p.parse_args(argv)
    if args.show or args.takeaway or args.plot:
        if not os.path.isfile(args.path):
            p.error(f"--path: expected a record file, got {args.path!r} (run without --show to write one)")
        if args.plot:
            rec, cfg, _, points = bench.load_record(args.path)
            bench.plot(args.plot, points, cfg, rec["dtype"])
        else:
            (bench.takeaway if args.takeaway else bench.show)(args.path)
        return
    folder = os.path.dirname(os.path.abspath(args.path))
    if not os.path.isdir(folder):
        p.error(f"--path: expected a file in an existing folder, got {args.path!r}")
    if not os.path.exists("/proc/self/clear_refs"):
        p.error("peak memory is read from /proc/self (Linux only)")
    if args.torch_python:
        if not (os.path.isfile(args.torch_python) and os.access(args.torch_python, os.X_OK)):
            p.error(f"--torch-python: expected an executable Python, got {args.torch_python!r}")
        bench.TORCH_PYTHON[0] = args.torch_python
        if not bench.have_torch():
            p.error(f"--torch-python: expected a Python where torch and numpy import, got {args.torch_python!r}")
    bench.record(args.path)


if __name__ == "__main__":
    main()
