"""How long an embedded import's bundles wait, once their work is done, for Beam's state sampler to stop.

    python -m benchmarks.bundle_ends FILE... [--beam-default]

Runs ``ngramflow import`` in this process with Beam's StateSampler.stop timed: a bundle ends by joining its
sampler's thread, which first sleeps out its sampling period (pipeline/embedded.py, SAMPLING_MS). Prints each wait
over 20 ms and the sum over the run's bundles. ``--beam-default``: with Beam's own period instead (200 ms),
for comparison (BENCHMARKS.md, issue 16's fifteenth round).
"""

import argparse
import sys
import tempfile

from apache_beam.runners.worker import statesampler

from benchmarks.measure import timed_calls
from ngramflow import cli
from ngramflow.pipeline import embedded

#: Waits reported one by one: above the longest sampling period the command sets.
LONG_WAIT = 0.02


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--beam-default", action="store_true", help="Beam's sampling period, not the command's")
    args = parser.parse_args(argv)
    sampler = statesampler.StateSampler
    waits, stop, period, defaults = [], sampler.stop, embedded.SAMPLING_MS, sampler.__init__.__defaults__
    sampler.stop = timed_calls(stop, waits)
    if args.beam_default:
        embedded.SAMPLING_MS = statesampler.DEFAULT_SAMPLING_PERIOD_MS
    try:
        with tempfile.TemporaryDirectory() as scratch:
            if cli.main(["import", *args.files, "--output", f"{scratch}/out", "--quiet"]):
                raise SystemExit("the import failed")
    finally:  # this process's sampler as it was, for whatever runs in it next
        sampler.stop, embedded.SAMPLING_MS, sampler.__init__.__defaults__ = stop, period, defaults
    print(f"bundles {len(waits)}, waits summed {sum(waits):.3f} s, over {LONG_WAIT * 1000:.0f} ms: "
          f"{', '.join(f'{wait:.3f}' for wait in waits if wait > LONG_WAIT) or 'none'}")


if __name__ == "__main__":
    sys.exit(main())
