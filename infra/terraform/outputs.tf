locals {
  parallelism  = var.taskmanager_count * var.taskmanager_slots
  flink_master = "${local.jobmanager_ip}:${local.rest_port}"

  # Beam options after `--` send the SDK work to the worker pool beside each TaskManager
  # (ngramflow's own default is a worker inside the submitting process, for local clusters),
  # with one Python process per slot.
  submit_command = join(" ", [
    "ngramflow import ${local.s3_url.corpus}",
    "--output ${local.s3_url.outputs}run-1",
    "--runner flink --flink-master ${local.flink_master} --mode batch --workers ${local.parallelism}",
    "-- --environment_type=EXTERNAL --environment_config=localhost:${local.worker_pool_port}",
    "--sdk_worker_parallelism=${var.taskmanager_slots}",
  ])
}

output "jobmanager_private_ip" {
  description = "Private address of the JobManager (REST API and web UI on port 8081)."
  value       = local.jobmanager_ip
}

output "flink_master" {
  description = "The --flink-master of an import on this cluster."
  value       = local.flink_master
}

output "jobmanager_instance_id" {
  description = "Instance of the JobManager node: open a shell with `aws ssm start-session --target ID`."
  value       = aws_instance.jobmanager.id
}

output "taskmanager_instance_ids" {
  description = "Instances of the TaskManager nodes."
  value       = aws_instance.taskmanager[*].id
}

output "bucket" {
  description = "The run's bucket: corpus/ (inputs), outputs/, checkpoints/, savepoints/, software/."
  value       = aws_s3_bucket.run.bucket
}

output "region" {
  description = "Region of the cluster and the bucket."
  value       = local.region
}

output "parallelism" {
  description = "Task slots in the cluster (TaskManagers x slots), passed as --workers."
  value       = local.parallelism
}

output "submit_command" {
  description = "An import of everything under corpus/ in the bucket into outputs/run-1, to run on the JobManager node as user flink (see the README's \"Run on AWS\")."
  value       = local.submit_command
}

output "ssm_session_command" {
  description = "A shell on the JobManager node through SSM Session Manager (no SSH, no open port)."
  value       = "aws ssm start-session --region ${local.region} --target ${aws_instance.jobmanager.id}"
}

output "web_ui_tunnel_command" {
  description = "Forwards localhost:8081 to the Flink web UI through SSM Session Manager."
  value       = "aws ssm start-session --region ${local.region} --target ${aws_instance.jobmanager.id} --document-name AWS-StartPortForwardingSession --parameters portNumber=${local.rest_port},localPortNumber=${local.rest_port}"
}
