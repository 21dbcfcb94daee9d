"""Inside the trainer image: install a job's staged packages, as Vertex does.

Vertex AI's prebuilt executors pip-install a job's `packageUris` and run
`python -m MODULE ARGS`. The tensorfx trainer image does the same with
`tensorfx run-package`, so a Python-package job runs on the pinned stack
(Python 3.11, TensorFlow 2.21) that no prebuilt executor has.
"""

import os
import subprocess
import sys
import tempfile

from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger
from tensorfx.cloud import _storage
from tensorfx.cloud._errors import CloudError


def install_packages(package_uris, target=None, client=None):
  """Downloads packages (gs:// or local) and pip-installs them.

  Example:
    >>> install_packages(['gs://my-bucket/staging/iris-0.1.tar.gz'])
    ... # doctest: +SKIP

  Args:
    package_uris: sdists or wheels: `gs://` URIs or local paths.
    target: a directory to install into (added to `sys.path`), or None for
      this Python's site-packages.
    client: a storage client for gs:// URIs; by default
      `storage_client()`.

  Raises:
    ConfigurationError: a package that does not exist.
    CloudError: a download or the installation failed (pip's output says
      why).
  """
  if not package_uris:
    return
  with tempfile.TemporaryDirectory(prefix='tensorfx-packages-') as workdir:
    files = []
    for uri in package_uris:
      uri = str(uri)
      if uri.startswith('gs://'):
        local = os.path.join(workdir, os.path.basename(uri.rstrip('/')))
        client = client or _storage.storage_client()
        _storage.download(uri, local, client)
      elif os.path.isfile(uri):
        local = uri
      else:
        raise ConfigurationError(f'--package-uris: no such package {uri!r}.')
      files.append(local)
    # Build isolation would fetch setuptools from PyPI for every sdist; the
    # image has it, so a job starts without that round trip.
    command = [
      sys.executable,
      '-m',
      'pip',
      'install',
      '--quiet',
      '--no-build-isolation',
      '--disable-pip-version-check',
      '--no-warn-script-location',
    ]
    if target:
      command += ['--target', target]
    command += files
    logger.info('Installing %s', ', '.join(package_uris))
    result = subprocess.run(
      command, capture_output=True, text=True, check=False
    )
  if result.returncode != 0:
    raise CloudError(
      f'pip could not install {", ".join(package_uris)} (exit '
      f'{result.returncode}):\n{(result.stderr or result.stdout)[-2000:]}'
    )
  if target and target not in sys.path:
    sys.path.insert(0, target)
