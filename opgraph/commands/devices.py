"""``opgraph devices``: the device peak table (docs/roofline.md)."""

from __future__ import annotations

import click

from opgraph.device_options import device_file_option
from opgraph.emit import emit_json
from opgraph.errors import OpgraphInputError
from opgraph.commands.base import console
from opgraph.table_options import TableFiles, table_file_options, write_frames


@click.command()
@click.option("--json", "as_json", is_flag=True,
              help="The table as JSON (the devices.json document, schemas/devices.schema.json).")
@click.option("--name", default=None, help="Show only the entry this runtime or table name resolves to.")
@click.option("--sparse", is_flag=True, help="Show the 2:4-sparsity peaks instead of the dense ones.")
@device_file_option
@table_file_options
def devices(as_json: bool, name: str | None, sparse: bool, csv_dir: TableFiles | None) -> None:
    """The device peak table (dense TFLOP/s per dtype, DRAM GB/s) with its sources; entries
    from user device files (--device-file, $OPGRAPH_DEVICES) cite the file."""
    from opgraph.devices.peaks import device_table_doc

    try:
        doc = device_table_doc(name)
    except KeyError:
        raise OpgraphInputError(None, f"no unique table entry for device name {name!r} (see `opgraph devices`)") from None
    if csv_dir is not None:
        from opgraph.export.text.devices import devices_frame
        write_frames({"devices": devices_frame(doc["devices"], sparse)}, csv_dir, "devices")
    if as_json:
        emit_json(doc, "devices.schema.json")
    elif csv_dir is None:
        from opgraph.export.text.devices import render_devices
        render_devices(doc, sparse, console())
