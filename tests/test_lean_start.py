"""What the console command keeps out of its process and loads late (ngramflow/lean_start.py), in a process of
its own as the command's is: Beam and the import's code load without the UNUSED modules, a LAZY one loads at
its first use and works, and the Python API's process (no keep_unused_out) is left as it is."""

import json
import subprocess
import sys

_PROBE = """
import importlib.util, json, sys
from ngramflow import lean_start
if sys.argv[1] == "command":
    lean_start.keep_unused_out()
with lean_start.loading_for_good():
    import ngramflow.pipeline.run
import apache_beam.io
lazy = type(sys.modules.get("yaml")) is importlib.util._LazyModule
found = {name: name in sys.modules for name in ("pandas", "apache_beam.io.gcp.bigquery")}
import yaml
try:
    import pandas
    pandas_imports = True
except ModuleNotFoundError:
    pandas_imports = False
ours = [type(f).__name__ for f in sys.meta_path if isinstance(f, (lean_start._Absent, lean_start._Lazy))]
print(json.dumps({"loaded": found, "yaml_lazy": lazy, "finders": ours, "yaml_works": yaml.safe_load(yaml.safe_dump({"a": 1})) == {"a": 1},
                  "pandas_imports": pandas_imports, "beam_text_io": hasattr(apache_beam.io, "ReadFromText")}))
"""


def _probe(kind: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _PROBE, kind], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_the_command_loads_beam_without_the_unused_modules_and_yaml_at_its_first_use():
    seen = _probe("command")
    assert seen["loaded"] == {"pandas": False, "apache_beam.io.gcp.bigquery": False}
    assert not seen["pandas_imports"]
    assert seen["yaml_lazy"] and seen["yaml_works"]
    assert sorted(seen["finders"]) == ["_Absent", "_Lazy"]
    assert seen["beam_text_io"]  # Beam's io package as the command uses it


def test_the_python_apis_process_is_left_as_it_is():
    seen = _probe("api")
    assert seen["finders"] == []
    assert not seen["yaml_lazy"] and seen["yaml_works"]
