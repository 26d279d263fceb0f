"""RocketMQ: its store layout and names, file layouts and readers, and the broker's own views of a store (load, recovery, reput)."""
