# Values the mocked AWS provider returns, shared by every test file. Anything not listed gets
# a generated value; these are the ones assertions and preconditions read.

mock_data "aws_region" {
  defaults = { name = "eu-west-1" }
}

mock_data "aws_partition" {
  defaults = { partition = "aws" }
}

# Zones offering the instance types; the created subnet takes the first.
mock_data "aws_ec2_instance_type_offerings" {
  defaults = { locations = ["eu-west-1c", "eu-west-1a", "eu-west-1b"] }
}

mock_data "aws_ssm_parameter" {
  defaults = { insecure_value = "ami-0123456789abcdef0" }
}

# Room for the default sizes (m6id.2xlarge: 32 GiB, instance storage); tests that need other
# shapes override the data source per run.
mock_data "aws_ec2_instance_type" {
  defaults = {
    memory_size                = 32768
    instance_storage_supported = true
    supported_architectures    = ["x86_64"]
  }
}

mock_data "aws_subnet" {
  defaults = { vpc_id = "vpc-0existing0000000", availability_zone = "eu-west-1b" }
}

mock_resource "aws_s3_bucket" {
  defaults = {
    id     = "ngramflow-20261122-test"
    bucket = "ngramflow-20261122-test"
    arn    = "arn:aws:s3:::ngramflow-20261122-test"
  }
}

mock_resource "aws_network_interface" {
  defaults = { private_ip = "10.42.16.10" }
}

mock_resource "aws_iam_instance_profile" {
  defaults = { arn = "arn:aws:iam::123456789012:instance-profile/ngramflow-node-test" }
}

mock_resource "aws_launch_template" {
  defaults = { id = "lt-0123456789abcdef0", latest_version = 1 }
}
