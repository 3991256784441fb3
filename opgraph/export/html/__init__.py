"""The self-contained HTML report: the page, its tables and number formats (docs/pictures.md)."""
