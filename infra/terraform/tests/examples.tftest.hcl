# The examples plan against the published shapes of their instance types (memory in MiB,
# instance storage), so their sizing arithmetic passes the module's own checks.

mock_provider "aws" {
  source = "./tests/mocks"
}

run "small_fits_m6id_2xlarge_and_m6i_large" {
  command = plan
  module {
    source = "./examples/small"
  }
  variables {
    ngramflow_source = "tests/fixtures/ngramflow-src.tar.gz"
  }
  override_data {
    target = module.cluster.data.aws_ec2_instance_type.node["taskmanager"]
    values = { memory_size = 32768, instance_storage_supported = true, supported_architectures = ["x86_64", "i386"] }
  }
  override_data {
    target = module.cluster.data.aws_ec2_instance_type.node["jobmanager"]
    values = { memory_size = 8192, instance_storage_supported = false, supported_architectures = ["x86_64", "i386"] }
  }

  assert {
    condition     = length(module.cluster.taskmanager_instance_ids) == 2 && module.cluster.parallelism == 16
    error_message = "the small example runs two TaskManagers with 16 slots"
  }
}

run "full_english_fits_r6id_4xlarge_and_m6i_xlarge" {
  command = plan
  module {
    source = "./examples/full-english"
  }
  variables {
    ngramflow_source = "tests/fixtures/ngramflow-src.tar.gz"
  }
  override_data {
    target = module.cluster.data.aws_ec2_instance_type.node["taskmanager"]
    values = { memory_size = 131072, instance_storage_supported = true, supported_architectures = ["x86_64"] }
  }
  override_data {
    target = module.cluster.data.aws_ec2_instance_type.node["jobmanager"]
    values = { memory_size = 16384, instance_storage_supported = false, supported_architectures = ["x86_64"] }
  }

  assert {
    condition     = length(module.cluster.taskmanager_instance_ids) == 8 && module.cluster.parallelism == 128
    error_message = "the full-English example runs 8 TaskManagers with 128 slots"
  }
}
