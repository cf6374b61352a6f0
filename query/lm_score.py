"""Sentence scores under the dataset's MKN model, with the back-off rule of ARPA readers (KenLM).

A sentence is scored as the model was estimated: padded ``_START_ w1 ... wk _END_``,
each word w after _START_ predicted from the last order-1 tokens h before it:

    log10 p(w | h) = log10_prob(h w)                        if h w is in the model
                   = log10_backoff(h) + log10 p(w | h')     otherwise (h' = h without its first token;
                                                              a backoff missing from the model counts 0)

A word not among the model's unigrams is scored as <unk>. Perplexity is
10 ** (-log10 p(sentence) / (k + 1)): _END_ is predicted, _START_ is not (KenLM's).
"""

from dataclasses import dataclass

from ngramflow.errors import RunFailed
from ngramflow.schemas import END, START, UNK
from ngramflow.transforms.policy import fold_case


@dataclass(frozen=True)
class WordScore:
    word: str  # as typed (or _END_)
    token: str  # the model's token: the word, or <unk>
    ngram: str  # the longest n-gram of the model that ends the history and the token
    log10_prob: float


@dataclass(frozen=True)
class SentenceScore:
    sentence: str
    words: list[WordScore]

    @property
    def log10_prob(self) -> float:
        return sum(w.log10_prob for w in self.words)

    @property
    def oov(self) -> int:
        return sum(w.token == UNK for w in self.words)

    @property
    def perplexity(self) -> float:
        return 10 ** (-self.log10_prob / len(self.words))


def sentence_words(sentence: str, lowercase: bool) -> list[str]:
    """The words of a sentence as the dataset spells tokens (case folded for a ``--lowercase`` import)."""
    return [fold_case(w) if lowercase else w for w in sentence.split()]


def windows(tokens: list[str], order: int):
    """Every n-gram of orders 1..order inside the token list, as stored ('a b c')."""
    for n in range(1, order + 1):
        for i in range(len(tokens) - n + 1):
            yield " ".join(tokens[i:i + n])


def model_tokens(words: list[str], vocabulary: set[str]) -> list[str]:
    return [START] + [w if w in vocabulary else UNK for w in words] + [END]


class BackoffModel:
    """The entries of the model a set of sentences needs: n-gram -> (log10 prob, log10 backoff or None)."""

    def __init__(self, order: int, entries: dict[str, tuple[float, float | None]]):
        self.order, self.entries = order, entries

    def word(self, history: list[str], token: str) -> tuple[str, float]:
        """(matched n-gram, log10 p(token | history))."""
        context = history[-(self.order - 1):] if self.order > 1 else []
        backoffs = 0.0
        while True:
            ngram = " ".join(context + [token])
            if ngram in self.entries:
                return ngram, backoffs + self.entries[ngram][0]
            if not context:  # the unigrams always hold <unk> and _END_; a model without them is broken
                raise RunFailed(f"the MKN model has no unigram {token}; rebuild it with 'ngramflow mkn'")
            backoffs += self.entries.get(" ".join(context), (0.0, None))[1] or 0.0
            context = context[1:]

    def sentence(self, sentence: str, words: list[str], tokens: list[str]) -> SentenceScore:
        scores = []
        for i, word in enumerate(words + [END], start=1):
            ngram, log10_prob = self.word(tokens[:i], tokens[i])
            scores.append(WordScore(word, tokens[i], ngram, log10_prob))
        return SentenceScore(sentence, scores)


def score(con, model: str, order: int, sentences: list[str], lowercase: bool) -> list[SentenceScore]:
    """Score sentences, reading from the model's n-grams (``model``, a table expression) only the entries
    they can use."""
    words = [sentence_words(s, lowercase) for s in sentences]
    vocabulary = {row[0] for row in con.execute(
        f"""SELECT ngram FROM {model} WHERE "order" = 1 AND ngram IN (SELECT unnest(?::VARCHAR[]))""",
        [sorted({w for ws in words for w in ws})]).fetchall()}
    tokens = [model_tokens(ws, vocabulary) for ws in words]
    needed = sorted({ngram for ts in tokens for ngram in windows(ts, order)})
    entries = {ngram: (prob, backoff) for ngram, prob, backoff in con.execute(
        f"SELECT ngram, log10_prob, log10_backoff FROM {model} WHERE ngram IN (SELECT unnest(?::VARCHAR[]))",
        [needed]).fetchall()}
    model = BackoffModel(order, entries)
    return [model.sentence(s, ws, ts) for s, ws, ts in zip(sentences, words, tokens)]
