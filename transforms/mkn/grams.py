"""N-gram strings as the dataset stores them (tokens joined by single spaces), as SQL expressions
over a column: the keys the stage's passes join on."""

from ngramflow.schemas import END, START, UNK
from ngramflow.transforms.mkn.tables import text


def context_of(column: str) -> str:
    """All tokens but the last: the history the last token is predicted from ('' for a unigram)."""
    return f"CASE WHEN strpos({column}, ' ') = 0 THEN '' ELSE regexp_replace({column}, ' [^ ]*$', '') END"


def suffix_of(column: str) -> str:
    """All tokens but the first: the lower-order n-gram the model backs off to ('' for a unigram)."""
    return f"CASE WHEN strpos({column}, ' ') = 0 THEN '' ELSE substr({column}, strpos({column}, ' ') + 1) END"


def starts_sentence(column: str) -> str:
    return f"({column} = {text(START)} OR starts_with({column}, {text(START + ' ')}))"


def can_back_off(column: str) -> str:
    """Whether the n-gram ever gets a backoff: KenLM gives none after </s> (nothing follows it) or <unk> (unseen)."""
    return " AND ".join(f"NOT ({column} = {text(token)} OR ends_with({column}, {text(' ' + token)}))"
                        for token in (END, UNK))
