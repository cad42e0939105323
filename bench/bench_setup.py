"""What every benchmark starts with: `[path/to/shellctl] [--quick]` from the command line,
the test harness (tests/support/harness.py) importable, and a percentile helper."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
QUICK = "--quick" in sys.argv
if ARGS:
    os.environ["SHELLCTL_BIN_DIR"] = os.path.dirname(os.path.abspath(ARGS[0]))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))


def pct(values, p):
    """The p-th percentile (nearest rank) of `values`."""
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]
