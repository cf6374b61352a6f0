import base64
import concurrent.futures
import gzip
import io
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from email.utils import formatdate
from pathlib import Path

import pytest

from ngramflow.corpus import cli
from ngramflow.corpus.catalog import CatalogError
from ngramflow.corpus.download import (
    DownloadError,
    UnsafeURL,
    cache_path,
    download,
    exponential_backoff,
    resolve_inputs,
    _retry_after,
)
from httpserver import Change, Corrupt, Drop, FaultyServer, IgnoreRange, Request, Status

REPO = Path(__file__).resolve().parent.parent
FAST = dict(backoff=lambda n: 0.01, progress=False, timeout=10)


def gz_payload(size: int = 400_000, seed: int = 1) -> bytes:
    """A valid two-member gzip file of about ``size`` bytes (its text barely compresses)."""
    text = base64.b64encode(random.Random(seed).randbytes(size)).decode()
    lines = "".join(f"{text[i:i + 60]}\t1999\t3\n" for i in range(0, len(text), 60))
    half = len(lines) // 2
    return gzip.compress(lines[:half].encode()) + gzip.compress(lines[half:].encode())


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    # A proxy from the environment would route the loopback requests elsewhere.
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server():
    with FaultyServer() as s:
        yield s


def fetch_one(server, tmp_path, path, data, *faults, **options):
    url = server.add(path, data)
    server.script(path, *faults)
    report = download([url], tmp_path / "cache", **{**FAST, **options})
    return report.results[0], cache_path(tmp_path / "cache", url)


def leftovers(final: Path) -> list[str]:
    return sorted(p.name for p in final.parent.glob(final.name + ".*"))


def files_outside(root: Path, cache: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_relative_to(cache)]


def finishes_within(seconds: float, function, *args, **kwargs):
    """``function``'s result; a test failure if it has not returned after ``seconds``.

    A download that never ends fails the test instead of hanging it, and ends itself
    once the server fixture stops (every later attempt is refused, so makes no progress).
    """
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(function, *args, **kwargs).result(timeout=seconds)
    except concurrent.futures.TimeoutError:
        pytest.fail(f"still running after {seconds} s")
    finally:
        pool.shutdown(wait=False)


def test_download_verifies_and_caches(server, tmp_path):
    data = gz_payload()
    result, final = fetch_one(server, tmp_path, "/books/20200217/eng/2-00000-of-00002.gz", data)
    assert (result.status, result.attempts, result.bytes_fetched) == ("downloaded", 1, len(data))
    assert final.read_bytes() == data and leftovers(final) == []
    assert final == tmp_path / "cache" / f"127.0.0.1_{server.httpd.server_address[1]}" / "books/20200217/eng/2-00000-of-00002.gz"

    again = download([server.url("/books/20200217/eng/2-00000-of-00002.gz")], tmp_path / "cache", **FAST)
    assert again.results[0].status == "cached" and again.results[0].attempts == 0
    assert len(server.requests) == 1


def test_plain_text_file_is_checked_by_length_only(server, tmp_path):
    result, final = fetch_one(server, tmp_path, "/books/20200217/eng/totalcounts-2", b" \t1900,1,2,3\t")
    assert result.status == "downloaded" and final.read_bytes() == b" \t1900,1,2,3\t"


def test_dropped_connection_resumes_with_range(server, tmp_path):
    data = gz_payload()
    path = "/books/drop.gz"
    result, final = fetch_one(server, tmp_path, path, data, Drop(after=150_000), Drop(after=70_000))
    assert result.status == "downloaded" and final.read_bytes() == data
    assert [r.range for r in server.requests_for(path)] == [None, "bytes=150000-", "bytes=220000-"]


def test_429_honours_retry_after_seconds(server, tmp_path):
    t0 = time.monotonic()
    result, final = fetch_one(server, tmp_path, "/books/busy.gz", gz_payload(), Status(429, retry_after="1"))
    assert result.status == "downloaded" and result.attempts == 2
    assert time.monotonic() - t0 >= 0.9  # the backoff alone would have waited 0.01 s


def test_retry_after_forms():
    assert _retry_after("7", cap=600) == 7
    assert _retry_after("7000", cap=600) == 600
    assert 1 <= _retry_after(formatdate(time.time() + 3, usegmt=True), cap=600) <= 3
    assert _retry_after(formatdate(time.time() - 60, usegmt=True), cap=600) == 0
    assert _retry_after("soon", cap=600) is None and _retry_after(None, cap=600) is None


def test_backoff_grows_and_is_capped():
    assert 0.5 <= exponential_backoff(1) <= 1
    assert 4 <= exponential_backoff(4) <= 8
    assert exponential_backoff(30) <= 120


def test_503_and_500_are_retried(server, tmp_path):
    result, final = fetch_one(server, tmp_path, "/books/flaky.gz", gz_payload(), Status(503), Status(500), Status(503, "0"))
    assert result.status == "downloaded" and result.attempts == 4


def test_gives_up_after_retries_without_progress(server, tmp_path):
    result, final = fetch_one(server, tmp_path, "/books/down.gz", gz_payload(), *[Status(503)] * 5, retries=2)
    assert result.status == "failed" and "gave up after 2 retries without progress: HTTP 503" in result.error
    assert result.attempts == 3 and not final.exists()


def test_416_restarts_from_zero(server, tmp_path):
    data = gz_payload()
    path = "/books/range.gz"
    result, final = fetch_one(server, tmp_path, path, data, Drop(after=100_000), Status(416))
    assert result.status == "downloaded" and final.read_bytes() == data
    assert [r.range for r in server.requests_for(path)] == [None, "bytes=100000-", None]


def test_remote_change_between_attempts_restarts_cleanly(server, tmp_path):
    old, new = gz_payload(seed=1), gz_payload(size=300_000, seed=2)
    path = "/books/changed.gz"
    result, final = fetch_one(server, tmp_path, path, old, Drop(after=100_000), Change(new))
    assert result.status == "downloaded" and final.read_bytes() == new
    assert [r.range for r in server.requests_for(path)] == [None, "bytes=100000-", None]


def test_server_ignoring_range_means_restart(server, tmp_path):
    data = gz_payload()
    path = "/books/norange.gz"
    result, final = fetch_one(server, tmp_path, path, data, Drop(after=100_000), IgnoreRange())
    assert result.status == "downloaded" and final.read_bytes() == data
    assert [r.range for r in server.requests_for(path)] == [None, "bytes=100000-"]


def test_corrupt_once_is_fetched_again(server, tmp_path):
    data = gz_payload()
    result, final = fetch_one(server, tmp_path, "/books/flip.gz", data, Corrupt(offset=5000))
    assert result.status == "downloaded" and final.read_bytes() == data and result.attempts == 2


def test_corrupt_twice_fails_and_never_gets_the_final_name(server, tmp_path):
    data = gz_payload()
    url = server.add("/books/bad.gz", data)
    server.script("/books/bad.gz", Corrupt(offset=5000), Corrupt(offset=200_000))
    server.slow("/books/bad.gz", 0.002)
    final = cache_path(tmp_path / "cache", url)
    seen, done = [], threading.Event()

    def watch():
        while not done.is_set():
            seen.append(final.exists())
            time.sleep(0.001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        report = download([url], tmp_path / "cache", **FAST)
    finally:
        done.set()
        watcher.join()
    result = report.results[0]
    assert result.status == "failed" and "corrupt twice" in result.error and "gzip stream damaged" in result.error
    assert not any(seen) and not final.exists() and leftovers(final) == []


def test_truncated_gzip_with_honest_length_fails(server, tmp_path):
    result, final = fetch_one(server, tmp_path, "/books/short.gz", gz_payload()[:-20])
    assert result.status == "failed" and "truncated" in result.error and not final.exists()


def test_one_failure_does_not_stop_the_others(server, tmp_path):
    good = [server.add(f"/books/ok-{i}.gz", gz_payload(seed=i)) for i in range(3)]
    missing = server.url("/books/missing.gz")
    report = download([good[0], missing, *good[1:]], tmp_path / "cache", parallel=2, **FAST)
    assert [r.status for r in report.results] == ["downloaded", "failed", "downloaded", "downloaded"]
    assert report.results[1].error == "HTTP 404 Not Found" and report.results[1].attempts == 1
    assert not report.ok and "FAILED " + missing in report.summary()


def test_forced_progress_goes_to_the_stream(server, tmp_path):
    url = server.add("/books/shown.gz", gz_payload())
    server.script("/books/shown.gz", Status(503))
    stream = io.StringIO()
    report = download([url], tmp_path / "cache", backoff=lambda n: 0.01, progress=True, progress_interval=0, stream=stream)
    text = stream.getvalue()
    assert report.ok
    assert "retry  shown.gz: HTTP 503" in text and "done   shown.gz" in text and "[0/1 files]" in text
    quiet = io.StringIO()
    download([server.add("/books/quiet.gz", gz_payload())], tmp_path / "cache", backoff=lambda n: 0.01, stream=quiet)
    assert quiet.getvalue() == ""  # a StringIO is not a TTY


def test_resolve_inputs(server, tmp_path):
    mirror = server.url("/mirror/")
    server.add("/mirror/20200217/eng/2-00000-of-00589.gz", gz_payload(seed=3))
    server.add("/mirror/20200217/eng/totalcounts-2", b"\t1900,1,2,3\t")
    direct = server.add("/elsewhere/file.gz", gz_payload(seed=4))
    paths = resolve_inputs(
        ["local/a.gz", "corpus:20200217/eng/2/0,totalcounts", direct, "gs://bucket/b.gz", direct],
        tmp_path / "cache",
        base_url=mirror,
        **FAST,
    )
    host = tmp_path / "cache" / f"127.0.0.1_{server.httpd.server_address[1]}"
    assert paths == [
        "local/a.gz",
        str(host / "mirror/20200217/eng/2-00000-of-00589.gz"),
        str(host / "mirror/20200217/eng/totalcounts-2"),
        str(host / "elsewhere/file.gz"),
        "gs://bucket/b.gz",
    ]
    assert all(Path(p).is_file() for p in paths[1:4])

    with pytest.raises(DownloadError) as error:
        resolve_inputs(["corpus:20200217/eng/2/1"], tmp_path / "cache", base_url=mirror, **FAST)
    assert "2-00001-of-00589.gz: HTTP 404" in str(error.value)


def test_resolve_from_index_page(server, tmp_path):
    page = '<a href="2-00000-of-00002.gz">a</a> <a href="2-00001-of-00002.gz">b</a>'
    index = server.add("/idx/20200217/heb/heb-2-ngrams_exports.html", page.encode(), "text/html")
    server.add("/idx/20200217/heb/2-00001-of-00002.gz", gz_payload())
    paths = resolve_inputs(["corpus:20200217/heb/2/1"], tmp_path / "cache", index_page=index, **FAST)
    assert paths[0].endswith("idx/20200217/heb/2-00001-of-00002.gz")
    # The default index location is derived from the mirror.
    paths = resolve_inputs(["corpus:20200217/heb/2/1"], tmp_path / "cache", base_url=server.url("/idx/"), from_index=True, **FAST)
    assert server.requests_for("/idx/20200217/heb/heb-2-ngrams_exports.html")[-1].method == "GET"


def test_cli_download(server, tmp_path, capsys):
    server.add("/m/googlebooks-eng-all-2gram-20120701-ab.gz", gz_payload())
    argv = ["download", "corpus:20120701/eng/2/ab,ac", "--cache", str(tmp_path / "c"), "--mirror", server.url("/m")]
    assert cli.main(argv + ["--retries", "0", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "1 downloaded, 0 already cached, 1 failed" in err and "googlebooks-eng-all-2gram-20120701-ac.gz: HTTP 404" in err

    assert cli.main(["download", "not-a-url", "--cache", str(tmp_path / "c")]) == 2
    assert "neither a corpus spec" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit:
        cli.main(["download", "corpus:20120701/eng/2", "--cache", "c", "--parallel", "0"])
    assert exit.value.code == 2


def test_killed_download_resumes_from_the_bytes_on_disk(server, tmp_path):
    data = gz_payload(size=1_500_000)  # about 23 chunks of 64 KiB
    path = "/books/20200217/eng/2-00001-of-00002.gz"
    url = server.add(path, data)
    server.slow(path, 0.1)  # 64 KiB every 100 ms: the whole file would take over 2 s
    cache = tmp_path / "cache"
    final = cache_path(cache, url)
    part = final.with_name(final.name + ".part")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    child = subprocess.Popen(
        [sys.executable, "-m", "ngramflow.corpus.cli", "download", url, "--cache", str(cache), "--no-progress"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not (part.exists() and part.stat().st_size >= 200_000):
            assert child.poll() is None, "the download ended before it could be killed"
            assert time.monotonic() < deadline, "no bytes arrived"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=10)
    on_disk = part.stat().st_size
    assert 200_000 <= on_disk < len(data) and not final.exists()

    server.slow(path, 0)
    report = download([url], cache, **FAST)
    assert report.results[0].status == "downloaded" and final.read_bytes() == data
    assert report.results[0].bytes_fetched == len(data) - on_disk
    assert server.requests_for(path)[-1] == Request("GET", path, f"bytes={on_disk}-")


def escaping_urls(server, tmp_path) -> list[str]:
    """URLs whose decoded path leaves a cache at ``tmp_path/cache``, each served with a valid .gz."""
    absolute = urllib.parse.quote(str(tmp_path / "outside" / "evil.gz"), safe="")
    paths = ["/" + absolute, "/books/%2e%2e%2f%2e%2e%2f%2e%2e%2fevil.gz", "/%2e%2e/%2E%2E/evil2.gz"]
    return [server.add(path, gz_payload(size=1000)) for path in paths]


def test_cli_refuses_a_url_that_would_leave_the_cache(server, tmp_path, capsys):
    cache = tmp_path / "cache"
    for url in escaping_urls(server, tmp_path):
        assert cli.main(["download", url, "--cache", str(cache), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"ngramflow corpus: error: refusing {url}: ") and err.count("\n") == 1
    assert server.requests == [] and files_outside(tmp_path, cache) == []


def test_import_refuses_a_bad_url_before_fetching_anything(server, tmp_path):
    good = server.add("/books/good.gz", gz_payload(size=1000))
    bad = escaping_urls(server, tmp_path)[0]
    # A CatalogError is what `ngramflow import` reports in one line with exit code 2.
    with pytest.raises(CatalogError, match="refusing " + bad):
        resolve_inputs([good, bad], tmp_path / "cache", **FAST)
    assert server.requests == [] and list(tmp_path.rglob("*")) == []


@pytest.mark.parametrize(
    "url",
    [
        "http://../x.gz",
        "http://a\\b/x.gz",
        "http://%2e%2e/x.gz",
        "http://h:99999/x.gz",
        "http:///x.gz",
        "ftp://h/x.gz",
        "file:///etc/x.gz",
        "http://h",
        "http://h/dir/",
        "http://h/a//x.gz",
        "http://h/a/./x.gz",
        "http://h/a/../x.gz",
        "http://h/a/%2E/x.gz",
        "http://h/a%2Fb.gz",
        "http://h/a%5Cb.gz",
        "http://h/a%00b.gz",
        "http://h/%ff.gz",
    ],
)
def test_cache_path_refuses_what_is_not_a_plain_host_and_file_path(url, tmp_path):
    with pytest.raises(UnsafeURL, match="refusing "):
        cache_path(tmp_path, url)


def test_cache_path_of_plain_urls(tmp_path):
    assert cache_path(tmp_path, "https://Storage.example.com/b/x%20y.gz?q=1") == tmp_path / "storage.example.com/b/x y.gz"
    assert cache_path(tmp_path, "http://[::1]:8080/x.gz") == tmp_path / "__1_8080/x.gz"


def test_index_page_links_that_would_leave_the_cache_are_refused(server, tmp_path, capsys):
    index = server.add_index(
        "/idx/20200217/heb/heb-2-ngrams_exports.html",
        [
            "2-00000-of-00003.gz",
            "/%2e%2e/%2e%2e/20200217/heb/2-00001-of-00003.gz",  # CACHE/HOST/../.. is outside
            "/x%2F..%2F..%2F..%2Fevil/20200217/heb/2-00002-of-00003.gz",  # a '/' inside a segment
        ],
    )
    paths = [
        "/idx/20200217/heb/2-00000-of-00003.gz",
        "/%2e%2e/%2e%2e/20200217/heb/2-00001-of-00003.gz",
        "/x%2F..%2F..%2F..%2Fevil/20200217/heb/2-00002-of-00003.gz",
    ]
    for i, path in enumerate(paths):
        server.add(path, gz_payload(size=1000, seed=i))
    cache = tmp_path / "cache"
    argv = ["download", "corpus:20200217/heb/2", "--index-url", index, "--cache", str(cache), "--no-progress"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "1 downloaded, 0 already cached, 2 failed" in err
    for path in paths[1:]:
        assert f"FAILED {server.url(path)}: refused: path segment " in err
        assert server.requests_for(path) == []
    assert cache_path(cache, server.url(paths[0])).is_file() and files_outside(tmp_path, cache) == []


def test_symlink_in_the_cache_does_not_lead_a_download_out(server, tmp_path):
    url = server.add("/books/x.gz", gz_payload(size=1000))
    elsewhere, cache = tmp_path / "elsewhere", tmp_path / "cache"
    elsewhere.mkdir()
    final = cache_path(cache, url)
    final.parent.parent.mkdir(parents=True)
    final.parent.symlink_to(elsewhere)  # CACHE/HOST/books -> elsewhere
    result = download([url], cache, **FAST).results[0]
    assert result.status == "failed" and result.error.startswith(f"refused: {final} resolves to {elsewhere / 'x.gz'}")

    final.parent.unlink()
    final.parent.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    final.with_name("x.gz.part").symlink_to(victim)
    result = download([url], cache, **FAST).results[0]
    assert result.status == "failed" and "x.gz.part resolves to" in result.error
    assert victim.read_bytes() == b"keep" and list(elsewhere.iterdir()) == []

    final.with_name("x.gz.part").unlink()
    final.symlink_to(final)  # a loop: refused like the others, not a crash
    result = download([url], cache, **FAST).results[0]
    assert result.status == "failed" and result.error.startswith(f"refused: cannot resolve {final}")
    assert server.requests == []


def test_a_symlinked_cache_directory_is_fine(server, tmp_path):
    url = server.add("/books/x.gz", gz_payload(size=1000))
    (tmp_path / "disk").mkdir()
    (tmp_path / "cache").symlink_to(tmp_path / "disk")
    assert download([url], tmp_path / "cache", **FAST).ok and cache_path(tmp_path / "disk", url).is_file()


def test_server_ignoring_range_and_cutting_every_body_short_is_given_up(server, tmp_path):
    path = "/books/cut.gz"
    url = server.add(path, gz_payload())
    server.cut_short(path, 100_000, ignore_range=True)
    # Each answer starts again at byte 0: only the first one brought bytes never held before.
    report = finishes_within(20, download, [url], tmp_path / "cache", retries=1, **FAST)
    result = report.results[0]
    assert result.status == "failed" and result.error.startswith("gave up after 1 retries without progress: incomplete read")
    assert [r.range for r in server.requests_for(path)] == [None, "bytes=100000-", "bytes=100000-"]


def test_retry_time_bounds_a_server_that_progresses_a_little_per_attempt(server, tmp_path, capsys):
    path = "/books/trickle.gz"
    url = server.add(path, gz_payload())
    server.cut_short(path, 500)  # about 800 attempts for the whole file, each one real progress
    # The first wait (at most 0.5 s) fits in the limit, so at least two attempts; the count bound (8) is never hit.
    argv = ["download", url, "--cache", str(tmp_path / "cache"), "--no-progress", "--retry-time", "1"]
    t0 = time.monotonic()
    assert finishes_within(20, cli.main, argv) == 1
    assert time.monotonic() - t0 < 5
    assert "retry time limit 1s): incomplete read" in capsys.readouterr().err
    assert 2 <= len(server.requests_for(path)) < 100


def test_a_wait_past_the_retry_time_gives_up_at_once(server, tmp_path):
    t0 = time.monotonic()
    result, final = fetch_one(server, tmp_path, "/books/busy.gz", gz_payload(), Status(429, retry_after="30"), retry_time=5)
    assert result.status == "failed" and "retry time limit 5s): HTTP 429" in result.error and result.attempts == 1
    assert time.monotonic() - t0 < 2


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan"])
def test_cli_retry_time_must_be_positive_seconds(value, tmp_path):
    with pytest.raises(SystemExit) as exit:
        cli.main(["download", "http://127.0.0.1:9/x.gz", "--cache", str(tmp_path), "--retry-time", value])
    assert exit.value.code == 2
