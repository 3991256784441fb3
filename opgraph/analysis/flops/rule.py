"""The rule interface: what a FLOP rule receives (:class:`Ctx`), its signature
(:data:`Rule`: ``Ctx -> OpCost | None``) and :class:`RuleTable`, the table of one family's
rules by operator name or name pattern. Each family module fills its own table; the
registry (:mod:`opgraph.analysis.flops.registry`) lists the tables explicitly.

Units: rules return :class:`~opgraph.analysis.flops.cost.OpCost` (FLOPs, bytes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from opgraph.analysis.flops.args import Args
from opgraph.analysis.flops.cost import OpCost

__all__ = ["Ctx", "Rule", "RuleTable"]

#: A FLOP rule: the cost of one call, or ``None`` when the arguments are not enough.
Rule = Callable[["Ctx"], "OpCost | None"]


@dataclass(frozen=True)
class Ctx:
    """One op call as a rule sees it: the event *name*, its recorded arguments *a*, the
    process-group size *world_size* (collectives) and known *output_dims* (or ``None``)."""

    name: str
    a: Args
    world_size: int | None
    output_dims: Sequence[Any] | None


class RuleTable:
    """The rules of one family (``gemm``, ``conv``, ...): exact operator names -> rule, and
    regular-expression patterns tried in order when no exact name matches."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.exact: dict[str, Rule] = {}
        self.patterns: list[tuple[re.Pattern[str], Rule]] = []

    def add(self, fn: Rule, *names: str) -> Rule:
        """Register *fn* for each operator in *names* (a later registration of a name wins)."""
        for n in names:
            self.exact[n] = fn
        return fn

    def rule(self, *names: str) -> Callable[[Rule], Rule]:
        """Decorator: register the function for each operator in *names*."""
        def deco(fn: Rule) -> Rule:
            return self.add(fn, *names)
        return deco

    def pattern(self, pattern: str) -> Callable[[Rule], Rule]:
        """Decorator: register the function for operator names matching *pattern*
        (``re.match``)."""
        def deco(fn: Rule) -> Rule:
            self.patterns.append((re.compile(pattern), fn))
            return fn
        return deco
