"""Modified Kneser-Ney estimation from n-gram counts, as KenLM's lmplz defines it.

One concern per module, each a set of pure functions plus the composite
PTransforms that apply them at scale:

    grams.py        n-gram strings: order, context, suffix, boundary tokens
    adjust.py       adjusted counts (raw or continuation counts)
    discount.py     count-of-counts per order, discounts and the fallback policy
    context.py      per-context sums and N1, N2, N3+ of the successors
    probability.py  initial probabilities, interpolation, backoffs
    arpa.py         the ARPA text format
    combine.py      a combiner from a merge function
    stage.py        the whole stage: n-gram counts in, MKN rows out

Joins go by context or suffix key with Beam's GroupByKey family, so no worker
ever holds a whole order; only per-order statistics (count-of-counts,
discounts, the unigram context) are global, and they are a few numbers each.
"""
