# The nodes: counts and types from the variables, and what cloud-init puts on them, read back
# from the launch templates' user data exactly as EC2 would receive it.

mock_provider "aws" {
  source = "./tests/mocks"
}

# Distinct ids, so that "each role's own template" means something.
override_resource {
  target = aws_launch_template.jobmanager
  values = { id = "lt-0000000000000000a" }
}

override_resource {
  target = aws_launch_template.taskmanager
  values = { id = "lt-0000000000000000b" }
}

variables {
  ngramflow_source              = "tests/fixtures/ngramflow-src.tar.gz"
  jobmanager_instance_type      = "m6i.xlarge"
  taskmanager_instance_type     = "r6id.2xlarge"
  taskmanager_count             = 3
  taskmanager_slots             = 4
  taskmanager_memory_mb         = 20480
  taskmanager_managed_memory_mb = 8192
}

run "instance_counts_and_types_follow_the_variables" {
  assert {
    condition     = length(aws_instance.taskmanager) == 3
    error_message = "one TaskManager instance per taskmanager_count"
  }
  assert {
    condition     = alltrue([for node in aws_instance.taskmanager : node.instance_type == "r6id.2xlarge"])
    error_message = "TaskManagers must use taskmanager_instance_type"
  }
  assert {
    condition     = aws_instance.jobmanager.instance_type == "m6i.xlarge"
    error_message = "the JobManager must use jobmanager_instance_type"
  }
  assert {
    condition = alltrue([
      for node in aws_instance.taskmanager : node.launch_template[0].id == aws_launch_template.taskmanager.id
    ]) && aws_instance.jobmanager.launch_template[0].id == aws_launch_template.jobmanager.id
    error_message = "every node must start from its role's launch template"
  }
  assert {
    condition     = output.parallelism == 12
    error_message = "parallelism is TaskManagers x slots"
  }
}

run "taskmanager_flink_config_is_the_project_config_adapted" {
  variables {
    taskmanager_count = 1
  }

  assert {
    condition = yamldecode([
      for file in yamldecode(base64decode(aws_launch_template.taskmanager.user_data)).write_files :
      file.content if file.path == "/etc/ngramflow/flink-config.yaml"
    ][0])["taskmanager.memory.process.size"] == "20480m"
    error_message = "the shipped TaskManager config must carry the memory bound from taskmanager_memory_mb"
  }
  assert {
    condition = yamldecode([
      for file in yamldecode(base64decode(aws_launch_template.taskmanager.user_data)).write_files :
      file.content if file.path == "/etc/ngramflow/flink-config.yaml"
    ][0])["taskmanager.memory.managed.size"] == "8192m"
    error_message = "the shipped TaskManager config must carry the managed memory from taskmanager_managed_memory_mb"
  }
  assert {
    condition = yamldecode([
      for file in yamldecode(base64decode(aws_launch_template.taskmanager.user_data)).write_files :
      file.content if file.path == "/etc/ngramflow/flink-config.yaml"
    ][0])["state.backend.type"] == "rocksdb"
    error_message = "the shipped TaskManager config must keep state.backend.type: rocksdb"
  }
  assert {
    condition = yamldecode([
      for file in yamldecode(base64decode(aws_launch_template.taskmanager.user_data)).write_files :
      file.content if file.path == "/etc/ngramflow/flink-config.yaml"
    ][0])["state.backend.rocksdb.localdir"] == "/mnt/nvme/flink/rocksdb"
    error_message = "RocksDB's local dir must be on the NVMe scratch mount"
  }
  assert {
    condition = yamldecode([
      for file in yamldecode(base64decode(aws_launch_template.taskmanager.user_data)).write_files :
      file.content if file.path == "/etc/ngramflow/flink-config.yaml"
    ][0])["io.tmp.dirs"] == "/mnt/nvme/flink/tmp"
    error_message = "Flink's spill files must be on the NVMe scratch mount"
  }
  assert {
    condition = yamldecode([
      for file in yamldecode(base64decode(aws_launch_template.taskmanager.user_data)).write_files :
      file.content if file.path == "/etc/ngramflow/flink-config.yaml"
    ][0])["state.checkpoints.dir"] == "s3://ngramflow-20261122-test/checkpoints"
    error_message = "checkpoints must go to the run's bucket"
  }
  assert {
    condition = yamldecode([
      for file in yamldecode(base64decode(aws_launch_template.taskmanager.user_data)).write_files :
      file.content if file.path == "/etc/ngramflow/flink-config.yaml"
    ][0])["state.savepoints.dir"] == "s3://ngramflow-20261122-test/savepoints"
    error_message = "savepoints must go to the run's bucket"
  }
  assert {
    condition = yamldecode([
      for file in yamldecode(base64decode(aws_launch_template.taskmanager.user_data)).write_files :
      file.content if file.path == "/etc/ngramflow/flink-config.yaml"
    ][0])["jobmanager.rpc.address"] == "10.42.16.10"
    error_message = "TaskManagers must find the JobManager at its fixed private address"
  }
  assert {
    condition     = local.flink_config.taskmanager["taskmanager.numberOfTaskSlots"] == 4
    error_message = "slots per TaskManager must follow taskmanager_slots"
  }
  # Everything else comes from infra/flink/config.yaml unchanged: the cluster reuses it.
  assert {
    condition = alltrue([
      for key, value in yamldecode(file("../flink/config.yaml")) :
      local.flink_config.taskmanager[key] == value
      if !contains(["taskmanager.host", "taskmanager.memory.managed.fraction", "taskmanager.numberOfTaskSlots", "jobmanager.memory.process.size"], key)
      && !startswith(key, "jobmanager.rpc") && !startswith(key, "rest.") && !endswith(key, "bind-host")
    ])
    error_message = "settings of infra/flink/config.yaml that are not cluster-specific must reach the nodes unchanged"
  }
  assert {
    condition     = !contains(keys(local.flink_config.taskmanager), "taskmanager.host")
    error_message = "taskmanager.host (127.0.0.1 in the project config) must not reach a cluster node"
  }
}

run "a_beam_worker_pool_runs_beside_each_taskmanager_only" {
  variables {
    taskmanager_count = 1
  }

  assert {
    condition = strcontains(one([
      for file in yamldecode(base64decode(aws_launch_template.taskmanager.user_data)).write_files :
      file.content if file.path == "/etc/systemd/system/beam-worker-pool.service"
    ]), "python -m apache_beam.runners.worker.worker_pool_main --service_port=50000")
    error_message = "TaskManager nodes must run Beam's worker pool on port 50000"
  }
  assert {
    condition = strcontains(one([
      for file in yamldecode(base64decode(aws_launch_template.taskmanager.user_data)).write_files :
      file.content if file.path == "/usr/local/sbin/ngramflow-node-setup"
    ]), "enable --now ngramflow-scratch.service beam-worker-pool.service flink-taskmanager.service")
    error_message = "TaskManager nodes must start the scratch volume, the worker pool and the TaskManager"
  }
  assert {
    condition = length([
      for file in yamldecode(base64decode(aws_launch_template.jobmanager.user_data)).write_files :
      file if file.path == "/etc/systemd/system/beam-worker-pool.service"
    ]) == 0
    error_message = "the JobManager node runs no worker pool"
  }
  assert {
    condition     = strcontains(local.node_setup.taskmanager, "assert b.__version__ == '2.62.0'")
    error_message = "nodes must refuse an apache-beam other than the job server's (infra/flink/pom.xml)"
  }
  assert {
    condition     = strcontains(local.node_setup.taskmanager, "${filemd5("tests/fixtures/ngramflow-src.tar.gz")}  /opt/ngramflow/src.tar.gz")
    error_message = "nodes must check that they install exactly the uploaded source archive"
  }
}

run "outputs_name_the_jobmanager_the_bucket_and_the_run" {
  assert {
    condition     = output.jobmanager_private_ip == "10.42.16.10" && output.flink_master == "10.42.16.10:8081"
    error_message = "the JobManager's private address and REST endpoint must be outputs"
  }
  assert {
    condition     = output.bucket == "ngramflow-20261122-test"
    error_message = "the bucket must be an output"
  }
  assert {
    condition = output.submit_command == join(" ", [
      "ngramflow import s3://ngramflow-20261122-test/corpus/",
      "--output s3://ngramflow-20261122-test/outputs/run-1",
      "--runner flink --flink-master 10.42.16.10:8081 --mode batch --workers 12",
      "-- --environment_type=EXTERNAL --environment_config=localhost:50000 --sdk_worker_parallelism=4",
    ])
    error_message = "submit_command must be the exact import for this cluster, got: ${output.submit_command}"
  }
}
