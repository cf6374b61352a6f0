"""Kafka: a local broker for development and tests, and the Java side of imports that read a queue topic."""
