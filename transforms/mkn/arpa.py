"""The ARPA back-off language model text format, as KenLM's lmplz writes it.

    \\data\\
    ngram 1=COUNT
    ...
    (blank line)
    \\1-grams:
    LOG10_PROB TAB w1 TAB LOG10_BACKOFF     (orders below the highest)
    ...
    \\N-grams:
    LOG10_PROB TAB w1 ... wN                (the highest order has no backoff)
    (blank line)
    \\end\\

Tokens are written as readers expect them: _START_ as <s>, _END_ as </s>.
"""

from collections.abc import Iterator

from ngramflow.schemas import END, START

TOKENS = {START: "<s>", END: "</s>"}


def arpa_ngram(ngram: str) -> str:
    if START not in ngram and END not in ngram:
        return ngram
    return " ".join(TOKENS.get(token, token) for token in ngram.split(" "))


def number(value: float) -> str:
    """Seven significant digits, as float32 holds; -0 printed as 0."""
    return f"{value + 0.0:.7g}"


def entry(ngram: str, log10_prob: float, log10_backoff: float | None) -> str:
    line = f"{number(log10_prob)}\t{arpa_ngram(ngram)}"
    return line if log10_backoff is None else f"{line}\t{number(log10_backoff)}"


def header(counts: list[int]) -> str:
    lines = ["\\data\\"] + [f"ngram {order}={count}" for order, count in enumerate(counts, 1)]
    return "\n".join(lines) + "\n\n"


def section(order: int, entries) -> Iterator[str]:
    """An order's section; ``entries`` yields lists of (ngram, log10 prob, log10 backoff or None)."""
    yield f"\\{order}-grams:\n"
    for batch in entries:
        yield "".join(entry(*e) + "\n" for e in batch)
    yield "\n"


FOOTER = "\\end\\\n"
