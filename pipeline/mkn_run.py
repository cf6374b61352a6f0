"""``ngramflow mkn`` and ``ngramflow export-arpa``: the MKN stage on an existing, complete dataset.

While the stage runs, the manifest holds no "mkn" section (it is rewritten
without one, and the files of the model it replaces are deleted, first) and
``mkn/_INCOMPLETE`` says what is going on. The model is written into the
dataset's build folder and published, with the manifest's "mkn" section, only
when every MKN output is written. The import's own outputs are never touched.
"""

import time
from dataclasses import replace

import apache_beam as beam

from ngramflow.errors import RunFailed, UserError, marked_reason
from ngramflow.pipeline.mkn import MknSettings, build_mkn, finish_mkn, write_arpa
from ngramflow.pipeline.options import ImportOptions
from ngramflow.pipeline.output import DatasetDir
from ngramflow.pipeline.run import pipeline_options
from ngramflow.schemas import layout
from ngramflow.schemas.manifest import with_mkn
from ngramflow.transforms.mkn.discount import DiscountError
from ngramflow.transforms.sizing import mkn_workers


def read_manifest(out: DatasetDir) -> dict:
    if not out.is_complete():
        raise UserError(f"{out.path} is not a complete ngramflow dataset (no {layout.MANIFEST}); import into it first")
    return out.read_manifest()


def _check_orders(manifest: dict, order: int, path: str) -> list[int]:
    """The orders 1..order the dataset has n-grams of; the highest must be among them."""
    present = [o for o in range(1, order + 1) if manifest["orders"].get(str(o), {}).get("ngrams")]
    if order not in present:
        have = ", ".join(sorted(manifest["orders"])) or "none"
        raise UserError(f"{path} has no {order}-grams (orders present: {have}); choose --order among them")
    return present


def _mark(out: DatasetDir, text: str) -> None:
    out.write_text(layout.MKN_INCOMPLETE, f"{text} ({time.strftime('%Y-%m-%d %H:%M:%S')})\n")


def run_mkn(dataset: str, settings: MknSettings, overwrite: bool = False, workers: int | None = None,
            beam_args: list[str] | None = None) -> dict:
    """Estimate the model from the dataset's n-grams; returns the updated manifest. WORKERS None: one per core
    for a large model, at most one per GiB of the budget (sizing.mkn_workers), else 1."""
    # The options first: a mistake in them is reported before the dataset is looked at or locked.
    settings.validate(overwrite)
    options = ImportOptions(inputs=[], output=dataset, workers=workers, beam_args=beam_args or []).validate()
    out = DatasetDir(dataset)
    with out.lock():
        return _run_mkn(out, settings, overwrite, options)


def _run_mkn(out: DatasetDir, settings: MknSettings, overwrite: bool, options: ImportOptions) -> dict:
    dataset = out.path
    manifest = read_manifest(out)
    orders = _check_orders(manifest, settings.order, dataset)
    order_rows = {o: manifest["orders"][str(o)]["ngrams"] for o in orders}
    if options.workers is None:
        options = replace(options, workers=mkn_workers(max(order_rows.values()), settings.budget))
    if "mkn" in manifest and not overwrite:
        raise UserError(f"{dataset} already has an order-{manifest['mkn']['order']} MKN model; "
                        "pass --overwrite to replace it")
    out.recover()
    manifest = out.delete_listed(with_mkn(manifest, None), f"{layout.MKN}/")
    build = out.start_build()
    _mark(out, f"ngramflow mkn running (order {settings.order}); mkn/ is not complete until the manifest "
               "has an \"mkn\" section")
    started = time.time()
    try:
        pipeline = beam.Pipeline(options=pipeline_options(options))
        build_mkn(pipeline, out, build, settings, order_rows, options.workers)
        pipeline.run().wait_until_finish()
        section = finish_mkn(build, settings)
    except KeyboardInterrupt:
        _mark(out, "ngramflow mkn interrupted by the user")
        raise
    except Exception as err:
        reason = marked_reason(err, DiscountError.MARKER)
        _mark(out, f"ngramflow mkn failed: {reason or err}")
        if reason:
            raise RunFailed(reason) from None
        raise
    return out.publish(with_mkn(manifest, section.with_run(round(time.time() - started, 3))), replace=False)


def export_arpa(dataset: str, path: str, overwrite: bool = False) -> dict:
    """Write the dataset's MKN model as an ARPA file; returns the MKN manifest section."""
    out = DatasetDir(dataset)
    manifest = read_manifest(out)
    if "mkn" not in manifest:
        raise UserError(f"{dataset} has no MKN model; run 'ngramflow mkn {dataset} --order N' first")
    section = manifest["mkn"]
    MknSettings(section["order"], arpa=path).validate(overwrite)
    write_arpa(out, section, path)
    return section
