#!/usr/bin/env bash
# Offline checks of infra/terraform: formatting, init + validate of the module and both
# examples, `terraform test` (mocked AWS provider), and checkov.
#
# The hashicorp/aws provider comes from a filesystem mirror, never from the registry:
# TF_PLUGIN_MIRROR names its root (the folder holding registry.terraform.io/); without it the
# script looks for one on this machine. checkov comes from PyPI into .cache/checkov-venv once.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
checkov_version=3.3.30
checkov_venv=$repo/.cache/checkov-venv

step() { printf '\n== %s\n' "$*"; }

find_mirror() {
  if [[ -n ${TF_PLUGIN_MIRROR:-} ]]; then
    echo "$TF_PLUGIN_MIRROR"
    return
  fi
  local dir
  while read -r dir; do
    if [[ -d $dir/hashicorp/aws ]]; then
      dirname "$dir"
      return
    fi
  done < <(find / -maxdepth 5 -path /proc -prune -o -type d -name registry.terraform.io \
    -not -path '*/.terraform/*' -print 2>/dev/null)
  echo "no filesystem mirror holding hashicorp/aws found; set TF_PLUGIN_MIRROR to its root" >&2
  return 1
}

work=$(mktemp -d)
checkov_pid=
finish() {
  if [[ -n $checkov_pid ]]; then  # the script failed before checkov ended: it and its pip or checkov go too
    pkill -P "$checkov_pid" 2>/dev/null || true
    kill "$checkov_pid" 2>/dev/null || true
    wait "$checkov_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap finish EXIT

# checkov (its first install takes a minute) runs beside the terraform steps, which use the other core;
# its report is printed after them.
run_checkov() {
  if [[ ! -x $checkov_venv/bin/checkov ]] || ! "$checkov_venv/bin/checkov" --version | grep -qx "$checkov_version"; then
    python3 -m venv "$checkov_venv"
    "$checkov_venv/bin/pip" install --quiet --disable-pip-version-check "checkov==$checkov_version"
  fi
  # tests/ holds terraform test files, not infrastructure.
  "$checkov_venv/bin/checkov" -d "$here" --framework terraform --skip-path "$here/tests" --quiet --compact --skip-download
}
run_checkov >"$work/checkov.log" 2>&1 &
checkov_pid=$!

mirror=$(find_mirror)
cat >"$work/terraformrc" <<EOF
provider_installation {
  filesystem_mirror {
    path = "$mirror"
  }
}
EOF
export TF_CLI_CONFIG_FILE=$work/terraformrc TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1
echo "provider mirror: $mirror"

step "terraform fmt -check -recursive"
terraform -chdir="$here" fmt -check -recursive -diff

# Terraform writes .terraform/ and lock files next to a configuration, so it works on a copy
# (the module reads ../flink/, so that comes along).
tree=$work/tree
mkdir -p "$tree"
tar -C "$repo" --exclude=.terraform --exclude=.terraform.lock.hcl --exclude='*.tfstate*' \
  -cf - infra/terraform infra/flink | tar -C "$tree" -xf -

for config in . examples/small examples/full-english; do
  step "terraform init + validate: $config"
  terraform -chdir="$tree/infra/terraform/$config" init -backend=false -no-color >/dev/null
  terraform -chdir="$tree/infra/terraform/$config" validate -no-color
done

step "terraform test"
terraform -chdir="$tree/infra/terraform" test -no-color

step "checkov $checkov_version"
status=0
wait "$checkov_pid" || status=$?
checkov_pid=
cat "$work/checkov.log"
exit "$status"
