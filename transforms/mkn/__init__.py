"""Modified Kneser-Ney estimation from n-gram counts, as KenLM's lmplz defines it.

One module per step, each the SQL of its formulas and the task that runs them on one bucket:

    tables.py       bucketed tables on disk, and the DuckDB kernel of each task
    grams.py        n-gram strings as SQL: context, suffix, boundary tokens
    adjust.py       adjusted counts (raw or continuation counts)
    discount.py     count-of-counts per order, discounts and the fallback policy, backoff mass
    context.py      per-context sums and N1, N2, N3+ of the successors; backoffs
    probability.py  initial probabilities and interpolation
    arpa.py         the ARPA text format
    stage.py        the whole stage wired as one Beam pipeline: part files in, model files out

Every join is local to a hash bucket of its key, so no task ever holds a whole
order; only per-order statistics (count-of-counts, discounts, the unigram
context) are global, and they are a few numbers each.
"""
