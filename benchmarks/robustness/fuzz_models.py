"""The model-file fuzzer's long campaign (docs/bench/fuzz_models.md, docs/BENCHMARKS.md).

    python -m benchmarks.robustness.fuzz_models --examples 5000 --seed 0 --limit-mb 1024 --max-bomb-mb 2048

The fuzzer itself is tests/helpers/fuzz_models.py: the tests run a short campaign of the same
code and build their hostile files with it, so it lives with them and this script only runs it
(options: ``--help``).
"""

import sys

from tests.helpers.fuzz_models import main

if __name__ == "__main__":
    sys.exit(main())
