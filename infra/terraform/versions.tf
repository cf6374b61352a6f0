terraform {
  # 1.9 for validations that compare variables; 1.11 is what CI runs the tests with.
  required_version = ">= 1.9"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.60, < 6.0"
    }
  }
}
