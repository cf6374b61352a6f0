# Network exposure and permissions: nothing reachable from the internet, and a node role that
# can touch the run's bucket and nothing else.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  ngramflow_source = "tests/fixtures/ngramflow-src.tar.gz"
}

run "no_rule_opens_rest_worker_pool_or_ssh_to_the_internet" {
  # An operator range as well, so that the rules built from it are checked too.
  variables {
    operator_cidrs = ["203.0.113.0/24"]
  }

  assert {
    condition = alltrue([
      for rule in aws_vpc_security_group_ingress_rule.cluster :
      !(contains(["0.0.0.0/0", "::/0"], coalesce(rule.cidr_ipv4, rule.cidr_ipv6, "none")) && anytrue([
        for port in [22, 8081, 50000] : rule.from_port <= port && port <= rule.to_port
      ]))
    ])
    error_message = "no ingress rule may open 22, 8081 or 50000 to 0.0.0.0/0 or ::/0"
  }
  assert {
    condition = alltrue([
      for rule in aws_vpc_security_group_ingress_rule.cluster :
      rule.cidr_ipv4 == null ? rule.referenced_security_group_id == aws_security_group.cluster.id : rule.cidr_ipv4 == "203.0.113.0/24"
    ])
    error_message = "ingress comes from the cluster itself or from operator_cidrs, nowhere else"
  }
  assert {
    condition = alltrue([
      for rule in aws_vpc_security_group_ingress_rule.cluster :
      !(rule.from_port <= 22 && 22 <= rule.to_port) && !(rule.from_port <= 50000 && 50000 <= rule.to_port)
    ])
    error_message = "SSH and the worker pool port are not opened to anyone"
  }
  assert {
    condition = [
      for rule in aws_vpc_security_group_ingress_rule.cluster : [rule.from_port, rule.to_port] if rule.cidr_ipv4 != null
    ] == [[8081, 8081]]
    error_message = "an operator range reaches the REST port and nothing else"
  }
  assert {
    condition     = length(aws_security_group.cluster.ingress) == 0
    error_message = "the security group has no inline ingress besides the rule resources"
  }
  assert {
    condition     = aws_vpc_security_group_egress_rule.https.from_port == 443 && aws_vpc_security_group_egress_rule.https.to_port == 443
    error_message = "the only egress to the internet is HTTPS"
  }
}

run "an_internet_wide_operator_range_is_refused" {
  command = plan
  variables {
    operator_cidrs = ["0.0.0.0/0"]
  }
  expect_failures = [var.operator_cidrs]
}

run "a_wide_operator_range_is_refused" {
  command = plan
  variables {
    operator_cidrs = ["10.0.0.0/8"]
  }
  expect_failures = [var.operator_cidrs]
}

# checkov reads none of this from the launch templates (see the skips on aws_instance), so the
# templates' hardening is asserted here.
run "nodes_are_hardened_by_their_launch_templates_and_reached_through_ssm" {
  assert {
    condition     = aws_iam_role_policy_attachment.ssm.policy_arn == "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
    error_message = "the node role must carry the SSM managed policy"
  }
  assert {
    condition = alltrue([
      for template in [aws_launch_template.jobmanager, aws_launch_template.taskmanager] :
      template.key_name == null
      && template.iam_instance_profile[0].arn == aws_iam_instance_profile.node.arn
      && template.metadata_options[0].http_tokens == "required"
      && template.monitoring[0].enabled
      && template.ebs_optimized == "true"
      && alltrue([for disk in template.block_device_mappings : disk.ebs[0].encrypted == "true"])
    ])
    error_message = "both templates: no SSH key, the node profile, IMDSv2 only, detailed monitoring, EBS-optimized, encrypted volumes"
  }
}

run "the_bucket_policy_of_the_nodes_names_only_the_run_bucket" {
  assert {
    condition = toset(flatten([
      for statement in jsondecode(aws_iam_role_policy.bucket.policy).Statement : statement.Resource
    ])) == toset(["arn:aws:s3:::ngramflow-20261122-test", "arn:aws:s3:::ngramflow-20261122-test/*"])
    error_message = "the node policy's resources must be the run's bucket and its objects, nothing else"
  }
  assert {
    condition = alltrue([
      for statement in jsondecode(aws_iam_role_policy.bucket.policy).Statement :
      statement.Effect == "Allow" && alltrue([for action in statement.Action : startswith(action, "s3:") && !strcontains(action, "*")])
    ])
    error_message = "the node policy grants named S3 actions only"
  }
  assert {
    condition     = aws_iam_instance_profile.node.role == aws_iam_role.node.name
    error_message = "the instance profile carries the node role"
  }
}
