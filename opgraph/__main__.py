"""``python -m opgraph``: the same command line as ``opgraph``."""

from opgraph.cli import main

if __name__ == "__main__":
    main(prog_name="opgraph")
