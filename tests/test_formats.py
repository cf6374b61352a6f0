"""The line formats and their reject reasons, without a pipeline."""

import pytest

from ngramflow.transforms.formats import Malformed, decode, detect_format, parse_2009, parse_2012, parse_2020


def test_2012_row():
    assert parse_2012("the cat\t1990\t5\t2") == (["the", "cat"], [(1990, 5, 2)])


def test_2020_row_with_several_years():
    assert parse_2020("the cat\t1990,5,2\t1991,3,1") == (["the", "cat"], [(1990, 5, 2), (1991, 3, 1)])


def test_2009_row_ignores_pages_but_checks_them():
    assert parse_2009("cat\t1990\t5\t4\t2") == (["cat"], [(1990, 5, 2)])
    with pytest.raises(Malformed, match="non-numeric page count"):
        parse_2009("cat\t1990\t5\tx\t2")


def test_leading_zeros_and_padding_spaces_are_plain_numbers():
    assert parse_2012("cat\t01990\t007\t 2 ") == (["cat"], [(1990, 7, 2)])
    assert parse_2012("cat\t1990\t9223372036854775807\t0") == (["cat"], [(1990, 2**63 - 1, 0)])


def test_runs_of_spaces_are_one_separator_but_other_spaces_are_token_text():
    tokens, _ = parse_2012("a  b\u00a0c\t1990\t1\t1")
    assert tokens == ["a", "b\u00a0c"]


@pytest.mark.parametrize("line, reason", [
    ("the cat\t1990\t5", "wrong field count for the 2012 format: expected 4, got 3"),
    ("the cat\t1990\tfive\t2", "non-numeric match count"),
    ("the cat\t1990\t-5\t2", "negative match count: -5"),
    ("the cat\t1399\t5\t2", "year out of range 1400-2100: 1399"),
    ("the cat\t2101\t5\t2", "year out of range 1400-2100: 2101"),
    ("   \t1990\t5\t2", "empty n-gram"),
    ("a b c d e f\t1990\t5\t2", "more than 5 tokens: 6"),
    ("the cat\t1990\t+5\t2", "non-numeric match count"),
    ("the cat\t1990\t5\t\u00b2", "non-numeric volume count"),
    ("the cat\t1990\t-0\t2", "negative match count: -0"),
    ("the cat\t1990\t+0\t2", "non-numeric match count"),
    ("the cat\t-1990\t1\t2", "negative year: -1990"),
    ("the cat\t1990\t5.0\t2", "non-numeric match count"),
    ("the cat\t1990\t1e3\t2", "non-numeric match count"),
    ("the cat\t1990\t0x10\t2", "non-numeric match count"),
    ("the cat\t1990\t9223372036854775808\t2", "match count too large"),
])
def test_2012_rejects(line, reason):
    with pytest.raises(Malformed) as err:
        parse_2012(line)
    assert str(err.value).startswith(reason)


@pytest.mark.parametrize("line, reason", [
    ("the cat", "wrong field count for the 2020 format"),
    ("the cat\t1990,5", "malformed year tuple"),
    ("the cat\t1990,5,2\t1991,x,1", "non-numeric match count"),
])
def test_2020_rejects(line, reason):
    with pytest.raises(Malformed, match=reason):
        parse_2020(line)


def test_invalid_utf8_is_a_reject_with_its_position():
    with pytest.raises(Malformed, match="invalid UTF-8 at byte 4"):
        decode(b"the \xff\xfe\t1990\t1\t1\n")
    assert decode("caf\u00e9\t1990\t1\t1\r\n".encode()) == "caf\u00e9\t1990\t1\t1"


def test_detection_skips_malformed_lines():
    assert detect_format([b"garbage\n", b"the\t1990\t1\t1\n"]) == "2012"
    assert detect_format([b"the\t1990,1,1\n"]) == "2020"
    assert detect_format([b"the\t1990\t1\t1\t1\n"]) == "2009"
    assert detect_format([b"nothing here\n", b"\xff\n"]) is None
