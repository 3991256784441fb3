"""Table files: the documents as CSV/rich frames and the graph as node and edge tables (docs/architecture.md)."""
