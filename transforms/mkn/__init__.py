"""Modified Kneser-Ney estimation from n-gram counts, as KenLM's lmplz defines it.

One module per step, each the task that runs it on one bucket; the joins and formulas of every
task are the native kernel's (native/src/mkn.rs), over the bucket's Arrow buffers:

    tables.py       bucketed tables on disk (Arrow IPC work files) and the model's Parquet files
    native.py       the native kernels as functions of Arrow tables, rows laid out by bucket
    adjust.py       adjusted counts (raw or continuation counts)
    discount.py     count-of-counts per order, discounts and the fallback policy
    context.py      per-context sums and N1, N2, N3+ of the successors; backoffs
    probability.py  initial probabilities and interpolation
    arpa.py         the ARPA text format
    stage.py        the whole stage wired as one Beam pipeline: part files in, model files out

Every join is local to a hash bucket of its key, so no task ever holds a whole
order; only per-order statistics (count-of-counts, discounts, the unigram
context) are global, and they are a few numbers each.
"""
