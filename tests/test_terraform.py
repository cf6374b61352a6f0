"""The AWS deployment (infra/terraform): formatting, validation, mocked `terraform test`, checkov.

All offline: infra/terraform/test.sh takes the AWS provider from a local filesystem mirror. It runs from the
session's start, beside the other tests (conftest.py: pytest_collection_finish); this test checks its result.
"""

import shutil

import pytest

from conftest import TERRAFORM_CHECKS


@pytest.mark.skipif(shutil.which("terraform") is None,
                    reason="the terraform binary is not installed; infra/terraform/test.sh needs Terraform >= 1.9")
def test_terraform_module_examples_and_checkov_pass(terraform_checks):
    code, output = terraform_checks
    assert code == 0, f"{TERRAFORM_CHECKS} exited {code}:\n{output[-9000:]}"
    assert "Failed checks: 0" in output
