"""The analysis catalog: every analysis declared once (``entries.py``), what an entry holds
(``spec.py``) and the schema made from an entry's tables (``schema.py``); docs/architecture.md,
"The analysis catalog"."""
