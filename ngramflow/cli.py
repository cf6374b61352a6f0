"""The ``ngramflow`` command line: a thin layer over pipeline.run and friends.

Exit codes: 0 success, 1 the run failed (corrupt input, too many rejects,
pipeline error), 2 a usage mistake (bad option, missing input, occupied output).
"""

from ngramflow import lean_start  # first: it sets how NumPy loads

import argparse
import atexit
import contextlib
import importlib
import logging
import os
import signal
import sys
import threading

from ngramflow.pipeline import option_fields
from ngramflow.errors import RunFailed, UserError
from ngramflow.pipeline.option_fields import typed
from ngramflow.pipeline.options import ImportOptions

EPILOG = "Options for Beam itself (e.g. --direct_running_mode) go after a lone '--'."


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    pass


def _add_import(sub):
    p = sub.add_parser(
        "import",
        help="import Google Books n-gram files into a Parquet dataset",
        description=(
            "Read Google Books n-gram files (2012 and 2020 exports, gzip or plain, formats detected per file),\n"
            "filter and total every n-gram over the kept years, build the vocabulary, and write a Parquet\n"
            "dataset: ngrams/order=N/, vocabulary/, rejects/ and _manifest.json (written last)."
        ),
        epilog=EPILOG,
        formatter_class=_Formatter,
    )
    option_fields.add_arguments(p, ImportOptions)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line and no summary")
    p.add_argument("-v", "--verbose", action="store_true", help="show the runner's own log messages")
    p.add_argument("--mkn-order", type=typed(int, "--mkn-order"), default=None, metavar="N",
                   help="also estimate an order-N Modified Kneser-Ney model in the same job (see 'ngramflow mkn')")
    _add_mkn_options(p)
    p.set_defaults(handler=_import)


def _add_mkn_options(p):
    p.add_argument("--discount-fallback", nargs="+", default=["0.5", "1", "1.5"], metavar="D",
                   help="discounts D1 D2 D3+ for an order whose discounts cannot be estimated (pruned counts "
                        "such as Google's), as KenLM's --discount_fallback; 'none' makes that an error "
                        "(default: 0.5 1 1.5, KenLM's)%(default).0s")
    p.add_argument("--arpa", default=None, metavar="FILE", help="also write the model as an ARPA file")
    p.add_argument("--mkn-memory", default=None, metavar="SIZE",
                   help="memory the MKN stage may use, all its workers together, e.g. 4g (default: a quarter of "
                        "the machine's memory, at most 8g); past it the stage spills to disk%(default).0s")


def _mkn_settings(args, order):
    from ngramflow.pipeline.mkn import MknSettings, parse_fallback
    from ngramflow.pipeline.option_fields import parse_size

    memory = 0 if args.mkn_memory is None else parse_size(args.mkn_memory, "--mkn-memory")
    return MknSettings(order=order, fallback=parse_fallback(args.discount_fallback), arpa=args.arpa, memory=memory)


def _quiet_beam(verbose: bool) -> None:
    """Beam logs a failing DoFn's stack trace itself, and a portable runner's job messages (a failed Flink
    job's traceback among them) through the root logger; we report the cause in one line."""
    level = logging.INFO if verbose else logging.CRITICAL
    logging.getLogger("apache_beam").setLevel(level)
    logging.getLogger().setLevel(level)


def _head_start(opts: ImportOptions):
    """A head start reading the first work units while Beam loads (transforms/head_start.py), for an import on
    the embedded runner, on more than one core, of local files (head_start.files_to_read says which); else a
    block without one. Any problem with the inputs is left to the import to report."""
    from ngramflow.corpus.catalog import is_corpus_spec
    from ngramflow.pipeline.inputs import expand_inputs
    from ngramflow.transforms import head_start
    from ngramflow.transforms.units import work_units

    local = not any(is_corpus_spec(spec) or "://" in spec for spec in opts.inputs)
    # Beam loaded already (the Python API's process, a test's) leaves nothing to overlap, and threads to fork.
    loading = "apache_beam" not in sys.modules
    if opts.runner != "direct" or opts.from_kafka or (os.cpu_count() or 1) < 2 or not local or not loading:
        return contextlib.nullcontext()
    settings = opts.read_settings()
    try:
        files = expand_inputs(opts.inputs).ngram_files
    except (UserError, OSError):
        return contextlib.nullcontext()
    workers = opts.workers_for(sum(size for _, size in files))
    ahead = head_start.files_to_read(work_units(files, settings.slice_bytes), workers)
    return head_start.reading(ahead, settings) if ahead else contextlib.nullcontext()


def _import(args) -> int:
    from ngramflow.transforms.sizing import share_one_malloc_arena

    share_one_malloc_arena()  # before any thread, the head start's fork among them
    _quiet_beam(args.verbose)
    opts = option_fields.from_args(ImportOptions, args, beam_args=args.beam_args,
                                   mkn=None if args.mkn_order is None else _mkn_settings(args, args.mkn_order))
    with _head_start(opts) as head:  # before Beam loads
        with lean_start.loading_for_good():
            from ngramflow.pipeline.run import run_import, summary

        result = run_import(opts, progress=not args.quiet)
    if head and args.verbose:
        print(f"ngramflow: head start: {len(head.taken)} of {len(head.files)} files read while Beam started",
              file=sys.stderr)
    if result.note and not args.quiet:
        print(f"note: {result.note}", file=sys.stderr)
    if not args.quiet:
        print(summary(result.manifest, args.output))
    return 0


def _add_mkn(sub):
    p = sub.add_parser(
        "mkn",
        help="estimate a Modified Kneser-Ney language model from an imported dataset",
        description=(
            "Estimate an order-N interpolated Modified Kneser-Ney model, as KenLM's lmplz does, from the\n"
            "n-grams of orders 1..N of a complete dataset (_START_ = <s>, _END_ = </s>): adjusted counts,\n"
            "count-of-counts and discounts, per-context statistics, log10 probabilities and backoffs, under\n"
            "DIR/mkn/; the manifest gets an \"mkn\" section when it is done."
        ),
        epilog=EPILOG,
        formatter_class=_Formatter,
    )
    p.add_argument("dataset", metavar="DIR", help="a complete dataset written by 'ngramflow import'")
    p.add_argument("--order", type=typed(int, "--order"), required=True, metavar="N", help="the model's order")
    _add_mkn_options(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing MKN model (and ARPA file)")
    p.add_argument("--workers", type=typed(int, "--workers"), default=None,
                   help="parallel worker threads of the embedded runner (default: one per core, at most one per "
                        "GiB of --mkn-memory, for a model of more than 1M n-grams of its highest order, else 1)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary")
    p.add_argument("-v", "--verbose", action="store_true", help="show the runner's own log messages")
    p.set_defaults(handler=_mkn)

    p = sub.add_parser(
        "export-arpa",
        help="write a dataset's MKN model as an ARPA file",
        description="Write the MKN model of a dataset (made by 'ngramflow mkn' or 'import --mkn-order') as an "
                    "ARPA file that KenLM, SRILM and other toolkits read.",
        formatter_class=_Formatter,
    )
    p.add_argument("dataset", metavar="DIR", help="a dataset with an MKN model")
    p.add_argument("arpa", metavar="FILE", help="the ARPA file to write")
    p.add_argument("--overwrite", action="store_true", help="replace FILE if it exists")
    p.set_defaults(handler=_export_arpa)


def _mkn(args) -> int:
    _quiet_beam(args.verbose)
    with lean_start.loading_for_good():
        from ngramflow.pipeline.mkn import fallback_notes, summary_lines
        from ngramflow.pipeline.mkn_run import run_mkn
        from ngramflow.pipeline.run import summary_row

    manifest = run_mkn(args.dataset, _mkn_settings(args, args.order), overwrite=args.overwrite,
                       workers=args.workers, beam_args=args.beam_args)
    if not args.quiet:
        section = manifest["mkn"]
        lines = [f"ngramflow mkn complete: {args.dataset}"]
        summary_lines(section, lambda label, value: lines.append(summary_row(label, value)))
        lines.append(summary_row("wall time", f"{section['wall_seconds']:,.1f} s"))
        print("\n".join(lines + fallback_notes(section)))
    return 0


def _export_arpa(args) -> int:
    from ngramflow.pipeline.mkn_run import export_arpa

    export_arpa(args.dataset, args.arpa, overwrite=args.overwrite)
    return 0


def _add_sample_corpus(sub):
    from ngramflow.corpus import synthetic

    p = sub.add_parser(
        "sample-corpus",
        help="generate a synthetic corpus in Google's 2012 and 2020 file formats",
        description="Generate a deterministic synthetic n-gram corpus (Zipf vocabulary, sorted rows, "
                    "realistic year spreads, POS-tagged variants, _START_/_END_, Unicode), for demos, "
                    "tests and benchmarks.",
        formatter_class=_Formatter,
    )
    p.add_argument("output", metavar="DIR", help="directory to write the corpus into")
    synthetic.add_arguments(p)
    p.set_defaults(handler=lambda args: synthetic.run(args) and 0)


def _add_corpus(sub):
    from ngramflow.corpus.cli import add_corpus_commands, run

    add_corpus_commands(sub).set_defaults(handler=run)


def _added_by(module: str, function: str):
    """What adds a command to the parser with FUNCTION of MODULE, which it loads only then."""
    return lambda sub: getattr(importlib.import_module(module), function)(sub)


#: The top-level commands, in the order the help lists them, each with what adds it (and loads its modules).
#: A command line that names one builds its parser alone: `ngramflow import` loaded every other command's
#: modules first (HTTP, TLS and YAML among them: 20 ms more before its head start could begin).
_COMMANDS = (
    (("import",), _add_import),
    (("corpus",), _add_corpus),
    (("flink",), _added_by("ngramflow.pipeline.flink.cli", "add_flink_commands")),
    (("kafka",), _added_by("ngramflow.pipeline.kafka.cli", "add_kafka_commands")),
    (("sample-corpus",), _add_sample_corpus),
    (("mkn", "export-arpa"), _add_mkn),
    (("query",), _added_by("ngramflow.query.cli", "add_query_command")),
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of COMMAND's alone when it is one (the first word of a command line)."""
    parser = argparse.ArgumentParser(
        prog="ngramflow",
        description="Turn the Google Books Ngram corpus into clean, queryable Parquet datasets.",
        epilog="Run 'ngramflow COMMAND --help' for a command's options.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    alone = [add for names, add in _COMMANDS if command in names]
    for add in alone or [add for _, add in _COMMANDS]:
        add(sub)
    return parser


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    beam_args = []
    if "--" in argv:
        split = argv.index("--")
        argv, beam_args = argv[:split], argv[split + 1:]
    # A terminated run cleans up like an interrupted one: output marked incomplete, child JVMs stopped.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        # Inside the try: a value of the wrong type is a UserError line, raised while the arguments are parsed.
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        args.beam_args = beam_args
        return args.handler(args)
    except UserError as err:
        print(f"ngramflow: error: {err}", file=sys.stderr)
        return 2
    except RunFailed as err:
        print(f"ngramflow: run failed: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ngramflow: interrupted; the output is marked incomplete", file=sys.stderr)
        return 130


def run() -> None:
    """The console command: ``main``, then an exit that skips the interpreter's teardown.

    Teardown frees every object of the process one at a time: 0.3 s of wall time after an import of 80M
    rows, when the dataset is already written. Exit handlers still run and the standard
    streams are flushed, so nothing that a normal exit would write is lost; an exception from ``main``
    (a bug) still exits the normal way, with its traceback."""
    lean_start.keep_unused_out()
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader is gone, or the stream was closed
            pass
    os._exit(code)


if __name__ == "__main__":
    run()
