# Every order (1-5) of an English export in one run: 128 Python workers on eight memory-heavy
# TaskManagers. The arithmetic behind each number is in README.md.

provider "aws" {
  region = var.region
  default_tags {
    tags = { Project = "ngramflow", Example = "full-english" }
  }
}

module "cluster" {
  source = "../.."

  name             = "ngramflow-eng"
  ngramflow_source = var.ngramflow_source
  operator_cidrs   = var.operator_cidrs

  # The job server and the submitting import share the node with a 4 GiB JobManager; the
  # volume holds one order's corpus files at a time on their way into the bucket.
  jobmanager_instance_type = "m6i.xlarge"
  jobmanager_memory_mb     = 4096
  jobmanager_volume_gb     = 500

  # r6id.4xlarge: 16 vCPU, 128 GiB, 1 x 950 GB NVMe. 40 GiB TaskManager (16 GiB managed for
  # sort buffers) + 16 x 5 GiB Python workers (each merges whole aggregation shards) + 2 GiB OS
  # = 122 GiB of 128.
  taskmanager_count             = var.taskmanager_count
  taskmanager_instance_type     = "r6id.4xlarge"
  taskmanager_slots             = 16
  taskmanager_memory_mb         = 40960
  taskmanager_managed_memory_mb = 16384
  python_worker_memory_mb       = 5120

  force_destroy_bucket = var.force_destroy_bucket
}
