"""``python -m opgraph``: the same command line as ``opgraph``."""

from opgraph.cli import run

if __name__ == "__main__":
    run()
