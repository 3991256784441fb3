"""Chrome/Perfetto trace JSON: the augmented trace, its args, counters, flows and lanes, job traces, the predicted timeline and the trace checker (docs/perfetto.md)."""
