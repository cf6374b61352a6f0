# The run's bucket: corpus copy (corpus/), outputs (outputs/), Flink checkpoints and savepoints,
# and the software the nodes install (software/). Private, encrypted, versioned, TLS only.

locals {
  bucket_arn = aws_s3_bucket.run.arn
  prefixes = {
    corpus      = "corpus/"
    outputs     = "outputs/"
    checkpoints = "checkpoints/"
    savepoints  = "savepoints/"
    software    = "software/"
  }
  s3_url = { for name, prefix in local.prefixes : name => "s3://${aws_s3_bucket.run.bucket}/${prefix}" }
}

resource "aws_s3_bucket" "run" {
  # checkov:skip=CKV_AWS_18: access logs would need a second bucket that outlives the run; the instance
  # role is the only principal with access, and CloudTrail data events cover audits where required.
  # checkov:skip=CKV_AWS_144: everything here is derived from Google's public corpus and can be recomputed;
  # a replica would double storage cost for no recovery value.
  # checkov:skip=CKV2_AWS_62: nothing consumes bucket events.
  bucket_prefix = "${var.name}-"
  force_destroy = var.force_destroy_bucket
  tags          = merge(var.tags, { Name = var.name })
}

resource "aws_s3_bucket_public_access_block" "run" {
  bucket                  = aws_s3_bucket.run.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "run" {
  bucket = aws_s3_bucket.run.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

# SSE-KMS with the account's AWS-managed S3 key: its key policy already lets this account's
# principals use it through S3, so the node policy names nothing but the bucket. Bucket keys
# cut the KMS requests of Beam's and Flink's many small writes.
resource "aws_s3_bucket_server_side_encryption_configuration" "run" {
  bucket = aws_s3_bucket.run.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "aws:kms"
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_versioning" "run" {
  bucket = aws_s3_bucket.run.id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "run" {
  bucket = aws_s3_bucket.run.id

  rule {
    id     = "expire-old-checkpoints"
    status = "Enabled"
    filter {
      prefix = local.prefixes.checkpoints
    }
    expiration {
      days = var.checkpoint_retention_days
    }
  }

  # Versioning keeps every overwritten or deleted object; Beam deletes its temporary files by
  # the thousand, so without this rule they would be billed forever.
  rule {
    id     = "expire-noncurrent-versions"
    status = "Enabled"
    filter {}
    noncurrent_version_expiration {
      noncurrent_days = var.noncurrent_version_retention_days
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 2
    }
    expiration {
      expired_object_delete_marker = true
    }
  }

  depends_on = [aws_s3_bucket_versioning.run]
}

resource "aws_s3_bucket_policy" "run" {
  bucket     = aws_s3_bucket.run.id
  depends_on = [aws_s3_bucket_public_access_block.run]
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "DenyPlainHTTP"
      Effect    = "Deny"
      Principal = "*"
      Action    = "s3:*"
      Resource  = [local.bucket_arn, "${local.bucket_arn}/*"]
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }]
  })
}

resource "aws_s3_object" "ngramflow_source" {
  bucket      = aws_s3_bucket.run.id
  key         = "${local.prefixes.software}ngramflow-src.tar.gz"
  source      = var.ngramflow_source
  source_hash = filemd5(var.ngramflow_source)
  tags        = var.tags
  depends_on  = [aws_s3_bucket_server_side_encryption_configuration.run]
}
