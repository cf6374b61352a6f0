"""What an import may touch: only what it wrote, one run at a time, every input read exactly once.

Each test here reproduces a way a user lost data or got a silently wrong dataset
(issue "Nothing lost, nothing wrong"), on real files, through the real command line.
"""

import contextlib
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import NGRAM_COLUMNS, SAMPLE, import_ok, ngrams_of, run_cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_2012 = os.path.join(SAMPLE, "2012")
ONE_FILE = os.path.join(SAMPLE_2012, "googlebooks-eng-all-1gram-20120701-a.gz")
OTHER_FILE = os.path.join(SAMPLE_2012, "googlebooks-eng-all-1gram-20120701-b.gz")


def one_line_error(capsys, code, expected_code=2) -> str:
    err = capsys.readouterr().err.strip()
    assert code == expected_code, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def files_under(folder) -> dict:
    """{relative path: bytes} of every file below FOLDER."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                found[os.path.relpath(path, folder)] = fh.read()
    return found


def listed_files_match_disk(dataset) -> None:
    manifest = json.load(open(os.path.join(dataset, "_manifest.json")))
    for rel, size in manifest["files"].items():
        assert os.path.getsize(os.path.join(dataset, rel)) == size, rel
    assert manifest["output_bytes"] == sum(manifest["files"].values())


def listed_ngrams(dataset) -> list[tuple]:
    """The n-grams of a dataset read from the part files its manifest lists (no pattern, whatever its name)."""
    files = [os.path.join(dataset, rel) for rel in json.load(open(os.path.join(dataset, "_manifest.json")))["files"]
             if rel.startswith("ngrams/")]
    table = pa.concat_tables(pq.read_table(f) for f in files).sort_by("ngram")
    return list(zip(*(table[c].to_pylist() for c in NGRAM_COLUMNS.replace('"', "").split(", "))))


# --- 1. nothing is deleted that the tool did not write ---------------------------------------------------------

@pytest.mark.parametrize("folder", ["ngrams", "rejects", "vocabulary", "mkn", "_work", "_build", "_INCOMPLETE"])
def test_input_inside_a_folder_named_like_the_layout_is_never_deleted(tmp_path, capsys, folder):
    project = tmp_path / "proj"
    (project / folder).mkdir(parents=True)
    shutil.copy(ONE_FILE, project / folder / "eng-1.gz")
    before = files_under(project)
    err = one_line_error(capsys, run_cli("import", project / folder, "--output", project, "-q"))
    assert "is not empty and is not an ngramflow dataset" in err
    assert files_under(project) == before


def test_a_marker_file_the_user_wrote_is_not_taken_for_ours(tmp_path, capsys):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "_INCOMPLETE").write_text("my notes on what is still missing\n")
    err = one_line_error(capsys, run_cli("import", ONE_FILE, "--output", project, "-q"))
    assert "is not an ngramflow dataset" in err
    assert (project / "_INCOMPLETE").read_text() == "my notes on what is still missing\n"


def test_overwrite_replaces_only_the_files_the_manifest_lists(tmp_path):
    out = import_ok(SAMPLE_2012, tmp_path / "out", "--year-max", "1900")
    listed_files_match_disk(out)
    (tmp_path / "out" / "notes.txt").write_text("mine")
    (tmp_path / "out" / "ngrams" / "README.txt").write_text("also mine")
    old = set(json.load(open(tmp_path / "out" / "_manifest.json"))["files"])
    import_ok(SAMPLE_2012, out, "--overwrite", "--lowercase")
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
    assert (tmp_path / "out" / "ngrams" / "README.txt").read_text() == "also mine"
    listed_files_match_disk(out)
    new = set(json.load(open(tmp_path / "out" / "_manifest.json"))["files"])
    ours = {rel for rel in files_under(out) if rel not in ("notes.txt", "ngrams/README.txt", "_manifest.json")}
    assert ours == new, "every file of ours on disk is listed in the new manifest"
    assert not any(os.path.exists(os.path.join(out, rel)) for rel in old - new)
    assert not (tmp_path / "out" / "_build").exists() and not (tmp_path / "out" / "_INCOMPLETE").exists()


def test_a_failed_overwrite_leaves_the_previous_dataset_complete_and_readable(tmp_path, capsys):
    out = import_ok(SAMPLE_2012, tmp_path / "out")
    before, manifest = ngrams_of(out), open(os.path.join(out, "_manifest.json")).read()
    broken = tmp_path / "broken"
    shutil.copytree(SAMPLE_2012, broken)
    data = open(ONE_FILE, "rb").read()
    (broken / os.path.basename(ONE_FILE)).write_bytes(data[: len(data) // 2])  # a truncated download
    code = run_cli("import", broken, "--output", out, "--overwrite", "-q")
    assert "corrupt or truncated" in one_line_error(capsys, code, expected_code=1)
    assert open(os.path.join(out, "_manifest.json")).read() == manifest
    assert ngrams_of(out) == before
    assert run_cli("query", out, "count", "a", "--format", "csv") == 0
    assert "failed" in (tmp_path / "out" / "_INCOMPLETE").read_text()
    import_ok(SAMPLE_2012, out, "--overwrite", "--year-max", "1950")  # and the next run replaces it
    assert ngrams_of(out) != before and not (tmp_path / "out" / "_INCOMPLETE").exists()


def test_a_crash_while_publishing_is_tidied_by_the_next_run(tmp_path, monkeypatch, capsys):
    from ngramflow.pipeline.output import DatasetDir

    out = import_ok(SAMPLE_2012, tmp_path / "out")
    (tmp_path / "out" / "notes.txt").write_text("mine")
    move_in = DatasetDir._move_in

    def crash_half_way(self, build, staged):
        move_in(self, build, dict(list(staged.items())[: len(staged) // 2]))
        raise KeyboardInterrupt  # as a kill would stop it

    monkeypatch.setattr(DatasetDir, "_move_in", crash_half_way)
    assert run_cli("import", SAMPLE_2012, "--output", out, "--overwrite", "-q", "--lowercase") == 130
    monkeypatch.undo()
    assert not (tmp_path / "out" / "_manifest.json").exists()  # visibly incomplete, never a mixed dataset
    capsys.readouterr()
    import_ok(SAMPLE_2012, out, "--year-max", "1950")  # nothing complete is left to replace: no --overwrite
    listed_files_match_disk(out)
    listed = set(json.load(open(tmp_path / "out" / "_manifest.json"))["files"])
    assert set(files_under(out)) == listed | {"_manifest.json", "notes.txt"}
    assert ngrams_of(out) == ngrams_of(import_ok(SAMPLE_2012, tmp_path / "fresh", "--year-max", "1950"))


def test_mkn_replaces_only_its_own_files(tmp_path):
    out = import_ok(SAMPLE_2012, tmp_path / "out", "--mkn-order", "3")
    (tmp_path / "out" / "mkn" / "my-notes.txt").write_text("mine")
    assert run_cli("mkn", out, "--order", "2", "--overwrite", "-q") == 0
    assert (tmp_path / "out" / "mkn" / "my-notes.txt").read_text() == "mine"
    listed_files_match_disk(out)
    listed = json.load(open(tmp_path / "out" / "_manifest.json"))["files"]
    assert any(rel.startswith("mkn/ngrams/order=2/") for rel in listed)
    assert not any(rel.startswith("mkn/ngrams/order=3/") for rel in listed)
    assert not (tmp_path / "out" / "mkn" / "ngrams" / "order=3").exists()


# --- 3. one run at a time ------------------------------------------------------------------------------------

def test_a_second_run_into_the_same_output_fails_at_once(tmp_path, capsys):
    out = tmp_path / "out"
    first = subprocess.Popen([sys.executable, "-m", "ngramflow.cli", "import", SAMPLE_2012, "--output", str(out), "-q"],
                             cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not (out / "_build" / ".ngramflow-build").exists() and time.time() < deadline:
            assert first.poll() is None, first.communicate()[1]
            time.sleep(0.01)
        started = time.time()
        err = one_line_error(capsys, run_cli("import", OTHER_FILE, "--output", out, "-q", "--overwrite"))
        assert "is in use by another ngramflow run" in err and time.time() - started < 5
        assert run_cli("mkn", out, "--order", "2", "-q") == 2
        assert first.wait(timeout=120) == 0, first.communicate()[1]
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert ngrams_of(out) == ngrams_of(import_ok(SAMPLE_2012, tmp_path / "alone"))


# --- 4. paths are taken literally ------------------------------------------------------------------------------

def test_glob_characters_in_output_and_input_names_are_literal(tmp_path):
    a, b = tmp_path / "data[1].gz", tmp_path / "data1.gz"
    shutil.copy(ONE_FILE, a)
    shutil.copy(OTHER_FILE, b)
    out = import_ok(a, tmp_path / "run[1]", "--mkn-order", "1")
    manifest = json.load(open(os.path.join(out, "_manifest.json")))
    assert [i["path"] for i in manifest["inputs"]] == [str(a)]
    assert manifest["rows_read"] > 0 and manifest["orders"]["1"]["ngrams"] > 0
    assert listed_ngrams(out) == ngrams_of(import_ok(ONE_FILE, tmp_path / "plain"))
    assert run_cli("mkn", out, "--order", "1", "--overwrite", "-q") == 0
    assert json.load(open(os.path.join(out, "_manifest.json")))["mkn"]["orders"]["1"]["ngrams"] > 0
    # A pattern that names no existing path is still expanded.
    pattern = import_ok(str(tmp_path / "data?.gz"), tmp_path / "pattern")
    assert [i["path"] for i in json.load(open(os.path.join(pattern, "_manifest.json")))["inputs"]] == [str(b)]


# --- 5. no silent partial input ----------------------------------------------------------------------------------

def inputs_of(dataset) -> list[str]:
    return sorted(i["path"] for i in json.load(open(os.path.join(dataset, "_manifest.json")))["inputs"])


def test_symlinked_folders_are_followed_and_a_file_is_read_once(tmp_path, capsys):
    real = tmp_path / "real"
    real.mkdir()
    shutil.copy(ONE_FILE, real / "a.gz")
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    shutil.copy(OTHER_FILE, corpus / "sub" / "b.gz")
    os.symlink(real, corpus / "linked")           # a symlinked subfolder: followed
    os.symlink(corpus, corpus / "sub" / "up")     # a link back up the tree: not a second copy
    os.symlink(corpus / "sub" / "b.gz", corpus / "b-again.gz")  # the same file under two names
    out = import_ok(corpus, tmp_path / "out")
    assert inputs_of(out) == sorted([str(corpus / "b-again.gz"), str(corpus / "linked" / "a.gz")])
    assert "is the same file as" in capsys.readouterr().err
    manifest = json.load(open(os.path.join(out, "_manifest.json")))
    assert manifest["duplicate_inputs"] == [{"path": str(corpus / "sub" / "b.gz"), "same_as": str(corpus / "b-again.gz")}]
    assert ngrams_of(out) == ngrams_of(import_ok([ONE_FILE, OTHER_FILE], tmp_path / "direct"))
    # A recursive glob sees the same files, each once.
    assert inputs_of(import_ok(f"{corpus}/**/*.gz", tmp_path / "globbed")) == inputs_of(out)


@pytest.mark.parametrize("make, message", [
    (lambda d: os.symlink(d / "loop", d / "loop"), "symbolic link loop"),
    (lambda d: os.symlink(d / "nowhere.gz", d / "dangling.gz"), "broken symbolic link"),
])
def test_links_that_lead_nowhere_are_errors(tmp_path, capsys, make, message):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(ONE_FILE, corpus / "a.gz")
    make(corpus)
    err = one_line_error(capsys, run_cli("import", corpus, "--output", tmp_path / "out", "-q"))
    assert message in err
    if message == "symbolic link loop":
        assert message in one_line_error(capsys, run_cli("import", corpus / "loop", "--output", tmp_path / "o", "-q"))


# --- as a user without root's powers: unreadable input folders, read-only output ---------------------------------

@contextlib.contextmanager
def shared_folder():
    """A temporary folder another user can use (pytest's tmp_path is private to root)."""
    folder = tempfile.mkdtemp(prefix="ngramflow-user-")
    os.chmod(folder, 0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def as_user(*args) -> subprocess.CompletedProcess:
    """Run ``ngramflow ARGS`` as an unprivileged user, for whom file permissions hold (they do not for root)."""
    command = [sys.executable, "-m", "ngramflow.cli", *map(str, args)]
    if os.geteuid() == 0:
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def one_line(result, code=2) -> str:
    err = result.stderr.strip()
    assert result.returncode == code, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_an_unreadable_input_folder_is_an_error_not_a_silent_skip():
    with shared_folder() as root:
        corpus = os.path.join(root, "corpus")
        os.makedirs(os.path.join(corpus, "locked"))
        shutil.copy(ONE_FILE, os.path.join(corpus, "a.gz"))
        shutil.copy(OTHER_FILE, os.path.join(corpus, "locked", "b.gz"))
        os.chmod(corpus, 0o755)
        os.chmod(os.path.join(corpus, "locked"), 0o700)
        err = one_line(as_user("import", corpus, "--output", os.path.join(root, "out"), "-q"))
        assert "cannot read input directory" in err and "locked" in err and "permission denied" in err


def test_a_read_only_output_is_a_one_line_error():
    with shared_folder() as root:
        readonly = os.path.join(root, "readonly")
        os.makedirs(readonly)
        os.chmod(readonly, 0o555)
        err = one_line(as_user("import", ONE_FILE, "--output", readonly, "-q"))
        assert "cannot write to output" in err and "permission denied" in err
        assert os.listdir(readonly) == []


def test_an_output_under_a_file_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    err = one_line_error(capsys, run_cli("import", ONE_FILE, "--output", tmp_path / "afile" / "out", "-q"))
    assert "is a file, not a directory" in err
    assert (tmp_path / "afile").read_text() == "x"


@pytest.fixture
def tiny_disk(tmp_path):
    """A 128 KiB file system (a tmpfs mount: needs root)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(mount)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a 128 KiB tmpfs here (needs root and the right to mount): "
                    f"{mounted.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_full_disk_is_one_line_and_leaves_the_output_marked_incomplete(tiny_disk, tmp_path, capsys):
    big = tmp_path / "big"
    from ngramflow.corpus.synthetic import generate

    generate(big, rows=200_000, seed=3, orders=(1, 2), formats=("2012",), files_per_order=2)
    out = tiny_disk / "out"
    err = one_line_error(capsys, run_cli("import", big / "2012", "--output", out, "-q"), expected_code=1)
    assert "no space left on the device of output" in err
    assert not (out / "_manifest.json").exists() and (out / "_INCOMPLETE").exists()


def test_a_gzip_input_is_never_changed(tmp_path):
    """The inputs' bytes before and after a run with every writing option."""
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_2012, corpus)
    before = files_under(corpus)
    import_ok(corpus, tmp_path / "out", "--keep-years", "--mkn-order", "2", "--arpa", tmp_path / "m.arpa")
    assert files_under(corpus) == before
    with gzip.open(corpus / os.path.basename(ONE_FILE)) as fh:
        assert fh.read(1)


@pytest.mark.parametrize("text", ["{", "[]", "{}", '{"schema_version": 1, "orders": []}'])
def test_a_malformed_manifest_stops_mkn_and_import_with_one_line(tmp_path, capsys, text):
    dataset = tmp_path / "ds"
    dataset.mkdir()
    (dataset / "_manifest.json").write_text(text)
    err = one_line_error(capsys, run_cli("mkn", dataset, "--order", "2", "-q"))
    assert "is not a valid ngramflow manifest" in err
    err = one_line_error(capsys, run_cli("import", ONE_FILE, "--output", dataset, "--overwrite", "-q"))
    assert "is not a valid ngramflow manifest" in err
    assert (dataset / "_manifest.json").read_text() == text


@pytest.mark.parametrize("target, message", [("self", "symbolic link loop"), ("nowhere", "broken symbolic link")])
def test_an_output_that_is_a_bad_link_is_a_one_line_error(tmp_path, capsys, target, message):
    os.symlink(tmp_path / target, tmp_path / "self")
    err = one_line_error(capsys, run_cli("import", ONE_FILE, "--output", tmp_path / "self", "-q"))
    assert message in err


def test_streamed_files_are_whole_in_order_or_not_published(tmp_path):
    """StreamedTables writes its row groups on a thread of its own: every row lands, in order; a write that
    fails there fails the block, and no file of the block is renamed into place."""
    from ngramflow.transforms.sinks import StreamedTables
    from ngramflow.transforms.sizing import ROW_GROUP_ROWS

    schema = pa.schema([("x", pa.int64())])
    pieces = [pa.table({"x": range(start, start + 10_007)}) for start in range(0, 7 * ROW_GROUP_ROWS, 10_007)]
    with StreamedTables(str(tmp_path / "ok"), schema) as files:
        for piece in pieces:
            files.write("a", piece)
            files.write("b/c", piece.slice(0, 3))
    assert pq.read_table(tmp_path / "ok" / "a.parquet").equals(pa.concat_tables(pieces).cast(schema))
    assert pq.read_table(tmp_path / "ok" / "b" / "c.parquet").num_rows == 3 * len(pieces)

    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "b").write_text("a file where the writer needs a folder")
    with pytest.raises(OSError):
        with StreamedTables(str(tmp_path / "bad"), schema) as files:
            for piece in pieces:
                files.write("a", piece)
            files.write("b/c", pieces[0])  # its folder cannot be made: fails on the writing thread, at the end
    assert not os.path.exists(tmp_path / "bad" / "a.parquet")
