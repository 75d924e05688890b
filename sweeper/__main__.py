"""``python -m sweeper``: the ``sweep`` command, for environments whose scripts folder is not on PATH."""

from sweeper.cli import main

if __name__ == "__main__":
    main()
