# One language and order (e.g. the English 1-grams, or a slice of the 2-grams) on two
# TaskManagers; sizing and cost per hour in README.md.

provider "aws" {
  region = var.region
  default_tags {
    tags = { Project = "ngramflow", Example = "small" }
  }
}

module "cluster" {
  source = "../.."

  name             = "ngramflow-small"
  ngramflow_source = var.ngramflow_source
  operator_cidrs   = var.operator_cidrs

  jobmanager_instance_type = "m6i.large"
  jobmanager_volume_gb     = 200

  # m6id.2xlarge: 8 vCPU, 32 GiB, 1 x 474 GB NVMe. Eight slots, one Python worker each:
  # 14 GiB TaskManager + 8 x 1.5 GiB workers + 2 GiB OS = 28 GiB of 32.
  taskmanager_count             = 2
  taskmanager_instance_type     = "m6id.2xlarge"
  taskmanager_slots             = 8
  taskmanager_memory_mb         = 14336
  taskmanager_managed_memory_mb = 4096
  python_worker_memory_mb       = 1536

  force_destroy_bucket = var.force_destroy_bucket
}
