"""What a wheel installs: only the ``ngramflow`` namespace, the Flink files as package data, a build without
setuptools warnings, and, run from outside the checkout, an import and the README's API example."""

import os
import shutil
import subprocess
import sys
import zipfile

from conftest import HERE
from ngramflow.pipeline.flink.provision import LAUNCHER_SOURCE
from test_api import in_folder_with_tests, readme_example

CHECKOUT = os.path.dirname(HERE)
FLINK_FILES = ["pom.xml", "config.yaml", "log4j.properties", LAUNCHER_SOURCE]


def docker_wheel_context(folder) -> None:
    """Into FOLDER, what the Dockerfile's wheel stage (its first) copies into its build, less what .dockerignore
    leaves out of the image's context (its patterns' last parts, matched anywhere): the wheel is built from
    this alone, so a file the build needs and the Dockerfile does not copy fails here."""
    stage = open(os.path.join(CHECKOUT, "Dockerfile")).read().split("\nFROM ")[1]
    ignored = [line.strip().rsplit("/", 1)[-1] for line in open(os.path.join(CHECKOUT, ".dockerignore"))
               if line.strip() and not line.startswith("#")]
    for words in (line.split() for line in stage.splitlines()):
        if words[:1] != ["COPY"]:
            continue
        *sources, destination = words[1:]
        for source in sources:
            target = os.path.join(folder, destination, os.path.basename(source) if destination.endswith("/") else "")
            if os.path.isdir(os.path.join(CHECKOUT, source)):
                shutil.copytree(os.path.join(CHECKOUT, source), target, ignore=shutil.ignore_patterns(*ignored))
            else:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy2(os.path.join(CHECKOUT, source), target)


def build_wheel(folder) -> tuple[str, str]:
    """Build the wheel from the Dockerfile's build context (a build writes build/ and *.egg-info where it
    runs), with the backend pyproject names from this environment: no download. (the wheel's path, the build's
    output)"""
    source = folder / "source"
    docker_wheel_context(source)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--verbose",
                            "-w", folder / "dist", source], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = os.listdir(folder / "dist")
    return str(folder / "dist" / wheel), built.stdout + built.stderr


def test_the_wheel_installs_only_ngramflow_and_runs_outside_the_checkout(tmp_path):
    wheel, output = build_wheel(tmp_path)
    assert "running bdist_wheel" in output, "the backend's output is what is checked"
    # Each extension built once (setup.py says why it declares them, and not pyproject.toml).
    assert output.count("running build_rust") == 1, "the Rust extensions were built more than once"
    assert "deprecat" not in output.lower(), "the build warns: " + next(
        line for line in output.splitlines() if "deprecat" in line.lower())

    names = zipfile.ZipFile(wheel).namelist()
    [metadata] = {name.split("/")[0] for name in names} - {"ngramflow"}
    assert metadata.startswith("ngramflow-") and metadata.endswith(".dist-info"), metadata
    for name in FLINK_FILES:
        assert f"ngramflow/pipeline/flink/infra/{name}" in names
    assert {"ngramflow/cli.py", "ngramflow/query/api.py", "ngramflow/transforms/__init__.py"} <= set(names)
    for kernel in ("_kernel", "_kernel_v3"):  # its builds for any CPU and for x86-64-v3 (transforms/native.py)
        assert any(name.startswith(f"ngramflow/transforms/{kernel}.") and name.endswith(".so") for name in names), kernel

    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", target, wheel], check=True,
                   capture_output=True)
    elsewhere = tmp_path / "elsewhere"  # no ngramflow/ here: the one imported is the installed one
    elsewhere.mkdir()
    in_folder_with_tests(elsewhere)
    env = dict(os.environ, PYTHONPATH=str(target))

    def python(*args) -> str:
        ran = subprocess.run([sys.executable, *args], cwd=elsewhere, env=env, capture_output=True, text=True)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout

    found = python("-c", "import importlib.resources, ngramflow, ngramflow.query.api as api; "
                         "print(ngramflow.__file__, api.__file__, "
                         "importlib.resources.files('ngramflow.pipeline.flink.infra'))").split()
    assert all(path.startswith(str(target)) for path in found), found
    command, code = readme_example()
    python("-m", "ngramflow.cli", *command, "--quiet")
    python("-c", code)
