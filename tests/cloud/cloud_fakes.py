"""Local stand-ins for Google Cloud, shared by the cloud tests.

- `emulator`: a real GCS JSON-API server (`gcp-storage-emulator`) in this
  process on a free 127.0.0.1 port, with `STORAGE_EMULATOR_HOST` pointing at
  it, so `google-cloud-storage` talks to it unchanged.
- `vertex`: a small HTTP server answering Vertex AI's REST API the way the
  service does (create returns the job PENDING; each read moves it along a
  scripted list of states), recording every request body. The real
  `google.cloud.aiplatform_v1` client (REST transport) talks to it.
- Failures on demand: each fake (and the emulator, through
  `emulator_faults`) answers its next requests with the `faults` listed,
  one each: an HTTP code (429, 503...) or 'reset' (the connection is
  reset, as by a proxy or a restarting front end).

Test modules import the fixtures by name.
"""

import contextlib
import http.server
import itertools
import json
import re
import socket
import struct
import threading

import pytest

BUCKET = 'tensorfx-staging'
PROJECT = 'my-project'
REGION = 'us-central1'


def free_port():
  with contextlib.closing(socket.socket()) as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


@pytest.fixture(scope='module')
def _emulator_server():
  from gcp_storage_emulator.server import create_server

  port = free_port()
  server = create_server('127.0.0.1', port, in_memory=True)
  server.start()
  yield server, f'http://127.0.0.1:{port}'
  server.stop()


_REASONS = {
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
}


def inject_fault(handler, faults):
  """Answers `handler`'s request with the next of `faults`; False if none.

  Args:
    handler: the `BaseHTTPRequestHandler` of the request.
    faults: a list of HTTP codes and 'reset'; the first is taken.
  """
  if not faults:
    return False
  fault = faults.pop(0)
  length = int(handler.headers.get('Content-Length') or 0)
  if length:
    handler.rfile.read(length)  # The whole request, as a server reads it.
  if fault == 'reset':
    # Closed with SO_LINGER 0: the client sees a connection reset.
    handler.connection.setsockopt(
      socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0)
    )
    handler.close_connection = True
    handler.connection.close()
    return True
  data = json.dumps(
    _status(fault, _REASONS.get(fault, 'UNKNOWN'), f'injected {fault}')
  ).encode()
  handler.send_response(fault)
  handler.send_header('Content-Type', 'application/json')
  handler.send_header('Content-Length', str(len(data)))
  handler.end_headers()
  handler.wfile.write(data)
  return True


@pytest.fixture
def emulator_faults(monkeypatch):
  """A list of faults the storage emulator answers its next requests with."""
  from gcp_storage_emulator import server

  faults = []
  handle = server.Router.handle

  def faulty(router, method):
    if not inject_fault(router._request_handler, faults):
      handle(router, method)

  monkeypatch.setattr(server.Router, 'handle', faulty)
  return faults


@pytest.fixture
def fast_retries(monkeypatch):
  """Retries of cloud calls in milliseconds instead of seconds."""
  from tensorfx.cloud import _retry

  monkeypatch.setattr(_retry, 'INITIAL', 0.01)
  monkeypatch.setattr(_retry, 'MAXIMUM', 0.05)


@pytest.fixture
def emulator(_emulator_server, monkeypatch):
  """A storage client on the emulator, with one empty bucket (BUCKET)."""
  server, url = _emulator_server
  server.wipe()
  monkeypatch.setenv('STORAGE_EMULATOR_HOST', url)
  monkeypatch.setenv('GCS_RETRY_CONFIG_MAX_RETRIES', '1')
  from tensorfx import cloud

  client = cloud.storage_client(PROJECT)
  client.create_bucket(BUCKET)
  return client


_CREATE = re.compile(
  r'^/v1/(projects/[^/]+/locations/[^/]+)/'
  r'(customJobs|hyperparameterTuningJobs)$'
)
_GET = re.compile(
  r'^/v1/(projects/[^/]+/locations/[^/]+/'
  r'(?:customJobs|hyperparameterTuningJobs)/[^/]+)$'
)

_CANCEL = re.compile(
  r'^/v1/(projects/[^/]+/locations/[^/]+/'
  r'(?:customJobs|hyperparameterTuningJobs)/[^/]+):cancel$'
)


class FakeVertex:
  """Vertex AI's job API on loopback: records requests, scripts job states.

  Attributes:
    url: the endpoint to give the client (`http://127.0.0.1:PORT`).
    requests: (method, path without query, JSON body or None), in order.
    states: the states successive reads report; the last one sticks.
    error: the job's error (a Status dict) once it reaches a failed state.
    create_error: (HTTP code, status, message) to refuse creates with.
    faults: failures to answer the next requests with (`inject_fault`).
  """

  def __init__(self):
    self.faults = []
    self.requests = []
    self.jobs = {}
    self.states = ['JOB_STATE_RUNNING', 'JOB_STATE_SUCCEEDED']
    self.error = None
    self.create_error = None
    self._reads = {}
    self._ids = itertools.count(1000)
    fake = self

    class Handler(http.server.BaseHTTPRequestHandler):
      def log_message(self, *args):
        pass

      def _answer(self, code, payload):
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

      def do_POST(self):
        if inject_fault(self, fake.faults):
          return None
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length) or b'{}')
        path = self.path.split('?')[0]
        fake.requests.append(('POST', path, body))
        cancel = _CANCEL.match(path)
        if cancel:
          job = fake.jobs.get(cancel[1])
          if job is None:
            return self._answer(404, _status(404, 'NOT_FOUND', path))
          fake.states = ['JOB_STATE_CANCELLING', 'JOB_STATE_CANCELLED']
          fake._reads[cancel[1]] = 0
          return self._answer(200, {})
        match = _CREATE.match(path)
        if not match:
          return self._answer(404, _status(404, 'NOT_FOUND', path))
        if fake.create_error:
          code, status, message = fake.create_error
          return self._answer(code, _status(code, status, message))
        name = f'{match[1]}/{match[2]}/{next(fake._ids)}'
        job = dict(
          body,
          name=name,
          state='JOB_STATE_PENDING',
          createTime='2026-11-01T12:00:00Z',
        )
        fake.jobs[name] = job
        return self._answer(200, job)

      def do_GET(self):
        if inject_fault(self, fake.faults):
          return None
        path = self.path.split('?')[0]
        fake.requests.append(('GET', path, None))
        match = _GET.match(path)
        if not match or match[1] not in fake.jobs:
          return self._answer(
            404, _status(404, 'NOT_FOUND', f'{path} not found')
          )
        name = match[1]
        read = fake._reads.get(name, 0)
        fake._reads[name] = read + 1
        job = fake.jobs[name]
        job['state'] = fake.states[min(read, len(fake.states) - 1)]
        if job['state'] == 'JOB_STATE_FAILED' and fake.error:
          job['error'] = fake.error
        if 'hyperparameterTuningJobs' in name:
          job['trials'] = [{'id': '1', 'state': 'SUCCEEDED'}]
        return self._answer(200, job)

    self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    self.url = f'http://127.0.0.1:{self._server.server_port}'
    # A short poll interval: shutdown() waits up to one of them.
    self._thread = threading.Thread(
      target=self._server.serve_forever,
      kwargs={'poll_interval': 0.02},
      daemon=True,
    )
    self._thread.start()

  def add_job(self, name, **fields):
    """Registers an existing job (for `status` tests)."""
    self.jobs[name] = dict(fields, name=name)

  def posts(self):
    return [r for r in self.requests if r[0] == 'POST']

  def close(self):
    self._server.shutdown()
    self._server.server_close()


def _status(code, status, message):
  return {'error': {'code': code, 'status': status, 'message': message}}


@pytest.fixture
def vertex():
  """A FakeVertex, closed after the test."""
  server = FakeVertex()
  yield server
  server.close()


def as_message(cls, body):
  """A recorded JSON body as a dict with enum names, through the proto.

  The client sends enums as numbers (`$alt=json;enum-encoding=int`);
  reading the body back through the message type makes it comparable.
  """
  from google.protobuf import json_format

  message = cls.from_json(json.dumps(body))
  return json_format.MessageToDict(cls.pb(message))


class FakeLogging:
  """Cloud Logging's `entries.list` on loopback, over scripted entries.

  Answers as the service does: entries matching the request's
  `resource.labels.job_id` and `timestamp>=` clauses, oldest first, in
  pages of `pageSize` with a `nextPageToken`. `batches` are revealed one
  per request, so a follower sees lines arrive.

  Attributes:
    url: the endpoint to give the client.
    requests: the JSON bodies received, in order.
    batches: lists of entries (LogEntry JSON dicts) revealed in turn.
    faults: failures to answer the next requests with (`inject_fault`).
  """

  def __init__(self):
    self.faults = []
    self.requests = []
    self.batches = []
    self._visible = []
    fake = self

    class Handler(http.server.BaseHTTPRequestHandler):
      def log_message(self, *args):
        pass

      def do_POST(self):
        if inject_fault(self, fake.faults):
          return
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length) or b'{}')
        fake.requests.append(body)
        if self.path.split('?')[0] != '/v2/entries:list':
          code, payload = 404, _status(404, 'NOT_FOUND', self.path)
        else:
          code, payload = 200, fake._list(body)
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    self.url = f'http://127.0.0.1:{self._server.server_port}'
    self._thread = threading.Thread(
      target=self._server.serve_forever,
      kwargs={'poll_interval': 0.02},
      daemon=True,
    )
    self._thread.start()

  def _list(self, body):
    if self.batches and not body.get('pageToken'):
      self._visible.extend(self.batches.pop(0))
    text = body.get('filter', '')
    job = re.search(r'resource\.labels\.job_id="([^"]+)"', text)
    since = re.search(r'timestamp>="([^"]+)"', text)
    entries = [
      e
      for e in self._visible
      if (not job or e['resource']['labels']['job_id'] == job[1])
      and (not since or _ts(e['timestamp']) >= _ts(since[1]))
    ]
    entries.sort(key=lambda e: _ts(e['timestamp']))
    start = int(body.get('pageToken') or 0)
    size = int(body.get('pageSize') or 50)
    page = {'entries': entries[start : start + size]}
    if start + size < len(entries):
      page['nextPageToken'] = str(start + size)
    return page

  def close(self):
    self._server.shutdown()
    self._server.server_close()


def _ts(text):
  import datetime

  return datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))


@pytest.fixture
def cloud_logging():
  """A FakeLogging, closed after the test."""
  server = FakeLogging()
  yield server
  server.close()
