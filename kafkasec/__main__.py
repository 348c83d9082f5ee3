"""``python -m kafkasec``: the ``kafkasec`` command, for environments without its script on PATH."""

import sys

from kafkasec.cli import main

sys.exit(main())
