"""Object stores under an archive root: a local folder or an S3-compatible bucket (boto3).

Both offer get/put/list on '/'-separated keys relative to the root and turn every failure into an
`ArchiveError` with one line saying what is wrong where. A put is atomic for readers: a local
file is renamed into place; an S3 object appears whole. The S3 client is MinIO's (not boto3:
botocore pins python-dateutil<3, which cannot share an environment with the kubernetes client).
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from mongobench_archive.errors import ArchiveError
from mongobench_archive.layout import Location


class Store(Protocol):
    location: Location

    def get(self, key: str) -> bytes | None:
        """The object's bytes; None when there is no such object."""

    def put(self, key: str, data: bytes) -> None: ...

    def keys(self) -> list[str]:
        """Every key under the root (relative, '/'-separated)."""


class LocalStore:
    def __init__(self, location: Location) -> None:
        self.location = location
        self.root = Path(location.path).expanduser()

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*key.split("/"))

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise ArchiveError(f"{self.location.url(key)}: cannot read ({e.strerror})") from None

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as e:
            raise ArchiveError(f"{self.location.url(key)}: cannot write ({e.strerror})") from None

    def keys(self) -> list[str]:
        if not self.root.exists():
            raise ArchiveError(f"{self.location.url()}: no such folder")
        if not self.root.is_dir():
            raise ArchiveError(f"{self.location.url()}: not a folder")
        out: list[str] = []
        try:
            for dirpath, _dirs, files in os.walk(self.root, onerror=_raise):
                rel = Path(dirpath).relative_to(self.root).as_posix()
                for f in files:
                    if not f.startswith(".part-"):
                        out.append(f if rel == "." else f"{rel}/{f}")
        except OSError as e:
            raise ArchiveError(f"{self.location.url()}: cannot list ({e.strerror})") from None
        return sorted(out)


def _raise(e: OSError) -> None:
    raise e


# S3 error codes, as servers send them, and what they mean to the user.
_DENIED = frozenset(
    {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken"}
)
_NO_BUCKET = frozenset({"NoSuchBucket"})
_NOT_FOUND = frozenset({"NoSuchKey", "NotFound"})
_AWS_ENDPOINT = "https://s3.amazonaws.com"


def _credentials(
    access_key_id: str | None,
    secret_access_key: str | None,
    session_token: str | None,
    anonymous: bool,
) -> Any:
    """The usual AWS chain, without a default probe of the EC2 metadata address: explicit
    arguments, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the shared credentials file (AWS_PROFILE),
    and the container or web-identity (IRSA) providers only when their variables are set.
    None (anonymous requests) when nothing supplies credentials or `anonymous` asks so."""
    from minio.credentials import providers  # noqa: PLC0415

    if anonymous:
        return None
    if access_key_id or secret_access_key:
        if not (access_key_id and secret_access_key):
            raise ArchiveError("S3 credentials need both an access key id and a secret key")
        return providers.StaticProvider(access_key_id, secret_access_key, session_token)
    chain: list[Any] = [providers.EnvAWSProvider(), providers.AWSConfigProvider()]
    if any(
        os.environ.get(v)
        for v in (
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        )
    ):
        chain.append(providers.IamAwsProvider())
    for provider in chain:
        try:
            provider.retrieve()
        except ValueError:
            continue
        return provider
    return None


def _split_endpoint(url: str) -> tuple[str, bool]:
    parsed = urllib.parse.urlsplit(url if "://" in url else f"https://{url}")
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ArchiveError(f"S3 endpoint {url!r}: give http(s)://HOST[:PORT]")
    if parsed.path.strip("/"):
        raise ArchiveError(
            f"S3 endpoint {url!r}: no path after HOST[:PORT] (bucket goes in the URL)"
        )
    return parsed.netloc, parsed.scheme == "https"


class S3Store:
    """An S3-compatible bucket through the MinIO Python client (any S3 API: AWS, MinIO, Ceph,
    ...). Credentials are kept by the client only, never written or logged."""

    def __init__(
        self,
        location: Location,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        max_attempts: int = 3,
        anonymous: bool = False,
    ) -> None:
        import urllib3  # noqa: PLC0415 - a local folder needs no S3 client
        from minio import Minio  # noqa: PLC0415

        self.location = location
        self.endpoint_url = (
            endpoint_url
            or os.environ.get("AWS_ENDPOINT_URL_S3")
            or os.environ.get("AWS_ENDPOINT_URL")
            or _AWS_ENDPOINT
        )
        host, secure = _split_endpoint(self.endpoint_url)
        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=connect_timeout, read=read_timeout),
            retries=urllib3.Retry(
                total=max(0, max_attempts - 1),
                backoff_factor=0.2,
                status_forcelist=[500, 502, 503, 504],
            ),
        )
        try:
            self._client = Minio(
                host,
                secure=secure,
                region=region
                or os.environ.get("AWS_REGION")
                or os.environ.get("AWS_DEFAULT_REGION"),
                http_client=http,
                credentials=_credentials(
                    access_key_id, secret_access_key, session_token, anonymous
                ),
            )
        except ValueError as e:
            raise ArchiveError(f"{location.url()}: cannot set up the S3 client ({e})") from None

    def _key(self, key: str) -> str:
        return f"{self.location.prefix}/{key}" if self.location.prefix else key

    @contextlib.contextmanager
    def _errors(self, action: str, key: str = "") -> Iterator[None]:
        import urllib3  # noqa: PLC0415
        from minio.error import MinioException, S3Error  # noqa: PLC0415

        where = self.location.url(key)
        endpoint = self.endpoint_url
        try:
            yield
        except S3Error as e:
            code = e.code or ""
            if code in _NO_BUCKET:
                raise ArchiveError(
                    f"{where}: bucket {self.location.bucket!r} does not exist at {endpoint}"
                ) from None
            if code in _DENIED:
                raise ArchiveError(
                    f"{where}: {endpoint} refused the credentials ({code})"
                ) from None
            raise ArchiveError(f"{where}: cannot {action}: {e.message or code}") from None
        except MinioException as e:
            raise ArchiveError(f"{where}: cannot {action}: {e}") from None
        except urllib3.exceptions.HTTPError as e:
            reason = getattr(e, "reason", None) or e
            raise ArchiveError(
                f"{where}: cannot reach {endpoint} ({type(reason).__name__})"
            ) from None

    def get(self, key: str) -> bytes | None:
        from minio.error import S3Error  # noqa: PLC0415

        with self._errors("read", key):
            try:
                resp = self._client.get_object(self.location.bucket, self._key(key))
            except S3Error as e:
                if e.code in _NOT_FOUND:
                    return None
                raise
            try:
                return resp.read()
            finally:
                resp.close()
                resp.release_conn()

    def put(self, key: str, data: bytes) -> None:
        with self._errors("write", key):
            self._client.put_object(
                self.location.bucket,
                self._key(key),
                io.BytesIO(data),
                len(data),
                content_type="application/json",
            )

    def keys(self) -> list[str]:
        base = f"{self.location.prefix}/" if self.location.prefix else ""
        with self._errors("list"):
            names = [
                o.object_name
                for o in self._client.list_objects(
                    self.location.bucket, prefix=base, recursive=True
                )
                if o.object_name is not None
            ]
        return sorted(n[len(base) :] for n in names)
