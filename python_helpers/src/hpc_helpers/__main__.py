"""``python -m hpc_helpers``: see :mod:`hpc_helpers.cli`."""

import sys

from .cli import main

sys.exit(main())
