"""The files of a new project, as `tensorfx scaffold` writes them.

Each template is plain text with `{name}` (the Python package) and
`{model}` placeholders filled by `str.format`; literal braces are doubled.
"""

import random

SCHEMA = """\
# The columns of data/train.csv and data/eval.csv, in order (no header
# line). Types: discrete (strings), real (float32), integer (int64). A field
# may say what a missing (empty) value means: `default: 0.0`, or
# `missing: mean` (also median, mode, zero).
fields:
- name: label       # the class to predict
  type: discrete
- name: x1
  type: real
- name: x2
  type: real
- name: color
  type: discrete
  description: a category that says little about the label
"""

FEATURES = """\
# How raw columns become model inputs. tensorfx analyzes the training data
# (tf.Transform on Apache Beam: min/max, vocabularies) and exports the
# transform with the model, so serving reads raw CSV lines.
# Types: scale, zscore, log, bucketize, onehot, embedding, hash, cross,
# identity, indicator; a concat joins several into one matrix; one target.
features:
- name: X
  type: concat
  features:
  - name: x1
    type: scale       # min-max to [0, 1]
  - name: x2
    type: scale
  - name: color
    type: onehot      # a vocabulary from the analysis, plus one unknown
- name: Y
  type: target
  fields: label
"""

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "A tensorfx trainer."
requires-python = ">=3.11"
# tensorfx itself: installed in this environment already (it wrote the
# project); on Vertex AI the tensorfx trainer image has it, so the package
# does not pull it in.
dependencies = []

[project.optional-dependencies]
# The test in tests/: pip install -e ".[test]" && pytest
test = ["pytest>=8"]

[tool.setuptools]
packages = ["{name}"]

[tool.pytest.ini_options]
pythonpath = ["."]
testpaths = ["tests"]
"""

GITIGNORE = """\
# What Python, pip and pytest write into the project.
__pycache__/
*.py[cod]
*.egg-info/
build/
dist/
.pytest_cache/
.venv/
"""

INIT = '''\
"""The {name} trainer package (run with python -m {name}.task)."""
'''

TASK_READY = '''\
"""The {name} trainer: a feed-forward classifier of the data set's features.

Run it with `tensorfx train --module {name}.task --output DIR --data-...`
(see README.md), or `python -m {name}.task` with the same flags.
"""

import tensorfx as tfx
import tensorfx.models.nn as nn


def main(argv=None):
  """Trains on the flags in `argv` (default: the command line).

  Returns:
    The trained model (on the chief), ready to `predict` raw CSV lines.
  """
  args, output = nn.FeedForwardClassificationArguments.parse(argv,
                                                             parse_job=True)
  dataset = tfx.data.CsvDataSet(args.data_schema,
                                train=args.data_train,
                                eval=args.data_eval,
                                metadata=args.data_metadata,
                                features=args.data_features)
  classification = nn.FeedForwardClassification(args, dataset)
  return tfx.training.ModelTrainer().train(classification, output)


if __name__ == '__main__':
  main()
'''

TASK_CUSTOM = '''\
"""The {name} trainer: the model in model.py, over the data set's features.

Run it with `tensorfx train --module {name}.task --output DIR --data-...`
(see README.md), or `python -m {name}.task` with the same flags.
"""

import tensorfx as tfx

from {name}.model import Arguments
from {name}.model import Model


def main(argv=None):
  """Trains on the flags in `argv` (default: the command line).

  Returns:
    The trained model (on the chief), ready to `predict` raw CSV lines.
  """
  args, output = Arguments.parse(argv, parse_job=True)
  dataset = tfx.data.CsvDataSet(args.data_schema,
                                train=args.data_train,
                                eval=args.data_eval,
                                metadata=args.data_metadata,
                                features=args.data_features)
  return tfx.training.ModelTrainer().train(Model(args, dataset), output)


if __name__ == '__main__':
  main()
'''

MODEL_CUSTOM = '''\
"""The {name} model: a ModelBuilder whose hooks define one training step.

`X` (the concat of features.yaml) goes through one hidden layer to a score
per class of `Y` (the target, a class index). Change the hooks to change
the model; the trainer, checkpoints, evaluation and export stay as they are.
"""

import tensorflow as tf
import tf_keras

import tensorfx as tfx


class Arguments(tfx.training.ModelArguments):
  """The standard flags, plus this model's own."""

  @classmethod
  def build_parser(cls):
    parser = super().build_parser()
    parser.add_argument('--hidden-units', type=int, default=16,
                        help='units of the hidden layer')
    return parser


class Model(tfx.training.ModelBuilder):
  """One hidden layer and a softmax over the classes of the target."""

  # What ranks checkpoints and what hyperparameter tuning reports.
  evaluation_metric = ('accuracy', 'max')

  @property
  def classes(self):
    """The class names of the target, in score order (from the analysis)."""
    return list(self.dataset.transformed_features['Y'].vocabulary)

  def build_inference(self, inputs, training):
    if not hasattr(self, 'hidden'):  # Layers are made on the first call.
      self.hidden = tf_keras.layers.Dense(self.args.hidden_units,
                                          activation='relu')
      self.logits = tf_keras.layers.Dense(len(self.classes))
    return self.logits(self.hidden(inputs['X']))

  def build_training(self, global_steps, inputs, inferences):
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=inputs['Y'], logits=inferences))
    return loss, self.optimizer

  def build_output(self, inferences):
    scores = tf.nn.softmax(inferences)
    label = tf.gather(tf.constant(self.classes), tf.argmax(scores, axis=1))
    return {{'label': label, 'scores': scores}}

  def build_evaluation(self, inputs, outputs):
    if not hasattr(self, 'accuracy'):
      self.accuracy = tf_keras.metrics.Accuracy(name='accuracy')
    self.accuracy.update_state(inputs['Y'], tf.argmax(outputs['scores'], 1))
    return {{'accuracy': self.accuracy}}
'''

TEST = '''\
"""{name} trains on its sample data and predicts raw CSV lines."""

import os

import yaml

from {name} import task

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _path(*parts):
  return os.path.join(HERE, *parts)


def test_it_trains_and_predicts(tmp_path):
  model = task.main([
      '--output', str(tmp_path / 'job'),
      '--data-train', _path('data', 'train.csv'),
      '--data-eval', _path('data', 'eval.csv'),
      '--data-schema', _path('schema.yaml'),
      '--data-features', _path('features.yaml'),
      '--max-steps', '300', '--batch-size', '16',
      '--learning-rate', '0.05',{flags}
      '--checkpoint-interval-secs', '600'])
  job = yaml.safe_load((tmp_path / 'job' / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  assert job['metrics']['accuracy'] >= 0.8, job['metrics']
  # A raw CSV line without its label, as a client sends it.
  low, high = model.predict(['1.0,1.2,blue', '5.1,4.8,amber'])
  assert (low['label'], high['label']) == ('low', 'high')
'''

README = """\
# {name}

A tensorfx trainer ({model}), made by `tensorfx scaffold`. It trains as it
is on the sample data in `data/`; replace the data, `schema.yaml` and
`features.yaml` with yours.

```
{name}/task.py      the trainer module (python -m {name}.task){custom_line}
schema.yaml        the columns of the data files
features.yaml      how columns become model inputs
data/              a tiny sample data set (CSV, no header)
tests/             a test that trains and predicts
pyproject.toml     the package that Vertex AI installs (and its test extra)
.gitignore         what Python, pip and pytest write here
```

## Train locally

```
tensorfx train --module {name}.task --output /tmp/{name} \\
  --data-train data/train.csv --data-eval data/eval.csv \\
  --data-schema schema.yaml --data-features features.yaml \\
  --max-steps 300 --batch-size 16{flags_line}
```

The job analyzes the training data into `/tmp/{name}/analysis`, trains,
evaluates, and exports `/tmp/{name}/model`, which predicts raw CSV lines:

```
echo '5.1,4.8,amber' | tensorfx predict --model /tmp/{name}/model
```

`tensorboard --logdir /tmp/{name}/summaries` shows the run.

## Train on a local cluster

The same command with `--cluster`: a chief, two workers and a parameter
server, one process each on 127.0.0.1, as a cloud job runs:

```
tensorfx train --module {name}.task --output /tmp/{name}-cluster \\
  --cluster ps=1,workers=2 \\
  --data-train data/train.csv --data-eval data/eval.csv \\
  --data-schema schema.yaml --data-features features.yaml --max-steps 300
```

## Train on Vertex AI

Copy the data and the YAML files to Cloud Storage, then submit (add
`--dry-run` to see the request without sending it):

```
gsutil cp data/*.csv schema.yaml features.yaml gs://BUCKET/{name}/
tensorfx submit --project PROJECT --region us-central1 \\
  --staging-bucket gs://BUCKET/staging \\
  --package-path . --module-name {name}.task \\
  --job-dir gs://BUCKET/{name}/job1 -- \\
  --data-train gs://BUCKET/{name}/train.csv \\
  --data-eval gs://BUCKET/{name}/eval.csv \\
  --data-schema gs://BUCKET/{name}/schema.yaml \\
  --data-features gs://BUCKET/{name}/features.yaml --max-steps 300
```

## Test

```
pip install -e ".[test]"    # the project, editable, and pytest
pytest
```
"""

# Cluster centres of the sample data: the label is where (x1, x2) lies.
_CENTRES = {'low': (1.0, 1.0), 'mid': (3.0, 3.0), 'high': (5.0, 5.0)}
_COLORS = ('amber', 'blue', 'cyan')


def sample_rows(count: int, seed: int) -> list[str]:
  """`count` CSV lines of the sample data: label,x1,x2,color.

  The label is the nearest of three centres (with noise well inside their
  spacing), so a small model learns it in a few hundred steps; the color is
  noise.
  """
  rng = random.Random(seed)
  labels = list(_CENTRES)
  rows = []
  for i in range(count):
    label = labels[i % len(labels)]
    cx, cy = _CENTRES[label]
    rows.append(
      f'{label},{cx + rng.gauss(0, 0.4):.2f},'
      f'{cy + rng.gauss(0, 0.4):.2f},{rng.choice(_COLORS)}'
    )
  return rows


def project_files(name: str, model: str) -> dict[str, str]:
  """The files of a new project: relative path -> text.

  Args:
    name: the Python package name of the trainer.
    model: 'nn.FeedForwardClassification' or 'custom'.
  """
  custom = model == 'custom'
  flags = (
    "\n      '--hidden-units', '16',"
    if custom
    else "\n      '--hidden-layers', '16', '8',"
  )
  files = {
    'pyproject.toml': PYPROJECT.format(name=name),
    f'{name}/__init__.py': INIT.format(name=name),
    f'{name}/task.py': (TASK_CUSTOM if custom else TASK_READY).format(
      name=name
    ),
    'schema.yaml': SCHEMA,
    'features.yaml': FEATURES,
    'data/train.csv': '\n'.join(sample_rows(150, seed=1)) + '\n',
    'data/eval.csv': '\n'.join(sample_rows(45, seed=2)) + '\n',
    f'tests/test_{name}.py': TEST.format(name=name, flags=flags),
    'README.md': README.format(
      name=name,
      model=model,
      custom_line=(
        f'\n{name}/model.py     the model: a ModelBuilder subclass'
        if custom
        else ''
      ),
      flags_line=(
        ' --hidden-units 16'
        if custom
        else ' \\\n  --hidden-layers:1 16 --hidden-layers:2 8'
      ),
    ),
  }
  if custom:
    files[f'{name}/model.py'] = MODEL_CUSTOM.format(name=name)
  files['.gitignore'] = GITIGNORE
  return files
