"""A real S3-protocol server for tests: moto's standalone server in a subprocess on a free port, and the
environment that points our processes at a bucket on it. No Docker, no network beyond the loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from types import TracebackType

from obstore.store import S3Store

from harness.proofloop import free_port, wait_answering
from storage import BlobStore, open_blob_store

# moto checks no signature: any key pair does, but one must be set, or a client would ask the (absent)
# instance metadata service for credentials
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "proofloop-test", "AWS_SECRET_ACCESS_KEY": "proofloop-test-secret"}
REGION = "us-east-1"


class MotoServer:
    def __init__(self, log_dir: Path) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"moto-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> MotoServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_answering(
            self.proc, f"{self.endpoint}/moto-api/", "moto", lambda: self.log_path.read_text(errors="replace")
        )
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def new_bucket(self) -> str:
        """A fresh, empty bucket (S3's CreateBucket: a bare PUT on the bucket's path)."""
        name = f"proofloop-{uuid.uuid4().hex[:12]}"
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=5):
            return name

    def store_url(self, bucket: str, prefix: str = "media") -> str:
        """PROOFLOOP_MEDIA_STORE_URL for `bucket`."""
        return f"s3://{bucket}/{prefix}?endpoint={self.endpoint}&region={REGION}"

    def env(self, bucket: str, prefix: str = "media") -> dict[str, str]:
        """What an API or worker process needs to keep its media in `bucket`."""
        return {"PROOFLOOP_MEDIA_STORE_URL": self.store_url(bucket, prefix), **CREDENTIALS}

    def blob_store(self, bucket: str, prefix: str = "media") -> BlobStore:
        """Our store on `bucket`, as the API would open it (the client reads its credentials when built)."""
        saved = {name: os.environ.get(name) for name in CREDENTIALS}
        os.environ.update(CREDENTIALS)
        try:
            return open_blob_store(self.store_url(bucket, prefix), Path("/unused"), timeout=5)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name)
                else:
                    os.environ[name] = value

    def keys(self, bucket: str) -> list[str]:
        """Every key in the bucket, read with obstore directly (not through our store)."""
        store = S3Store(
            bucket,
            endpoint=self.endpoint,
            region=REGION,
            access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            client_options={"allow_http": True},
        )
        return sorted(meta["path"] for page in store.list() for meta in page)
