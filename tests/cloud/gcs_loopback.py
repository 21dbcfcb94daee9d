r"""A GCS-API server on loopback that TensorFlow's own GCS filesystem reaches.

`google-cloud-storage` and Beam follow `STORAGE_EMULATOR_HOST`, but
TensorFlow's GCS filesystem (`tf.io.gfile`, `tf.data`, checkpoints,
SavedModels, summaries on `gs://`) has no endpoint setting: it always
calls `https://www.googleapis.com` and `https://storage.googleapis.com`.
So the server runs in a private mount and network namespace
(`unshare -mn`, which needs root):

- a fresh loopback interface, so ports 80 and 443 clash with nothing else
  on the machine (other tests, other jobs);
- `/etc/hosts` bind-mounted over with those names (and
  `oauth2.googleapis.com`) on 127.0.0.1;
- `gcp-storage-emulator`'s handlers, repaired (below), served by one
  process on 127.0.0.1:443 (TLS, a self-signed certificate for those names
  that `CURL_CA_BUNDLE` trusts), on 127.0.0.1:80 (the resumable-upload
  `Location` URLs it hands out are `http://`), and on a port of the
  machine's own loopback for the test process itself.

Child processes run in the namespace (`nsenter`) with
`GOOGLE_AUTH_TOKEN_FOR_TESTING` (TensorFlow sends that token instead of
asking for one), `NO_GCE_CHECK=true` (no metadata-server probe) and
`STORAGE_EMULATOR_HOST` (google-cloud-storage, hence Beam's GCS IO and the
library's staging). Nothing leaves the machine.

The emulator's own `HTTPServer` answers one connection at a time; here a
threading server answers each connection in its own thread (TensorFlow
opens several), with the handlers run one at a time under a lock, as the
emulator's store expects.

Faults of gcp-storage-emulator (2026.7.19) worked around here (patched in
this process when the server starts; each is the emulator departing from
the service, to report upstream):

1. An upload with an empty body (TensorFlow's directory marker `dir/`, an
   empty file) crashed the upload handler (`len(None)`): an empty body is
   read as no body. Repaired: an upload without a body stores `b''`.
2. A request body sent with both `Transfer-Encoding: chunked` and a
   `Content-Length` (TensorFlow's resumable-upload `PUT`s, through
   libcurl) was read by `Content-Length`, so the chunk framing was stored
   instead of the data (a 2-byte file read back as `b'2\r'`). HTTP/1.1
   says the transfer coding wins. Repaired: chunked bodies are decoded
   first (with chunk extensions and trailers).
3. `GET /storage/v1/b/BUCKET/storageLayout`, which TensorFlow asks before
   renaming a directory (to learn whether the bucket has a hierarchical
   namespace), answered 404, so every directory rename failed. Repaired:
   it answers as the service does for a bucket without one.
4. An object's `mediaLink` was the address of the server as the client
   that uploaded it called it, forever: a file uploaded by the test process
   (on this machine's loopback port) could not be downloaded by Beam's GCS
   IO in the namespace, which follows `mediaLink`. The service answers
   with its own address. Repaired: `mediaLink` is answered on the address
   the request came to.
"""

from collections.abc import Iterator
import contextlib
import functools
import http
import http.server
import logging
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from typing import IO, Any, cast

import pytest

NAMES = (
  'www.googleapis.com',
  'storage.googleapis.com',
  'oauth2.googleapis.com',
)
BUCKET = 'tensorfx-jobs'


# --- The server side: runs inside the namespace. -------------------------


def _repair_emulator() -> None:
  """Patches gcp-storage-emulator's faults (the module docstring's list)."""
  from gcp_storage_emulator import server
  from gcp_storage_emulator.exceptions import NotFound
  from gcp_storage_emulator.handlers import objects

  def empty_body(handler):
    @functools.wraps(handler)
    def repaired(request, response, storage, *args, **kwargs):
      if request.data is None:
        request._data = b''
      return handler(request, response, storage, *args, **kwargs)

    return repaired

  read_raw = server._read_raw_data

  def chunked_first(request_handler):
    encoding = request_handler.headers.get('Transfer-Encoding', '')
    if encoding.lower() != 'chunked':
      return read_raw(request_handler)
    data = b''
    while True:
      # A chunk's size may carry extensions (`;name=value`).
      line = request_handler.rfile.readline().split(b';')[0].strip()
      size = int(line, 16) if line else 0
      if not size:
        break
      data += request_handler.rfile.read(size)
      request_handler.rfile.readline()
    while request_handler.rfile.readline().strip():
      pass  # Trailer fields, up to the blank line that ends the body.
    return data

  server._read_raw_data = chunked_first

  def storage_layout(request, response, storage):
    name = request.params['bucket_name']
    try:
      storage.get_bucket(name)
    except NotFound:
      response.status = http.HTTPStatus.NOT_FOUND
      return
    response.json(
      {
        'kind': 'storage#storageLayout',
        'bucket': name,
        'location': 'US',
        'locationType': 'multi-region',
        'hierarchicalNamespace': {'enabled': False},
      }
    )

  server.HANDLERS = (
    (
      r'^/storage/v1/b/(?P<bucket_name>[-.\w]+)/storageLayout$',
      {server.GET: storage_layout},
    ),
    *server.HANDLERS,
  )
  answer_json = server.Response.json

  def relinked(value, base):
    if isinstance(value, list):
      return [relinked(v, base) for v in value]
    if not isinstance(value, dict):
      return value
    value = {k: relinked(v, base) for k, v in value.items()}
    link = value.get('mediaLink')
    if isinstance(link, str) and '/download/' in link:
      value['mediaLink'] = base + link[link.index('/download/') :]
    return value

  def json_from_here(response, obj):
    host = response._handler.headers.get('Host')
    answer_json(response, relinked(obj, f'http://{host}') if host else obj)

  server.Response.json = json_from_here
  objects._media_upload = empty_body(objects._media_upload)
  objects.xml_upload = empty_body(objects.xml_upload)
  lock = threading.Lock()
  handle = server.Router.handle

  def serialised(router, method):
    with lock:
      handle(router, method)

  server.Router.handle = serialised


class _Server(http.server.ThreadingHTTPServer):
  daemon_threads = True


def _handler_class() -> type:
  from gcp_storage_emulator import server

  class Handler(server.RequestHandler):
    # HTTP/1.1: connections are kept open, and an upload's
    # `Expect: 100-continue` is answered at once (under HTTP/1.0 libcurl
    # waits a second before each body it sends).
    protocol_version = 'HTTP/1.1'

  return Handler


def serve(directory: str, host_fd: int) -> None:
  """Serves the emulator on 80, 443 and `host_fd` until stdin closes."""
  from gcp_storage_emulator.storage import Storage

  subprocess.run(['ip', 'link', 'set', 'lo', 'up'], check=True)
  hosts = os.path.join(directory, 'hosts')
  with open(hosts, 'w') as f:
    f.write('127.0.0.1 localhost ' + ' '.join(NAMES) + '\n')
  subprocess.run(['mount', '--bind', hosts, '/etc/hosts'], check=True)
  # Every request, for a failing test to show (`GcsLoopback.log`).
  logging.basicConfig(
    filename=os.path.join(directory, 'server.log'),
    level=logging.INFO,
    format='%(message)s',
  )
  _repair_emulator()
  storage = Storage(use_memory_fs=True)
  handler = functools.partial(_handler_class(), storage)
  plain = _Server(('127.0.0.1', 80), handler)
  tls = _Server(('127.0.0.1', 443), handler)
  context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
  context.load_cert_chain(
    os.path.join(directory, 'cert.pem'), os.path.join(directory, 'key.pem')
  )
  tls.socket = context.wrap_socket(tls.socket, server_side=True)
  outside = _Server(('127.0.0.1', 0), handler, bind_and_activate=False)
  outside.socket.close()
  outside.socket = socket.socket(fileno=host_fd)
  outside.server_address = outside.socket.getsockname()
  servers = [plain, tls, outside]
  for s in servers:
    threading.Thread(target=s.serve_forever, daemon=True).start()
  print('ready', flush=True)
  sys.stdin.read()
  for s in servers:
    s.shutdown()
    s.server_close()


# --- The test side. --------------------------------------------------------


def unavailable() -> str | None:
  """Why the loopback GCS cannot run here (a skip reason), or None."""
  for tool in ('unshare', 'nsenter', 'ip', 'mount', 'openssl'):
    if not shutil.which(tool):
      return f'{tool} is not installed'
  probe = subprocess.run(
    [
      'unshare',
      '-mn',
      'sh',
      '-c',
      'ip link set lo up && mount --bind /etc/hosts /etc/hosts',
    ],
    capture_output=True,
    text=True,
    check=False,
  )
  if probe.returncode:
    return (
      'TensorFlow reaches a loopback GCS only from a private mount and '
      'network namespace, and `unshare -mn` is not permitted here '
      f'(it needs root): {probe.stderr.strip()}'
    )
  return None


class GcsLoopback:
  """The server in its namespace, and child processes run beside it.

  Attributes:
    bucket: the bucket created at start (`gs://{bucket}/...`).
    url: the server on this machine's loopback (for the test process).
    env: the environment a child needs to talk to the server.
  """

  def __init__(self, directory: str, bucket: str = BUCKET):
    self.bucket = bucket
    self._dir = directory
    subprocess.run(
      [
        'openssl',
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '2',
        '-subj',
        f'/CN={NAMES[0]}',
        '-addext',
        'subjectAltName=' + ','.join(f'DNS:{n}' for n in NAMES),
        '-keyout',
        os.path.join(directory, 'key.pem'),
        '-out',
        os.path.join(directory, 'cert.pem'),
      ],
      check=True,
      capture_output=True,
    )
    outside = socket.socket()
    outside.bind(('127.0.0.1', 0))
    outside.listen(64)
    self.url = 'http://127.0.0.1:%d' % outside.getsockname()[1]
    self._process = subprocess.Popen(
      [
        'unshare',
        '-mn',
        sys.executable,
        os.path.abspath(__file__),
        directory,
        str(outside.fileno()),
      ],
      stdin=subprocess.PIPE,
      stdout=subprocess.PIPE,
      text=True,
      pass_fds=[outside.fileno()],
    )
    outside.close()
    # Both pipes are set: Popen was given PIPE for them.
    self._stdin = cast(IO[str], self._process.stdin)
    self._stdout = cast(IO[str], self._process.stdout)
    line = self._stdout.readline()
    if line.strip() != 'ready':
      self.close()
      raise RuntimeError(f'The loopback GCS server did not start: {line!r}')
    self.env = dict(
      os.environ,
      CURL_CA_BUNDLE=os.path.join(directory, 'cert.pem'),
      GOOGLE_AUTH_TOKEN_FOR_TESTING='loopback',
      NO_GCE_CHECK='true',
      STORAGE_EMULATOR_HOST='http://127.0.0.1:80',
      no_proxy='*',
    )
    self.client().create_bucket(bucket)

  def client(self) -> Any:
    """A google-cloud-storage client of the server, for the test process."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    return storage.Client(
      project='loopback',
      credentials=AnonymousCredentials(),
      client_options={'api_endpoint': self.url},
    )

  def run(
    self,
    args: list[str],
    *,
    check: bool = True,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
  ) -> subprocess.CompletedProcess:
    """Runs `args` in the namespace (in `cwd`); a CompletedProcess of text.

    Raises:
      AssertionError: with `check`, when it fails; with its output's tail.
    """
    result = subprocess.run(
      self.command(args, cwd),
      env=self.environment(env),
      capture_output=True,
      text=True,
      check=False,
      timeout=timeout,
    )
    if check and result.returncode:
      raise AssertionError(
        f'{args} exited with {result.returncode}:\n{result.stdout[-3000:]}'
        f"\n{result.stderr[-5000:]}\nThe server's last requests:\n"
        f'{self.log()}'
      )
    return result

  def command(self, args: list[str], cwd: str | None = None) -> list[str]:
    """`args` run inside the server's namespace, in `cwd` (for Popen)."""
    return [
      'nsenter',
      '-t',
      str(self._process.pid),
      '-m',
      '-n',
      f'--wd={cwd or os.getcwd()}',
      *args,
    ]

  def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a child: this one, the server's, `extra`."""
    return dict(self.env, **(extra or {}))

  def log(self, lines: int = 40) -> str:
    """The last `lines` of the server's log (one line per request)."""
    with open(os.path.join(self._dir, 'server.log'), encoding='utf-8') as f:
      return ''.join(f.readlines()[-lines:])

  def close(self) -> None:
    """Stops the server; its namespace goes with it."""
    with contextlib.suppress(OSError):
      self._stdin.close()
    try:
      self._process.wait(timeout=10)
    except subprocess.TimeoutExpired:
      self._process.kill()
      self._process.wait()
    self._stdout.close()


@pytest.fixture(scope='module')
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsLoopback]:
  """A loopback GCS shared by a test module: a `GcsLoopback`.

  Skipped, with the reason, where `unshare -mn` is not permitted. The
  module's tests share one bucket: give each its own prefix.
  """
  reason = unavailable()
  if reason:
    pytest.skip(reason)
  server = GcsLoopback(str(tmp_path_factory.mktemp('gcs')))
  yield server
  server.close()


if __name__ == '__main__':
  serve(sys.argv[1], int(sys.argv[2]))
