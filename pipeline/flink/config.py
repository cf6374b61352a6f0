"""Flink configuration folders: infra/flink's policy plus what one run or cluster needs."""

import os
import shutil

import yaml

from ngramflow.pipeline.flink.provision import INFRA


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
