"""`python -m pipelines.cli`: the `wastewatch` command without its installed script."""

import sys

from pipelines.cli import main

sys.exit(main())
