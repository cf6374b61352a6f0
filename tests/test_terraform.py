"""The AWS deployment (infra/terraform): formatting, validation, mocked `terraform test`, checkov.

All offline: infra/terraform/test.sh takes the AWS provider from a local filesystem mirror.
"""

import os
import shutil
import subprocess

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "infra", "terraform", "test.sh")


@pytest.mark.skipif(shutil.which("terraform") is None,
                    reason="the terraform binary is not installed; infra/terraform/test.sh needs Terraform >= 1.9")
def test_terraform_module_examples_and_checkov_pass():
    done = subprocess.run([SCRIPT], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{SCRIPT} exited {done.returncode}:\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    assert "Failed checks: 0" in done.stdout
