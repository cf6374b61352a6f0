"""Output schemas of an ngramflow dataset: the single source of truth.

Every writer and every test takes its columns from here; where each table lives
is in schemas/layout.py, and the manifest that describes a dataset in
schemas/manifest.py.
"""

import pyarrow as pa

#: Years a row may carry; anything outside is rejected as malformed.
YEAR_MIN = 1400
YEAR_MAX = 2100

#: Longest n-gram the corpus publishes.
MAX_ORDER = 5

YEAR_SERIES = pa.list_(
    pa.struct(
        [
            pa.field("year", pa.int16(), nullable=False),
            pa.field("match_count", pa.int64(), nullable=False),
            pa.field("volume_count", pa.int64(), nullable=False),
        ]
    )
)

_NGRAM_FIELDS = [
    pa.field("ngram", pa.string(), nullable=False),  # tokens joined by single spaces
    pa.field("order", pa.int8(), nullable=False),  # number of tokens, 1..5
    pa.field("match_count", pa.int64(), nullable=False),  # sum over kept years
    pa.field("volume_count", pa.int64(), nullable=False),  # sum over kept years
    pa.field("first_year", pa.int16(), nullable=False),
    pa.field("last_year", pa.int16(), nullable=False),
    pa.field("years", pa.int16(), nullable=False),  # distinct years with a row
]

NGRAMS = pa.schema(_NGRAM_FIELDS)
NGRAMS_WITH_YEARS = pa.schema(_NGRAM_FIELDS + [pa.field("year_series", YEAR_SERIES, nullable=False)])

#: Ids are dense from 0. The first three are reserved, as in KenLM:
#: 0 = <unk> (never in the corpus, counts null), 1 = _START_ (<s>), 2 = _END_ (</s>).
#: The rest follow by descending unigram match_count, then token UTF-8 bytes;
#: tokens with no kept unigram row have null counts and come last.
VOCABULARY = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("token", pa.string(), nullable=False),
        pa.field("match_count", pa.int64()),
        pa.field("volume_count", pa.int64()),
    ]
)
UNK, START, END = "<unk>", "_START_", "_END_"
RESERVED_TOKENS = (UNK, START, END)

REJECTS = pa.schema(
    [
        pa.field("file", pa.string(), nullable=False),
        pa.field("line", pa.int64(), nullable=False),  # 1-based line number in the decompressed file
        pa.field("reason", pa.string(), nullable=False),
        pa.field("raw", pa.binary(), nullable=False),  # the line as read, cut to RAW_LIMIT bytes
    ]
)
RAW_LIMIT = 1024

TOTALCOUNTS = pa.schema(
    [
        pa.field("year", pa.int16(), nullable=False),
        pa.field("match_count", pa.int64(), nullable=False),
        pa.field("page_count", pa.int64()),  # the 2020 export has no page counts
        pa.field("volume_count", pa.int64(), nullable=False),
    ]
)


def order_of(ngram: str) -> int:
    """The order of an n-gram as stored (tokens joined by single spaces); transforms/native.py's orders
    counts a column's the same way."""
    return ngram.count(" ") + 1


def ngrams_schema(keep_years: bool) -> pa.Schema:
    return NGRAMS_WITH_YEARS if keep_years else NGRAMS


# Modified Kneser-Ney statistics (transforms/mkn). _START_ plays <s>, _END_ plays </s>.

#: One row per n-gram of the model: its adjusted count and the interpolated model's
#: log10 probability and log10 backoff (null at the model's highest order).
MKN_NGRAMS = pa.schema(
    [
        pa.field("ngram", pa.string(), nullable=False),
        pa.field("order", pa.int8(), nullable=False),
        pa.field("adjusted_count", pa.int64(), nullable=False),  # raw count, or continuation count N1+(. ngram)
        pa.field("log10_prob", pa.float64(), nullable=False),
        pa.field("log10_backoff", pa.float64()),
    ]
)

#: One row per context (the first order-1 tokens of n-grams of this order; '' for unigrams).
MKN_CONTEXTS = pa.schema(
    [
        pa.field("context", pa.string(), nullable=False),
        pa.field("order", pa.int8(), nullable=False),  # order of the successors
        pa.field("adjusted_sum", pa.int64(), nullable=False),  # sum of the successors' adjusted counts
        pa.field("n1", pa.int64(), nullable=False),  # successors with adjusted count 1
        pa.field("n2", pa.int64(), nullable=False),  # ... 2
        pa.field("n3plus", pa.int64(), nullable=False),  # ... 3 or more
    ]
)

#: One row per order: count-of-counts, the discounts used, and where they came from.
MKN_DISCOUNTS = pa.schema(
    [
        pa.field("order", pa.int8(), nullable=False),
        pa.field("ngrams", pa.int64(), nullable=False),
        pa.field("t1", pa.int64(), nullable=False),  # n-grams with adjusted count exactly 1
        pa.field("t2", pa.int64(), nullable=False),
        pa.field("t3", pa.int64(), nullable=False),
        pa.field("t4", pa.int64(), nullable=False),
        pa.field("d1", pa.float64(), nullable=False),
        pa.field("d2", pa.float64(), nullable=False),
        pa.field("d3plus", pa.float64(), nullable=False),
        pa.field("source", pa.string(), nullable=False),  # "estimated" or "fallback"
        pa.field("fallback_reason", pa.string()),  # why the estimate was rejected
    ]
)
