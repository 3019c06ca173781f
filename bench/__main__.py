"""`python -m bench`: the whole benchmark suite (bench/suite.py); `make bench` runs it."""

import sys

from bench.suite import main

sys.exit(main())
