"""prediction.Model over an exported SavedModel: every raw input form."""

import glob
import json
import re
import shutil
import subprocess
import sys

import pytest
import tensorflow as tf

from tensorfx import DataError
from tensorfx import prediction

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_model')]

INSTANCES = ['6.3,3.3,6,2.5', '4.4,3,1.3,0.2', '6.1,2.8,4.7,1.2']
EXPECTED = ['virginica', 'setosa', 'versicolor']
FIELDS = ['sepal_length', 'sepal_width', 'petal_length', 'petal_width']


@pytest.fixture(scope='module')
def model(iris_model):
  output, _ = iris_model
  return prediction.Model.load(f'{output}/model')


def _labels(outputs):
  return [o['label'] for o in outputs]


def test_csv_lines_without_target(model):
  outputs = model.predict(INSTANCES)
  assert _labels(outputs) == EXPECTED
  for output in outputs:
    assert len(output['scores']) == 3
    assert sum(output['scores']) == pytest.approx(1.0, abs=1e-5)
    assert max(output['scores']) > 0.5


def test_csv_lines_with_target_and_mixed(model):
  with_target = ['virginica,6.3,3.3,6,2.5', 'setosa,4.4,3,1.3,0.2']
  assert _labels(model.predict(with_target)) == EXPECTED[:2]
  mixed = [with_target[0], INSTANCES[1]]
  assert _labels(model.predict(mixed)) == EXPECTED[:2]


def test_outputs_come_sorted_by_name(model):
  # A signature's outputs are a map: without a fixed order the keys came
  # back in any of their orders, one per process.
  for outputs in (
    model.predict(INSTANCES[:1]),
    model.predict([dict(zip(FIELDS, (6.3, 3.3, 6.0, 2.5)))]),
  ):
    assert list(outputs[0]) == ['classes', 'label', 'scores']


def test_dict_instances(model):
  instances = [
    dict(zip(FIELDS, map(float, line.split(',')))) for line in INSTANCES
  ]
  assert _labels(model.predict(instances)) == EXPECTED
  assert model.features == FIELDS


def test_example_instances(model):
  examples = []
  for line in INSTANCES:
    feature = {
      name: tf.train.Feature(float_list=tf.train.FloatList(value=[float(v)]))
      for name, v in zip(FIELDS, line.split(','))
    }
    examples.append(
      tf.train.Example(features=tf.train.Features(feature=feature))
    )
  assert _labels(model.predict(examples)) == EXPECTED
  serialized = [e.SerializeToString() for e in examples]
  assert _labels(model.predict(serialized)) == EXPECTED


def test_bad_instances_are_named(model):
  with pytest.raises(
    DataError,
    match=r'instance:2: expected 5 \(or 4\) '
    'columns, found 3',
  ):
    model.predict(['6.3,3.3,6,2.5', '1,2,3'])
  with pytest.raises(
    DataError,
    match=r"instance:1: column 'petal_width' is "
    'not a real number: x',
  ):
    model.predict(['6.3,3.3,6,x'])
  with pytest.raises(
    DataError,
    match='instance 2: missing feature '
    "'petal_width'; say what a missing petal_width means in "
    'the schema',
  ):
    model.predict(
      [dict(zip(FIELDS, [1.0] * 4)), dict(zip(FIELDS[:3], [1.0] * 3))]
    )
  with pytest.raises(
    DataError,
    match=r"instance:1: column 'petal_width' is "
    'empty; say what a missing petal_width means',
  ):
    model.predict(['6.3,3.3,6,'])
  with pytest.raises(
    DataError,
    match=r"instance 1: feature 'sepal_width' "
    r'has no value \(None, NaN or ""\)',
  ):
    model.predict([dict(zip(FIELDS, [1.0, float('nan'), 1.0, 1.0]))])
  with pytest.raises(DataError, match='one kind'):
    model.predict(['6.3,3.3,6,2.5', {'a': 1}])
  with pytest.raises(DataError, match='Received: int'):
    model.predict([1])
  assert model.predict([]) == []


def test_missing_model_is_named(tmp_path):
  with pytest.raises(DataError, match=f"no model at '{tmp_path}/nope'"):
    prediction.Model.load(str(tmp_path / 'nope'))
  (tmp_path / 'empty').mkdir()
  with pytest.raises(DataError, match='Cannot load the model'):
    prediction.Model.load(str(tmp_path / 'empty'))


def test_saved_model_serves_without_tensorfx(iris_model):
  """A fresh process with plain TensorFlow (no tensorfx, no tf.Transform)."""
  output, _ = iris_model
  code = f"""
import json, sys
import tensorflow as tf
model = tf.saved_model.load({output + '/model'!r})
out = model.signatures['serving_default'](csv=tf.constant({INSTANCES!r}))
assert 'tensorfx' not in sys.modules and 'tensorflow_transform' not in sys.modules
print(json.dumps([v.decode() for v in out['label'].numpy()]))
"""
  result = subprocess.run(
    [sys.executable, '-c', code],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-2000:]
  assert json.loads(result.stdout.strip().splitlines()[-1]) == EXPECTED


def test_the_three_signatures_share_one_trace_of_the_model(iris_model):
  from tensorflow.core.protobuf import saved_model_pb2

  output, _ = iris_model
  with open(f'{output}/model/saved_model.pb', 'rb') as f:
    saved = saved_model_pb2.SavedModel.FromString(f.read())
  names = [
    function.signature.name
    for function in saved.meta_graphs[0].graph_def.library.function
  ]
  # The hooks are traced once, in `predict`; each signature only parses.
  traced = [n for n in names if re.fullmatch(r'__inference_predict_\d+', n)]
  assert len(traced) == 1, names
  for signature in ('csv', 'examples', 'features'):
    assert any(n.startswith(f'__inference_predict_{signature}_') for n in names)


def _train_versioned(output, dataset, steps):
  from conftest import iris_args
  from tensorfx import training
  from tensorfx.models import nn

  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(
      output,
      '--hidden-layers:1',
      '8',
      '--max-steps',
      str(steps),
      '--export-versioned',
    ),
    parse_job=True,
  )
  return training.ModelTrainer().train(
    nn.FeedForwardClassification(args, dataset), job
  )


def test_versioned_export_has_tensorflow_servings_layout(
  tmp_path, iris_dataset_factory
):
  output = tmp_path / 'job'
  first = _train_versioned(output, iris_dataset_factory(), 4)
  assert first.path == str(output / 'model' / '4')
  # Resumed and trained on: a new version beside the first.
  _train_versioned(output, iris_dataset_factory(), 8)
  base = output / 'model'
  # TensorFlow Serving's base path: version directories named by integers,
  # each a complete SavedModel; nothing else at the top.
  assert sorted(p.name for p in base.iterdir()) == ['4', '8']
  for version in ('4', '8'):
    assert (base / version / 'saved_model.pb').is_file()
    assert (base / version / 'variables' / 'variables.index').is_file()
    assert glob.glob(str(base / version / 'variables' / 'variables.data-*'))
    loaded = tf.saved_model.load(str(base / version))
    outputs = loaded.signatures['serving_default'](csv=tf.constant(INSTANCES))
    assert outputs['scores'].shape == (3, 3)
  # Model.load takes the base path and serves its highest version, as
  # TensorFlow Serving does.
  latest = prediction.Model.load(str(base))
  assert (latest.path, latest.version) == (str(base / '8'), 8)
  direct = prediction.Model.load(str(base / '8'))
  assert direct.version is None
  assert latest.predict(INSTANCES) == direct.predict(INSTANCES)
  assert latest.predict(INSTANCES) != first.predict(INSTANCES)


def test_versioned_export_replaces_an_unversioned_model(
  tmp_path, iris_model, iris_dataset_factory
):
  source, _ = iris_model
  output = tmp_path / 'job'
  shutil.copytree(f'{source}/model', output / 'model')
  _train_versioned(output, iris_dataset_factory(), 2)
  assert sorted(p.name for p in (output / 'model').iterdir()) == ['2']


def test_a_directory_without_a_model_or_versions_is_named(tmp_path):
  (tmp_path / 'base' / 'not-a-version').mkdir(parents=True)
  (tmp_path / 'base' / '3.partial').mkdir()
  with pytest.raises(
    DataError,
    match=r"Cannot load the model at '.*base': "
    r'it holds no saved_model.pb, nor version directories',
  ):
    prediction.Model.load(str(tmp_path / 'base'))
