"""How many bytes of run tables an input makes per byte of its files, measured on a sample of them.

Checkpointed Flink imports fix their n-gram keys before reading (sizing.merge_shards),
and each key's group must stay within sizing.KEY_BUDGET. What a key receives per
input byte differs between corpora: a 2012 1-gram file collapses ~59 year rows
into one run row (~0.5 table bytes per gzip byte), a 2020 2-gram file has one
line per n-gram (~7). Planning every corpus for the densest (12) made ~25x too
many keys for 1-grams: part files of a few thousand n-grams, and a fan-out of
n-gram keys x token keys tables into the vocabulary. So the density is measured:
the first chunk of a few files, read, parsed and collapsed as the import does,
with the import's own settings (--keep-years, filters).
"""

from ngramflow.transforms.lines import ReadSettings, first_runs, spread

#: Files sampled, spread evenly over the input's list; their densest sets the plan.
SAMPLE_FILES = 8


def file_density(path: str, settings: ReadSettings) -> float | None:
    """Run-table bytes per file byte (gzipped, if the file is) of the first chunk of one file; None if it
    cannot be read (the import itself reports why)."""
    found = first_runs(path, settings)
    return None if found is None else found[0].nbytes / max(1, found[1])


def input_density(files, settings: ReadSettings) -> float | None:
    """The largest density of up to SAMPLE_FILES of (path, size) ``files``, None if none could be read."""
    found = [d for path, _ in spread(files, SAMPLE_FILES) if (d := file_density(path, settings)) is not None]
    return max(found, default=None)
