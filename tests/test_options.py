"""Every invalid option value is one line: exit 2 on the command line, a UserError from ImportOptions.validate()."""

import os

import pytest

from conftest import SAMPLE, run_cli
from ngramflow.errors import UserError
from ngramflow.pipeline.flink.options import FlinkOptions
from ngramflow.pipeline.mkn import MknSettings
from ngramflow.pipeline.options import ImportOptions

FLINK = ["--runner", "flink"]
CHECKPOINTED = FLINK + ["--mode", "checkpointed"]


def flink(**group):
    return {"runner": "flink", "flink": FlinkOptions(**group)}


def checkpointed(**group):
    return flink(mode="checkpointed", **group)


# (command-line options, the same mistake as ImportOptions fields, what the message says);
# None where a mistake cannot be spelled one of the two ways.
CASES = [
    (["--pos", "Drop"], {"pos": "Drop"}, "--pos is one of drop, keep, got 'Drop'"),
    (["--on-corrupt-file", "ignore"], {"on_corrupt_file": "ignore"}, "--on-corrupt-file is one of fail, skip"),
    (["--format", "2013"], {"format": "2013"}, "--format is one of 2012, 2020, 2009"),
    (["--runner", "spark"], {"runner": "spark"}, "--runner is one of direct, flink"),
    (FLINK + ["--mode", "stream"], flink(mode="stream"), "--mode is one of batch, checkpointed"),
    (["--mode", "checkpointed"], {"flink": FlinkOptions(mode="checkpointed")}, "--mode needs --runner flink"),
    (["--workers", "0"], {"workers": 0}, "--workers must be at least 1"),
    (["--workers", "two"], {"workers": "two"}, "--workers takes a whole number"),
    (["--min-count", "0"], {"min_count": 0}, "--min-count must be at least 1"),
    (["--min-count", "1.5"], {"min_count": 1.5}, "--min-count takes a whole number"),
    (["--max-reject-rate", "1.5"], {"max_reject_rate": 1.5}, "--max-reject-rate must be within 0-1"),
    (["--max-reject-rate", "-0.1"], {"max_reject_rate": -0.1}, "--max-reject-rate must be within 0-1"),
    (["--max-reject-rate", "nan"], {"max_reject_rate": float("nan")}, "--max-reject-rate takes a number"),
    (["--year-min", "1300"], {"year_min": 1300}, "--year-min must be within 1400-2100"),
    (["--year-max", "2200"], {"year_max": 2200}, "--year-max must be within 1400-2100"),
    (["--year-min", "19th"], {"year_min": "1900"}, "--year-min takes a whole number"),
    (["--year-min", "1990", "--year-max", "1950"], {"year_min": 1990, "year_max": 1950},
     "--year-min 1990 is after --year-max 1950"),
    (None, {"lowercase": "yes"}, "--lowercase takes true or false"),
    (None, {"cache": 7}, "--cache takes text"),
    (None, {"beam_args": "--streaming"}, "beam_args takes a list of text"),
    (["--flink-master", "host:1"], {"flink": FlinkOptions(flink_master="host:1")},
     "--flink-master needs --runner flink"),
    (FLINK + ["--flink-master", "localhost"], flink(flink_master="localhost"),
     "--flink-master takes [local] or HOST:PORT"),
    (FLINK + ["--checkpoint-interval", "0"], flink(checkpoint_interval=0), "--checkpoint-interval must be positive"),
    (["--checkpoint-interval", "-5"], {"flink": FlinkOptions(checkpoint_interval=-5)},
     "--checkpoint-interval must be positive"),
    (FLINK + ["--checkpoint-interval", "soon"], flink(checkpoint_interval="soon"),
     "--checkpoint-interval takes a number"),
    (["--resume-from", "/x/chk-1"], {"flink": FlinkOptions(resume_from="/x/chk-1")},
     "--resume-from needs --runner flink"),
    (FLINK + ["--resume-from", "/x/chk-1"], flink(resume_from="/x/chk-1"), "--resume-from needs --mode checkpointed"),
    (CHECKPOINTED + ["--resume-from", "/no/such/chk-1"], None, "no completed checkpoint"),
    (["--slice-size", "1m"], {"flink": FlinkOptions(slice_size="1m")}, "--slice-size needs --runner flink"),
    (FLINK + ["--slice-size", "1m"], flink(slice_size="1m"), "--slice-size needs --mode checkpointed"),
    (CHECKPOINTED + ["--slice-size", "512"], checkpointed(slice_size="512"), "--slice-size must be at least 1k"),
    (CHECKPOINTED + ["--slice-size", "big"], checkpointed(slice_size="big"),
     "--slice-size takes a size such as 2g or 64m"),
    (["--taskmanager-memory", "4g"], {"flink": FlinkOptions(taskmanager_memory="4g")},
     "--taskmanager-memory needs --runner flink"),
    (FLINK + ["--taskmanager-memory", "512m"], flink(taskmanager_memory="512m"),
     "--taskmanager-memory must be at least 1g"),
    (FLINK + ["--taskmanager-memory", "lots"], flink(taskmanager_memory="lots"),
     "--taskmanager-memory takes a size such as 2g or 64m"),
    (FLINK + ["--flink-master", "host:8081", "--taskmanager-memory", "4g"],
     flink(flink_master="host:8081", taskmanager_memory="4g"), "--taskmanager-memory needs --flink-master [local]"),
    (["--mkn-order", "0"], {"mkn": MknSettings(0)}, "the MKN order must be within 1-5"),
    (["--mkn-order", "6"], {"mkn": MknSettings(6)}, "the MKN order must be within 1-5"),
    (["--mkn-order", "three"], None, "--mkn-order takes a whole number"),
    (["--mkn-order", "3", "--discount-fallback", "0.5", "1"], None, "--discount-fallback takes three numbers"),
    (["--mkn-order", "3", "--discount-fallback", "0.5", "2.5", "1"], {"mkn": MknSettings(3, (0.5, 2.5, 1.0))},
     r"--discount-fallback D2 must be within (0, 2]"),
]


def _cases(way: int) -> list:
    """The cases that can be spelled the given way (0: command line, 1: ImportOptions fields)."""
    return [pytest.param(*case, id=" ".join(case[0]) if case[0] else repr(case[1]))
            for case in CASES if case[way] is not None]


@pytest.mark.parametrize("options, _, message", _cases(0))
def test_the_command_line_rejects_a_bad_value_in_one_line(tmp_path, capsys, options, _, message):
    assert run_cli("import", SAMPLE, "--output", tmp_path / "out", *options) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists(), "nothing may be written for a bad option"


@pytest.mark.parametrize("_, fields, message", _cases(1))
def test_import_options_reject_a_bad_value_in_one_line(tmp_path, _, fields, message):
    with pytest.raises(UserError) as raised:
        ImportOptions(inputs=[SAMPLE], output=str(tmp_path / "out"), **fields).validate()
    assert message in str(raised.value) and len(str(raised.value).splitlines()) == 1


@pytest.mark.parametrize("args, message", [
    (["--order", "0"], "the MKN order must be within 1-5"),
    (["--order", "x"], "--order takes a whole number"),
    (["--order", "3", "--workers", "0"], "--workers must be at least 1"),
    (["--order", "3", "--discount-fallback", "none", "1"], "--discount-fallback takes three numbers"),
])
def test_the_mkn_command_rejects_a_bad_value_before_it_looks_at_the_dataset(tmp_path, capsys, args, message):
    assert run_cli("mkn", tmp_path / "no-dataset", *args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_good_values_pass_and_the_defaults_are_valid(tmp_path):
    ImportOptions(inputs=[SAMPLE], output=str(tmp_path)).validate()
    ImportOptions(inputs=[SAMPLE], output=str(tmp_path), pos="keep", format="2020", year_min=1800, year_max=1800,
                  min_count=40, max_reject_rate=1, workers=3, mkn=MknSettings(3),
                  **checkpointed(flink_master="host.example:8081", checkpoint_interval=0.5, slice_size="1k")).validate()


def test_the_embedded_runner_starts_a_worker_per_core_only_for_inputs_that_pay_for_it(tmp_path):
    from ngramflow.pipeline.run import run_import
    from ngramflow.transforms.sizing import PARALLEL_INPUT_BYTES, default_workers

    assert default_workers(PARALLEL_INPUT_BYTES - 1) == 1
    assert default_workers(PARALLEL_INPUT_BYTES) == (os.cpu_count() or 1)
    result = run_import(ImportOptions(inputs=[f"{SAMPLE}/2012"], output=str(tmp_path / "out")), progress=False)
    assert result.manifest["options"]["workers"] == 1  # the number used is recorded, not "default"
