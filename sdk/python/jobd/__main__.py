"""``python -m jobd worker …``: see :mod:`jobd.cli`."""

import sys

from .cli import main

sys.exit(main())
