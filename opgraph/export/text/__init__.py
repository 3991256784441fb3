"""Terminal output: the rich console every command prints through and the renderers of each analysis (docs/architecture.md)."""
