"""Test helpers: a Kineto trace synthesizer whose answers are known by construction.

See :mod:`opgraph.testing.synth` for the scenarios and the exact answer definitions
(all times in integer nanoseconds).
"""

from opgraph.testing.synth import SCENARIOS, Scenario, synthesize, trace_to_json, write_scenario

__all__ = ["SCENARIOS", "Scenario", "synthesize", "trace_to_json", "write_scenario"]
