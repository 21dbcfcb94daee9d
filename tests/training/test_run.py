"""A training run's failures: what the error says about a lost task."""

from tensorfx.training._run import run as _run

_TRACE = (
  'Graph execution error:\n\nDetected at node CollectiveReduceV2 '
  'defined at (most recent call last):\n  File "<frozen runpy>", '
  'line 198, in _run_module_as_main\n\n'
)


def test_a_task_whose_heartbeats_stopped_is_named():
  message = _TRACE + (
    'Collective ops is aborted by: Error reported from /job:chief/task:0: '
    'The following tasks are unhealthy (stopped sending heartbeats):\n'
    '/job:worker/replica:0/task:1\nThe tasks have crashed.'
  )
  assert _run._unavailable(message) == (
    'Task worker 1 of the cluster stopped answering (stopped sending '
    'heartbeats)'
  )


def test_a_task_whose_connection_reset_is_named():
  message = _TRACE + (
    'Collective ops is aborted by: failed to connect to all addresses; last '
    'error: UNAVAILABLE: ipv4:127.0.0.1:45445: recvmsg:Connection reset by '
    'peer\nAdditional GRPC error information from remote target '
    '/job:worker/replica:0/task:0 while calling '
    '/tensorflow.WorkerService/RecvBuf:\n'
  )
  assert _run._unavailable(message) == (
    'Task worker 0 of the cluster stopped answering (failed to connect to '
    'all addresses)'
  )


def test_an_unnamed_task_gets_the_first_line_that_is_not_the_traceback():
  assert _run._unavailable(_TRACE + 'Socket closed\nmore') == (
    'A task of the cluster became unavailable (a parameter server lost?): '
    'Socket closed'
  )
