"""MKN benchmark: KenLM's lmplz against ngramflow on the same texts, at growing sizes and orders 3 and 5.

    python -m benchmarks.mkn [--tokens 1.875M,3.75M,30M] [--orders 3,5] [--workdir DIR] [--kenlm-source DIR]

Set-up (cached in ~/.cache/ngramflow/kenlm, never in the repository): lmplz is
built from KenLM's sources (a git checkout of kpu/kenlm given by
``--kenlm-source``, or cloned from GitHub) with cmake; Debian needs
``libboost-program-options-dev libboost-system-dev libboost-thread-dev
libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev``.

Texts: English-like sentences drawn from a word-level Markov chain (one word
of history, so that longer n-grams keep being new as the text grows, as in a
real corpus) fitted to real English prose: the Vim documentation that Debian
installs with vim (``/usr/share/vim/vim*/doc/*.txt``, ~1.3M words). Each size
is cached in the work folder.

For each text and order, as separate processes, each measured for wall time,
CPU time and the peak RSS of its process tree (benchmarks/measure.py):
``lmplz -o N -S 4G`` (text -> ARPA); ``python -m ngramflow.corpus.text``
(text -> Google-format counts); ``ngramflow import --pos keep`` of the
counts; ``ngramflow mkn --arpa`` (the stage, ARPA file included); and
``export-arpa`` alone (the ARPA part of it). The two ARPA files are then
compared entry by entry (tools/compare_arpa.py). The sizes span 16x and include 1/8 of the largest,
which issue 15's acceptance compares the largest with (peak RSS, time per n-gram). lmplz and
ngramflow run one after the other on the same text in one run, so both see the same machine; on a
shared machine compare their CPU times. Rewrites the part of BENCHMARKS.md between START and END.
"""

import argparse
import glob
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile

from benchmarks.bench import update_benchmarks_md
from benchmarks.measure import Measurement, run
from benchmarks.scale import sizes
from tools.compare_arpa import compare_files, discount_difference

START, END = "<!-- bench:mkn:start -->", "<!-- bench:mkn:end -->"
KENLM_CACHE = os.path.expanduser("~/.cache/ngramflow/kenlm")
KENLM_GIT = "https://github.com/kpu/kenlm"
SEED_TEXTS = "/usr/share/vim/vim*/doc/*.txt"
PY = sys.executable


def lmplz(source: str | None) -> str:
    """The path of lmplz, built into KENLM_CACHE on first use."""
    binary = os.path.join(KENLM_CACHE, "build", "bin", "lmplz")
    if os.path.exists(binary):
        return binary
    src = os.path.join(KENLM_CACHE, "src")
    if not os.path.isdir(src):
        if source and os.path.isdir(os.path.join(source, "objects")):  # a bare repository
            os.makedirs(src)
            archive = subprocess.run(["git", f"--git-dir={source}", "archive", "HEAD"], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
        elif source:
            shutil.copytree(source, src)
        else:
            subprocess.run(["git", "clone", "--depth", "1", KENLM_GIT, src], check=True)
    build = os.path.join(KENLM_CACHE, "build")
    os.makedirs(build, exist_ok=True)
    subprocess.run(["cmake", src, "-DCMAKE_BUILD_TYPE=Release"], cwd=build, check=True, capture_output=True)
    subprocess.run(["make", f"-j{os.cpu_count() or 1}", "lmplz"], cwd=build, check=True, capture_output=True)
    return binary


def seed_sentences() -> list[list[str]]:
    """Sentences of real English prose: the lines of the Vim documentation with at least three words
    that are all letters (markup, code and tables dropped)."""
    sentences = []
    for path in sorted(glob.glob(SEED_TEXTS)):
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                words = [w.strip(".,;:!?()\"'").lower() for w in line.split()]
                if len(words) >= 3 and all(w.isalpha() for w in words):
                    sentences.append(words)
    if not sentences:
        raise SystemExit(f"no seed text: {SEED_TEXTS} (apt-get install vim-runtime)")
    return sentences


def write_text(path: str, tokens: int, seed: int = 1) -> None:
    """About TOKENS words of sentences from a one-word-history Markov chain fitted to the seed text."""
    chain: dict[str, list[str]] = {}
    for words in seed_sentences():
        padded = ["<s>", *words, "</s>"]
        for before, word in zip(padded, padded[1:]):
            chain.setdefault(before, []).append(word)
    rng, written = random.Random(seed), 0
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        while written < tokens:
            history, sentence = "<s>", []
            while len(sentence) < 60:
                word = rng.choice(chain[history])
                if word == "</s>":
                    break
                sentence.append(word)
                history = word
            fh.write(" ".join(sentence) + "\n")
            written += len(sentence)
    os.replace(path + ".tmp", path)


def measured(command: list[str], log: str, stdin: str | None = None, stdout: str | None = None) -> Measurement:
    """COMMAND run and measured, with its output in LOG; fails the benchmark if it fails."""
    if stdin or stdout:
        redirects = (f" < {stdin}" if stdin else "") + (f" > {stdout}" if stdout else "")
        command = ["sh", "-c", " ".join(command) + redirects]
    result = run(command)
    with open(log, "w") as fh:
        fh.write(result.output)
    if result.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}); see {log}")
    return result


def one_size(work: str, tokens: int, order: int, kenlm: str) -> dict:
    folder = os.path.join(work, f"t{tokens}")
    os.makedirs(folder, exist_ok=True)
    text = os.path.join(folder, "text.txt")
    if not os.path.exists(text):
        write_text(text, tokens)
    run_dir = os.path.join(folder, f"order{order}")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    paths = {name: os.path.join(run_dir, name) for name in ("counts", "ds", "ours.arpa", "kenlm.arpa", "tmp")}
    os.makedirs(paths["tmp"])
    steps = {
        "lmplz": measured([kenlm, "-o", str(order), "-S", "4G", "-T", paths["tmp"]],
                          os.path.join(run_dir, "kenlm.log"), stdin=text, stdout=paths["kenlm.arpa"]),
        "counts": measured([PY, "-m", "ngramflow.corpus.text", text, "--order", str(order),
                            "--output", paths["counts"]], os.path.join(run_dir, "counts.log")),
        "import": measured([PY, "-m", "ngramflow.cli", "import", paths["counts"], "--output", paths["ds"],
                            "--pos", "keep", "-q"], os.path.join(run_dir, "import.log")),
        "mkn": measured([PY, "-m", "ngramflow.cli", "mkn", paths["ds"], "--order", str(order), "--arpa",
                         paths["ours.arpa"], "-q"], os.path.join(run_dir, "mkn.log")),
        "export-arpa": measured([PY, "-m", "ngramflow.cli", "export-arpa", paths["ds"], paths["tmp"] + "/x.arpa"],
                                os.path.join(run_dir, "export.log")),
    }
    with open(os.path.join(paths["ds"], "_manifest.json")) as fh:
        manifest = json.load(fh)
    agreement = compare_files(paths["ours.arpa"], paths["kenlm.arpa"], work=paths["tmp"])
    agreement["max_discount"] = discount_difference(paths["ds"], os.path.join(run_dir, "kenlm.log"))
    ngrams = sum(stats["ngrams"] for stats in manifest["mkn"]["orders"].values())
    shutil.rmtree(paths["tmp"], ignore_errors=True)
    return {"tokens": tokens, "order": order, "ngrams": ngrams, "agreement": agreement,
            **{name: vars(m) | {"output": None} for name, m in steps.items()}}


def _row(r: dict) -> str:
    def step(name):
        m = r[name]
        return f"{m['wall_seconds']:.1f} s / {m['cpu_seconds']:.1f} s / {m['peak_rss_bytes'] / 2**30:.2f}"

    a = r["agreement"]
    ours, theirs = r["mkn"], r["lmplz"]
    ratios = f"{ours['wall_seconds'] / theirs['wall_seconds']:.2f} / {ours['cpu_seconds'] / theirs['cpu_seconds']:.2f}"
    per = f"{ours['wall_seconds'] / r['ngrams'] * 1e6:.2f} / {ours['cpu_seconds'] / r['ngrams'] * 1e6:.2f}"
    return (f"| {r['order']} | {r['tokens'] / 1e6:g}M | {r['ngrams']:,} | {step('lmplz')} | {step('mkn')} | "
            f"{ratios} | {per} | {step('export-arpa')} | {step('counts')} | {step('import')} | "
            f"{a['only_one']} | {a['max_prob']:.1e} | {a['max_backoff']:.1e} | {a['max_discount']:.1e} |")


def table(results: list[dict]) -> str:
    lines = [
        f"Machine: {os.cpu_count()} cores, {platform.python_version()}; each cell wall / CPU / peak RSS (GiB) "
        "of the whole process tree.",
        "",
        "| order | text tokens | model n-grams | lmplz (text -> ARPA) | `ngramflow mkn --arpa` "
        "| mkn / lmplz, wall / CPU | mkn µs per n-gram, wall / CPU | `export-arpa` alone | `corpus.text` | `import` "
        "| entries in one file only | max Δ log10 p | max Δ backoff | max Δ discount (lmplz prints 6 digits) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    return "\n".join(lines + [_row(r) for r in results])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mkn", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", default="1.875M,3.75M,30M", help="text sizes in words (default: 1.875M,3.75M,30M)")
    parser.add_argument("--orders", default="3,5")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "ngramflow-mkn-bench"))
    parser.add_argument("--kenlm-source", default=None, help="a kpu/kenlm checkout or bare repository")
    parser.add_argument("--no-update", action="store_true", help="print the table, leave BENCHMARKS.md as it is")
    args = parser.parse_args(argv)
    kenlm = lmplz(args.kenlm_source)
    results = []
    for tokens in sizes(args.tokens):
        for order in (int(o) for o in args.orders.split(",")):
            results.append(one_size(args.workdir, tokens, order, kenlm))
            print(_row(results[-1]), flush=True)
            with open(os.path.join(args.workdir, "results.json"), "w") as fh:
                json.dump(results, fh, indent=1)
    text = table(results)
    print(text)
    if not args.no_update:
        update_benchmarks_md(f"{START}\n{text}\n{END}", START, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
