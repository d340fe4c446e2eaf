"""Shared test set-up: the helpers at the top of tests/ (gradcheck, quiet, the bad-input
battery) import from every part's folder."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for p in (HERE, HERE / "contract"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
