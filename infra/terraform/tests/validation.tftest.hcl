# Sizes that cannot work are refused at plan time, before anything is paid for.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  ngramflow_source = "tests/fixtures/ngramflow-src.tar.gz"
}

run "the_defaults_plan" {
  command = plan
}

run "at_least_one_taskmanager" {
  command = plan
  variables {
    taskmanager_count = 0
  }
  expect_failures = [var.taskmanager_count]
}

run "managed_memory_must_stay_below_the_memory_bound" {
  command = plan
  variables {
    taskmanager_memory_mb         = 8192
    taskmanager_managed_memory_mb = 8192
  }
  expect_failures = [var.taskmanager_managed_memory_mb]
}

# 8192 MiB: 8192 - 819.2 (JVM overhead) - 256 (metaspace) = 7116.8 MiB of Flink memory; minus
# 256 (framework) and 711.68 (network) leaves 6149.12, so managed memory may take 5125 MiB and
# keep 1024 of task heap; 5126 would not.
run "managed_memory_up_to_the_task_heap_floor_is_accepted" {
  command = plan
  variables {
    taskmanager_memory_mb         = 8192
    taskmanager_managed_memory_mb = 5125
  }
}

run "managed_memory_past_the_task_heap_floor_is_refused" {
  command = plan
  variables {
    taskmanager_memory_mb         = 8192
    taskmanager_managed_memory_mb = 5126
  }
  expect_failures = [var.taskmanager_managed_memory_mb]
}

# 40960 MiB: 40960 - 1024 (overhead, capped) - 256 = 39680; network takes 3968 (Flink 1.19 does
# not cap it at 1 GiB), framework 256, so 34432 MiB managed keeps 1024 of task heap.
run "large_bounds_leave_network_memory_uncapped" {
  command = plan
  variables {
    taskmanager_memory_mb         = 40960
    taskmanager_managed_memory_mb = 34432
  }
  override_data {
    target = data.aws_ec2_instance_type.node["taskmanager"]
    values = { instance_storage_supported = true, memory_size = 131072, supported_architectures = ["x86_64"] }
  }
}

run "large_bounds_refuse_managed_memory_past_the_floor" {
  command = plan
  variables {
    taskmanager_memory_mb         = 40960
    taskmanager_managed_memory_mb = 34433
  }
  expect_failures = [var.taskmanager_managed_memory_mb]
}

run "the_source_archive_must_exist" {
  command = plan
  variables {
    ngramflow_source = "tests/fixtures/missing.tar.gz"
  }
  expect_failures = [var.ngramflow_source]
}

run "only_flink_1_19" {
  command = plan
  variables {
    flink_version = "1.20.0"
  }
  expect_failures = [var.flink_version]
}

run "taskmanagers_need_instance_storage" {
  command = plan
  override_data {
    target = data.aws_ec2_instance_type.node["taskmanager"]
    values = { instance_storage_supported = false, memory_size = 32768, supported_architectures = ["x86_64"] }
  }
  expect_failures = [aws_launch_template.taskmanager]
}

run "taskmanager_memory_python_workers_and_os_must_fit_the_instance" {
  command = plan
  # 14336 + 8 x 1536 + 2048 = 28672 MiB of a 16 GiB instance.
  override_data {
    target = data.aws_ec2_instance_type.node["taskmanager"]
    values = { instance_storage_supported = true, memory_size = 16384, supported_architectures = ["x86_64"] }
  }
  expect_failures = [aws_launch_template.taskmanager]
}

run "the_jobmanager_node_must_hold_the_jobmanager_and_the_submitter" {
  command = plan
  override_data {
    target = data.aws_ec2_instance_type.node["jobmanager"]
    values = { instance_storage_supported = false, memory_size = 4096, supported_architectures = ["x86_64"] }
  }
  expect_failures = [aws_launch_template.jobmanager]
}

run "nodes_must_be_x86_64" {
  command = plan
  override_data {
    target = data.aws_ec2_instance_type.node["taskmanager"]
    values = { instance_storage_supported = true, memory_size = 65536, supported_architectures = ["arm64"] }
  }
  expect_failures = [aws_launch_template.taskmanager]
}
