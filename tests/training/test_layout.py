"""JobLayout: every path of a job, Vertex AI's directories where it names them."""

from tensorfx.training._run.layout import JobLayout


def test_the_tensorfx_layout_under_the_output():
  layout = JobLayout.of('/tmp/job', environ={})
  assert layout.paths() == {
    'checkpoints': '/tmp/job/checkpoints',
    'model': '/tmp/job/model',
    'summaries': '/tmp/job/summaries',
    'analysis': '/tmp/job/analysis',
    'job': '/tmp/job/job.yaml',
    'evaluations': '/tmp/job/evaluations',
    'grown_tables': '/tmp/job/checkpoints/grown_tables.json',
  }
  assert layout.best_model == '/tmp/job/best_model'
  assert layout.evaluator_state == '/tmp/job/summaries/eval/evaluated.json'
  assert layout.scratch is None


def test_vertex_directories_win_for_the_chief():
  environ = {
    'AIP_MODEL_DIR': 'gs://b/job/7/model/',
    'AIP_CHECKPOINT_DIR': 'gs://b/job/7/checkpoints/',
    'AIP_TENSORBOARD_LOG_DIR': 'gs://b/job/7/logs/',
  }
  layout = JobLayout.of('gs://b/job', environ=environ)
  assert layout.model == 'gs://b/job/7/model'
  assert layout.checkpoints == 'gs://b/job/7/checkpoints'
  assert layout.summaries == 'gs://b/job/7/logs'
  # The trial's best model sits beside its model, not in another trial's.
  assert layout.best_model == 'gs://b/job/7/best_model'
  # What every trial shares stays under the output.
  assert layout.analysis == 'gs://b/job/analysis'
  assert layout.job == 'gs://b/job/job.yaml'


def test_a_worker_writes_to_its_scratch_directory_only():
  layout = JobLayout.of(
    '/tmp/job',
    worker='worker-1',
    environ={'AIP_MODEL_DIR': 'gs://b/job/model/'},
  )
  assert layout.scratch == '/tmp/job/.workers/worker-1'
  assert layout.model == '/tmp/job/.workers/worker-1/model'
  assert layout.checkpoints == '/tmp/job/.workers/worker-1/checkpoints'
  assert layout.job == '/tmp/job/.workers/worker-1/job.yaml'
  # The analysis is the chief's, which every worker waits for.
  assert layout.analysis == '/tmp/job/analysis'
