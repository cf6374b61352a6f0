# --- naming ----------------------------------------------------------------------------------

variable "name" {
  description = "Prefix of every resource name and of the bucket name (S3 adds a unique suffix)."
  type        = string
  default     = "ngramflow"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,22}[a-z0-9]$", var.name))
    error_message = "name: 3-24 characters, lower-case letters, digits and '-', starting with a letter (it prefixes an S3 bucket name)."
  }
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}

# --- network ---------------------------------------------------------------------------------

variable "subnet_id" {
  description = "An existing private subnet for the cluster. It needs outbound HTTPS (NAT) for packages, PyPI, Maven Central, the Apache archive and SSM. null: create a VPC with one private subnet, a NAT gateway and an S3 gateway endpoint."
  type        = string
  default     = null
}

variable "vpc_cidr" {
  description = "CIDR of the VPC created when subnet_id is null; its first /20 is public (NAT), its second private (nodes)."
  type        = string
  default     = "10.42.0.0/16"

  validation {
    condition     = can(cidrsubnet(var.vpc_cidr, 4, 1)) && tonumber(split("/", var.vpc_cidr)[1]) <= 20
    error_message = "vpc_cidr must be an IPv4 CIDR of /20 or larger."
  }
}

variable "availability_zone" {
  description = "Zone of the created subnets (null: the first, alphabetically, that offers both instance types). The whole cluster shares one zone: Flink shuffles between TaskManagers, and cross-zone traffic is billed."
  type        = string
  default     = null
}

locals {
  # An IPv4 CIDR of /16 or narrower: the most any rule of the module opens to a network outside the cluster.
  narrow_ipv4_cidr = "^\\d{1,3}(\\.\\d{1,3}){3}/(1[6-9]|2\\d|3[0-2])$"
}

variable "operator_cidrs" {
  description = "IPv4 ranges (/16 or narrower) allowed to reach the Flink REST API and web UI (port 8081), e.g. an office VPN. Empty: no network access from outside the cluster; use SSM Session Manager and its port forwarding instead. SSH is never opened."
  type        = list(string)
  default     = []

  validation {
    condition = alltrue([
      for cidr in var.operator_cidrs :
      can(regex(local.narrow_ipv4_cidr, cidr)) && can(cidrhost(cidr, 0))
    ])
    error_message = "operator_cidrs: IPv4 CIDRs with a prefix of /16 to /32. Flink's REST API runs submitted code, so it is never opened to the internet (0.0.0.0/0)."
  }
}

# --- Kafka: the queue of corpus files (ngramflow import --from-kafka) ----------------------------

variable "kafka_bootstrap" {
  description = "Bootstrap address (HOST:PORT[,HOST:PORT...]) of the Kafka cluster (Amazon MSK or self-managed) that carries the queue of corpus files; the nodes get it as NGRAMFLOW_KAFKA_BOOTSTRAP, for 'ngramflow corpus download --publish' and 'ngramflow import --from-kafka kafka://$NGRAMFLOW_KAFKA_BOOTSTRAP/TOPIC'. Null: no queue."
  type        = string
  default     = null

  validation {
    condition     = var.kafka_bootstrap == null || can(regex("^[A-Za-z0-9.-]+:\\d{1,5}(,[A-Za-z0-9.-]+:\\d{1,5})*$", var.kafka_bootstrap))
    error_message = "kafka_bootstrap: HOST:PORT, or several separated by commas, as Kafka clients take it."
  }
}

variable "kafka_cidrs" {
  description = "IPv4 ranges (/16 or narrower) of the Kafka brokers' network interfaces (e.g. the MSK cluster's subnets): the nodes' security group may open connections to them on kafka_port, and to nothing else besides the cluster and HTTPS. Required with kafka_bootstrap."
  type        = list(string)
  default     = []

  validation {
    condition = alltrue([
      for cidr in var.kafka_cidrs :
      can(regex(local.narrow_ipv4_cidr, cidr)) && can(cidrhost(cidr, 0))
    ])
    error_message = "kafka_cidrs: IPv4 CIDRs with a prefix of /16 to /32 (the brokers' networks, never the internet)."
  }
  validation {
    condition     = (var.kafka_bootstrap == null) == (length(var.kafka_cidrs) == 0)
    error_message = "kafka_cidrs and kafka_bootstrap go together: the brokers' networks are needed to reach the bootstrap address, and without a bootstrap address no rule is opened."
  }
}

variable "kafka_port" {
  description = "The brokers' port: 9092 plaintext (self-managed), 9094 TLS and 9098 IAM on Amazon MSK."
  type        = number
  default     = 9092

  validation {
    condition     = var.kafka_port >= 1024 && var.kafka_port <= 65535 && floor(var.kafka_port) == var.kafka_port
    error_message = "kafka_port: a port from 1024 to 65535."
  }
}

# --- JobManager ------------------------------------------------------------------------------

variable "jobmanager_instance_type" {
  description = "Instance type of the JobManager node, which also runs the Beam job server and `ngramflow import` for a run."
  type        = string
  default     = "m6i.large"
}

variable "jobmanager_memory_mb" {
  description = "Flink's bound on the JobManager process (jobmanager.memory.process.size), in MiB."
  type        = number
  default     = 2048

  validation {
    condition     = var.jobmanager_memory_mb >= 1024
    error_message = "jobmanager_memory_mb must be at least 1024."
  }
}

variable "jobmanager_volume_gb" {
  description = "Root volume of the JobManager node, in GB: it holds the job server, and corpus files on their way into the bucket (ngramflow corpus download, then aws s3 sync)."
  type        = number
  default     = 200

  validation {
    condition     = var.jobmanager_volume_gb >= 30
    error_message = "jobmanager_volume_gb must be at least 30."
  }
}

# --- TaskManagers ----------------------------------------------------------------------------

variable "taskmanager_count" {
  description = "Number of TaskManager nodes."
  type        = number
  default     = 2

  validation {
    condition     = var.taskmanager_count >= 1 && var.taskmanager_count <= 200 && floor(var.taskmanager_count) == var.taskmanager_count
    error_message = "taskmanager_count must be a whole number from 1 to 200."
  }
}

variable "taskmanager_instance_type" {
  description = "Instance type of the TaskManager nodes. It must have local NVMe instance storage (RocksDB state and Flink's sort spill files live there) and run x86_64, e.g. m6id, r6id, c6id, i4i."
  type        = string
  default     = "m6id.2xlarge"
}

variable "taskmanager_slots" {
  description = "Task slots per TaskManager; each slot gets its own Python SDK worker process (--sdk_worker_parallelism in the submit command)."
  type        = number
  default     = 8

  validation {
    condition     = var.taskmanager_slots >= 1 && floor(var.taskmanager_slots) == var.taskmanager_slots
    error_message = "taskmanager_slots must be a whole number of at least 1."
  }
}

variable "taskmanager_memory_mb" {
  description = "Flink's bound on each TaskManager process (taskmanager.memory.process.size), in MiB. The Python workers live outside it."
  type        = number
  default     = 14336

  validation {
    condition     = var.taskmanager_memory_mb >= 2048
    error_message = "taskmanager_memory_mb must be at least 2048."
  }
}

variable "taskmanager_managed_memory_mb" {
  description = "Managed memory of each TaskManager (taskmanager.memory.managed.size), in MiB: RocksDB's block cache and write buffers, and the sort buffers of batch shuffles."
  type        = number
  default     = 4096

  # Flink 1.19's own split of the process bound, with infra/flink/config.yaml's jvm-overhead.fraction
  # of 0.1: JVM overhead 10% (192 MiB-1 GiB), metaspace 256 MiB, framework heap and off-heap
  # 128 MiB each, network 10% of the rest (no upper bound; its 64 MiB floor never binds above the
  # 2 GiB minimum bound). What remains after
  # managed memory is task heap; below 1 GiB the TaskManager starts but starves Beam's operators.
  # (Checked against Flink 1.19.3's BashJavaUtils, which computes the same task heap.)
  validation {
    condition = var.taskmanager_managed_memory_mb > 0 && (
      (var.taskmanager_memory_mb - min(max(var.taskmanager_memory_mb * 0.1, 192), 1024) - 256) * 0.9
      -256
      -var.taskmanager_managed_memory_mb
    ) >= 1024
    error_message = "taskmanager_managed_memory_mb must be positive and leave at least 1 GiB of task heap inside taskmanager_memory_mb after Flink's JVM overhead, metaspace, framework and network memory."
  }
}

variable "python_worker_memory_mb" {
  description = "Memory set aside on each TaskManager node per Python SDK worker (one per slot), in MiB. Used to check that the TaskManager bound, the workers and 2 GiB for the OS fit the instance type."
  type        = number
  default     = 1536

  validation {
    condition     = var.python_worker_memory_mb >= 512
    error_message = "python_worker_memory_mb must be at least 512."
  }
}

# --- software --------------------------------------------------------------------------------

variable "ngramflow_source" {
  description = "Path of a .tar.gz of the ngramflow source tree (git archive --format=tar.gz HEAD). Every node installs it, so workers run exactly this code and its pinned apache-beam."
  type        = string

  validation {
    condition     = endswith(var.ngramflow_source, ".tar.gz") && fileexists(var.ngramflow_source)
    error_message = "ngramflow_source must name an existing .tar.gz, e.g. one made at the repository root with: git archive --format=tar.gz -o .cache/aws/ngramflow-src.tar.gz HEAD"
  }
}

variable "flink_version" {
  description = "Flink release installed on the nodes. Beam 2.62's runner is built for Flink 1.19, and any 1.19.x accepts its jobs."
  type        = string
  default     = "1.19.3"

  validation {
    condition     = can(regex("^1\\.19\\.\\d+$", var.flink_version))
    error_message = "flink_version must be a 1.19.x release (the Beam runner's Flink line)."
  }
}

variable "flink_mirror" {
  description = "Base URL under which flink-VERSION/flink-VERSION-bin-scala_2.12.tgz and its .sha512 live."
  type        = string
  default     = "https://archive.apache.org/dist/flink"

  validation {
    condition     = startswith(var.flink_mirror, "https://")
    error_message = "flink_mirror must be an https:// URL."
  }
}

# --- bucket ----------------------------------------------------------------------------------

variable "checkpoint_retention_days" {
  description = "Days after which objects under checkpoints/ expire. Keep it longer than the longest checkpointed run: incremental checkpoints keep referring to files written when the run began."
  type        = number
  default     = 7

  validation {
    condition     = var.checkpoint_retention_days >= 1
    error_message = "checkpoint_retention_days must be at least 1."
  }
}

variable "noncurrent_version_retention_days" {
  description = "Days a replaced or deleted object version is kept (versioning keeps them, and Beam deletes many temporary files)."
  type        = number
  default     = 7

  validation {
    condition     = var.noncurrent_version_retention_days >= 1
    error_message = "noncurrent_version_retention_days must be at least 1."
  }
}

variable "force_destroy_bucket" {
  description = "Let `terraform destroy` delete the bucket with everything in it (corpus copy, outputs, checkpoints). false: destroy stops at a bucket that holds objects."
  type        = bool
  default     = false
}
