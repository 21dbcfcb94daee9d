"""Fuzzing the job's configuration: TF_CONFIG and run configuration files.

A seeded generator makes TF_CONFIG values (random JSON, valid legacy AI
Platform and Vertex AI forms with random damage, text that is not JSON)
and run.yaml files with random deletions. Each must give a configuration
that works (its properties answer) or a `ConfigurationError` that names
the variable and key (TF_CONFIG) or the file, line and key (run.yaml), in
one line; never another exception. TENSORFX_FUZZ_CASES and
TENSORFX_FUZZ_SEED change how many cases run and which.
"""

import collections
import contextlib
import io
import json
import os
import random
import re

import pytest

import fuzzing
from tensorfx import ConfigurationError
from tensorfx.models import nn
from tensorfx.training import Configuration

pytestmark = pytest.mark.slow

CASES = int(os.environ.get('TENSORFX_FUZZ_CASES', '30'))
SEED = int(os.environ.get('TENSORFX_FUZZ_SEED', '19'))

_VALID = [
  {
    'cluster': {
      'chief': ['10.0.0.1:2222'],
      'worker': ['10.0.0.2:2222', '10.0.0.3:2222'],
      'ps': ['10.0.0.4:2222'],
      'evaluator': ['10.0.0.5:2222'],
    },
    'task': {'type': 'worker', 'index': 1},
    'environment': 'cloud',
  },
  {
    'cluster': {'master': ['m:2222'], 'worker': ['w:2222'], 'ps': ['p:2222']},
    'task': {'type': 'master', 'index': 0, 'trial': '3'},
    'environment': 'cloud',
    'job': {'scale_tier': 'CUSTOM'},
  },
  {
    'cluster': {
      'workerpool0': ['c:2222'],
      'workerpool1': ['w:2222'],
      'workerpool2': ['p:2222'],
    },
    'task': {'type': 'workerpool1', 'index': 0},
  },
  {'task': {'type': 'evaluator', 'index': 0}},
  {},
]
_KEYS = [
  'cluster',
  'task',
  'type',
  'index',
  'trial',
  'environment',
  'job',
  'chief',
  'master',
  'worker',
  'ps',
  'evaluator',
  'workerpool1',
  'x',
]


def _random_value(rng, depth=0):
  kind = rng.choice(
    [
      'int',
      'neg',
      'big',
      'float',
      'str',
      'addr',
      'none',
      'bool',
      'list',
      'dict',
    ]
    if depth < 3
    else ['int', 'str', 'none', 'addr']
  )
  if kind == 'int':
    return rng.randint(0, 3)
  if kind == 'neg':
    return -rng.randint(1, 5)
  if kind == 'big':
    return 2 ** rng.randint(31, 70)
  if kind == 'float':
    return rng.choice([0.5, 1.0, float('1e300')])
  if kind == 'str':
    return rng.choice(
      ['', 'chief', 'worker', 'ps', 'local', 'cloud', '0', 'a b', '\u00e9']
    )
  if kind == 'addr':
    return rng.choice(['h:1', 'h:99999', ':2222', 'h', 'h:x', '[::1]:2222'])
  if kind == 'none':
    return None
  if kind == 'bool':
    return rng.random() < 0.5
  if kind == 'list':
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
  return {
    rng.choice(_KEYS): _random_value(rng, depth + 1)
    for _ in range(rng.randint(0, 3))
  }


def _mutate(rng, value):
  """A random change somewhere inside a JSON value."""
  if isinstance(value, dict) and value and rng.random() < 0.7:
    key = rng.choice(sorted(value))
    choice = rng.random()
    if choice < 0.3:
      del value[key]
    elif choice < 0.6:
      value[key] = _mutate(rng, value[key])
    else:
      value[key] = _random_value(rng)
    return value
  if isinstance(value, list) and value and rng.random() < 0.7:
    at = rng.randrange(len(value))
    if rng.random() < 0.5:
      value[at] = _random_value(rng)
    else:
      value.append(value[at])  # A duplicate address.
    return value
  return _random_value(rng)


def _tf_config(rng):
  choice = rng.random()
  if choice < 0.6:
    value = json.loads(json.dumps(rng.choice(_VALID)))
    for _ in range(rng.randint(1, 3)):
      value = _mutate(rng, value)
    return json.dumps(value)
  if choice < 0.8:
    return json.dumps(_random_value(rng))
  text = json.dumps(rng.choice(_VALID))
  at = rng.randrange(len(text) + 1)
  return (
    text[:at]
    + rng.choice(['', '}', '"', ',', 'x'])
    + text[at + rng.randint(0, 3) :]
  )


@pytest.mark.timeout(300)
def test_random_tf_config(monkeypatch):
  rng = random.Random(f'{SEED}-tf-config')
  outcomes = collections.Counter()
  for _ in range(CASES * 10):
    text = _tf_config(rng)
    monkeypatch.setenv('TF_CONFIG', text)
    try:
      config = Configuration.environment()
    except ConfigurationError as e:
      message = str(e)
      assert message.startswith('TF_CONFIG'), (text, message)
      assert '\n' not in message, (text, message)
      assert re.search(
        r'key `[^`]+`|not valid JSON|must hold a JSON '
        r'object',
        message,
      ), (text, message)
      outcomes['error'] += 1
      continue
    # A configuration that parses answers every question about it.
    for name in (
      'task',
      'cluster',
      'master',
      'worker',
      'param_server',
      'evaluator',
      'distributed',
      'device',
      'strategy_kind',
    ):
      getattr(config, name)
    config.to_dict()
    outcomes['valid'] += 1
  assert outcomes['error'] > CASES and outcomes['valid'], outcomes


_RUN_YAML = """\
data:
  train: [data/train.csv]
  eval: [data/eval.csv]
  schema: schema.yaml
  features: features.yaml
model:
  hidden_layers: [20, 10]
optimizer:
  name: sgd
  momentum: 0.9
  clip_norm: 1.0
learning_rate:
  value: 0.1
  schedule: cosine
  warmup_steps: 100
validation:
  batch_size: 32
  interval_steps: 200
  holdout:
    data: [data/eval.csv]
    batches: 2
save:
  interval_steps: 100
max_steps: 5000
batch_size: 64
shuffle: false
"""


@pytest.mark.timeout(300)
def test_run_yaml_with_random_deletions(tmp_path):
  rng = random.Random(f'{SEED}-run-yaml')
  outcomes = collections.Counter()
  for case in range(CASES * 2):
    path = tmp_path / f'run{case}.yaml'
    text = fuzzing.delete(rng, _RUN_YAML, longest_span=30)
    path.write_text(text)
    stderr = io.StringIO()
    try:
      with contextlib.redirect_stderr(stderr):
        nn.FeedForwardClassificationArguments.parse(
          ['--config', str(path), '--output', str(tmp_path / 'out')]
        )
    except ConfigurationError as e:
      message = str(e)
      assert '\n' not in message.strip(), (text, message)
      # The file and line.
      assert re.match(rf'{re.escape(str(path))}:\d+', message), (text, message)
      outcomes['error'] += 1
    except SystemExit as e:
      # argparse's own error (a value from the file it rejects): it must
      # still say which file.
      assert e.code == 2, (text, e.code)
      assert str(path) in stderr.getvalue(), (text, stderr.getvalue())
      outcomes['usage'] += 1
    else:
      outcomes['valid'] += 1
  assert outcomes['error'] and outcomes['valid'], outcomes
