"""`python -m gateway.cli`: the `warrant` command."""

import sys

from gateway.cli.main import main

sys.exit(main())
