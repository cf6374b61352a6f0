# What runs on the nodes: the project's Flink configuration (infra/flink/config.yaml, the one
# every local run uses) adapted to a cluster, and the cloud-init documents that install it.

locals {
  # The Beam version of the job server; the SDK workers on the nodes must match it.
  beam_version = regex("<beam.version>([^<]+)</beam.version>", file("${path.module}/../flink/pom.xml"))[0]

  # Fixed ports, so the security group can name them (Flink's defaults pick random ones).
  rest_port = 8081
  flink_ports = {
    "taskmanager.data.port"               = 6121
    "taskmanager.rpc.port"                = 6122
    "jobmanager.rpc.port"                 = 6123
    "blob.server.port"                    = 6124
    "metrics.internal.query-service.port" = 6125
  }
  worker_pool_port = 50000

  jobmanager_ip = aws_network_interface.jobmanager.private_ip
  # Instance-store NVMe, striped and mounted on every boot (templates/ngramflow-scratch.sh.tftpl).
  scratch = "/mnt/nvme"

  project_flink_config = yamldecode(file("${path.module}/../flink/config.yaml"))
  # taskmanager.host pins a single machine's TaskManager to 127.0.0.1; unset, each TaskManager
  # advertises the address it reaches the JobManager from. The managed fraction is superseded
  # by the explicit managed size below.
  single_machine_keys = ["taskmanager.host", "taskmanager.memory.managed.fraction"]

  cluster_flink_config = merge(
    { for key, value in local.project_flink_config : key => value if !contains(local.single_machine_keys, key) },
    local.flink_ports,
    {
      "jobmanager.rpc.address" = local.jobmanager_ip
      "jobmanager.bind-host"   = "0.0.0.0"
      "taskmanager.bind-host"  = "0.0.0.0"
      "rest.address"           = local.jobmanager_ip
      "rest.bind-address"      = "0.0.0.0"
      "rest.port"              = local.rest_port
      # Jobs arrive through the REST job submission of Beam's job server; uploading jars through
      # the web UI is one more way to run code that nobody here needs.
      "web.submit.enable"               = false
      "jobmanager.memory.process.size"  = "${var.jobmanager_memory_mb}m"
      "taskmanager.memory.process.size" = "${var.taskmanager_memory_mb}m"
      "taskmanager.memory.managed.size" = "${var.taskmanager_managed_memory_mb}m"
      "taskmanager.numberOfTaskSlots"   = var.taskmanager_slots
      "state.checkpoints.dir"           = trimsuffix(local.s3_url.checkpoints, "/")
      "state.savepoints.dir"            = trimsuffix(local.s3_url.savepoints, "/")
      # The regional endpoint keeps checkpoint traffic on the VPC's S3 gateway endpoint.
      "s3.endpoint" = "s3.${local.region}.amazonaws.com"
    },
  )

  flink_config = {
    jobmanager = merge(local.cluster_flink_config, { "io.tmp.dirs" = "/var/lib/flink/tmp" })
    taskmanager = merge(local.cluster_flink_config, {
      "state.backend.rocksdb.localdir" = "${local.scratch}/flink/rocksdb"
      "io.tmp.dirs"                    = "${local.scratch}/flink/tmp"
    })
  }

  node_setup = {
    for role in ["jobmanager", "taskmanager"] : role => templatefile("${path.module}/templates/node-setup.sh.tftpl", {
      role          = role
      flink_version = var.flink_version
      flink_mirror  = trimsuffix(var.flink_mirror, "/")
      bucket        = aws_s3_bucket.run.bucket
      source_key    = aws_s3_object.ngramflow_source.key
      source_md5    = aws_s3_object.ngramflow_source.source_hash
      beam_version  = local.beam_version
    })
  }

  common_files = [
    {
      path    = "/etc/ngramflow/environment"
      content = templatefile("${path.module}/templates/environment.tftpl", { region = local.region, bucket = aws_s3_bucket.run.bucket, kafka_bootstrap = var.kafka_bootstrap })
    },
    { path = "/etc/profile.d/ngramflow.sh", content = file("${path.module}/templates/profile.sh") },
  ]

  role_files = {
    jobmanager = [
      { path = "/etc/systemd/system/flink-jobmanager.service", content = file("${path.module}/templates/flink-jobmanager.service") },
    ]
    taskmanager = [
      { path = "/etc/systemd/system/flink-taskmanager.service", content = file("${path.module}/templates/flink-taskmanager.service") },
      {
        path    = "/etc/systemd/system/beam-worker-pool.service"
        content = templatefile("${path.module}/templates/beam-worker-pool.service.tftpl", { port = local.worker_pool_port, scratch = local.scratch })
      },
      {
        path    = "/etc/systemd/system/ngramflow-scratch.service"
        content = templatefile("${path.module}/templates/ngramflow-scratch.service.tftpl", { scratch = local.scratch })
      },
      {
        path        = "/usr/local/sbin/ngramflow-scratch"
        permissions = "0755"
        content     = templatefile("${path.module}/templates/ngramflow-scratch.sh.tftpl", { scratch = local.scratch })
      },
    ]
  }

  # Built with yamlencode so every file arrives byte for byte, whatever characters it holds.
  user_data = {
    for role in ["jobmanager", "taskmanager"] : role => join("\n", ["#cloud-config", yamlencode({
      write_files = concat(local.common_files, local.role_files[role], [
        {
          path    = "/etc/ngramflow/flink-config.yaml"
          content = "# infra/flink/config.yaml, adapted to this cluster by infra/terraform (${role}).\n${yamlencode(local.flink_config[role])}"
        },
        { path = "/usr/local/sbin/ngramflow-node-setup", permissions = "0755", content = local.node_setup[role] },
      ])
      runcmd = [["/usr/local/sbin/ngramflow-node-setup"]]
    })])
  }
}
