"""Tests that kill the mutants the rest of the suite let survive, grouped by module.

Each test states an exact, hand-checked answer: defaults, hand-computed values, empty-batch
answers, error messages naming the argument, and the returned diagnostics.
"""

import numpy as np
import pytest
