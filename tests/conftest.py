"""Shared fixtures: tiny data, and one analyzed + trained iris model.

TensorFlow start-up and Beam analysis cost seconds, so the expensive
artifacts are made once per session and shared read-only.
"""

import ast
import os
import subprocess
import sys

# No GPU probing noise, no proxies for loopback traffic, quiet C++ logs.
os.environ.setdefault('CUDA_VISIBLE_DEVICES', '')
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
os.environ.setdefault('no_proxy', '127.0.0.1,localhost')

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IRIS = os.path.join(ROOT, 'samples', 'iris')
# One iris instance of each class (CSV, no label), and the classes.
IRIS_INSTANCES = ['6.3,3.3,6,2.5', '4.4,3,1.3,0.2', '6.1,2.8,4.7,1.2']
IRIS_CLASSES = ['virginica', 'setosa', 'versicolor']
# A small, seeded iris run checkpointing every 10 steps: the runs that are
# stopped and resumed (exact resume, the fault drill).
IRIS_SMALL = (
  '--hidden-layers:1',
  '8',
  '--batch-size',
  '16',
  '--seed',
  '3',
  '--checkpoint-interval-steps',
  '10',
)


def iris_labels(model_dir):
  """The labels the iris model exported at `model_dir` gives IRIS_INSTANCES."""
  from tensorfx import prediction

  model = prediction.Model.load(str(model_dir))
  return [p['label'] for p in model.predict(IRIS_INSTANCES)]


def iris_args(output, *extra):
  """Trainer arguments for the iris sample, writing to `output`."""
  return [
    '--output',
    str(output),
    '--data-train',
    os.path.join(IRIS, 'data', 'train.csv'),
    '--data-eval',
    os.path.join(IRIS, 'data', 'eval.csv'),
    '--data-schema',
    os.path.join(IRIS, 'schema.yaml'),
    '--data-features',
    os.path.join(IRIS, 'features.yaml'),
    *extra,
  ]


def modules_imported(code, modules):
  """Which of `modules` a fresh interpreter has imported after `code`.

  For checks that a path of tensorfx stays clear of slow imports (its own
  process: this one has imported everything by now).
  """
  probe = (
    f'{code}\nimport sys\n'
    f'print(sorted(m for m in {tuple(modules)!r} if m in sys.modules))\n'
  )
  result = subprocess.run(
    [sys.executable, '-c', probe],
    capture_output=True,
    text=True,
    timeout=120,
    check=True,
  )
  return ast.literal_eval(result.stdout.strip().splitlines()[-1])


def pytest_sessionfinish(session, exitstatus):
  """Says where the tests went when the standard tier selected none."""
  if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and (
    session.config.option.markexpr == 'not release'
  ):
    reporter = session.config.pluginmanager.get_plugin('terminalreporter')
    if reporter is not None:
      reporter.write_line(
        'No standard-tier test was selected: these are release-tier tests '
        '(add -m release; docs/contributing.md lists the tiers).'
      )


@pytest.fixture(scope='session')
def iris_analysis(tmp_path_factory):
  """The iris training data analyzed once (a `tensorfx analyze` output)."""
  from tensorfx import data

  output = str(tmp_path_factory.mktemp('iris') / 'analysis')
  dataset = data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    features=os.path.join(IRIS, 'features.yaml'),
    train=os.path.join(IRIS, 'data', 'train.csv'),
  )
  dataset.analyze(output)
  return output


@pytest.fixture(scope='session')
def iris_dataset_factory(iris_analysis):
  """Makes iris CsvDataSets that use the shared analysis."""
  from tensorfx import data

  def make(**sources):
    sources = sources or {
      'train': os.path.join(IRIS, 'data', 'train.csv'),
      'eval': os.path.join(IRIS, 'data', 'eval.csv'),
    }
    return data.CsvDataSet(
      os.path.join(IRIS, 'schema.yaml'),
      metadata=iris_analysis,
      features=os.path.join(IRIS, 'features.yaml'),
      **sources,
    )

  return make


@pytest.fixture(scope='session')
def iris_model(tmp_path_factory, iris_dataset_factory):
  """An iris model trained in-process for 300 steps: (output dir, Model)."""
  from tensorfx import training
  from tensorfx.models import nn

  output = tmp_path_factory.mktemp('iris-model') / 'output'
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(
      output,
      '--max-steps',
      '300',
      '--batch-size',
      '32',
      '--hidden-layers:1',
      '20',
      '--hidden-layers:2',
      '10',
      '--seed',
      '1',
    ),
    parse_job=True,
  )
  builder = nn.FeedForwardClassification(args, iris_dataset_factory())
  model = training.ModelTrainer().train(builder, job)
  return str(output), model


# The README's first command, minus the install: run from samples/iris.
README_TRAIN = [
  'train',
  '--module',
  'trainer',
  '--data-train',
  'data/train.csv',
  '--data-eval',
  'data/eval.csv',
  '--data-schema',
  'schema.yaml',
  '--data-features',
  'features.yaml',
  '--hidden-layers:1',
  '20',
  '--hidden-layers:2',
  '10',
]


@pytest.fixture(scope='session')
def iris_sample_run(tmp_path_factory):
  """The iris sample run as the README says, once, in its own process."""
  output = tmp_path_factory.mktemp('iris-run') / 'output'
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    *README_TRAIN,
    '--output',
    str(output),
  ]
  result = subprocess.run(
    command, cwd=IRIS, capture_output=True, text=True, timeout=600, check=False
  )
  return output, result
