# The run's bucket: private, encrypted, versioned, old checkpoints expiring.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  ngramflow_source          = "tests/fixtures/ngramflow-src.tar.gz"
  checkpoint_retention_days = 5
}

run "the_bucket_blocks_public_access" {
  assert {
    condition = alltrue([
      aws_s3_bucket_public_access_block.run.block_public_acls,
      aws_s3_bucket_public_access_block.run.block_public_policy,
      aws_s3_bucket_public_access_block.run.ignore_public_acls,
      aws_s3_bucket_public_access_block.run.restrict_public_buckets,
    ]) && aws_s3_bucket_public_access_block.run.bucket == aws_s3_bucket.run.id
    error_message = "all four public access blocks must be on, for the run's bucket"
  }
  assert {
    condition     = aws_s3_bucket_ownership_controls.run.rule[0].object_ownership == "BucketOwnerEnforced"
    error_message = "ACLs must be disabled"
  }
  assert {
    condition     = jsondecode(aws_s3_bucket_policy.run.policy).Statement[0].Condition.Bool["aws:SecureTransport"] == "false" && jsondecode(aws_s3_bucket_policy.run.policy).Statement[0].Effect == "Deny"
    error_message = "plain-HTTP requests must be denied"
  }
}

run "the_bucket_is_encrypted_and_versioned" {
  assert {
    condition = one([
      for rule in aws_s3_bucket_server_side_encryption_configuration.run.rule :
      rule.apply_server_side_encryption_by_default[0].sse_algorithm
    ]) == "aws:kms"
    error_message = "objects must be encrypted with KMS by default"
  }
  assert {
    condition     = aws_s3_bucket_versioning.run.versioning_configuration[0].status == "Enabled"
    error_message = "the bucket must be versioned"
  }
  assert {
    condition     = aws_s3_object.ngramflow_source.bucket == aws_s3_bucket.run.id && aws_s3_object.ngramflow_source.source_hash == filemd5("tests/fixtures/ngramflow-src.tar.gz")
    error_message = "the source archive is uploaded to the run's bucket and re-uploaded when it changes"
  }
}

run "old_checkpoints_expire" {
  assert {
    condition = one([
      for rule in aws_s3_bucket_lifecycle_configuration.run.rule : rule.expiration[0].days
      if rule.status == "Enabled" && rule.filter[0].prefix == "checkpoints/"
    ]) == 5
    error_message = "objects under checkpoints/ must expire after checkpoint_retention_days"
  }
  assert {
    condition = one([
      for rule in aws_s3_bucket_lifecycle_configuration.run.rule : rule.noncurrent_version_expiration[0].noncurrent_days
      if rule.status == "Enabled" && length(rule.noncurrent_version_expiration) > 0
    ]) == 7
    error_message = "replaced and deleted versions must expire"
  }
}

run "destroying_a_bucket_with_data_needs_consent" {
  command = plan

  assert {
    condition     = aws_s3_bucket.run.force_destroy == false
    error_message = "by default destroy must not delete the corpus copy and outputs"
  }
}
