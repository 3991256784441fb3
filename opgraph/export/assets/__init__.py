"""Inline assets of the HTML report (CSS and JavaScript as Python strings, so they ship with
the package without package-data entries)."""
