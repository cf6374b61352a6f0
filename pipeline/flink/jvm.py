"""Starting the JVMs of Flink runs: the java binary, flags and process hygiene."""

import json
import os
import signal
import socket
import subprocess
import time

import yaml

from ngramflow.pipeline.flink.provision import INFRA, jdk_tool
from ngramflow.errors import RunFailed


def java() -> str:
    return jdk_tool("java")


def java17_flags() -> list[str]:
    """The --add-opens flags, kept in one place: env.java.opts.all of infra/flink/config.yaml."""
    with open(os.path.join(INFRA, "config.yaml")) as fh:
        return yaml.safe_load(fh)["env.java.opts.all"].split()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log_tail(path: str, lines: int = 20) -> str:
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:]).rstrip()
    except OSError:
        return "(no log)"


def start(command: list[str], log_path: str, tied: bool = False) -> subprocess.Popen:
    """A JVM in its own session (so a Ctrl-C of the CLI reaches it only through us), output to log_path.

    ``tied``: its standard input is a pipe from this process, which the JVM's main reads to its end and
    then exits (infra/*/...java): when this process dies, even by SIGKILL, the kernel closes the pipe and
    the JVM does not outlive it. Keep the returned Popen for as long as the JVM should run.
    """
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.PIPE if tied else subprocess.DEVNULL, start_new_session=True)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie of ours has exited already
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for_port(port: int, pid: int, log_path: str, what: str, timeout: float = 90) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not alive(pid):
            raise RunFailed(f"{what} exited while starting; its log {log_path} ends:\n{log_tail(log_path)}")
        with socket.socket() as sock:
            sock.settimeout(0.5)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RunFailed(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s; see {log_path}")


#: What a JVM's log says when a port it was given was taken (Flink's REST endpoint words it its own way).
_PORT_TAKEN = ("BindException", "Address already in use", "Could not start rest endpoint on any port")


def start_on_free_ports(ports: int, launch, log_path: str, what: str, timeout: float = 90, attempts: int = 3):
    """``launch(ports)`` -> a started JVM given PORTS free ports of 127.0.0.1, once it listens on the first; the
    JVM and its ports.

    A port is free when chosen here, and another process may take it before the JVM binds it (CI met this:
    a JobManager's REST port): the JVM then exits saying so, and is started again on new ports, ATTEMPTS
    times in all. Any other failure is raised at once.
    """
    for attempt in range(1, attempts + 1):
        logged = os.path.getsize(log_path) if os.path.exists(log_path) else 0
        chosen = [free_port() for _ in range(ports)]
        process = launch(chosen)
        try:
            wait_for_port(chosen[0], process.pid, log_path, what, timeout)
            return process, chosen
        except RunFailed:
            if attempt == attempts or alive(process.pid) or not _says(log_path, logged, _PORT_TAKEN):
                raise
            _reap(process.pid)


def _says(path: str, offset: int, phrases) -> bool:
    """Whether the log at PATH, from byte OFFSET on, holds any of PHRASES."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            text = fh.read().decode(errors="replace")
    except OSError:
        return False
    return any(phrase in text for phrase in phrases)


def stop(pid: int, grace: float = 10) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds; reaps the process if it is our child."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + grace
    while time.time() < deadline and alive(pid):
        _reap(pid)
        time.sleep(0.1)
    if alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _reap(pid, block=True)


def _reap(pid: int, block: bool = False) -> None:
    try:
        os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        pass


def peak_rss_bytes(pid: int) -> int | None:
    """The process's peak resident set size so far (VmHWM), while it runs."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def load_state(path: str) -> dict | None:
    """The JSON record of the processes a folder's servers run (pids, ports), or None."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None


def save_state(path: str, state: dict) -> None:
    """Write that record atomically: a reader sees the old one or the new one."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(state, fh, indent=2)
    os.replace(tmp, path)
