"""``python -m benchsel``: the same as the ``benchsel`` command."""

from .cli import main

raise SystemExit(main())
