"""``python -m sb3_hir.cli``: the ``sb3-hir`` command."""

import sys

from sb3_hir.cli import main

sys.exit(main())
