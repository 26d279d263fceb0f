"""segtool: forensic toolkit for Kafka and RocketMQ storage files."""

__version__ = "0.1.0"
