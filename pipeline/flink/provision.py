"""The Java side of Flink runs, built once and cached.

Two things come from package registries (see ../shared/PLATFORM.md for why
these and no others):

- the Beam Flink job server's classpath, assembled by Maven from
  infra/flink/pom.xml (the shaded job-server jar is not downloadable here),
  and our entry point to it (infra/flink/java/, compiled with the JDK's javac);
- Flink's own distribution for `ngramflow flink up`: flink-dist and its
  logging jars, taken from PyPI's apache-flink-libraries sdist without
  installing it (its dependencies pin an older apache-beam).

Both land under FLINK_HOME (default: ~/.cache/ngramflow/flink, environment
NGRAMFLOW_FLINK_HOME), each with a stamp file written last, so an interrupted
build is redone and a finished one is never repeated.
"""

import hashlib
import importlib.resources
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

from ngramflow.errors import RunFailed, UserError

#: The Maven pom and Flink configuration, installed with the package (infra/flink/ in the repository).
INFRA = str(importlib.resources.files("ngramflow.pipeline.flink.infra"))
FLINK_HOME = os.environ.get("NGRAMFLOW_FLINK_HOME",
                            os.path.join(os.path.expanduser("~"), ".cache", "ngramflow", "flink"))
#: The session cluster's Flink; any 1.19.x runs jobs of the runner's 1.19.0 client.
FLINK_DIST_VERSION = "1.19.3"
_STAMP = ".complete"


def job_server_lib() -> str:
    return os.path.join(FLINK_HOME, "job-server", "lib")


def dist_dir() -> str:
    return os.path.join(FLINK_HOME, f"flink-{FLINK_DIST_VERSION}")


def _digest(*paths: str) -> str:
    sha = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as fh:
            sha.update(fh.read())
    return sha.hexdigest()


def is_built(folder: str, token: str) -> bool:
    try:
        with open(os.path.join(folder, _STAMP)) as fh:
            return fh.read() == token
    except OSError:
        return False


def publish_build(staging: str, folder: str, token: str) -> None:
    with open(os.path.join(staging, _STAMP), "w") as fh:
        fh.write(token)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    os.replace(staging, folder)


def run_tool(command: list[str], what: str, log) -> None:
    log(f"{what} ...")
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except FileNotFoundError:
        raise UserError(f"{command[0]} is not installed; it is needed to {what}") from None
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise RunFailed(f"could not {what} ({' '.join(command[:3])} ... exited {done.returncode}):\n{tail}")


def maven_classpath(pom: str, folder: str, what: str, log=None) -> str:
    """FOLDER/lib: the runtime dependencies of the Maven ``pom``, copied there once (again when the pom
    changes); ``what`` says what they are for, in messages."""
    if is_built(folder, _digest(pom)):
        return os.path.join(folder, "lib")
    parent = os.path.dirname(folder)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=os.path.basename(folder) + "-", dir=parent)
    try:
        run_tool(["mvn", "-B", "-q", "-f", pom, "dependency:copy-dependencies",
              f"-DoutputDirectory={os.path.join(staging, 'lib')}"],
             f"assemble {what} with Maven", log or _quiet)
        publish_build(staging, folder, _digest(pom))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return os.path.join(folder, "lib")


def _wanted(member: str) -> str | None:
    """Where a member of the apache-flink-libraries sdist goes in the distribution, if we keep it."""
    parts = member.split("/")
    if len(parts) == 4 and parts[1] == "deps" and parts[2] in ("lib", "bin") and parts[3].endswith(".jar"):
        name = parts[3]
        if name.startswith(("flink-dist-", "log4j-", "bash-java-utils")):
            return os.path.join(parts[2], name)
    return None


def _build_dist(log) -> None:
    os.makedirs(FLINK_HOME, exist_ok=True)
    staging = tempfile.mkdtemp(prefix="flink-dist-", dir=FLINK_HOME)
    try:
        download = os.path.join(staging, "download")
        run_tool([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
              f"apache-flink-libraries=={FLINK_DIST_VERSION}", "-d", download],
             f"download Flink {FLINK_DIST_VERSION} (apache-flink-libraries from PyPI)", log)
        (sdist,) = os.listdir(download)
        with tarfile.open(os.path.join(download, sdist)) as tar:
            for member in tar.getmembers():
                target = _wanted(member.name)
                if target:
                    os.makedirs(os.path.join(staging, os.path.dirname(target)), exist_ok=True)
                    with tar.extractfile(member) as src, open(os.path.join(staging, target), "wb") as dst:
                        shutil.copyfileobj(src, dst)
        shutil.rmtree(download)
        if not os.path.exists(os.path.join(staging, "lib", f"flink-dist-{FLINK_DIST_VERSION}.jar")):
            raise RunFailed(f"{sdist} holds no deps/lib/flink-dist-{FLINK_DIST_VERSION}.jar")
        publish_build(staging, dist_dir(), FLINK_DIST_VERSION)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _quiet(_message: str) -> None:
    pass


def ensure_job_server(log=_quiet) -> str:
    """The job server's lib folder, built first if needed."""
    return maven_classpath(os.path.join(INFRA, "pom.xml"), os.path.dirname(job_server_lib()),
                           "the Beam Flink job server classpath", log)


#: The job server's entry point (see its header): Beam's driver, with uids for every operator of a
#: streaming job. Source under infra/flink/java/, compiled against the job server's classpath.
LAUNCHER_CLASS = "org.ngramflow.flink.StableUidJobServer"
LAUNCHER_SOURCE = os.path.join("java", *LAUNCHER_CLASS.split(".")) + ".java"


def ensure_launcher(log=_quiet) -> str:
    """The jar of LAUNCHER_CLASS, compiled first if needed."""
    return compiled_java(os.path.join(INFRA, LAUNCHER_SOURCE), [ensure_job_server(log)],
                         os.path.join(FLINK_HOME, "launcher"), "the job server's entry point", log)


def compiled_java(source: str, libs: list[str], folder: str, what: str, log=_quiet) -> str:
    """FOLDER/classes.jar: the Java ``source`` compiled against ``libs`` (folders of jars assembled by
    maven_classpath, or jars built here) once, and again when the source or a lib changes."""
    jar = os.path.join(folder, "classes.jar")
    token = _digest(source, *(os.path.join(os.path.dirname(lib), _STAMP) for lib in libs))
    if is_built(folder, token):
        return jar
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=os.path.basename(folder) + "-", dir=os.path.dirname(folder))
    try:
        classes = os.path.join(staging, "classes")
        classpath = os.pathsep.join(java_classpath(libs))
        run_tool([jdk_tool("javac"), "--release", "11", "-nowarn", "-cp", classpath, "-d", classes, source],
                 f"compile {what}", log)
        run_tool([jdk_tool("jar"), "--create", "--file", os.path.join(staging, os.path.basename(jar)),
                  "-C", classes, "."], f"package {what}", log)
        shutil.rmtree(classes)
        publish_build(staging, folder, token)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return jar


def java_classpath(entries: list[str]) -> list[str]:
    """-cp entries for jars and for folders of jars."""
    return [entry if entry.endswith(".jar") else os.path.join(entry, "*") for entry in entries]


def jdk_tool(name: str) -> str:
    """A tool of the JDK (java, javac, jar): JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", name) if home else shutil.which(name)
    if not found or not os.access(found, os.X_OK):
        raise UserError(f"{name} is not installed (Flink runs need a JDK 11 or 17); install one or set JAVA_HOME")
    return found


def ensure_dist(log=_quiet) -> str:
    """The session cluster's Flink folder (lib/, bin/), fetched first if needed."""
    if not is_built(dist_dir(), FLINK_DIST_VERSION):
        _build_dist(log)
    return dist_dir()
