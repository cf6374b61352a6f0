variable "region" {
  description = "AWS region of the cluster and its bucket (the README's prices are for us-east-1)."
  type        = string
  default     = "us-east-1"
}

variable "taskmanager_count" {
  description = "TaskManagers: 8 for the run; 1 while the corpus is staged into the bucket (the sizing in README.md assumes 8)."
  type        = number
  default     = 8
}

variable "ngramflow_source" {
  description = "The ngramflow source archive the nodes install; make it at the repository root with: git archive --format=tar.gz -o .cache/aws/ngramflow-src.tar.gz HEAD"
  type        = string
  default     = "../../../../.cache/aws/ngramflow-src.tar.gz"
}

variable "operator_cidrs" {
  description = "Optional IPv4 ranges (/16 or narrower) allowed to open the Flink web UI directly; otherwise use the SSM tunnel."
  type        = list(string)
  default     = []
}

variable "force_destroy_bucket" {
  description = "Set to true (and apply) before `terraform destroy` to delete the bucket with the corpus copy and the outputs."
  type        = bool
  default     = false
}
