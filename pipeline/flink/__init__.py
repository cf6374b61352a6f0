"""Running imports on Apache Flink: provisioning, the job server, a local session cluster."""
