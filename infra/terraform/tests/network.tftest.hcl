# Where the nodes live: a created private subnet behind NAT, or the caller's subnet.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  ngramflow_source = "tests/fixtures/ngramflow-src.tar.gz"
}

run "a_minimal_private_network_is_created_by_default" {
  assert {
    condition     = length(aws_vpc.this) == 1 && length(aws_nat_gateway.this) == 1
    error_message = "without subnet_id, a VPC with a NAT gateway is created"
  }
  assert {
    condition = alltrue([
      for node in concat([aws_network_interface.jobmanager.subnet_id], aws_instance.taskmanager[*].subnet_id) :
      node == aws_subnet.private[0].id
    ])
    error_message = "every node is in the private subnet"
  }
  assert {
    condition     = aws_subnet.private[0].map_public_ip_on_launch == false && aws_subnet.private[0].availability_zone == "eu-west-1a"
    error_message = "the private subnet gives no public addresses and sits in the first zone offering both instance types"
  }
  assert {
    condition     = aws_vpc_endpoint.s3[0].vpc_endpoint_type == "Gateway" && aws_vpc_endpoint.s3[0].route_table_ids == toset([aws_route_table.private[0].id])
    error_message = "S3 traffic from the private subnet goes through the gateway endpoint"
  }
  assert {
    condition     = length(aws_default_security_group.this[0].ingress) == 0 && length(aws_default_security_group.this[0].egress) == 0
    error_message = "the VPC's default security group allows nothing"
  }
}

run "an_existing_subnet_is_used_as_given" {
  variables {
    subnet_id = "subnet-0existing0000000"
  }

  assert {
    condition     = length(aws_vpc.this) == 0 && length(aws_nat_gateway.this) == 0 && length(aws_subnet.private) == 0
    error_message = "with subnet_id, no network is created"
  }
  assert {
    condition     = aws_network_interface.jobmanager.subnet_id == "subnet-0existing0000000" && alltrue([for node in aws_instance.taskmanager : node.subnet_id == "subnet-0existing0000000"])
    error_message = "the nodes go into the given subnet"
  }
  assert {
    condition     = aws_security_group.cluster.vpc_id == "vpc-0existing0000000"
    error_message = "the security group belongs to the given subnet's VPC"
  }
}

run "a_zone_without_the_instance_types_is_refused" {
  command = plan
  variables {
    availability_zone = "eu-west-1z"
  }
  expect_failures = [aws_launch_template.taskmanager]
}

run "a_region_without_a_zone_for_both_types_is_refused" {
  command = plan
  override_data {
    target = data.aws_ec2_instance_type_offerings.node["taskmanager"]
    values = { locations = [] }
  }
  expect_failures = [aws_launch_template.taskmanager]
}

run "a_given_subnet_must_be_in_a_zone_with_the_instance_types" {
  command = plan
  variables {
    subnet_id = "subnet-0existing0000000"
  }
  override_data {
    target = data.aws_subnet.given[0]
    values = { vpc_id = "vpc-0existing0000000", availability_zone = "eu-west-1z" }
  }
  expect_failures = [aws_launch_template.taskmanager]
}
