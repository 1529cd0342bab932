"""``python -m nmtlib`` is the same as the ``nmtlib`` command."""

from nmtlib.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
