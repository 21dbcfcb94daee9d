"""Cloud Storage staging: what `tf.io.gfile` does not do.

Jobs read and write their files through `tf.io.gfile`, so `gs://` works
wherever a local path does. Submitting a job needs a little more: checking
that the staging bucket exists before anything is built or sent, and
uploading the trainer's source distribution. That is done here with the
`google-cloud-storage` client, which (unlike TensorFlow's built-in `gs://`
filesystem) can be pointed at a local emulator. Every call is retried
while it fails transiently by `_retry`, the one policy of every cloud call
(the client's own retries are turned off: not two policies, one inside the
other).

The client uses the application default credentials. When
`STORAGE_EMULATOR_HOST` is set (a local GCS-API server such as
`gcp-storage-emulator`), it uses anonymous credentials instead: an emulator
accepts no real ones, and real credentials must not be sent to it.

`google.cloud.storage` is imported inside the functions, so importing
tensorfx (and `tensorfx --help`) does not pay for it.
"""

import os
import re

from tensorfx._errors import ConfigurationError
from tensorfx.cloud import _retry
from tensorfx.cloud._errors import CloudError

# Bucket names: 3-63 characters (up to 222 with dots), lower-case letters,
# digits, '-', '_' and '.', starting and ending with a letter or digit.
_BUCKET = re.compile(r'^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$')

# The project an emulator client reports; an emulator does not check it.
_EMULATOR_PROJECT = 'tensorfx-emulator'


def parse_gcs_uri(uri):
  """Splits a `gs://bucket/path` URI into its bucket and object path.

  Example:
    >>> parse_gcs_uri('gs://my-bucket/staging/trainer.tar.gz')
    ('my-bucket', 'staging/trainer.tar.gz')
    >>> parse_gcs_uri('gs://my-bucket')
    ('my-bucket', '')

  Args:
    uri: a Cloud Storage URI.

  Returns:
    (bucket, path): the path has no leading '/', and is '' for the bucket
    itself.

  Raises:
    ConfigurationError: the URI is not `gs://BUCKET[/PATH]` with a valid
      bucket name.
  """
  text = str(uri)
  if not text.startswith('gs://'):
    raise ConfigurationError(
      f'Expected a Cloud Storage URI gs://BUCKET[/PATH]. Received: uri={text!r}'
    )
  bucket, _, path = text[len('gs://') :].partition('/')
  if not _BUCKET.match(bucket):
    raise ConfigurationError(
      'Expected a Cloud Storage URI gs://BUCKET[/PATH] whose bucket name '
      'has 3-63 lower-case letters, digits, "-", "_" or ".". Received: '
      f'uri={text!r}'
    )
  return bucket, path.lstrip('/')


def join(uri, *parts):
  """Joins path parts onto a `gs://` URI with single slashes.

  Example:
    >>> join('gs://b/jobs/', 'iris', 'packages')
    'gs://b/jobs/iris/packages'
  """
  result = str(uri).rstrip('/')
  for part in parts:
    result = f'{result}/{str(part).strip("/")}'
  return result


def storage_client(project=None):
  """A `google.cloud.storage.Client` for this environment.

  Example:
    >>> storage = storage_client('my-project')  # doctest: +SKIP

  Args:
    project: the project to bill for bucket-level calls, or None for the
      default credentials' project.

  Returns:
    A client with the default credentials, or, when `STORAGE_EMULATOR_HOST`
    is set, with anonymous credentials talking to that emulator.
  """
  from google.cloud import storage

  if os.environ.get('STORAGE_EMULATOR_HOST'):
    from google.auth.credentials import AnonymousCredentials

    return storage.Client(
      project=project or _EMULATOR_PROJECT, credentials=AnonymousCredentials()
    )
  return storage.Client(project=project)


def _failed(what, error):
  message = getattr(error, 'message', None) or str(error)
  return CloudError(f'Cloud Storage: {what} failed: {message}')


def check_bucket(bucket, client=None, what='staging bucket'):
  """Raises unless the bucket exists and can be read.

  Called before anything is built or uploaded, so a typo in a bucket name
  costs nothing.

  Example:
    >>> check_bucket('gs://my-bucket')  # doctest: +SKIP

  Args:
    bucket: a bucket name or any `gs://` URI in it.
    client: a storage client; by default `storage_client()`.
    what: what the bucket is for, in the error message.

  Raises:
    ConfigurationError: "staging bucket gs://x does not exist", or the
      bucket cannot be read with these credentials.
    CloudError: the check itself failed (e.g. no network).
  """
  from google.api_core import exceptions

  name = (
    parse_gcs_uri(bucket)[0]
    if str(bucket).startswith('gs://')
    else parse_gcs_uri(f'gs://{bucket}')[0]
  )
  storage = client or storage_client()
  try:
    _retry.call(
      f'Cloud Storage: checking bucket gs://{name}',
      storage.get_bucket,
      name,
      retry=None,
    )
  except exceptions.NotFound:
    raise ConfigurationError(
      f'{what} gs://{name} does not exist. Create it (gcloud storage '
      f'buckets create gs://{name} --location REGION) or name another '
      'one.'
    ) from None
  except exceptions.Forbidden as e:
    raise ConfigurationError(
      f'{what} gs://{name} cannot be read with these credentials: {e.message}'
    ) from None
  except exceptions.GoogleAPIError as e:
    raise _failed(f'checking bucket gs://{name}', e) from None


def upload(local_path, gcs_uri, client=None):
  """Uploads one local file to a `gs://` object.

  Example:
    >>> upload('dist/trainer-0.1.tar.gz',
    ...        'gs://my-bucket/staging/trainer-0.1.tar.gz')  # doctest: +SKIP
    'gs://my-bucket/staging/trainer-0.1.tar.gz'

  Args:
    local_path: the file to upload.
    gcs_uri: the object to write (replaced if it exists). A URI ending in
      '/' is a directory: the file keeps its name under it.
    client: a storage client; by default `storage_client()`.

  Returns:
    The URI of the uploaded object.

  Raises:
    ConfigurationError: the file does not exist, or the URI is not gs://.
    CloudError: the upload failed.
  """
  from google.api_core import exceptions

  local_path = os.fspath(local_path)
  if not os.path.isfile(local_path):
    raise ConfigurationError(f'{local_path}: no such file to upload.')
  gcs_uri = str(gcs_uri)
  if gcs_uri.endswith('/'):
    gcs_uri += os.path.basename(local_path)
  bucket, path = parse_gcs_uri(gcs_uri)
  if not path:
    raise ConfigurationError(
      f'Expected an object URI gs://BUCKET/PATH to upload {local_path} to. '
      f'Received: gcs_uri={gcs_uri!r}'
    )
  storage = client or storage_client()
  try:
    # A whole upload again: it replaces the object, so it may repeat.
    _retry.call(
      f'Cloud Storage: uploading {local_path} to {gcs_uri}',
      storage.bucket(bucket).blob(path).upload_from_filename,
      local_path,
      retry=None,
    )
  except exceptions.GoogleAPIError as e:
    raise _failed(f'uploading {local_path} to {gcs_uri}', e) from None
  return gcs_uri


def download(gcs_uri, local_path, client=None):
  """Downloads one `gs://` object to a local file.

  Example:
    >>> download('gs://my-bucket/staging/trainer-0.1.tar.gz',
    ...          '/tmp/trainer-0.1.tar.gz')  # doctest: +SKIP
    '/tmp/trainer-0.1.tar.gz'

  Args:
    gcs_uri: the object to read.
    local_path: the file to write (replaced if it exists).
    client: a storage client; by default `storage_client()`.

  Returns:
    `local_path`.

  Raises:
    ConfigurationError: the object does not exist.
    CloudError: the download failed.
  """
  from google.api_core import exceptions

  bucket, path = parse_gcs_uri(str(gcs_uri))
  storage = client or storage_client()
  local_path = os.fspath(local_path)
  try:
    _retry.call(
      f'Cloud Storage: downloading {gcs_uri}',
      storage.bucket(bucket).blob(path).download_to_filename,
      local_path,
      retry=None,
    )
  except exceptions.NotFound:
    if os.path.exists(local_path):
      os.remove(local_path)  # The client leaves an empty file behind.
    raise ConfigurationError(f'{gcs_uri}: no such object.') from None
  except exceptions.GoogleAPIError as e:
    raise _failed(f'downloading {gcs_uri}', e) from None
  return local_path


def upload_directory(local_dir, gcs_uri, client=None):
  """Uploads every file under a local directory, keeping relative paths.

  Example:
    >>> upload_directory('samples/iris', 'gs://b/iris')  # doctest: +SKIP
    ['gs://b/iris/__init__.py', 'gs://b/iris/data/eval.csv', ...]

  Args:
    local_dir: the directory to upload.
    gcs_uri: the `gs://` prefix the directory's contents go under.
    client: a storage client; by default `storage_client()`.

  Returns:
    The uploaded objects' URIs, sorted.

  Raises:
    ConfigurationError: the directory does not exist, or the URI is not gs://.
    CloudError: an upload failed.
  """
  local_dir = os.fspath(local_dir)
  if not os.path.isdir(local_dir):
    raise ConfigurationError(f'{local_dir}: no such directory to upload.')
  parse_gcs_uri(gcs_uri)
  storage = client or storage_client()
  uploaded = []
  for root, dirs, files in os.walk(local_dir):
    dirs.sort()
    for name in sorted(files):
      path = os.path.join(root, name)
      relative = os.path.relpath(path, local_dir).replace(os.sep, '/')
      uploaded.append(upload(path, join(gcs_uri, relative), storage))
  return sorted(uploaded)


def list_uris(prefix, client=None):
  """Lists the objects whose URIs start with a `gs://` prefix.

  Example:
    >>> list_uris('gs://my-bucket/staging/')  # doctest: +SKIP
    ['gs://my-bucket/staging/trainer-0.1.tar.gz']

  Args:
    prefix: `gs://BUCKET[/PREFIX]`; plain string prefix, so 'gs://b/a'
      matches 'gs://b/a/x' and 'gs://b/ab'.
    client: a storage client; by default `storage_client()`.

  Returns:
    The matching objects' URIs, sorted.

  Raises:
    ConfigurationError: the prefix is not gs://.
    CloudError: the listing failed (e.g. the bucket does not exist).
  """
  from google.api_core import exceptions

  bucket, path = parse_gcs_uri(prefix)
  storage = client or storage_client()
  try:
    return _retry.call(
      f'Cloud Storage: listing {prefix}',
      lambda: sorted(
        f'gs://{bucket}/{blob.name}'
        for blob in storage.list_blobs(bucket, prefix=path or None, retry=None)
      ),
    )
  except exceptions.GoogleAPIError as e:
    raise _failed(f'listing {prefix}', e) from None


def exists(gcs_uri, client=None):
  """Whether a `gs://` object exists (a bucket, for a bare `gs://BUCKET`).

  Example:
    >>> exists('gs://my-bucket/staging/trainer-0.1.tar.gz')  # doctest: +SKIP
    True

  Raises:
    ConfigurationError: the URI is not gs://.
    CloudError: the check failed (e.g. access denied).
  """
  from google.api_core import exceptions

  bucket, path = parse_gcs_uri(gcs_uri)
  storage = client or storage_client()
  try:
    found = (
      storage.bucket(bucket) if not path else storage.bucket(bucket).blob(path)
    )
    return _retry.call(
      f'Cloud Storage: checking {gcs_uri}', found.exists, retry=None
    )
  except exceptions.GoogleAPIError as e:
    raise _failed(f'checking {gcs_uri}', e) from None
