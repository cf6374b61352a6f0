"""The per-file read stage alone, outside Beam: ``python -m benchmarks.read_stage FILE``.

Prints the number of lines read; the caller measures time and memory.
"""

import os
import sys

from ngramflow.transforms.lines import ReadSettings
from ngramflow.transforms.read import ReadNgramFile


def main(path: str) -> None:
    fn = ReadNgramFile(ReadSettings())
    fn.setup()
    for _ in fn.process([(path, os.path.getsize(path), 0, 1)]):
        pass  # what a runner would hand downstream is dropped here: only the stage is measured
    print(fn.progress.done["rows"])


if __name__ == "__main__":
    main(sys.argv[1])
