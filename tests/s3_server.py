"""A real S3 API on loopback for the storage tests: moto's server in its own process, on a free port.

``s3_server`` (session scope) starts ``moto.server`` bound to 127.0.0.1 and gives its endpoint;
``upload_tree`` puts a corpus folder into a bucket with boto3 (not through segtool's own layer, so
the upload cannot share a fault with what is tested).  Skips with the reason when moto is not installed
(``pip install -e '.[test]'`` brings it).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ACCESS_KEY = "segtool-test"
SECRET_KEY = "segtool-test-secret"
REGION = "us-east-1"


@dataclass
class S3Server:
    endpoint: str  # http://127.0.0.1:<port>

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    @property
    def environment(self) -> dict[str, str]:
        """The AWS_* variables a user of this store sets."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}

    @property
    def s3a_conf(self) -> list[str]:
        """The same store as Spark users describe it: ``--conf spark.hadoop.fs.s3a.*``."""
        settings = {"endpoint": self.endpoint, "access.key": ACCESS_KEY, "secret.key": SECRET_KEY,
                    "path.style.access": "true", "connection.ssl.enabled": "false", "endpoint.region": REGION}
        return [arg for key, value in settings.items() for arg in ("--conf", f"spark.hadoop.fs.s3a.{key}={value}")]

    def upload_tree(self, folder: Path, bucket: str, prefix: str) -> None:
        client = self.client()
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(folder).as_posix()}")

    def keys(self, bucket: str, prefix: str) -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", ()))

    def read(self, bucket: str, key: str) -> bytes:
        return self.client().get_object(Bucket=bucket, Key=key)["Body"].read()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server():
    pytest.importorskip("moto.server", reason="moto[server] is not installed: pip install -e '.[test]'")
    pytest.importorskip("boto3", reason="boto3 is not installed: pip install -e '.[test]'")
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "MOTO_PORT": str(port)})
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"moto's S3 server did not start on 127.0.0.1:{port}")
                time.sleep(0.1)
        yield S3Server(f"http://127.0.0.1:{port}")
    finally:
        server.terminate()
        server.wait(timeout=10)
