"""Evidence and outputs named by URI: one storage layer for every command.

Schemes: ``file://``, ``s3://`` and ``s3a://`` (one store: s3a is what Spark
users write, and Spark's ``spark.hadoop.fs.s3a.*`` settings given with
``--conf`` are honoured for both), ``gs://``, ``abfs://``/``abfss://`` and
``hdfs://`` (where libhdfs and a Java runtime are present), all through
pyarrow's filesystems.  Every remote call has a deadline and runs off the main
thread, so a store that does not answer (``gs://`` without credentials tries
the metadata server for minutes) ends the run with one line, and Ctrl-C or
SIGTERM still end it at once.  Every failure is one line naming the URI.

Locations are compared normalised (``location``): ``file:///x/ev`` and
``/x/ev`` are one place, and so are ``s3a://b/k`` and ``s3://b/k``; the
evidence guard (``safe_write.refuse_inside_inputs``) compares these.

Commands that read evidence through ``segtool.source`` (mmap) read a URI's
files from a read-only mirror under the user's cache directory (``mirror``):
staged once, streamed in bounded slices, kept while the remote file's size and
modification time stay the same.  ``printed_as_given`` turns mirror paths in a
command's result back into the URIs they came from.
"""

from __future__ import annotations

import os
import posixpath
import threading
from functools import lru_cache

from segtool.errors import SegtoolError, UnreadableInput

CONNECT_TIMEOUT_SECONDS = 5.0
REQUEST_TIMEOUT_SECONDS = 60.0
RETRY_ATTEMPTS = 3
GCS_RETRY_SECONDS = 5
# one metadata call or one slice read: the SDKs retry within it, then the run ends with one line
CALL_DEADLINE_SECONDS = 120.0
COPY_SLICE_BYTES = 8 * 1024 * 1024

_S3_SCHEMES = ("s3", "s3a")
_GCS_SCHEMES = ("gs", "gcs")
_AZURE_SCHEMES = ("abfs", "abfss")
_HDFS_SCHEMES = ("hdfs", "viewfs")
SCHEMES = ("file",) + _S3_SCHEMES + _GCS_SCHEMES + _AZURE_SCHEMES + _HDFS_SCHEMES

# ``spark.hadoop.fs.…`` settings given with --conf (Spark's names): set once per run, and shipped
# with the tasks to the processes that run them
_settings: dict[str, str] = {}


def is_uri(path: str) -> bool:
    return "://" in str(path)


def scheme_of(uri: str) -> str:
    return uri.partition("://")[0].lower()


def local_path(path: str) -> str | None:
    """The local path a ``file://`` URI or a plain path names; None for any other URI."""
    if not is_uri(path):
        return path
    if scheme_of(path) != "file":
        return None
    rest = path.partition("://")[2]
    # file:///x (empty authority) and file://localhost/x name /x
    if rest.startswith("localhost/"):
        rest = rest[len("localhost"):]
    return "/" + rest.lstrip("/")


# -- settings -----------------------------------------------------------------------------------------


def storage_conf(conf: list[str] | None) -> tuple[dict[str, str], list[str]]:
    """``--conf`` options split into the storage settings (``spark.hadoop.fs.*``) and the rest (Spark's)."""
    storage: dict[str, str] = {}
    rest: list[str] = []
    for setting in conf or ():
        key, equals, value = setting.partition("=")
        if equals and key.strip().startswith("spark.hadoop.fs."):
            storage[key.strip()] = value
        else:
            rest.append(setting)
    return storage, rest


def configure(settings: dict[str, str]) -> None:
    """The storage settings of this process (the driver's from --conf; a task's as shipped to it).
    Filesystems made before are dropped: they may hold other settings or credentials."""
    _settings.clear()
    _settings.update(settings)
    _filesystem.cache_clear()


def current_settings() -> dict[str, str]:
    return dict(_settings)


def _s3a(key: str, bucket: str) -> str | None:
    """An s3a setting as Hadoop's S3A resolves it: the bucket's own (``fs.s3a.bucket.<b>.<key>``) first."""
    for name in (f"spark.hadoop.fs.s3a.bucket.{bucket}.{key}", f"spark.hadoop.fs.s3a.{key}"):
        if name in _settings:
            return _settings[name].strip()
    return None


def _seconds(value: str | None, default: float) -> float:
    """A Hadoop duration: plain numbers are milliseconds (fs.s3a.connection.timeout=200000), or 30s, 5m, 200ms."""
    if not value:
        return default
    import re

    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)?", value.lower())
    if match is None:
        raise SegtoolError(f"cannot read the duration {value!r} of an fs.s3a setting")
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 0.001}[match.group(2)]
    return float(match.group(1)) * scale


def _true(value: str | None) -> bool | None:
    return None if value is None else value.lower() == "true"


def s3_options(bucket: str) -> dict:
    """pyarrow ``S3FileSystem`` arguments for a bucket from the s3a settings, then the AWS_* environment."""
    from pyarrow import fs

    options: dict = {
        "connect_timeout": _seconds(_s3a("connection.establish.timeout", bucket), CONNECT_TIMEOUT_SECONDS),
        "request_timeout": _seconds(_s3a("connection.timeout", bucket), REQUEST_TIMEOUT_SECONDS),
        "retry_strategy": fs.AwsStandardS3RetryStrategy(
            max_attempts=int(_s3a("attempts.maximum", bucket) or RETRY_ATTEMPTS)),
    }
    endpoint = _s3a("endpoint", bucket) or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    ssl = _true(_s3a("connection.ssl.enabled", bucket))
    if endpoint:
        scheme, found, host = endpoint.partition("://")
        if found:
            options["scheme"] = scheme
        options["endpoint_override"] = host.rstrip("/") if found else endpoint.rstrip("/")
    if ssl is not None:
        options["scheme"] = "https" if ssl else "http"
    if _true(_s3a("path.style.access", bucket)) is False and endpoint:
        options["force_virtual_addressing"] = True  # pyarrow uses path style with an endpoint unless told
    region = _s3a("endpoint.region", bucket) or _s3a("region", bucket)
    if region:
        options["region"] = region
    access_key, secret_key = _s3a("access.key", bucket), _s3a("secret.key", bucket)
    if access_key or secret_key:
        options.update(access_key=access_key, secret_key=secret_key, session_token=_s3a("session.token", bucket))
    provider = _s3a("aws.credentials.provider", bucket) or ""
    if "Anonymous" in provider:
        options["anonymous"] = True
    return options


# -- filesystems --------------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    """An SDK's error as one line: its first line, without pyarrow's and the SDKs' wrappers."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


_READING = ("read", "list", "open the filesystem")


_in_flight: set[int] = set()  # the calls still running in their helper threads


def calls_in_flight() -> bool:
    """A remote call is still running (it was interrupted, or passed its deadline): the SDKs' exit
    handlers would wait for it, so the process must end without them."""
    return bool(_in_flight)


def bounded(uri: str, what: str, call, *args, deadline: float = CALL_DEADLINE_SECONDS):
    """``call(*args)`` with a deadline, in a helper thread: the main thread keeps taking Ctrl-C and
    SIGTERM while a native SDK call blocks, and a store that never answers ends the run with one line.
    (An Event, not ``Thread.join``: a join interrupted by a signal marks a running thread stopped.)"""
    outcome: list = []
    finished = threading.Event()

    def run():
        try:
            outcome.append(("ok", call(*args)))
        except BaseException as exc:  # handed to the caller's thread, which decides
            outcome.append(("error", exc))
        finally:
            _in_flight.discard(id(finished))
            finished.set()

    _in_flight.add(id(finished))
    threading.Thread(target=run, name="segtool storage call", daemon=True).start()
    if not finished.wait(deadline):
        raise UnreadableInput(f"cannot {what}: no answer within {deadline:.0f} s", uri)
    state, value = outcome[0]
    if state == "error":
        if isinstance(value, SegtoolError):
            raise value
        # a failed write or removal is refused output (exit 2 as well), not unreadable evidence
        error = UnreadableInput if what in _READING else SegtoolError
        if isinstance(value, FileNotFoundError):
            raise error("no such file or directory", uri) from None
        raise error(f"cannot {what}: {_one_line(value)}", uri) from None
    return value


@lru_cache(maxsize=32)
def _filesystem(scheme: str, authority: str):
    """The pyarrow filesystem of one bucket / container / name node, with timeouts and retry limits."""
    from pyarrow import fs

    if scheme == "file":
        return fs.LocalFileSystem()
    if scheme in _S3_SCHEMES:
        return fs.S3FileSystem(**s3_options(authority))
    if scheme in _GCS_SCHEMES:
        from datetime import timedelta

        # without a limit the client retries a missing credential for many minutes
        return fs.GcsFileSystem(retry_time_limit=timedelta(seconds=GCS_RETRY_SECONDS))
    if scheme in _AZURE_SCHEMES:
        if not hasattr(fs, "AzureFileSystem"):
            import pyarrow

            raise SegtoolError(f"abfs:// needs pyarrow 16 or newer built with Azure support (this is pyarrow "
                               f"{pyarrow.__version__})")
        container, _, host = authority.partition("@")
        account = host.split(".")[0]
        key = _settings.get(f"spark.hadoop.fs.azure.account.key.{host}") or os.environ.get("AZURE_STORAGE_ACCOUNT_KEY")
        return fs.AzureFileSystem(account_name=account, account_key=key or None)
    if scheme in _HDFS_SCHEMES:
        host, _, port = authority.partition(":")
        try:
            return fs.HadoopFileSystem(host or "default", int(port or 0))
        except OSError as exc:
            raise SegtoolError(f"hdfs:// needs libhdfs and a Java runtime on this machine (HADOOP_HOME, JAVA_HOME, "
                               f"CLASSPATH from `hadoop classpath --glob`): {_one_line(exc)}") from None
    raise SegtoolError(f"unknown storage scheme {scheme}://: use a path, file://, s3://, s3a://, gs://, abfs://, "
                       "abfss:// or hdfs://")


def split(uri: str):
    """(pyarrow filesystem, path inside it) of a URI."""
    scheme = scheme_of(uri)
    if scheme == "file":
        return _filesystem("file", ""), local_path(uri)
    rest = uri.partition("://")[2]
    authority, _, inner = rest.partition("/")
    if not authority:
        raise UnreadableInput("a URI names its bucket, container or host: scheme://bucket/path", uri)
    try:
        filesystem = bounded(uri, "open the filesystem", _filesystem, scheme, authority)
    except UnreadableInput:
        raise
    except SegtoolError as exc:
        raise UnreadableInput(exc.message, uri) from None
    inner = posixpath.normpath("/" + inner).lstrip("/")
    if scheme in _S3_SCHEMES or scheme in _GCS_SCHEMES:
        return filesystem, posixpath.join(authority, inner).rstrip("/")
    if scheme in _AZURE_SCHEMES:
        return filesystem, posixpath.join(authority.partition("@")[0], inner).rstrip("/")
    return filesystem, "/" + inner


def location(path: str) -> str:
    """One spelling per place: a real local path, or ``scheme://authority/normalised/path`` with s3a as s3,
    gcs as gs and abfss as abfs (the same store whichever protocol reaches it)."""
    local = local_path(path)
    if local is not None:
        return os.path.realpath(os.path.abspath(local))
    scheme = scheme_of(path)
    scheme = {"s3a": "s3", "gcs": "gs", "abfss": "abfs"}.get(scheme, scheme)
    authority, _, inner = path.partition("://")[2].partition("/")
    if scheme == "abfs":
        container, _, host = authority.partition("@")
        authority = f"{container}@{host.split('.')[0]}".lower()
    elif scheme in ("s3", "gs"):
        authority = authority.lower()
    inner = posixpath.normpath("/" + inner)
    return f"{scheme}://{authority}{inner.rstrip('/') or ''}"


def within(path: str, place: str) -> bool:
    """``path`` is ``place`` or below it, both as ``location`` spells them."""
    path, place = location(path), location(place)
    return path == place or path.startswith(place.rstrip("/") + "/")


# -- the read-only mirror of URI evidence ----------------------------------------------------------------


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "segtool")


def mirror_path(uri: str, cache: str | None = None) -> str:
    """Where ``mirror`` puts what a URI names, below ``cache`` (default: the user's cache directory)."""
    scheme, _, rest = location(uri).partition("://")
    return os.path.join(cache or cache_dir(), "mirror", scheme, *[part for part in rest.split("/") if part])


def _list(uri: str) -> list[tuple[str, int, int]]:
    """(relative path, size, mtime ns) of the file a URI names, or of every file below it."""
    from pyarrow import fs

    filesystem, inner = split(uri)
    info = bounded(uri, "read", filesystem.get_file_info, inner)
    if info.type == fs.FileType.NotFound:
        raise UnreadableInput("no such file or directory", uri)
    if info.type == fs.FileType.File:
        return [("", info.size or 0, info.mtime_ns or 0)]
    infos = bounded(uri, "list", filesystem.get_file_info, fs.FileSelector(inner, recursive=True))
    prefix = inner.rstrip("/") + "/"
    return sorted((entry.path[len(prefix):], entry.size or 0, entry.mtime_ns or 0) for entry in infos
                  if entry.type == fs.FileType.File and entry.path.startswith(prefix))


def _copy_down(uri: str, target: str, size: int, mtime_ns: int) -> None:
    """Stream one remote file to ``target`` in slices (temp file, then rename), read-only, stamped with
    the remote modification time so the next run knows it is current."""
    filesystem, inner = split(uri)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    temporary = f"{target}.{os.getpid()}.{threading.get_ident()}.part"
    try:
        handle = bounded(uri, "read", filesystem.open_input_stream, inner)
        with handle, open(temporary, "wb") as out:
            copied = 0
            while chunk := bounded(uri, "read", handle.read, COPY_SLICE_BYTES):
                out.write(chunk)
                copied += len(chunk)
        if copied != size:
            raise UnreadableInput(f"read {copied} bytes of {size}: the object changed while it was copied", uri)
        os.chmod(temporary, 0o444)
        os.utime(temporary, ns=(mtime_ns, mtime_ns))
        os.replace(temporary, target)
    except OSError as exc:
        raise SegtoolError(f"cannot stage into the cache {os.path.dirname(target)}: {exc.strerror or exc}", uri) from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _current(target: str, size: int, mtime_ns: int) -> bool:
    try:
        stat = os.stat(target)
    except OSError:
        return False
    return stat.st_size == size and (not mtime_ns or stat.st_mtime_ns == mtime_ns)


def mirror(path: str, cache: str | None = None) -> str:
    """A local path holding what ``path`` names: the path itself (plain or ``file://``), else the URI's
    read-only mirror in the cache, its files copied down unless already there and unchanged.  A pipeline
    task passes its own ``cache`` (a folder of its executor's) to stage just the files it reads."""
    local = local_path(path)
    if local is not None:
        return local
    target = mirror_path(path, cache)
    base = path.rstrip("/")
    for relative, size, mtime_ns in _list(path):
        destination = os.path.join(target, *relative.split("/")) if relative else target
        if not _current(destination, size, mtime_ns):
            _copy_down(f"{base}/{relative}" if relative else base, destination, size, mtime_ns)
    if not os.path.exists(target):  # an empty directory: nothing to copy, but a place to read
        os.makedirs(target)
    return target


def printed_as_given(result, places: dict[str, str]):
    """``result`` (a command's typed dicts and lists) with every path below a local place written as the
    URI it was given as: ``places`` maps local path -> URI."""
    ordered = sorted(places.items(), key=lambda pair: -len(pair[0]))

    def rewrite(value):
        if isinstance(value, str):
            for local, uri in ordered:
                if value == local or value.startswith(local.rstrip(os.sep) + os.sep):
                    return uri.rstrip("/") + value[len(local.rstrip(os.sep)):].replace(os.sep, "/")
            return value
        if isinstance(value, dict):
            return {key: rewrite(item) for key, item in value.items()}
        if isinstance(value, list):
            return [rewrite(item) for item in value]
        if isinstance(value, tuple):
            return tuple(rewrite(item) for item in value)
        return value

    return rewrite(result)


# -- writing outputs to URIs ----------------------------------------------------------------------------


def has_files(uri: str) -> bool:
    from pyarrow import fs

    filesystem, inner = split(uri)
    info = bounded(uri, "read", filesystem.get_file_info, inner)
    if info.type == fs.FileType.File:
        return True
    if info.type == fs.FileType.NotFound:
        return False
    return bool(bounded(uri, "list", filesystem.get_file_info, fs.FileSelector(inner, recursive=True)))


def upload_tree(local_dir: str, uri: str) -> list[str]:
    """Copy every file below ``local_dir`` to the same relative place below ``uri``, in slices; each object
    appears only when its upload completes.  Returns the URIs written."""
    written = []
    base = uri.rstrip("/")
    for directory, _, files in os.walk(local_dir):
        for name in sorted(files):
            source = os.path.join(directory, name)
            relative = os.path.relpath(source, local_dir).replace(os.sep, "/")
            target = f"{base}/{relative}"
            filesystem, inner = split(target)
            bounded(target, "write", lambda: filesystem.create_dir(posixpath.dirname(inner), recursive=True))
            out = bounded(target, "write", filesystem.open_output_stream, inner)
            with open(source, "rb") as handle:
                while chunk := handle.read(COPY_SLICE_BYTES):
                    bounded(target, "write", out.write, chunk)
            bounded(target, "write", out.close)
            written.append(target)
    return written
