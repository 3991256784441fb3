"""Errors that reach the user as one line and exit code 2."""

from __future__ import annotations


class OpgraphInputError(Exception):
    """Bad input: names the file, the event (index) when known, and the problem.

    The CLI prints ``str(err)`` on one line and exits with code 2.
    """

    def __init__(self, path: str | None, problem: str, event_index: int | None = None):
        self.path = path
        self.problem = problem
        self.event_index = event_index
        super().__init__(self._format())

    def __reduce__(self):
        # picklable with its fields (errors cross process-pool and Dask boundaries)
        return (type(self), (self.path, self.problem, self.event_index))

    def _format(self) -> str:
        where = str(self.path) if self.path else "<input>"
        if self.event_index is not None:
            where += f": event {self.event_index}"
        return f"{where}: {self.problem}"
