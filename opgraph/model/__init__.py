"""The trace model, the bottom of the house (docs/model.md): the event kinds and the
canonical event table (``table``, ``event_args``), lanes (``lanes``), the graph's edge kinds
(``edge_kinds``), the trace graph itself (``trace_graph.TraceGraph``: node and edge
columns, the event table, networkx as a view), its column view with the derived structure
(``arrays.GraphArrays``: lanes, parents, launchers, edge positions), the nest tree
(``tree``), and the saved form's payload, packing, checks and safe unpickler (``payload``,
``packed_args``, ``node_link``, ``validate``, ``validate_columns``, ``attr_bounds``,
``cycles``, ``unpickler``, ``json_depth``). Readers (``opgraph.ingest``) produce its event
table; the builder (``opgraph.graph``) produces its graphs; everything above reads them."""
