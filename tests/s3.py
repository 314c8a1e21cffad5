"""A real S3 server for the tests: moto's server mode (``moto_server``, from PyPI) as a process
of its own on loopback, and what a test needs to use it (a bucket of its own, a boto3 client,
the ``storage`` object the agent's backup calls carry).

The fixture ``s3_server`` (one process per test session) is offered to every test by
tests/conftest.py; tests call ``s3_server.new_bucket()`` so that none sees another's objects.
"""

import contextlib
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from botocore.config import Config

from tests.agent.harness import free_port

REGION = "us-east-1"
ACCESS_KEY_ID = "AKIATESTS3SERVER0001"
SECRET_ACCESS_KEY = "test-secret-" + "x" * 28
START_SECONDS = 20


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    process: subprocess.Popen

    def client(self) -> Any:
        return boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY_ID,
            aws_secret_access_key=SECRET_ACCESS_KEY,
            config=Config(s3={"addressing_style": "path"}),
        )

    def new_bucket(self) -> str:
        bucket = f"test-{secrets.token_hex(6)}"
        self.client().create_bucket(Bucket=bucket)
        return bucket

    def storage(self, bucket: str, prefix: str = "backups/") -> dict[str, str]:
        """The ``storage`` object of the agent's backup calls for ``bucket``."""
        return {
            "kind": "s3",
            "endpoint": self.endpoint,
            "region": REGION,
            "bucket": bucket,
            "prefix": prefix,
            "access_key_id": ACCESS_KEY_ID,
            "secret_access_key": SECRET_ACCESS_KEY,
        }

    def keys(self, bucket: str) -> list[str]:
        listed = self.client().list_objects_v2(Bucket=bucket)
        return sorted(item["Key"] for item in listed.get("Contents", []))

    def multipart_uploads(self, bucket: str) -> list[dict[str, Any]]:
        return self.client().list_multipart_uploads(Bucket=bucket).get("Uploads", [])


def _command(port: int) -> list[str]:
    beside = Path(sys.executable).with_name("moto_server")
    if beside.exists():
        return [str(beside), "-H", "127.0.0.1", "-p", str(port)]
    found = shutil.which("moto_server")
    if found:
        return [found, "-H", "127.0.0.1", "-p", str(port)]
    return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]


@contextlib.contextmanager
def run_s3_server() -> Iterator[S3Server]:
    """moto's S3 server on a free loopback port, until the block ends."""
    port = free_port()
    process = subprocess.Popen(  # noqa: S603 - our own interpreter's tool
        _command(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    server = S3Server(f"http://127.0.0.1:{port}", process)
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if process.poll() is not None:
                raise AssertionError(f"moto_server exited with {process.returncode}")
            try:
                httpx.get(server.endpoint, timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise AssertionError("moto_server did not answer") from None
                time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    with run_s3_server() as server:
        yield server
