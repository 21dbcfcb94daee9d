"""Staging helpers against a real GCS-API server (gcp-storage-emulator)."""

import pytest

from cloud_fakes import BUCKET
from cloud_fakes import _emulator_server  # noqa: F401  (a fixture: pytest finds it by name)
from cloud_fakes import emulator  # noqa: F401  (a fixture: pytest finds it by name)
from tensorfx import ConfigurationError
from tensorfx import cloud


@pytest.mark.parametrize(
  'uri, expected',
  [
    ('gs://my-bucket/a/b.tar.gz', ('my-bucket', 'a/b.tar.gz')),
    ('gs://my-bucket', ('my-bucket', '')),
    ('gs://my-bucket/', ('my-bucket', '')),
    ('gs://my.bucket_1//x', ('my.bucket_1', 'x')),
  ],
)
def test_parse_gcs_uri(uri, expected):
  assert cloud.parse_gcs_uri(uri) == expected


@pytest.mark.parametrize(
  'uri',
  [
    '/tmp/x',
    's3://bucket/x',
    'gs://',
    'gs://B',
    'gs://ab/x',
    'gs://bad bucket/x',
  ],
)
def test_parse_gcs_uri_rejects_non_gs(uri):
  with pytest.raises(
    ConfigurationError,
    match='Expected a Cloud Storage URI'
    r'.*Received: uri=',
  ):
    cloud.parse_gcs_uri(uri)


def test_upload_exists_and_list(emulator, tmp_path):
  source = tmp_path / 'trainer-0.1.tar.gz'
  source.write_bytes(b'not really a tarball')
  uri = cloud.upload(source, f'gs://{BUCKET}/staging/', emulator)
  assert uri == f'gs://{BUCKET}/staging/trainer-0.1.tar.gz'
  assert cloud.exists(uri, emulator)
  assert not cloud.exists(f'gs://{BUCKET}/staging/other', emulator)
  assert cloud.exists(f'gs://{BUCKET}', emulator)
  assert not cloud.exists('gs://no-such-bucket', emulator)
  assert cloud.list_uris(f'gs://{BUCKET}/staging', emulator) == [uri]
  assert cloud.list_uris(f'gs://{BUCKET}/nothing/', emulator) == []
  blob = emulator.bucket(BUCKET).blob('staging/trainer-0.1.tar.gz')
  assert blob.download_as_bytes() == b'not really a tarball'


def test_default_client_comes_from_the_emulator_variable(emulator, tmp_path):
  del emulator  # Only its STORAGE_EMULATOR_HOST and bucket are used.
  source = tmp_path / 'a.txt'
  source.write_text('a')
  uri = cloud.upload(source, f'gs://{BUCKET}/a.txt')
  assert cloud.list_uris(f'gs://{BUCKET}/') == [uri]


def test_upload_directory_keeps_relative_paths(emulator, tmp_path):
  (tmp_path / 'pkg' / 'data').mkdir(parents=True)
  (tmp_path / 'pkg' / 'a.py').write_text('a')
  (tmp_path / 'pkg' / 'data' / 'b.csv').write_text('b')
  uris = cloud.upload_directory(tmp_path / 'pkg', f'gs://{BUCKET}/up', emulator)
  assert uris == [f'gs://{BUCKET}/up/a.py', f'gs://{BUCKET}/up/data/b.csv']
  assert cloud.list_uris(f'gs://{BUCKET}/up', emulator) == uris


def test_check_bucket(emulator):
  cloud.check_bucket(BUCKET, emulator)
  cloud.check_bucket(f'gs://{BUCKET}/some/prefix', emulator)
  with pytest.raises(
    ConfigurationError,
    match='^staging bucket gs://no-such-bucket does not exist',
  ):
    cloud.check_bucket('gs://no-such-bucket/x', emulator)


def test_upload_errors_name_the_input(emulator, tmp_path):
  with pytest.raises(ConfigurationError, match='no such file to upload'):
    cloud.upload(tmp_path / 'missing.tar.gz', f'gs://{BUCKET}/x', emulator)
  source = tmp_path / 'a.txt'
  source.write_text('a')
  with pytest.raises(ConfigurationError, match='Expected an object URI'):
    cloud.upload(source, f'gs://{BUCKET}', emulator)
  with pytest.raises(ConfigurationError, match='no such directory'):
    cloud.upload_directory(tmp_path / 'nope', f'gs://{BUCKET}/x', emulator)
  with pytest.raises(cloud.CloudError, match='uploading .* failed'):
    cloud.upload(source, 'gs://no-such-bucket/a.txt', emulator)
