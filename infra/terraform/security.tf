# One security group for every node. Inside it: Flink's fixed ports (local.flink_ports in flink.tf)
# and its REST port. From outside: nothing, except the REST port from operator_cidrs when given.
# Out: the cluster, HTTPS, and, with a queue (kafka_bootstrap), the Kafka brokers' port to kafka_cidrs.
# SSH is never opened (operators use SSM Session Manager). Beam's worker pool listens on every
# interface, but only the TaskManager beside it, over localhost, has any business there: no rule
# names its port.

locals {
  # Port ranges the nodes open to each other, in both directions.
  cluster_ports = {
    flink = {
      from        = min(values(local.flink_ports)...)
      to          = max(values(local.flink_ports)...)
      description = "Flink RPC, blob, data and metrics ports between cluster nodes"
    }
    rest = {
      from        = local.rest_port
      to          = local.rest_port
      description = "Flink REST API from cluster nodes (job submission from the JobManager node)"
    }
  }

  ingress_rules = merge(
    { for key, rule in local.cluster_ports : key => merge(rule, { cidr = null }) },
    {
      for cidr in var.operator_cidrs : "operator-${cidr}" => {
        from        = local.rest_port
        to          = local.rest_port
        cidr        = cidr
        description = "Flink REST API and web UI from an operator network"
      }
    },
  )
}

resource "aws_security_group" "cluster" {
  name        = "${var.name}-cluster"
  description = "ngramflow Flink cluster: Flink ports between nodes, HTTPS out"
  vpc_id      = local.vpc_id
  tags        = merge(var.tags, { Name = "${var.name}-cluster" })
}

resource "aws_vpc_security_group_ingress_rule" "cluster" {
  for_each                     = local.ingress_rules
  security_group_id            = aws_security_group.cluster.id
  description                  = each.value.description
  ip_protocol                  = "tcp"
  from_port                    = each.value.from
  to_port                      = each.value.to
  cidr_ipv4                    = each.value.cidr
  referenced_security_group_id = each.value.cidr == null ? aws_security_group.cluster.id : null
}

resource "aws_vpc_security_group_egress_rule" "within_cluster" {
  for_each                     = local.cluster_ports
  security_group_id            = aws_security_group.cluster.id
  description                  = "Flink ports to other cluster nodes"
  ip_protocol                  = "tcp"
  from_port                    = each.value.from
  to_port                      = each.value.to
  referenced_security_group_id = aws_security_group.cluster.id
}

resource "aws_vpc_security_group_egress_rule" "https" {
  security_group_id = aws_security_group.cluster.id
  description       = "HTTPS: packages, PyPI, Maven Central, the Apache archive, Google's corpus, SSM and S3"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
}

# The queue of corpus files: Kafka clients on the nodes (the import's KafkaIO in the TaskManagers, the
# publisher on the JobManager node) connect out to the brokers; the brokers never connect in.
resource "aws_vpc_security_group_egress_rule" "kafka" {
  for_each          = toset(var.kafka_cidrs)
  security_group_id = aws_security_group.cluster.id
  description       = "Kafka brokers of the corpus queue"
  ip_protocol       = "tcp"
  from_port         = var.kafka_port
  to_port           = var.kafka_port
  cidr_ipv4         = each.value
}
