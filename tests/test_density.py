"""The density sample that plans checkpointed Flink's keys (transforms/density.py)."""

import glob
import gzip
import os

import pytest

from ngramflow.corpus import scale
from ngramflow.transforms.density import file_density, input_density
from ngramflow.transforms.lines import ReadSettings
from ngramflow.transforms.sizing import KEY_SHARE, TABLE_BYTES_PER_INPUT_BYTE, key_budget, merge_shards


def files_of(folder) -> list[tuple[str, int]]:
    return [(f, os.path.getsize(f)) for f in sorted(glob.glob(os.path.join(folder, "*.gz")))]


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> dict:
    """A 2012 1-gram corpus (many year rows per n-gram) and a 2020 2-gram one (one line per n-gram)."""
    folders = {}
    for shape in ("a", "b"):
        folders[shape] = str(tmp_path_factory.mktemp(shape))
        scale.generate(folders[shape], shape, 400_000, seed=1)
    return folders


def test_one_line_per_ngram_is_denser_than_year_rows(shapes):
    settings = ReadSettings()
    ones, twos = input_density(files_of(shapes["a"]), settings), input_density(files_of(shapes["b"]), settings)
    assert 0 < ones < 2 < twos < TABLE_BYTES_PER_INPUT_BYTE
    assert input_density(files_of(shapes["a"]), ReadSettings(keep_years=True)) > 2 * ones, "year series weigh"
    corpus_bytes = 5 << 30  # the 2012 English 1-grams' size
    assert merge_shards(corpus_bytes, ones) < merge_shards(corpus_bytes, twos) < merge_shards(corpus_bytes, None)


def test_keys_give_each_its_share_of_the_budget():
    assert merge_shards(10 * key_budget(), 1.0) == 10 * KEY_SHARE


def test_files_that_cannot_be_read_are_not_sampled(tmp_path):
    corrupt = tmp_path / "corrupt.gz"
    corrupt.write_bytes(gzip.compress(b"word\t2000\t5\t3\n" * 1000)[:50])
    empty = tmp_path / "empty.gz"
    empty.write_bytes(gzip.compress(b""))
    assert file_density(str(corrupt), ReadSettings()) is None
    assert input_density([(str(corrupt), 50), (str(empty), 20)], ReadSettings()) is None
