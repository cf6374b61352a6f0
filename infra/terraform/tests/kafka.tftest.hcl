# The queue of corpus files (import --from-kafka): a bootstrap address for the nodes, and one egress rule
# to the brokers' networks on their port; nothing opened inwards, nothing to the internet.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  ngramflow_source = "tests/fixtures/ngramflow-src.tar.gz"
}

run "without_a_queue_no_kafka_rule_and_no_bootstrap" {
  assert {
    condition     = length(aws_vpc_security_group_egress_rule.kafka) == 0
    error_message = "no Kafka rule without kafka_bootstrap"
  }
  assert {
    condition = alltrue([
      for file in yamldecode(base64decode(aws_launch_template.taskmanager.user_data)).write_files :
      !strcontains(file.content, "NGRAMFLOW_KAFKA_BOOTSTRAP") if file.path == "/etc/ngramflow/environment"
    ])
    error_message = "no bootstrap address in the nodes' environment without a queue"
  }
}

run "a_queue_opens_the_brokers_port_to_their_networks_only" {
  variables {
    kafka_bootstrap = "b-1.queue.kafka.us-east-1.amazonaws.com:9094,b-2.queue.kafka.us-east-1.amazonaws.com:9094"
    kafka_cidrs     = ["10.42.64.0/24", "10.42.65.0/24"]
    kafka_port      = 9094
  }

  assert {
    condition = [
      for rule in aws_vpc_security_group_egress_rule.kafka : [rule.cidr_ipv4, rule.from_port, rule.to_port, rule.ip_protocol]
    ] == [["10.42.64.0/24", 9094, 9094, "tcp"], ["10.42.65.0/24", 9094, 9094, "tcp"]]
    error_message = "one egress rule per broker network, on the brokers' port only"
  }
  assert {
    condition = alltrue([
      for rule in aws_vpc_security_group_ingress_rule.cluster :
      !(rule.from_port <= 9094 && 9094 <= rule.to_port)
    ])
    error_message = "the brokers connect nowhere in: no ingress rule on their port"
  }
  assert {
    condition = alltrue([
      for role in ["jobmanager", "taskmanager"] : anytrue([
        for file in yamldecode(base64decode(role == "jobmanager" ? aws_launch_template.jobmanager.user_data : aws_launch_template.taskmanager.user_data)).write_files :
        strcontains(file.content, "NGRAMFLOW_KAFKA_BOOTSTRAP=b-1.queue.kafka.us-east-1.amazonaws.com:9094,b-2.") if file.path == "/etc/ngramflow/environment"
      ])
    ])
    error_message = "every node gets the bootstrap address in its environment"
  }
}

run "the_internet_is_no_broker_network" {
  command = plan
  variables {
    kafka_bootstrap = "kafka.example.com:9092"
    kafka_cidrs     = ["0.0.0.0/0"]
  }
  expect_failures = [var.kafka_cidrs]
}

run "a_bootstrap_address_needs_the_brokers_networks" {
  command = plan
  variables {
    kafka_bootstrap = "kafka.example.com:9092"
  }
  expect_failures = [var.kafka_cidrs]
}

run "a_malformed_bootstrap_address_is_refused" {
  command = plan
  variables {
    kafka_bootstrap = "kafka://kafka.example.com:9092/topic"
    kafka_cidrs     = ["10.42.64.0/24"]
  }
  expect_failures = [var.kafka_bootstrap]
}
