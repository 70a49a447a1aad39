"""The ``--help`` paragraph on checkpoints in object storage, shared by the epilogs of the
commands that read checkpoints (``watch``, ``retention``, ``diff``): which URLs, which library
each needs, and the environment variables those libraries already honour for credentials and
emulators (see :mod:`streamwatch.checkpoint.fs`). No imports: the CLI loads it for ``--help``."""

OBJECT_STORES = """\b
Object storage (read-only, through fsspec; credentials as each library finds them):
  s3://BUCKET/PATH          s3fs; AWS_* variables, AWS_ENDPOINT_URL for MinIO & co.
  abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH, az://CONTAINER/PATH
                            adlfs (pip install adlfs); AZURE_STORAGE_CONNECTION_STRING
                            (also how to reach Azurite), or AZURE_STORAGE_ACCOUNT_NAME
                            with AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_TOKEN or
                            AZURE_STORAGE_CLIENT_ID/_SECRET/_TENANT_ID, else az login /
                            managed identity
  gs://BUCKET/PATH          gcsfs (pip install gcsfs); Application Default Credentials
                            (GOOGLE_APPLICATION_CREDENTIALS); STORAGE_EMULATOR_HOST=
                            http://HOST:PORT for an emulator (read anonymously)
A missing library is one line naming the pip install, exit 4.
"""
