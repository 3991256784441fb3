"""``opgraph predict --et ET.json --overheads FILE --device NAME``: the execution-trace form
of ``opgraph predict`` (:mod:`opgraph.commands.predict` declares the options; docs/predict.md)."""

from __future__ import annotations

from opgraph.commands.base import console
from opgraph.emit import emit_json
from opgraph.errors import OpgraphInputError


def predict_et_command(input: str | None, et: str, overheads: str | None, device: str | None, lookup: str | None,
                calibration: str | None, data_loading: str, hit_rate: str, gap_mode: str, as_json: bool,
                graph_options: bool) -> None:
    """``opgraph predict --et``: ET-driven prediction (:func:`opgraph.predict.et_sim.predict_et`):
    the option checks of that form of the command, the call, and its output."""
    from opgraph.predict.et_sim import predict_et

    if input is not None:
        raise OpgraphInputError(input, "--et predicts an execution trace; give no graph or trace argument with it")
    if graph_options:
        raise OpgraphInputError("--et", "replay/what-if options (--replay, --scale-*, --remove, --window, --perfetto ...) "
                                "apply to a graph, not to --et")
    if overheads is None:
        raise OpgraphInputError("--et", "needs --overheads FILE (`opgraph overheads TRACE -o FILE --by-shapes`)")
    if device is None:
        raise OpgraphInputError("--et", "needs --device NAME (e.g. V100)")
    res = predict_et(et, overheads, device, lookup, calibration, data_loading, hit_rate, gap_mode)
    doc = res.to_dict()
    if as_json:
        emit_json(doc, "predict-et.schema.json")
        return
    from opgraph.export.text.predict import render_predict_et

    render_predict_et(doc, et, console())


