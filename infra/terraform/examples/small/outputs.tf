output "submit_command" {
  description = "The import to run on the JobManager node (as user flink)."
  value       = module.cluster.submit_command
}

output "ssm_session_command" {
  description = "A shell on the JobManager node."
  value       = module.cluster.ssm_session_command
}

output "web_ui_tunnel_command" {
  description = "Forwards localhost:8081 to the Flink web UI."
  value       = module.cluster.web_ui_tunnel_command
}

output "bucket" {
  description = "The run's bucket."
  value       = module.cluster.bucket
}

output "jobmanager_private_ip" {
  description = "Private address of the JobManager."
  value       = module.cluster.jobmanager_private_ip
}

output "region" {
  description = "Region of the cluster and the bucket."
  value       = module.cluster.region
}
