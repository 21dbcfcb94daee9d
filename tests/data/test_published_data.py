"""A data set as it is published trains from its file, unedited.

The Palmer penguins CSV as the `palmerpenguins` package ships it: a header
line, columns in the authors' order, `NA` for a missing value (bill and
flipper measurements of 2 penguins, the sex of 11). With `header=True` and
`na_values=['NA']` it trains as is, as accurately as the DataFrame the
package loads from the same file; the exported model reads served `NA`s as
missing; `tensorfx schema infer`'s schema and features train unchanged; and
the same data as Parquet trains too.
"""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from tensorfx.data import CsvDataSet
from tensorfx.data import DataFrameDataSet
from tensorfx.data import FeatureSet
from tensorfx.data import ParquetDataSet
from tensorfx.data import Schema
from tensorfx.models import nn
from tensorfx.training import ModelTrainer

palmerpenguins = pytest.importorskip('palmerpenguins')
PENGUINS = os.path.join(
  os.path.dirname(palmerpenguins.__file__), 'data', 'penguins.csv'
)

pytestmark = [
  pytest.mark.slow,
  pytest.mark.xdist_group('test_published_data'),
  pytest.mark.release,
]

# Fields in an order of our own: the header says where each column is.
SCHEMA = Schema.parse("""\
fields:
- {name: species, type: discrete}
- {name: body_mass_g, type: integer, missing: median}
- {name: bill_length_mm, type: real, missing: mean}
- {name: bill_depth_mm, type: real, missing: mean}
- {name: flipper_length_mm, type: integer, missing: mean}
- {name: island, type: discrete}
- {name: sex, type: discrete}
""")
FEATURES = FeatureSet.parse("""\
features:
- name: X
  type: concat
  features:
  - {name: bill_length, type: zscore, fields: bill_length_mm}
  - {name: bill_depth, type: zscore, fields: bill_depth_mm}
  - {name: flipper, type: zscore, fields: flipper_length_mm}
  - {name: mass, type: zscore, fields: body_mass_g}
  - {name: place, type: onehot, fields: island}
  - {name: sex_onehot, type: onehot, fields: sex}
- {name: Y, type: target, fields: species}
""")
STEPS = '400'


def _train(dataset, output):
  args, job = nn.FeedForwardClassificationArguments.parse(
    [
      '--output',
      str(output),
      '--max-steps',
      STEPS,
      '--batch-size',
      '32',
      '--hidden-layers:1',
      '16',
      '--seed',
      '5',
      '--log-level',
      'warning',
    ],
    parse_job=True,
  )
  model = ModelTrainer().train(nn.FeedForwardClassification(args, dataset), job)
  record = yaml.safe_load((output / 'job.yaml').read_text())
  assert record['status'] == 'completed', record
  return record['metrics']['accuracy'], model


@pytest.fixture(scope='module')
def from_file(tmp_path_factory):
  dataset = CsvDataSet(
    SCHEMA,
    features=FEATURES,
    header=True,
    na_values=['NA'],
    train=PENGUINS,
    eval=PENGUINS,
  )
  return _train(dataset, tmp_path_factory.mktemp('penguins') / 'csv')


def test_the_file_trains_as_accurately_as_its_dataframe(tmp_path, from_file):
  accuracy, _ = from_file
  frame = palmerpenguins.load_penguins()
  assert frame.isna().any().any(), 'the DataFrame has holes (NaN)'
  # Its schema inferred: columns with holes get a missing policy.
  dataset = DataFrameDataSet(features=FEATURES, train=frame, eval=frame)
  assert dataset.schema['bill_length_mm'].missing == 'mean'
  frame_accuracy, _ = _train(dataset, tmp_path / 'frame')
  majority = frame['species'].value_counts().max() / len(frame)
  assert accuracy > majority + 0.3, (accuracy, majority)
  assert abs(accuracy - frame_accuracy) <= 0.03, (accuracy, frame_accuracy)


def _scores(outputs):
  return [score for output in outputs for score in output['scores']]


def _schema_order_lines(schema):
  """The file's rows as lines in schema order (the CSV signature's)."""
  frame = pd.read_csv(PENGUINS, dtype=str, keep_default_na=False)
  return frame, [
    ','.join(row[name] for name in schema.field_names if name != 'species')
    for _, row in frame.iterrows()
  ]


def test_the_exported_model_reads_served_na_as_missing(from_file, tmp_path):
  _, model = from_file
  frame, lines = _schema_order_lines(SCHEMA)
  with_na = [i for i, line in enumerate(lines) if 'NA' in line.split(',')]
  assert len(with_na) >= 10
  predicted = model.predict([lines[i] for i in with_na])
  right = sum(
    p['label'] == frame['species'][i] for p, i in zip(predicted, with_na)
  )
  assert right >= 0.8 * len(with_na), (right, len(with_na))
  # NA reads as the empty cell does, in lines and in dict instances.
  blanked = [
    ','.join('' if c == 'NA' else c for c in lines[i].split(','))
    for i in with_na
  ]
  empty = model.predict(blanked)
  assert _scores(predicted) == pytest.approx(_scores(empty), abs=1e-6)
  first = dict(frame.iloc[with_na[0]])
  del first['species'], first['year']
  instance = {
    k: (
      v
      if v == 'NA' or v == '' or k in ('island', 'sex')
      else float(v)
      if '.' in v
      else int(v)
    )
    for k, v in first.items()
  }
  assert model.predict([instance])[0]['scores'] == pytest.approx(
    empty[0]['scores'], abs=1e-6
  )
  # The bare SavedModel reads an NA text feature as missing too.
  import tensorflow as tf

  signature = tf.saved_model.load(model.path).signatures['predict_features']
  features = {
    'body_mass_g': tf.constant([3750, 3750], tf.int64),
    'bill_length_mm': tf.constant([39.1, 39.1]),
    'bill_depth_mm': tf.constant([18.7, 18.7]),
    'flipper_length_mm': tf.constant([181, 181], tf.int64),
    'island': tf.constant(['Torgersen', 'Torgersen']),
    'sex': tf.constant(['NA', '']),
  }
  scores = signature(**features)['scores'].numpy()
  assert scores[0].tolist() == pytest.approx(scores[1].tolist(), abs=1e-6)
  # The tokens travel with the model: in its schema.yaml.
  exported = Schema.load(
    os.path.join(model.path, 'assets.extra', 'schema.yaml')
  )
  assert exported['bill_length_mm'].na_values == ('NA',)


def test_schema_infer_output_trains_unchanged(tmp_path):
  schema, features = tmp_path / 'schema.yaml', tmp_path / 'features.yaml'
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'schema',
      'infer',
      PENGUINS,
      '--header',
      '--na-values',
      'NA',
      '--output',
      str(schema),
      '--features',
      str(features),
      '--target',
      'species',
    ],
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-2000:]
  inferred = Schema.load(str(schema))
  assert inferred['bill_length_mm'].missing == 'mean'
  assert inferred['flipper_length_mm'].type.value == 'integer'
  assert inferred['sex'].na_values == ('NA',)
  # No na_values argument: the schema carries them.
  dataset = CsvDataSet(
    str(schema),
    features=str(features),
    header=True,
    train=PENGUINS,
    eval=PENGUINS,
  )
  accuracy, _ = _train(dataset, tmp_path / 'inferred')
  assert accuracy > 0.9, accuracy


def test_the_same_data_as_parquet_trains(tmp_path, from_file):
  csv_accuracy, model = from_file
  parquet = tmp_path / 'penguins.parquet'
  pd.read_csv(PENGUINS).to_parquet(parquet)
  dataset = ParquetDataSet(
    SCHEMA, features=FEATURES, train=str(parquet), eval=str(parquet)
  )
  accuracy, _ = _train(dataset, tmp_path / 'parquet')
  assert abs(accuracy - csv_accuracy) <= 0.03, (accuracy, csv_accuracy)
  # Batch prediction reads Parquet rows too (a null is a missing value).
  output = tmp_path / 'predicted.jsonl'
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'predict',
      '--model',
      model.path,
      '--input',
      str(parquet),
      '--output',
      str(output),
    ],
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-2000:]
  rows = [json.loads(line) for line in output.read_text().splitlines()]
  assert len(rows) == 344
  right = sum(r['label'] == r['species'] for r in rows)
  assert right / len(rows) == pytest.approx(csv_accuracy, abs=0.01)
