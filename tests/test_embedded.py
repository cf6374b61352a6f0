"""What the embedded runner changes of Beam in this process (pipeline/embedded.py): each function's arguments
read once, with Beam's answers; each view of a PipelineOptions made once, with Beam's values."""

import functools
import gc

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions, TypeOptions
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import userstate
from apache_beam.transforms.userstate import BagStateSpec

from conftest import SAMPLE
from ngramflow.pipeline import embedded
from ngramflow.pipeline.options import ImportOptions
from ngramflow.pipeline.run import direct_runner_args


class _Stateless(beam.DoFn):
    def process(self, element, timestamp=beam.DoFn.TimestampParam, *rest):
        yield element


_SEEN = BagStateSpec("seen", beam.coders.VarIntCoder())
_SEEN_STATE = beam.DoFn.StateParam(_SEEN)


class _Count(beam.DoFn):
    """(key, value) -> (key, values of the key so far), in a bag of the key's own."""

    def process(self, element, seen=_SEEN_STATE):
        key, value = element
        seen.add(value)
        yield key, len(list(seen.read()))


def _plain(a, b=3, *, c=4):
    return a


def test_arguments_are_beams_for_every_kind_of_callable():
    dofn = _Stateless()
    callables = [_plain, lambda x, y=2: x, _Stateless.process, dofn.process, dofn.setup, len,
                 functools.partial(_plain, 1), _Count().process]
    for f in callables:
        # Twice each: the second answer comes from what the first read (a function and its method apart).
        for _ in range(2):
            assert embedded._arguments_read_once(f) == embedded._ARGUMENTS(f), f


def test_a_method_is_read_once_for_every_object_it_is_bound_to(monkeypatch):
    reads, beams = [], embedded._ARGUMENTS

    def counted(f):
        reads.append(f)
        return beams(f)

    monkeypatch.setattr(embedded, "_ARGUMENTS", counted)

    class Fresh(beam.DoFn):  # a class of this test's own: nothing has read its method yet
        def process(self, element, window=beam.DoFn.WindowParam):
            yield element

    for _ in range(3):
        embedded._arguments_read_once(Fresh().process)
    assert len(reads) == 1


def test_a_caller_changing_its_answer_changes_no_other():
    first = embedded._arguments_read_once(_Stateless().process)
    first[0].append("changed")
    first[1].clear()
    assert embedded._arguments_read_once(_Stateless().process) == embedded._ARGUMENTS(_Stateless().process)


def test_an_answer_goes_with_its_function():
    def made_here(x, y=1):
        return x

    embedded._arguments_read_once(made_here)
    gc.collect()  # earlier tests' functions gone first: only this one's entry goes below
    held = len(embedded._READ[False])
    del made_here
    gc.collect()
    assert len(embedded._READ[False]) == held - 1


def test_state_is_still_found_and_kept_with_the_embedded_runners_arguments():
    options = ImportOptions(inputs=[SAMPLE], output="unused", workers=2)
    args = direct_runner_args(options)
    assert userstate.is_stateful_dofn(_Count())
    assert not userstate.is_stateful_dofn(_Stateless())
    with beam.Pipeline(options=PipelineOptions(args)) as pipeline:
        counts = pipeline | beam.Create([("a", 1), ("b", 2), ("a", 3)]) | beam.ParDo(_Count())
        # The bag of "a" held both of its values when the second came: state kept per key.
        assert_that(counts | beam.CombinePerKey(max), equal_to([("a", 2), ("b", 1)]))


_BEAM_ARGS = ["--runner=DirectRunner", "--direct_num_workers=3", "--type_check_strictness=ALL_REQUIRED"]


def test_a_view_is_made_once_an_options_object_and_class(monkeypatch):
    made, beams = [], embedded._VIEW

    def counted(options, cls):
        made.append(cls)
        return beams(options, cls)

    monkeypatch.setattr(embedded, "_VIEW", counted)
    options = PipelineOptions(_BEAM_ARGS)
    views = [embedded._view_made_once(options, cls) for cls in (TypeOptions, DirectOptions, TypeOptions)]
    assert views[0] is views[2]
    assert made == [TypeOptions, DirectOptions]
    embedded._view_made_once(PipelineOptions(_BEAM_ARGS), TypeOptions)  # another object: a view of its own
    assert made == [TypeOptions, DirectOptions, TypeOptions]


def test_views_made_once_have_beams_values_and_share_them():
    options = PipelineOptions(_BEAM_ARGS)
    for cls in (TypeOptions, DirectOptions, StandardOptions):
        assert embedded._view_made_once(options, cls).get_all_options() == embedded._VIEW(options, cls).get_all_options()
    assert embedded._view_made_once(options, TypeOptions).type_check_strictness == "ALL_REQUIRED"
    assert embedded._view_made_once(options, DirectOptions).direct_num_workers == 3
    # A value set through the kept view is every view's, Beam's own included, as Beam's views share theirs.
    embedded._view_made_once(options, TypeOptions).pipeline_type_check = False
    assert embedded._VIEW(options, TypeOptions).pipeline_type_check is False
    embedded._VIEW(options, DirectOptions).direct_num_workers = 5
    assert embedded._view_made_once(options, DirectOptions).direct_num_workers == 5


def test_the_views_go_with_their_options_object():
    options = PipelineOptions(_BEAM_ARGS)
    embedded._view_made_once(options, TypeOptions)
    gc.collect()
    held = len(embedded._VIEWS)
    del options
    gc.collect()
    assert len(embedded._VIEWS) == held - 1
