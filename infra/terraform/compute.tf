# "Native nodes": one JobManager and N TaskManagers, plain EC2 instances from launch templates,
# Amazon Linux 2023 with everything else installed by cloud-init (flink.tf).

locals {
  # Room on a TaskManager node outside Flink's bound and the Python workers: the OS, its
  # services and a little page cache.
  os_reserve_mb = 2048
  # The JobManager node also runs the Beam job server JVM and `ngramflow import` itself.
  submitter_reserve_mb = 4096
  # Java, Flink and the Python venv take a few GB; a TaskManager's data lives on NVMe.
  taskmanager_root_gb = 30

  instance_types = { jobmanager = var.jobmanager_instance_type, taskmanager = var.taskmanager_instance_type }
  # Memory each role's node must have, in MiB.
  node_memory_needed_mb = {
    jobmanager  = var.jobmanager_memory_mb + local.submitter_reserve_mb
    taskmanager = var.taskmanager_memory_mb + var.taskmanager_slots * var.python_worker_memory_mb + local.os_reserve_mb
  }

  node_metadata_options = {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
  }
}

data "aws_ssm_parameter" "al2023" {
  name = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
}

data "aws_ec2_instance_type" "node" {
  for_each      = local.instance_types
  instance_type = each.value
}

# A fixed address for the JobManager, known before any instance exists: every node's Flink
# configuration names it.
resource "aws_network_interface" "jobmanager" {
  subnet_id       = local.subnet_id
  security_groups = [aws_security_group.cluster.id]
  description     = "${var.name} Flink JobManager"
  tags            = merge(var.tags, { Name = "${var.name}-jobmanager" })
}

resource "aws_launch_template" "jobmanager" {
  name_prefix            = "${var.name}-jobmanager-"
  image_id               = data.aws_ssm_parameter.al2023.insecure_value
  user_data              = base64encode(local.user_data.jobmanager)
  update_default_version = true
  ebs_optimized          = true
  tags                   = var.tags

  iam_instance_profile {
    arn = aws_iam_instance_profile.node.arn
  }

  network_interfaces {
    network_interface_id = aws_network_interface.jobmanager.id
    device_index         = 0
  }

  metadata_options {
    http_endpoint               = local.node_metadata_options.http_endpoint
    http_tokens                 = local.node_metadata_options.http_tokens
    http_put_response_hop_limit = local.node_metadata_options.http_put_response_hop_limit
  }

  monitoring {
    enabled = true
  }

  block_device_mappings {
    device_name = "/dev/xvda"
    ebs {
      volume_size           = var.jobmanager_volume_gb
      volume_type           = "gp3"
      encrypted             = true
      delete_on_termination = true
    }
  }

  lifecycle {
    precondition {
      condition     = contains(data.aws_ec2_instance_type.node["jobmanager"].supported_architectures, "x86_64")
      error_message = "jobmanager_instance_type ${var.jobmanager_instance_type} is not x86_64 (the nodes run the x86_64 Amazon Linux 2023 image)."
    }
    precondition {
      condition     = data.aws_ec2_instance_type.node["jobmanager"].memory_size >= local.node_memory_needed_mb.jobmanager
      error_message = "jobmanager_instance_type ${var.jobmanager_instance_type} has ${data.aws_ec2_instance_type.node["jobmanager"].memory_size} MiB; the JobManager (${var.jobmanager_memory_mb} MiB) plus the job server and the import's Python process (${local.submitter_reserve_mb} MiB) need more."
    }
    precondition {
      condition     = length(local.user_data.jobmanager) <= 16384
      error_message = "The JobManager's cloud-init document exceeds EC2's 16 KiB user data limit."
    }
  }
}

resource "aws_launch_template" "taskmanager" {
  name_prefix            = "${var.name}-taskmanager-"
  image_id               = data.aws_ssm_parameter.al2023.insecure_value
  user_data              = base64encode(local.user_data.taskmanager)
  vpc_security_group_ids = [aws_security_group.cluster.id]
  update_default_version = true
  ebs_optimized          = true
  tags                   = var.tags

  iam_instance_profile {
    arn = aws_iam_instance_profile.node.arn
  }

  metadata_options {
    http_endpoint               = local.node_metadata_options.http_endpoint
    http_tokens                 = local.node_metadata_options.http_tokens
    http_put_response_hop_limit = local.node_metadata_options.http_put_response_hop_limit
  }

  monitoring {
    enabled = true
  }

  block_device_mappings {
    device_name = "/dev/xvda"
    ebs {
      volume_size           = local.taskmanager_root_gb
      volume_type           = "gp3"
      encrypted             = true
      delete_on_termination = true
    }
  }

  lifecycle {
    precondition {
      condition     = contains(local.zones_with_both_types, coalesce(local.zone, "none"))
      error_message = "The cluster's zone (${coalesce(local.zone, "none found")}) must offer both ${var.jobmanager_instance_type} and ${var.taskmanager_instance_type}; zones that do: [${join(", ", sort(local.zones_with_both_types))}]."
    }
    precondition {
      condition     = data.aws_ec2_instance_type.node["taskmanager"].instance_storage_supported
      error_message = "taskmanager_instance_type ${var.taskmanager_instance_type} has no local instance storage; RocksDB and Flink's spill files need NVMe (e.g. m6id, r6id, c6id, i4i)."
    }
    precondition {
      condition     = contains(data.aws_ec2_instance_type.node["taskmanager"].supported_architectures, "x86_64")
      error_message = "taskmanager_instance_type ${var.taskmanager_instance_type} is not x86_64 (the nodes run the x86_64 Amazon Linux 2023 image)."
    }
    precondition {
      condition     = data.aws_ec2_instance_type.node["taskmanager"].memory_size >= local.node_memory_needed_mb.taskmanager
      error_message = "taskmanager_instance_type ${var.taskmanager_instance_type} has ${data.aws_ec2_instance_type.node["taskmanager"].memory_size} MiB; the TaskManager (${var.taskmanager_memory_mb} MiB), ${var.taskmanager_slots} Python workers of ${var.python_worker_memory_mb} MiB and ${local.os_reserve_mb} MiB for the OS need ${local.node_memory_needed_mb.taskmanager} MiB."
    }
    precondition {
      condition     = length(local.user_data.taskmanager) <= 16384
      error_message = "The TaskManagers' cloud-init document exceeds EC2's 16 KiB user data limit."
    }
  }
}

resource "aws_instance" "jobmanager" {
  # checkov doesn't read settings from launch templates; the template sets each of these.
  # checkov:skip=CKV_AWS_79: IMDSv2 is required by the launch template's metadata_options.
  # checkov:skip=CKV_AWS_126: detailed monitoring is enabled in the launch template.
  # checkov:skip=CKV_AWS_135: the launch template sets ebs_optimized.
  # checkov:skip=CKV_AWS_8: the launch template encrypts the root volume.
  # checkov:skip=CKV2_AWS_41: the launch template attaches the node instance profile.
  instance_type = var.jobmanager_instance_type
  tags          = merge(var.tags, { Name = "${var.name}-jobmanager", "ngramflow:role" = "jobmanager" })

  launch_template {
    id      = aws_launch_template.jobmanager.id
    version = aws_launch_template.jobmanager.latest_version
  }

  lifecycle {
    # New software or configuration means new nodes: cloud-init installs only at first boot.
    replace_triggered_by = [aws_launch_template.jobmanager.latest_version]
  }
}

resource "aws_instance" "taskmanager" {
  # checkov doesn't read settings from launch templates; the template sets each of these.
  # checkov:skip=CKV_AWS_79: IMDSv2 is required by the launch template's metadata_options.
  # checkov:skip=CKV_AWS_126: detailed monitoring is enabled in the launch template.
  # checkov:skip=CKV_AWS_135: the launch template sets ebs_optimized.
  # checkov:skip=CKV_AWS_8: the launch template encrypts the root volume.
  # checkov:skip=CKV2_AWS_41: the launch template attaches the node instance profile.
  count         = var.taskmanager_count
  instance_type = var.taskmanager_instance_type
  subnet_id     = local.subnet_id
  tags          = merge(var.tags, { Name = "${var.name}-taskmanager-${count.index + 1}", "ngramflow:role" = "taskmanager" })

  launch_template {
    id      = aws_launch_template.taskmanager.id
    version = aws_launch_template.taskmanager.latest_version
  }

  lifecycle {
    replace_triggered_by = [aws_launch_template.taskmanager.latest_version]
  }
}
