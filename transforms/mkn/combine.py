"""A Beam combiner from a plain merge function."""

import apache_beam as beam


class SumOf(beam.CombineFn):
    """A CombineFn from an associative, commutative ``merge`` of an iterable of values, and its zero.

    Beam's wrapper for a plain callable buffers inputs in lists first; this
    keeps one small accumulator per key instead.
    """

    def __init__(self, merge, zero):
        super().__init__()
        self.merge, self.zero = merge, zero

    def create_accumulator(self):
        return self.zero

    def add_input(self, acc, value):
        return self.merge((acc, value))

    def merge_accumulators(self, accs):
        return self.merge(accs)

    def extract_output(self, acc):
        return acc
