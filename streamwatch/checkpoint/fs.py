"""Read-only storage access for the checkpoint reader: local folders through ``os`` (fast
path) and anything else through fsspec (``s3://…`` with s3fs, ``abfss://…``/``az://…`` with
adlfs, ``gs://…`` with gcsfs, ``file://…``, ``memory://…``).

This module opens a path or URL (:func:`open_storage`, :func:`open_fs`, :func:`url_of`); the
storages themselves are :mod:`streamwatch.checkpoint.storage` (the interface, local folders)
and :mod:`streamwatch.checkpoint.objectstore` (fsspec, Azure), all importable from here.

Only listing and reading are offered; nothing here can create, modify or delete a file.
Listing a folder that vanished (Spark renames temporary files while we read) yields an empty
listing instead of an error.

Object stores are configured the way their fsspec libraries already are — nothing here reads
a credential itself:

* S3 (s3fs): boto3's chain (``AWS_ACCESS_KEY_ID``…, profiles, instance roles);
  ``AWS_ENDPOINT_URL``/``FSSPEC_S3_ENDPOINT_URL`` for MinIO, moto and other S3-compatible stores.
* Azure Blob Storage / ADLS Gen2 (adlfs): ``abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH``
  names the account, ``az://CONTAINER/PATH`` takes it from ``AZURE_STORAGE_ACCOUNT_NAME``;
  credentials from ``AZURE_STORAGE_CONNECTION_STRING`` (also the way to reach Azurite: its
  ``BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1``), ``AZURE_STORAGE_ACCOUNT_KEY``,
  ``AZURE_STORAGE_SAS_TOKEN``, ``AZURE_STORAGE_CLIENT_ID``/``_SECRET``/``AZURE_STORAGE_TENANT_ID``,
  else azure-identity's ``DefaultAzureCredential`` (managed identity, ``az login``…).
* Google Cloud Storage (gcsfs): Application Default Credentials
  (``GOOGLE_APPLICATION_CREDENTIALS``, ``gcloud auth application-default login``, the metadata
  server); ``STORAGE_EMULATOR_HOST`` (e.g. ``http://127.0.0.1:9023``) points it at an emulator,
  which is then read anonymously unless ``storage_options`` give a ``token``.

Listings of Azure and GCS folders are never cached (``use_listings_cache=False``): a monitor
re-lists folders a running query keeps writing to.
"""

from __future__ import annotations

from typing import Any

from streamwatch.checkpoint.objectstore import (
    AZURE_PROTOCOLS,
    GCS_PROTOCOLS,
    AzureStorage,
    FsspecStorage,
    _azure_authority,
    _azure_options,
    azure_account,
    gcs_emulator,
    object_info,
    store_errors_as_oserror,
)
from streamwatch.checkpoint.storage import Item, LocalStorage, Storage, StorageError, Tree
from streamwatch.errors import one_line

__all__ = [
    "AZURE_PROTOCOLS",
    "GCS_PROTOCOLS",
    "AzureStorage",
    "FsspecStorage",
    "Item",
    "LocalStorage",
    "Storage",
    "StorageError",
    "Tree",
    "azure_account",
    "gcs_emulator",
    "object_info",
    "open_fs",
    "open_storage",
    "protocol_of",
    "store_errors_as_oserror",
    "url_of",
]

#: What to install for a protocol whose fsspec implementation is missing: (package, extra of
#: streamwatch that brings it, or None).
_PACKAGES: dict[str, tuple[str, str | None]] = {
    **{p: ("s3fs", None) for p in ("s3", "s3a")},
    **{p: ("adlfs", "azure") for p in AZURE_PROTOCOLS},
    **{p: ("gcsfs", "gcs") for p in GCS_PROTOCOLS},
}


def protocol_of(url: str) -> str | None:
    """The URL's scheme, lower case (``abfss`` for ``abfss://c@a.dfs.core.windows.net/p``);
    None for a local path."""
    return url.split("://", 1)[0].lower() if "://" in url else None


def _missing_library(url: str, protocol: str, e: BaseException) -> str:
    package, extra = _PACKAGES.get(protocol, (None, None))
    if package is None:
        return f"{url}: cannot open ({one_line(e)})"
    how = f"pip install {package} (streamwatch's [{extra}] extra)" if extra else f"pip install {package}"
    return f"{url}: reading {protocol}:// needs {package}, which is not installed: {how}"


def open_fs(url: str, storage_options: dict[str, Any] | None = None) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) for the URL ``url``, configured as the module
    docstring says: Azure and GCS listings uncached; on a GCS emulator gcsfs's plain JSON-API
    filesystem, anonymous unless ``storage_options`` give a ``token`` (gcsfs's default class
    first asks Google's Storage Control API over gRPC what kind of bucket it is, which no
    emulator serves: a minute of retries per object). ``storage_options`` win over these
    defaults. Raises :class:`StorageError` (one line) when the library for the URL's scheme is
    not installed — naming the ``pip install`` to run —, the URL is malformed, or an Azure
    URL has no account."""
    protocol = protocol_of(url) or "file"
    opts = dict(storage_options or {})
    try:
        if protocol in AZURE_PROTOCOLS:
            import adlfs  # noqa: F401 - missing, it is what to install that the user needs first

            _azure_options(url, opts)
            opts = {"use_listings_cache": False, **opts}
        elif protocol in GCS_PROTOCOLS:
            opts = {"use_listings_cache": False, **opts}
            if gcs_emulator(opts):
                from gcsfs.core import GCSFileSystem

                opts = {"token": "anon", **GCSFileSystem._get_kwargs_from_urls(url), **opts}
                return GCSFileSystem(**opts), GCSFileSystem._strip_protocol(url)
        from fsspec.core import url_to_fs

        fs, inner = url_to_fs(url, **opts)
    except ImportError as e:
        raise StorageError(_missing_library(url, protocol, e)) from None
    except (ValueError, TypeError) as e:  # a malformed URL; adlfs: no account or credentials
        raise StorageError(f"{url}: cannot open ({one_line(e)})") from None
    return fs, inner


def url_of(raw: str, inner: str) -> str:
    """``inner`` — a path in the storage :func:`open_storage` gave for ``raw`` — named the way
    ``raw`` was typed: a local path as it is, else ``scheme://inner``, keeping an Azure URL's
    ``@ACCOUNT.dfs.core.windows.net`` (adlfs paths are ``container/path``: the account would be
    lost, and with it the way to open the URL again)."""
    protocol = protocol_of(raw)
    if protocol is None or protocol == "file":
        return inner
    scheme = raw.split("://", 1)[0]
    if protocol in AZURE_PROTOCOLS:
        container, host = _azure_authority(raw)
        if host and (inner == container or inner.startswith(container + "/")):
            return f"{scheme}://{container}@{host}{inner[len(container):]}"
    return f"{scheme}://{inner}"


def open_storage(path: str, storage_options: dict[str, Any] | None = None) -> tuple[Storage, str]:
    """(storage, path in that storage) for a local path or an fsspec URL. Raises
    :class:`StorageError` when fsspec cannot handle the URL (see :func:`open_fs`)."""
    if "://" not in path:
        return LocalStorage(), path
    if path.startswith("file://"):
        return LocalStorage(), path[len("file://") :] or "/"
    fs, inner = open_fs(path, storage_options)
    fs.invalidate_cache()  # fsspec caches instances and listings; a checkpoint changes
    storage = AzureStorage(fs) if protocol_of(path) in AZURE_PROTOCOLS else FsspecStorage(fs)
    return storage, inner.rstrip("/") or inner
