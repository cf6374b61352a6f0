"""A strict ARPA reader and the back-off query, independent of the code under test."""

import math
import re



class ArpaModel:
    """An ARPA file, read strictly: any deviation from the format fails an assertion."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        assert lines[0] == "\\data\\", "missing \\data\\ header"
        i, self.counts = 1, {}
        while lines[i]:
            found = re.fullmatch(r"ngram (\d+)=(\d+)", lines[i])
            assert found, f"bad header line {lines[i]!r}"
            self.counts[int(found.group(1))] = int(found.group(2))
            i += 1
        self.order = max(self.counts)
        assert sorted(self.counts) == list(range(1, self.order + 1))
        self.entries = {}  # tuple of tokens -> (log10 prob, log10 backoff or None)
        for n in range(1, self.order + 1):
            i += 1
            assert lines[i] == f"\\{n}-grams:", f"expected the {n}-gram section, got {lines[i]!r}"
            i += 1
            seen = 0
            while lines[i]:
                fields = lines[i].split("\t")
                assert len(fields) == (3 if n < self.order else 2), f"bad field count in {lines[i]!r}"
                tokens = tuple(fields[1].split(" "))
                assert len(tokens) == n and all(tokens), f"bad n-gram in {lines[i]!r}"
                assert tokens not in self.entries, f"duplicate n-gram {fields[1]!r}"
                prob = float(fields[0])
                assert prob <= 0 and math.isfinite(prob)
                backoff = float(fields[2]) if n < self.order else None
                self.entries[tokens] = (prob, backoff)
                seen += 1
                i += 1
            assert seen == self.counts[n], f"header says {self.counts[n]} {n}-grams, section has {seen}"
        assert lines[i + 1] == "\\end\\" and lines[i + 2:] in ([], [""]), "missing \\end\\"
        self.vocabulary = [t[0] for t in self.entries if len(t) == 1]
        for tokens in self.entries:
            assert all((t,) in self.entries for t in tokens), f"{tokens} has a word missing from the unigrams"
            if len(tokens) > 1:
                assert tokens[:-1] in self.entries, f"context of {tokens} missing"
                assert tokens[1:] in self.entries, f"suffix of {tokens} missing"

    def log10_prob(self, word: str, context: tuple) -> float:
        """log10 p(word | context) with back-off, as every ARPA reader computes it."""
        context = context[-(self.order - 1):] if self.order > 1 else ()
        total = 0.0
        while True:
            entry = self.entries.get(context + (word,))
            if entry is not None:
                return total + entry[0]
            if not context:
                return total + self.entries[("<unk>",)][0]
            backoff = self.entries.get(context, (0.0, 0.0))[1] or 0.0
            total += backoff
            context = context[1:]

    def contexts(self):
        return [tokens for tokens, (_, backoff) in self.entries.items()
                if len(tokens) < self.order and tokens[-1] not in ("</s>", "<unk>")]

    def sentence_log10(self, words: list[str]) -> float:
        history, total = ("<s>",), 0.0
        for word in words + ["</s>"]:
            word = word if (word,) in self.entries else "<unk>"
            total += self.log10_prob(word, history)
            history = history + (word,)
        return total


# The order-2 model of the text "a b / a b / b", computed by hand:
# unigram adjusted counts: a 1 (<s> a), b 2 (<s> b, a b), _END_ 1 (b _END_); t1=2, t2=1, t3=0 -> KenLM's
# fallback 0.5 1 1.5: sum 4, gamma = (0.5*2 + 1*1)/4 = 1/2, |V| = 4 (<unk> a b _END_), uniform share 1/8.
# Bigrams keep raw counts: t = (1, 2, 1, 0), Y = 1/5, D1 = 1 - 2 Y 2 = 0.2, D2 = 2 - 3 Y/2 = 1.7, D3+ = 3.
# Contexts: _START_ {a:2, b:1} sum 3, gamma = (0.2 + 1.7)/3; a {b:2} gamma 1.7/2; b {_END_:3} gamma 3/3.
SHORT_TEXT = "a b\na b\nb\n"
_G_START, _G_A = 1.9 / 3, 0.85
#: n-gram: (adjusted count, probability, backoff, or None at the highest order)
SHORT_TEXT_ORDER_2 = {
    "<unk>": (0, 1 / 8, 1), "_START_": (0, 1, _G_START), "_END_": (1, 0.5 / 4 + 1 / 8, 1),
    "a": (1, 0.5 / 4 + 1 / 8, _G_A), "b": (2, 1 / 4 + 1 / 8, 1),
    "_START_ a": (2, (2 - 1.7) / 3 + _G_START * 0.25, None),
    "_START_ b": (1, (1 - 0.2) / 3 + _G_START * 0.375, None),
    "a b": (2, (2 - 1.7) / 2 + _G_A * 0.375, None),
    "b _END_": (3, (3 - 3) / 3 + 1.0 * 0.25, None),
}
