"""How long an embedded import takes to start reading, and Beam's share of it spent inspecting DoFns.

    python -m benchmarks.start FILE... [--beam-reading]

Runs ``ngramflow import`` in this process and prints the seconds from this module's start (Beam loaded) to
the read stage's first work unit, and the seconds and calls of Beam's userstate.get_dofn_specs over the
whole import (pipeline/embedded.py, inspect_once). ``--beam-reading``: with Beam's own reading of every
function's arguments each time, for comparison (BENCHMARKS.md, issue 16's sixteenth round).
"""

import argparse
import sys
import tempfile
import time

from apache_beam.transforms import core, userstate

from benchmarks.measure import timed_calls
from ngramflow import cli
from ngramflow.pipeline import embedded, run
from ngramflow.transforms.read import ReadNgramFile

STARTED = time.perf_counter()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--beam-reading", action="store_true", help="Beam's reading of arguments, not the command's")
    args = parser.parse_args(argv)
    specs, inspect_once, process, reading = [], run.inspect_once, ReadNgramFile.process, core.get_function_args_defaults
    first_unit = []

    def process_timed(fn, unit):
        first_unit.append(time.perf_counter())
        return process(fn, unit)

    userstate.get_dofn_specs, get_dofn_specs = timed_calls(userstate.get_dofn_specs, specs), userstate.get_dofn_specs
    ReadNgramFile.process = process_timed
    if args.beam_reading:
        run.inspect_once, core.get_function_args_defaults = lambda: None, embedded._ARGUMENTS
    try:
        with tempfile.TemporaryDirectory() as scratch:
            if cli.main(["import", *args.files, "--output", f"{scratch}/out", "--quiet"]):
                raise SystemExit("the import failed")
    finally:  # this process's Beam as it was, for whatever runs in it next
        userstate.get_dofn_specs, ReadNgramFile.process, run.inspect_once = get_dofn_specs, process, inspect_once
        core.get_function_args_defaults = reading
    print(f"first work unit after {first_unit[0] - STARTED:.3f} s; get_dofn_specs {sum(specs):.3f} s "
          f"over {len(specs)} calls")


if __name__ == "__main__":
    sys.exit(main())
