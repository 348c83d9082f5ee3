"""python -m kafkasec.cli"""

import sys

from kafkasec.cli import main

sys.exit(main())
