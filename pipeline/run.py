"""Run an import end to end: inputs, output directory, pipeline, manifest, summary."""

import concurrent.futures
import contextlib
import gc
import os
import platform
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, replace

import apache_beam as beam
import pyarrow
from apache_beam.options.pipeline_options import PipelineOptions

from ngramflow import __version__, schemas
from ngramflow.corpus import download
from ngramflow.corpus.catalog import CatalogError
from ngramflow.corpus.totalcounts import TotalcountsError, read_totalcounts
from ngramflow.errors import RunFailed, UserError, marked_reason
from ngramflow.pipeline.embedded import end_bundles_promptly, failures_told_once, inspect_once, views_made_once
from ngramflow.pipeline.graph import aggregation, build_import, default_merge, in_input_order
from ngramflow.pipeline.inputs import InputFiles, expand_inputs
from ngramflow.pipeline.mkn import build_mkn, fallback_notes, finish_mkn, summary_lines
from ngramflow.pipeline.options import ImportOptions
from ngramflow.pipeline.output import DatasetDir, OutputDir
from ngramflow.pipeline.progress import ProgressReporter
from ngramflow.schemas import layout
from ngramflow.schemas.manifest import ImportRecord, Manifest, OrderTotals, command_line
from ngramflow.transforms.mkn.discount import DiscountError
from ngramflow.transforms.merge import key_sizes
from ngramflow.transforms.lines import InputFileError
from ngramflow.transforms.read import merge_file_stats
from ngramflow.transforms.sizing import range_rows
from ngramflow.transforms.sorted_input import InputNotSorted, lay_out_parts, sampled_disorder
from ngramflow.transforms.spill import range_index

#: What the final run event of --events carries of the manifest.
SUMMARY_FIELDS = ("rows_read", "rows_rejected", "orders", "vocabulary_tokens", "output_bytes", "wall_seconds")


@dataclass
class ImportResult:
    manifest: dict
    note: str | None = None


def direct_runner_args(opts: ImportOptions) -> list[str]:
    # The embedded runner's workers are this process's threads: Beam's costs that take no option, cut here.
    end_bundles_promptly()
    inspect_once()
    views_made_once()
    failures_told_once()
    # cloudpickle, not dill: Beam pickles every DoFn several times while it builds and starts the graph (565
    # times an import), and dill's pure-Python pickler made that a third of the start: the bundled sample's
    # import took 1.3-1.8 s of CPU with dill, 1.1-1.4 s with cloudpickle.
    args = ["--runner=DirectRunner", f"--direct_num_workers={opts.workers}", "--pickle_library=cloudpickle"]
    if opts.workers > 1:
        # Threads of this process, not a process each: the per-chunk work runs in native code (the kernel,
        # isal, Arrow, Parquet) that releases the GIL, and a process costs its own Beam (~150 MiB) and
        # start. 80M rows of the 2012 format, 2 workers, same session: processes 28.3 s wall, 33.9 s CPU,
        # 1,268 MiB; threads 17.7 s, 25.8 s, 921 MiB (BENCHMARKS.md "Workers").
        args.append("--direct_running_mode=multi_threading")
    return args


def pipeline_options(opts) -> PipelineOptions:
    """The embedded runner's options; anything after ``--`` on the command line overrides them."""
    return PipelineOptions(direct_runner_args(opts) + opts.beam_args)


def _resume_point(opts: ImportOptions) -> str | None:
    """The checkpoint ``--resume-from`` names, found before anything is downloaded or read."""
    if not opts.flink.resume_from:
        return None
    from ngramflow.pipeline.flink.session import resume_point

    return resume_point(opts.flink.resume_from)


def _flink_submission(opts: ImportOptions, files, resume: str | None) -> tuple[dict, str | None]:
    """(run identity, checkpoint to resume from) of a Flink import; a checkpoint of another import is refused."""
    from ngramflow.pipeline.flink.session import check_resumable, run_identity

    identity = run_identity(opts.resume_identity(), files, opts.output)
    if resume:
        check_resumable(resume, identity)
    return identity, resume


@contextlib.contextmanager
def _runner(opts: ImportOptions, flink: tuple | None):
    """(Beam arguments of the chosen runner, what the manifest records about it, the expansion service of
    --from-kafka), for the run's duration."""
    if opts.runner != "flink":
        yield direct_runner_args(opts), None, None
        return
    from ngramflow.pipeline.flink.session import flink_run

    if not opts.from_kafka:
        with flink_run(opts.flink, opts.workers, *flink) as (args, info):
            yield args, info, None
        return
    from ngramflow.pipeline.kafka.expansion import ExpansionService
    from ngramflow.pipeline.kafka.provision import KAFKA_HOME, ensure_connector, ensure_expansion_service

    connector = ensure_connector()
    ensure_expansion_service()  # provisioned here, by one thread: the two JVMs below then only read it
    log_path = os.path.join(KAFKA_HOME, "runs", time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}",
                            "expansion-service.log")
    expansion = ExpansionService(connector, log_path)
    # The expansion service's JVM starts while the job server's does (about 3 s each on 2 cores).
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="expansion") as pool:
        starting = pool.submit(expansion.__enter__)
        try:
            with flink_run(opts.flink, opts.workers, *flink, classpath=[connector]) as (args, info):
                starting.result()
                # The groupings of an unbounded read's global window fire when the run drains the job
                # (pipeline/kafka/end.py); Beam refuses to build them without this flag.
                yield args + ["--allow_unsafe_triggers"], info, expansion.address
        finally:
            concurrent.futures.wait([starting])
            expansion.__exit__()


def _run_pipeline(opts: ImportOptions, files, out: OutputDir, progress: bool, flink: tuple | None):
    """Run the import; returns what the manifest records about the runner (None for the embedded one),
    and the plan of its merge (graph.build_import)."""
    with (tempfile.TemporaryDirectory(prefix="ngramflow-progress-") as progress_dir,
          _runner(opts, flink) as (args, info, expansion)):
        # A queue's files are not known in advance: no progress line (--events reports progress).
        reporter = (ProgressReporter(progress_dir, len(files), sum(s for _, s in files))
                    if progress and not opts.from_kafka else None)
        if reporter:
            reporter.start()
        try:
            # Anything after ``--`` on the command line overrides the runner's arguments.
            pipeline = beam.Pipeline(options=PipelineOptions(args + opts.beam_args))
            plan = build_import(pipeline, opts, files, out, progress_dir, expansion)
            # What is loaded and built by now lives as long as the run: left out of the collector's full passes
            # (1.4% of an import's CPU went to them), and given back to it afterwards (a process that imports
            # again, such as the Python API's, collects the run's garbage).
            gc.freeze()
            submitted_ms = int(time.time() * 1000)
            result = pipeline.run()
            if opts.from_kafka:
                from ngramflow.pipeline.kafka.end import stop_at_end_of_queue

                stop_at_end_of_queue(result, out, info.rest_address,
                                     os.path.join(info.checkpoint_dir, "savepoints"), submitted_ms)
            result.wait_until_finish()
            if info:
                info.largest_key_bytes = key_sizes(result)
            if opts.mkn:
                _run_mkn_pipeline(opts, out, args)
        finally:
            gc.unfreeze()
            if reporter:
                reporter.stop()
    return info, plan


def _run_mkn_pipeline(opts: ImportOptions, out: OutputDir, args: list[str]) -> None:
    """The MKN stage of ``--mkn-order``, a pipeline of its own on the same runner, over the part files
    the import wrote."""
    orders = {s["order"]: s["ngrams"] for s in out.read_records(layout.ORDER_STATS)}
    if opts.mkn.order not in orders:
        raise RunFailed(f"the input has no {opts.mkn.order}-grams for --mkn-order {opts.mkn.order}; import "
                        f"again with an order it has ({', '.join(map(str, sorted(orders))) or 'none'})")
    pipeline = beam.Pipeline(options=PipelineOptions(args + opts.beam_args))
    build_mkn(pipeline, out, out, opts.mkn, orders, opts.workers)
    pipeline.run().wait_until_finish()


def _local_inputs(opts: ImportOptions) -> list[str]:
    """The inputs with http(s) URLs and corpus: specs replaced by verified files in the cache."""
    try:
        return download.resolve_inputs(opts.inputs, opts.cache)
    except CatalogError as err:
        raise UserError(str(err)) from None
    except download.DownloadError as err:
        raise RunFailed(f"could not fetch every input, nothing was imported:\n{err}") from None


def _totalcounts(paths: list[str]):
    try:
        return read_totalcounts(paths) if paths else None
    except TotalcountsError as err:
        raise RunFailed(str(err)) from None


def _failure_reason(err: Exception, output: str) -> str | None:
    """The one-line reason of a failed pipeline, when it is one the user can act on."""
    if "No space left on device" in str(err):
        return f"no space left on the device of output {output}"
    return marked_reason(err, InputFileError.MARKER) or marked_reason(err, DiscountError.MARKER)


def run_import(opts: ImportOptions, progress: bool = True) -> ImportResult:
    opts.validate().validate_sources()
    resume = _resume_point(opts)
    if opts.from_kafka:
        from ngramflow.corpus.queue import QueueAddress, ensure_topic

        queue = QueueAddress.parse(opts.from_kafka, "--from-kafka")
        ensure_topic(queue)  # the job reads the partitions there are when it starts
        inputs = InputFiles([], [])
    else:
        inputs = expand_inputs(_local_inputs(opts))
    # Decided here, where the input's size is known; the manifest records the number.
    opts = replace(opts, workers=opts.workers_for(sum(size for _, size in inputs.ngram_files)))
    if opts.merge == "auto":  # decided where the input's files are known; the manifest records the choice
        opts = replace(opts, merge=default_merge(opts, inputs.ngram_files))
    for name, path in inputs.duplicates:
        print(f"ngramflow: note: {name} is the same file as {path}; reading it once", file=sys.stderr)
    totalcounts = _totalcounts([p for p, _ in inputs.totalcounts])
    # A queue's run is identified by its topic: a resume reads it on from the checkpoint's offsets.
    identified_by = [(str(queue), 0)] if opts.from_kafka else inputs.ngram_files
    flink = _flink_submission(opts, identified_by, resume) if opts.runner == "flink" else None
    target = DatasetDir(opts.output)
    with target.lock():
        note = target.prepare(opts.overwrite, "import of " + " ".join(shlex.quote(i) for i in opts.inputs),
                              resume=resume is not None)
        try:
            manifest = _import(opts, inputs, totalcounts, flink, target, progress)
            if opts.events:
                from ngramflow.pipeline.kafka.events import publish_summary

                publish_summary(opts.events, {"output": os.path.abspath(opts.output), "files": len(manifest["inputs"]),
                                              **{k: manifest[k] for k in SUMMARY_FIELDS}})
        except KeyboardInterrupt:
            target.mark_failed("interrupted by the user")
            raise
        except (UserError, RunFailed) as err:
            target.mark_failed(str(err))
            raise
        except Exception as err:
            reason = _failure_reason(err, opts.output)
            target.mark_failed(reason or f"pipeline error: {err}")
            if reason:
                raise RunFailed(reason) from None
            raise
    return ImportResult(manifest, note)


def _import(opts: ImportOptions, inputs, totalcounts, flink, target: DatasetDir, progress: bool) -> dict:
    """Run the pipeline into the build folder, check it, publish it; returns the manifest."""
    files, totalcounts_files = inputs.ngram_files, inputs.totalcounts
    out = target.build
    started = time.time()
    refused = sampled_disorder(files, opts.read_settings()) if in_input_order(opts) else None
    if refused:
        print(f"ngramflow: note: {refused}; totalling through sorted run files", file=sys.stderr)
        opts = replace(opts, merge="runs")
    try:
        runner_info, plan = _run_pipeline(opts, files, out, progress, flink)
        if in_input_order(opts):
            plan["part_files"] = lay_out_parts(out, schemas.ngrams_schema(opts.keep_years), range_rows(), opts.workers)
    except Exception as err:
        refused = marked_reason(err, InputNotSorted.MARKER) if in_input_order(opts) else None
        if refused is None:
            raise
        print(f"ngramflow: note: {refused}; importing again through sorted run files", file=sys.stderr)
        opts, out = replace(opts, merge="runs"), target.restart_build()
        runner_info, plan = _run_pipeline(opts, files, out, progress, flink)
    totalled = aggregation(opts, out, plan)  # before publishing deletes the run files
    if refused:
        totalled["input_order_refused"] = refused
    record = ImportRecord(
        inputs=merge_file_stats([s for unit in out.read_records(layout.FILE_STATS) for s in unit]),
        totalcounts_inputs=[p for p, _ in totalcounts_files],
        duplicate_inputs=[{"path": name, "same_as": path} for name, path in inputs.duplicates],
        versions={"ngramflow": __version__, "apache_beam": beam.__version__, "pyarrow": pyarrow.__version__,
                  "python": platform.python_version()},
    )
    if opts.from_kafka:
        _check_end_count(out, len(record.inputs))
    rows_read, rejected = record.rows_read, record.rows_rejected
    if rows_read and rejected / rows_read > opts.max_reject_rate:
        raise RunFailed(f"{rejected} of {rows_read} rows ({rejected / rows_read:.2%}) were malformed, more than "
                        f"--max-reject-rate {opts.max_reject_rate:.2%}; see {out.join(layout.REJECTS)}")
    if totalcounts is not None:
        out.write_parquet(layout.TOTALCOUNTS, totalcounts)
    out.ensure_parquet(layout.VOCABULARY, schemas.VOCABULARY)
    out.ensure_parquet(layout.REJECTS, schemas.REJECTS)
    orders = {s["order"]: OrderTotals(s["ngrams"], s["match_count"], s["volume_count"])
              for s in out.read_records(layout.ORDER_STATS)}
    wall_seconds = round(time.time() - started, 3)
    manifest = Manifest(
        command=command_line(),
        options=opts.recorded(),
        orders=orders,
        totalcounts_years=0 if totalcounts is None else totalcounts.num_rows,
        vocabulary_tokens=out.parquet_rows(layout.VOCABULARY),
        run=record,
        wall_seconds=wall_seconds,
        mkn=finish_mkn(out, opts.mkn) if opts.mkn else None,
        flink=None if runner_info is None else runner_info.recorded(),
        aggregation=totalled,
        ranges=range_index(out.read_records(layout.RANGES)),
    )
    return target.publish(manifest.to_json())


def _check_end_count(out: OutputDir, files: int) -> None:
    """The files a queue's import read are exactly those its end marker counts."""
    from ngramflow.pipeline.kafka.end import read_end

    end = read_end(out)
    if end is None or end["files"] != files:
        counted = "no end marker was read" if end is None else f"the end-of-corpus marker counts {end['files']}"
        raise RunFailed(f"{counted}, but the import read {files} distinct files from the queue; were files "
                        "published after the marker, or to another topic?")


def aggregation_line(totalled: dict) -> str:
    """Which way the run totalled its n-grams: the summary never leaves it to be guessed."""
    if "keys" in totalled:
        density = totalled["table_bytes_per_input_byte"]
        measured = "not measured" if density is None else f"{density:.2f} table bytes per input byte"
        return f"  aggregation: {totalled['method']} ({totalled['keys']:,} keys; {measured})"
    if "run_files" not in totalled:
        return f"  aggregation: {totalled['method']}"
    compression = totalled["run_compression"]
    return (f"  aggregation: {totalled['method']} in {totalled['scratch']} "
            f"({totalled['run_files']:,} files, {totalled['spilled_bytes'] / 1e6:,.1f} MB, "
            f"{'uncompressed' if compression == 'none' else compression})")


def summary_row(label: str, value: str) -> str:
    """A line of the tables printed at the end of a run."""
    return f"  {label:<26}{value:>16}"


def summary(manifest: dict, output: str) -> str:
    """The table printed at the end of a run."""
    lines = [f"ngramflow import complete: {output}"]

    def row(label, value):
        lines.append(summary_row(label, value))

    row("input files", f"{len(manifest['inputs']):,}")
    if manifest["files_skipped"]:
        row("  skipped (corrupt)", f"{manifest['files_skipped']:,}")
    row("rows read", f"{manifest['rows_read']:,}")
    row("rows rejected", f"{manifest['rows_rejected']:,}")
    for order, stats in manifest["orders"].items():
        row(f"{order}-grams", f"{stats['ngrams']:,}")
    row("vocabulary tokens", f"{manifest['vocabulary_tokens']:,}")
    if manifest["totalcounts_years"]:
        row("years in totalcounts", f"{manifest['totalcounts_years']:,}")
    if "mkn" in manifest:
        summary_lines(manifest["mkn"], row)
    row("output size", f"{manifest['output_bytes'] / 1e6:,.1f} MB")
    row("wall time", f"{manifest['wall_seconds']:,.1f} s")
    if "aggregation" in manifest:
        lines.append(aggregation_line(manifest["aggregation"]))
    for s in manifest["inputs"]:
        if s["status"] == "skipped":
            lines.append(f"  skipped {os.path.basename(s['path'])}: {s['reason']}")
    if "mkn" in manifest:
        lines += fallback_notes(manifest["mkn"])
    return "\n".join(lines)
