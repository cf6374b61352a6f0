import pyarrow as pa
import pytest

from ngramflow.corpus.totalcounts import TotalcountsError, is_totalcounts_file, parse_totalcounts, read_totalcounts
from ngramflow.schemas import TOTALCOUNTS

# Shaped like Google's files: one line, a leading blank field, TAB-separated tuples.
V2012 = " \t1505,32059,231,1\t1507,49586,477,1\t2008,19482936409,89053347,206272\t\n"
V2020_4 = "     \t1470,984,10,1\t1472,117652,902,2\t2019,22826152232,121332926,258273\t"
V2020_3 = "\t1470,984,1\t2019,22826152232,258273\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_2012_format(tmp_path):
    table = read_totalcounts(write(tmp_path, "googlebooks-eng-all-totalcounts-20120701.txt", V2012))
    assert table.schema == TOTALCOUNTS
    assert table.to_pylist()[0] == {"year": 1505, "match_count": 32059, "page_count": 231, "volume_count": 1}
    assert table["year"].to_pylist() == [1505, 1507, 2008]
    assert table["match_count"][2].as_py() == 19482936409


def test_2020_formats_with_and_without_pages(tmp_path):
    four = read_totalcounts(write(tmp_path, "totalcounts-1", V2020_4))
    assert four.to_pylist()[-1] == {"year": 2019, "match_count": 22826152232, "page_count": 121332926, "volume_count": 258273}
    three = read_totalcounts(write(tmp_path, "totalcounts-2", V2020_3))
    assert three.schema == TOTALCOUNTS
    assert three["page_count"].null_count == 2
    assert three.to_pylist()[0] == {"year": 1470, "match_count": 984, "page_count": None, "volume_count": 1}


def test_several_files_sum_by_year(tmp_path):
    a = write(tmp_path, "a.txt", "\t1900,10,5,2\t1901,1,1,1\t")
    b = write(tmp_path, "b.txt", "\t1900,7,3,1\t1950,4,4,4\t")
    c = write(tmp_path, "c.txt", "\t1950,1,1\t")
    table = read_totalcounts([a, b, c])
    assert table.to_pylist() == [
        {"year": 1900, "match_count": 17, "page_count": 8, "volume_count": 3},
        {"year": 1901, "match_count": 1, "page_count": 1, "volume_count": 1},
        {"year": 1950, "match_count": 5, "page_count": None, "volume_count": 5},  # c has no pages
    ]
    assert isinstance(table, pa.Table)


@pytest.mark.parametrize(
    "text, message",
    [
        ("\t1900,10,5,2\t1901,x,1,1\t", "tuple 2 is '1901,x,1,1'"),
        ("\t1900,10\t", "expected year,match,page,volume or year,match,volume"),
        ("\t1900,10,5,2\t1901,1,1\t", "tuple 2 has 3 fields, earlier ones 4"),
        ("\t1900,1,1,1\t1900,2,2,2\t", "year 1900 appears twice"),
        ("\t99999,1,1,1\t", "outside"),
        ("  \n", "no year,count tuples"),
        ("<html>not found</html>", "tuple 1"),
    ],
)
def test_malformed_content_names_the_file(tmp_path, text, message):
    path = write(tmp_path, "bad-totals.txt", text)
    with pytest.raises(TotalcountsError, match=message) as error:
        read_totalcounts(path)
    assert str(path) in str(error.value)


def test_binary_file_is_rejected(tmp_path):
    path = tmp_path / "totalcounts-1"
    path.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe")
    with pytest.raises(TotalcountsError, match="not a plain-text"):
        read_totalcounts(path)


def test_parse_takes_text_and_source():
    assert parse_totalcounts("1900,1,2,3", "inline") == {1900: (1, 2, 3)}


@pytest.mark.parametrize(
    "path, expected",
    [
        ("googlebooks-eng-all-totalcounts-20120701.txt", True),
        ("/cache/storage.googleapis.com/books/googlebooks-chi-sim-all-totalcounts-20120701.txt", True),
        ("cache/x/20200217/eng/totalcounts-3", True),
        ("googlebooks-eng-all-2gram-20120701-ab.gz", False),
        ("2-00000-of-00589.gz", False),
        ("totalcounts-3.part", False),
        ("totalcounts-9", False),
    ],
)
def test_is_totalcounts_file(path, expected):
    assert is_totalcounts_file(path) is expected
