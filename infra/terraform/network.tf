# Either the caller's private subnet, or a minimal VPC: nodes in a private subnet with no
# public addresses, outbound traffic through one NAT gateway, S3 through a (free) gateway
# endpoint so corpus, output and checkpoint bytes never pay NAT processing.

locals {
  region     = data.aws_region.current.name
  create_vpc = var.subnet_id == null
  subnet_id  = local.create_vpc ? aws_subnet.private[0].id : var.subnet_id
  vpc_id     = local.create_vpc ? aws_vpc.this[0].id : data.aws_subnet.given[0].vpc_id
  # Not every zone offers every instance type (NVMe types especially). With no zone offering
  # both, the launch templates' precondition explains; a null zone only gets the plan that far.
  zone = (
    !local.create_vpc ? data.aws_subnet.given[0].availability_zone :
    var.availability_zone != null ? var.availability_zone : try(sort(local.zones_with_both_types)[0], null)
  )
  zones_with_both_types = setintersection([for offering in data.aws_ec2_instance_type_offerings.node : offering.locations]...)
}

data "aws_region" "current" {}

data "aws_ec2_instance_type_offerings" "node" {
  for_each      = local.instance_types
  location_type = "availability-zone"
  filter {
    name   = "instance-type"
    values = [each.value]
  }
}

data "aws_subnet" "given" {
  count = local.create_vpc ? 0 : 1
  id    = var.subnet_id
}

resource "aws_vpc" "this" {
  # checkov:skip=CKV2_AWS_11: the VPC lives for one batch run and has no inbound path; flow logs would
  # need a log destination that outlives it. Pass subnet_id of a VPC with flow logs where they are required.
  count                = local.create_vpc ? 1 : 0
  cidr_block           = var.vpc_cidr
  enable_dns_support   = true
  enable_dns_hostnames = true
  tags                 = merge(var.tags, { Name = var.name })
}

# Takes over the VPC's default security group and leaves it without rules, so nothing that lands
# in it by accident can talk to anything.
resource "aws_default_security_group" "this" {
  count  = local.create_vpc ? 1 : 0
  vpc_id = aws_vpc.this[0].id
  tags   = merge(var.tags, { Name = "${var.name}-default-unused" })
}

resource "aws_internet_gateway" "this" {
  count  = local.create_vpc ? 1 : 0
  vpc_id = aws_vpc.this[0].id
  tags   = merge(var.tags, { Name = var.name })
}

resource "aws_subnet" "public" {
  count                   = local.create_vpc ? 1 : 0
  vpc_id                  = aws_vpc.this[0].id
  cidr_block              = cidrsubnet(var.vpc_cidr, 4, 0)
  availability_zone       = local.zone
  map_public_ip_on_launch = false
  tags                    = merge(var.tags, { Name = "${var.name}-public" })
}

resource "aws_subnet" "private" {
  count                   = local.create_vpc ? 1 : 0
  vpc_id                  = aws_vpc.this[0].id
  cidr_block              = cidrsubnet(var.vpc_cidr, 4, 1)
  availability_zone       = local.zone
  map_public_ip_on_launch = false
  tags                    = merge(var.tags, { Name = "${var.name}-private" })
}

resource "aws_eip" "nat" {
  count  = local.create_vpc ? 1 : 0
  domain = "vpc"
  tags   = merge(var.tags, { Name = "${var.name}-nat" })
}

resource "aws_nat_gateway" "this" {
  count         = local.create_vpc ? 1 : 0
  allocation_id = aws_eip.nat[0].id
  subnet_id     = aws_subnet.public[0].id
  tags          = merge(var.tags, { Name = var.name })
  depends_on    = [aws_internet_gateway.this]
}

resource "aws_route_table" "public" {
  count  = local.create_vpc ? 1 : 0
  vpc_id = aws_vpc.this[0].id
  tags   = merge(var.tags, { Name = "${var.name}-public" })

  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = aws_internet_gateway.this[0].id
  }
}

resource "aws_route_table" "private" {
  count  = local.create_vpc ? 1 : 0
  vpc_id = aws_vpc.this[0].id
  tags   = merge(var.tags, { Name = "${var.name}-private" })

  route {
    cidr_block     = "0.0.0.0/0"
    nat_gateway_id = aws_nat_gateway.this[0].id
  }
}

resource "aws_route_table_association" "public" {
  count          = local.create_vpc ? 1 : 0
  subnet_id      = aws_subnet.public[0].id
  route_table_id = aws_route_table.public[0].id
}

resource "aws_route_table_association" "private" {
  count          = local.create_vpc ? 1 : 0
  subnet_id      = aws_subnet.private[0].id
  route_table_id = aws_route_table.private[0].id
}

resource "aws_vpc_endpoint" "s3" {
  count             = local.create_vpc ? 1 : 0
  vpc_id            = aws_vpc.this[0].id
  service_name      = "com.amazonaws.${local.region}.s3"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = [aws_route_table.private[0].id]
  tags              = merge(var.tags, { Name = "${var.name}-s3" })
}
