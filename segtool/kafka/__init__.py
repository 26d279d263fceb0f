"""Kafka: its file names, layouts and readers, and the broker's own views of a partition (load, recovery, start-up)."""
