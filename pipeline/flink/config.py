"""Flink configuration folders: infra/flink's policy plus what one run or cluster needs."""

import os
import re
import shutil

import yaml

from pipeline.flink.provision import INFRA
from pipeline.errors import UserError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
#: A TaskManager below this cannot hold Flink's fixed overheads plus RocksDB.
MIN_TASKMANAGER_MEMORY = 1 << 30


def memory_bytes(text: str, what: str = "--taskmanager-memory") -> int:
    """'2g', '1536m', '2GiB' -> bytes."""
    found = _SIZE.match(str(text))
    if not found:
        raise UserError(f"{what} takes a size such as 2g or 1536m, got {text!r}")
    size = int(float(found.group(1)) * _UNITS[found.group(2).lower()])
    if size < MIN_TASKMANAGER_MEMORY:
        raise UserError(f"{what} must be at least 1g, got {text}")
    return size


def write_conf_dir(conf_dir: str, settings: dict) -> str:
    """CONF_DIR/config.yaml (infra/flink/config.yaml updated with ``settings``) and log4j.properties."""
    with open(os.path.join(INFRA, "config.yaml")) as fh:
        config = yaml.safe_load(fh)
    config.update(settings)
    os.makedirs(conf_dir, exist_ok=True)
    with open(os.path.join(conf_dir, "config.yaml"), "w") as fh:
        yaml.safe_dump(config, fh, sort_keys=True)
    shutil.copy(os.path.join(INFRA, "log4j.properties"), conf_dir)
    return conf_dir


def embedded_memory(bound: int) -> dict:
    """Memory settings of the job server's embedded cluster, which lives inside the job server JVM.

    There is no separate TaskManager process to bound, so the bound is split by
    hand: managed memory (RocksDB, batch sorting) gets the same fraction as in a
    TaskManager, and embedded_heap_flags() caps the heap at the rest.
    """
    return {"taskmanager.memory.managed.size": f"{int(bound * 0.35)}b",
            "taskmanager.memory.process.size": f"{bound}b"}


def embedded_heap_flags(bound: int) -> list[str]:
    # gRPC moves each shuffled Arrow table (tens of MB) through direct buffers:
    # 10 % of a 2 GiB bound ran out ("Direct buffer memory") on a 20M-row import.
    return [f"-Xmx{int(bound * 0.35)}", f"-XX:MaxDirectMemorySize={int(bound * 0.2)}"]
