"""What the embedded runner changes of Beam 2.62 in this process, where its workers are threads: three of Beam's
fixed costs that none take an option, and a failure's traceback printed where the command says it in a line
(pipeline/run.py, direct_runner_args, applies all four)."""

import types
import weakref

from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.worker import sdk_worker, statesampler
from apache_beam.transforms import core

#: How often, in ms, a worker of the embedded runner samples which step it is in (Beam's state sampler, whose
#: default is 200). A bundle ends by joining its sampler's thread, which wakes only at its next sample: each
#: long bundle (every worker's share of the read stage, of the merge, the vocabulary's) ended 0-200 ms after
#: its last work, with the cores idle. 10 ms keeps the wait below that of one small step.
SAMPLING_MS = 10


def end_bundles_promptly() -> None:
    """Make the state samplers of this process's bundles sample every SAMPLING_MS (Beam 2.62 takes no option
    for it: the period is its StateSampler's default argument). The samples feed Beam's per-step msec
    counters, which nothing here reads; a sampler thread woken 100 times a second costs no measurable CPU."""
    statesampler.StateSampler.__init__.__defaults__ = (SAMPLING_MS,)


#: Beam's own reading of a function's arguments (names, default values), as it was before inspect_once.
_ARGUMENTS = core.get_function_args_defaults
#: Its answers, by function (for bound methods, by the function the method binds); an entry goes with its
#: function.
_READ = {True: weakref.WeakKeyDictionary(), False: weakref.WeakKeyDictionary()}


def _arguments_read_once(f):
    """core.get_function_args_defaults(F), from the answer for F's function when there is one: the names and
    default values of a function's arguments are its code's and its defaults', the same for every object its
    method is bound to."""
    bound = isinstance(f, types.MethodType)
    function = f.__func__ if bound else f
    if not isinstance(function, types.FunctionType):  # builtins, callable objects: Beam's reading each time
        return _ARGUMENTS(f)
    found = _READ[bound].get(function)
    if found is None:
        found = _READ[bound][function] = _ARGUMENTS(f)
    args, defaults = found
    return list(args), list(defaults)  # Beam's callers get lists of their own, as Beam's reading gives


def inspect_once() -> None:
    """Make Beam read each function's arguments once in this process. Beam asks, for every DoFn each time it
    builds a graph or a worker's step of it, whether the DoFn keeps state (userstate.get_dofn_specs): an
    inspect.signature of every method the DoFn has, ~30 a DoFn, 216 times an import, though the methods are
    the same few dozen functions. That was 0.12-0.18 s of CPU an import, most of it on one core before a
    file is read (the graph) and at each stage's start (BENCHMARKS.md, issue 16's sixteenth round)."""
    core.get_function_args_defaults = _arguments_read_once


#: Beam's own making of a view of a PipelineOptions, as it was before views_made_once.
_VIEW = PipelineOptions.view_as
#: The views made, by options object and class; an entry goes with its options object.
_VIEWS = weakref.WeakKeyDictionary()


def _view_made_once(options: PipelineOptions, cls):
    """options.view_as(CLS), the view made at the first call kept for the next: Beam's views of one options
    object all keep their values in its one dictionary (_all_options), which a view sets at its making only for
    names it has not got yet, so a second view of a class is the first's equal."""
    views = _VIEWS.setdefault(options, {})
    view = views.get(cls)
    if view is None:
        view = views[cls] = _VIEW(options, cls)
    return view


def views_made_once() -> None:
    """Make Beam view a PipelineOptions as each subclass once. Beam views the options as TypeOptions for every
    transform it applies and every output type it infers (Pipeline.apply), and each view parsed the command's
    Beam arguments again with a parser of its own (argparse, and gettext looking for translations of its
    messages on disk): 95 views an import, 0.28 ms each, of the graph's 0.12 s, on the core that holds up the
    read stage's start (BENCHMARKS.md, issue 16's thirty-fifth round)."""
    PipelineOptions.view_as = _view_made_once


def _not_printed(*args, **kwargs) -> None:
    pass


def failures_told_once() -> None:
    """Keep the workers from printing each failed bundle's traceback to standard error. With more than one
    worker, Beam's SDK harness (sdk_worker.SdkHarness._execute, that module's one print) printed it there, then
    sent it to the runner, which raises it in the command's main thread: the command line says a user's
    mistake (a corrupt gzip, an input's rows out of order) in one line, after some sixty lines of Beam's
    frames, and a bug's traceback twice. Beam's log keeps it (--verbose), and a bug's still ends the command."""
    sdk_worker.print = _not_printed
