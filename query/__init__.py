"""`ngramflow query` and its Python API: look-ups, series, continuations, scores and SQL over a dataset.

Nothing here imports Apache Beam: a query starts in a fraction of a second.
"""
