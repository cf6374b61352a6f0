"""Servers started on ports chosen free: a port taken between its choice and the server's bind (pipeline/flink/jvm.py)."""

import socket
import sys

import pytest

from ngramflow.errors import RunFailed
from ngramflow.pipeline.flink import jvm

# A server that binds 127.0.0.1:PORT and listens until stopped, or says why it could not (as a JVM logs a
# java.net.BindException).
SERVER = ("import socket, sys, time\n"
          "s = socket.socket()\n"
          "try:\n"
          "    s.bind(('127.0.0.1', int(sys.argv[1])))\n"
          "except OSError as err:\n"
          "    print('java.net.BindException:', err, flush=True); sys.exit(1)\n"
          "s.listen(); time.sleep(60)\n")


def test_a_server_whose_port_was_taken_is_started_again_on_new_ports(tmp_path):
    log, taken, launched = str(tmp_path / "server.log"), [], []

    def launch(ports):
        if not taken:  # another process takes the first port chosen before the server binds it
            holder = socket.socket()
            holder.bind(("127.0.0.1", ports[0]))
            taken.append(holder)
        launched.append(ports)
        return jvm.start([sys.executable, "-c", SERVER, str(ports[0])], log)

    process, ports = jvm.start_on_free_ports(2, launch, log, "the test server", timeout=30)
    try:
        assert len(launched) == 2 and ports == launched[1] and ports[0] != launched[0][0]
        with socket.create_connection(("127.0.0.1", ports[0]), timeout=5):
            pass
        assert "BindException" in open(log).read()
    finally:
        jvm.stop(process.pid)
        taken[0].close()
    assert not jvm.alive(process.pid)


def test_a_server_that_fails_for_another_reason_is_not_started_again(tmp_path):
    log, launched = str(tmp_path / "server.log"), []

    def launch(ports):
        launched.append(ports)
        return jvm.start([sys.executable, "-c", "print('no configuration'); raise SystemExit(3)"], log)

    with pytest.raises(RunFailed, match="the test server exited while starting"):
        jvm.start_on_free_ports(1, launch, log, "the test server", timeout=30)
    assert len(launched) == 1
