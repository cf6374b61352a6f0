"""N-gram strings as the dataset stores them: tokens joined by single spaces."""

from ngramflow.schemas import END, START, UNK, order_of  # noqa: F401 (order_of: with the other n-gram helpers)

#: Tokens that end an n-gram which never gets a backoff (KenLM: nothing follows </s>, <unk> is unseen).
NO_BACKOFF_LAST = (END, UNK)


def context_of(ngram: str) -> str:
    """All tokens but the last: the history the last token is predicted from ('' for a unigram)."""
    cut = ngram.rfind(" ")
    return ngram[:cut] if cut >= 0 else ""


def suffix_of(ngram: str) -> str:
    """All tokens but the first: the lower-order n-gram the model backs off to ('' for a unigram)."""
    cut = ngram.find(" ")
    return ngram[cut + 1:] if cut >= 0 else ""


def last_token(ngram: str) -> str:
    return ngram.rsplit(" ", 1)[-1]


def starts_sentence(ngram: str) -> bool:
    return ngram == START or ngram.startswith(START + " ")


def can_back_off(ngram: str) -> bool:
    return last_token(ngram) not in NO_BACKOFF_LAST

