"""The pipeline: `segtool scan` to Parquet, and verify/rebuild-index on Spark (docs/pipeline.md).

- ``inputs``: find Kafka partitions and RocketMQ stores under paths or URIs
- ``splits``: cut them into tasks (segments, or splits checked at index entries)
- ``rows``: a task's byte range to Arrow record batches (the only decoding)
- ``scan``: driver (plan, run, report) and task (rows -> its part files of the one hive-partitioned dataset)
- ``verify`` / ``rebuild`` / ``replicas``: verify, rebuild-index and the replica sets of replicas as tasks
- ``engines`` (local process pool), ``spark`` (PySpark), ``tasks`` (what both run around a task);
  the spark-submit entry is ``segtool/spark_job.py``, above the CLI
- ``schema``: the Parquet schemas; ``storage``: local paths and filesystem URIs
"""
