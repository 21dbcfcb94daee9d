"""TFRecord files of any protocol buffer message, read by field paths.

The message here is not Gematria's: a weather station with repeated
samples and labelled measurements, built from a descriptor in the test (no
generated code), to show the reader works for any message type.
"""

import json

from google.protobuf import descriptor_pb2
from google.protobuf import descriptor_pool
from google.protobuf import message_factory
import numpy as np
import pytest
import tensorflow as tf

from tensorfx import data
from tensorfx.data import _validation

_F = descriptor_pb2.FieldDescriptorProto


def _station_class():
  file = descriptor_pb2.FileDescriptorProto(
    name='tfxtest/station.proto', package='tfxtest', syntax='proto3'
  )
  sample = file.message_type.add(name='Sample')
  sample.field.add(name='value', number=1, type=_F.TYPE_DOUBLE)
  sample.field.add(name='unit', number=2, type=_F.TYPE_STRING)
  label = file.message_type.add(name='Label')
  label.field.add(name='kind', number=1, type=_F.TYPE_STRING)
  label.field.add(
    name='values', number=2, type=_F.TYPE_DOUBLE, label=_F.LABEL_REPEATED
  )
  station = file.message_type.add(name='Station')
  station.field.add(name='name', number=1, type=_F.TYPE_STRING)
  station.field.add(name='id', number=2, type=_F.TYPE_INT64)
  station.field.add(
    name='samples',
    number=3,
    type=_F.TYPE_MESSAGE,
    type_name='.tfxtest.Sample',
    label=_F.LABEL_REPEATED,
  )
  station.field.add(
    name='tags', number=4, type=_F.TYPE_STRING, label=_F.LABEL_REPEATED
  )
  station.field.add(
    name='labels',
    number=5,
    type=_F.TYPE_MESSAGE,
    type_name='.tfxtest.Label',
    label=_F.LABEL_REPEATED,
  )
  pool = descriptor_pool.DescriptorPool()
  pool.Add(file)
  return message_factory.GetMessageClass(
    pool.FindMessageTypeByName('tfxtest.Station')
  )


Station = _station_class()

SCHEMA = data.Schema.parse("""
fields:
- {name: name, type: discrete}
- {name: tags, type: discrete, length: 0}
- {name: mean_sample, type: real}
- {name: samples, type: discrete, length: 0}
- {name: sample_counts, type: integer, length: 0}
- {name: kind, type: discrete, default: ''}
- {name: y, type: real}
""")
FIELDS = {
  'name': 'name',
  'tags': 'tags',
  'mean_sample': {'path': 'samples.value', 'reduce': 'mean'},
  # Each sample's unit, then its value as text.
  'samples': {'each': 'samples', 'values': ['unit', 'value']},
  'sample_counts': {
    'each': 'samples',
    'values': ['unit', 'value'],
    'lengths': True,
  },
  'kind': 'labels.kind',
  'y': {'path': 'labels.values', 'reduce': 'mean'},
}
FORMAT = data.ProtoFormat(Station, FIELDS, examples='labels')


def station(index, labels=1):
  message = Station(name=f's{index}', id=index, tags=['a', 'b'][: index % 3])
  for value in (index, index + 2.0):
    message.samples.add(value=value, unit='C')
  for number in range(labels):
    message.labels.add(kind=f'k{number}', values=[index * 2.0, index * 4.0])
  return message


def _plain(value):
  if isinstance(value, tf.SparseTensor):
    value = tf.RaggedTensor.from_sparse(value)
    return [
      [v.decode() if isinstance(v, bytes) else v for v in row]
      for row in value.to_list()
    ]
  return [
    v.decode() if isinstance(v, bytes) else v for v in value.numpy().tolist()
  ]


def test_paths_select_flatten_nest_and_reduce():
  decoded = FORMAT.decoder(SCHEMA).decode(
    tf.constant(
      [
        station(1).SerializeToString(),
        station(2, labels=2).SerializeToString(),
        station(3, labels=0).SerializeToString(),
      ]
    )
  )
  # One example per label: station 1 once, station 2 twice, station 3 never.
  assert _plain(decoded['name']) == ['s1', 's2', 's2']
  assert _plain(decoded['tags']) == [['a'], ['a', 'b'], ['a', 'b']]
  assert _plain(decoded['mean_sample']) == [2.0, 3.0, 3.0]
  assert _plain(decoded['samples'])[0] == ['C', '1', 'C', '3']
  assert _plain(decoded['sample_counts']) == [[2, 2]] * 3
  assert _plain(decoded['kind']) == ['k0', 'k0', 'k1']
  assert _plain(decoded['y']) == [3.0, 6.0, 6.0]


def test_each_joins_items_of_any_length_element_by_element():
  # Labels with no, one and three values; a station without labels; and a
  # batch of one record whose elements have nothing at all.
  schema = data.Schema.parse("""
fields:
- {name: labels, type: discrete, length: 0}
- {name: label_counts, type: integer, length: 0}
""")
  fields = {
    'labels': {'each': 'labels', 'values': ['values', 'kind', 'values']},
    'label_counts': {
      'each': 'labels',
      'values': ['values', 'kind'],
      'lengths': True,
    },
  }
  decoder = data.ProtoFormat(Station, fields).decoder(schema)
  stations = [Station(name='empty')]
  stations.append(Station(name='three'))
  for kind, values in (('a', []), ('', [1.5]), ('c', [2.0, 3.25, -1.0])):
    stations[-1].labels.add(kind=kind, values=values)

  def expected(message):
    joined, counts = [], []
    for label in message.labels:
      items = [f'{v:g}' for v in label.values] + [label.kind]
      joined += items + [f'{v:g}' for v in label.values]
      counts.append(len(items))
    return joined, counts

  for batch in (stations, stations[:1], stations[::-1]):
    decoded = decoder.decode(
      tf.constant([m.SerializeToString() for m in batch])
    )
    assert _plain(decoded['labels']) == [expected(m)[0] for m in batch]
    assert _plain(decoded['label_counts']) == [expected(m)[1] for m in batch]


def test_prediction_reads_one_instance_per_record_without_the_examples():
  decoded = FORMAT.decoder(SCHEMA).decode(
    tf.constant(
      [station(1).SerializeToString(), station(3, labels=0).SerializeToString()]
    ),
    for_prediction=True,
  )
  assert sorted(decoded) == [
    'mean_sample',
    'name',
    'sample_counts',
    'samples',
    'tags',
  ]
  assert _plain(decoded['name']) == ['s1', 's3']


def test_where_match_reads_the_first_element_whose_field_matches():
  # One example per record: a target per label kind, as Gematria's tasks
  # each read the first throughput whose source matches their filter.
  schema = data.Schema.parse("""
fields:
- {name: name, type: discrete}
- {name: y0, type: real, default: .nan}
- {name: y1, type: real, default: .nan}
""")
  proto_format = data.ProtoFormat(
    Station,
    {
      'name': 'name',
      'y0': {
        'path': 'labels.values',
        'where': 'labels.kind',
        'match': 'k0',
        'reduce': 'mean',
      },
      'y1': {
        'path': 'labels.values',
        'where': 'labels.kind',
        'match': 'k[12]',
        'reduce': 'first',
      },
    },
  )
  twice = station(4, labels=2)
  twice.labels.add(kind='k1', values=[100.0])  # Not the first k1.
  decoded = proto_format.decoder(schema).decode(
    tf.constant(
      [
        station(1).SerializeToString(),
        twice.SerializeToString(),
        station(3, labels=0).SerializeToString(),
      ]
    )
  )
  assert _plain(decoded['name']) == ['s1', 's4', 's3']
  assert _plain(decoded['y0'])[:2] == [3.0, 12.0]
  assert np.isnan(_plain(decoded['y0'])[2])
  y1 = _plain(decoded['y1'])
  assert np.isnan(y1[0]) and y1[1] == 8.0 and np.isnan(y1[2])
  # A batch in which nothing matches (decode_proto of no element).
  alone = proto_format.decoder(schema).decode(
    tf.constant([station(3, labels=0).SerializeToString()])
  )
  assert np.isnan(_plain(alone['y1'])[0])
  prediction = proto_format.decoder(schema).decode(
    tf.constant([twice.SerializeToString()]), for_prediction=True
  )
  assert sorted(prediction) == ['name']


def test_where_match_errors_name_the_field():
  with pytest.raises(
    data.DataError, match="field 'y'.*where .* and match .* go together"
  ):
    data.ProtoFormat(Station, {'y': {'path': 'labels.values', 'match': 'k0'}})
  with pytest.raises(
    data.DataError, match="field 'y'.*not a regular expression"
  ):
    data.ProtoFormat(
      Station,
      {'y': {'path': 'labels.values', 'where': 'labels.kind', 'match': '('}},
    )
  with pytest.raises(
    data.DataError,
    match="field 'y'.*path must select inside the elements of 'labels'",
  ):
    data.ProtoFormat(
      Station,
      {'y': {'path': 'samples.value', 'where': 'labels.kind', 'match': 'k'}},
    )
  with pytest.raises(data.DataError, match="field 'y'.*reads records"):
    data.ProtoFormat(
      Station,
      {'y': {'path': 'labels.values', 'where': 'labels.kind', 'match': 'k'}},
      examples='labels',
    )


def test_a_path_the_message_lacks_is_an_error_naming_it():
  with pytest.raises(
    data.DataError,
    match=r"field 'x'.*tfxtest.Sample has "
    r"no field 'nope' \(it has value, unit\)",
  ):
    data.ProtoFormat(Station, {'x': 'samples.nope'})
  with pytest.raises(data.DataError, match='select its fields'):
    data.ProtoFormat(Station, {'x': 'samples'})


def test_schema_fields_need_a_path():
  partial = data.ProtoFormat(Station, {'name': 'name'})
  with pytest.raises(
    data.DataError, match='schema fields without a path: tags'
  ):
    data.ProtoDataSet(SCHEMA, partial, train='x.tfrecord')


def test_the_message_class_may_be_an_import_path():
  proto = data.ProtoFormat(
    'google.protobuf.descriptor_pb2:FileDescriptorProto', {'name': 'name'}
  )
  assert proto.descriptor.full_name == 'google.protobuf.FileDescriptorProto'
  with pytest.raises(data.DataError, match='does not import'):
    data.ProtoFormat('no.such.module:Message', {'name': 'name'})


def _write(path, records):
  with tf.io.TFRecordWriter(str(path)) as writer:
    for record in records:
      writer.write(
        record if isinstance(record, bytes) else record.SerializeToString()
      )
  return str(path)


def test_bad_records_fail_naming_the_record_or_are_skipped(tmp_path):
  path = _write(
    tmp_path / 'mixed.tfrecord',
    [station(1), station(2), b'\xff\xff not a station', station(4), station(5)],
  )
  dataset = data.ProtoDataSet(SCHEMA, FORMAT, train=path)
  with (
    pytest.raises(
      data.DataError,
      match=r'mixed.tfrecord: record 3: not '
      r'a serialized tfxtest.Station',
    ),
    _validation.data_errors(),
  ):
    list(dataset['train'].read(batch_size=2))
  dataset.skip_bad_records()
  batches = list(dataset['train'].read(batch_size=2))
  names = [n for b in batches for n in _plain(b['name'])]
  assert names == ['s1', 's2', 's4', 's5']
  assert dataset.bad_records() == {'train': 1}


FEATURES = """
features:
- name: X
  type: concat
  features:
  - {name: X_mean, type: zscore, fields: mean_sample}
  - {name: X_tags, type: onehot, fields: tags}
- {name: Y, type: target, fields: y}
"""


@pytest.mark.release
@pytest.mark.slow
def test_analysis_training_evaluation_and_prediction(tmp_path):
  from tensorfx import prediction
  from tensorfx import training
  from tensorfx.models import nn

  train = _write(
    tmp_path / 'train.tfrecord',
    [station(i % 20) for i in range(200)] + [b'junk'],
  )
  held = _write(
    tmp_path / 'eval.tfrecord', [station(i, labels=2) for i in range(20)]
  )
  (tmp_path / 'features.yaml').write_text(FEATURES)
  args, job = nn.FeedForwardRegressionArguments.parse(
    [
      '--output',
      str(tmp_path / 'job'),
      '--max-steps',
      '300',
      '--learning-rate',
      '0.05',
      '--hidden-layers:1',
      '8',
      '--seed',
      '1',
      '--skip-bad-records',
      '--batch-size',
      '20',
    ],
    parse_job=True,
  )
  dataset = data.ProtoDataSet(
    SCHEMA,
    FORMAT,
    train=train,
    eval=held,
    features=str(tmp_path / 'features.yaml'),
  )
  dataset.skip_bad_records()
  model = training.ModelTrainer().train(
    nn.FeedForwardRegression(args, dataset), job
  )
  # The analysis read the good records only (one example each).
  assert dataset.metadata.instances == 200
  import yaml

  metrics = yaml.safe_load((tmp_path / 'job' / 'job.yaml').read_text())[
    'metrics'
  ]
  # y = 3 * mean_sample - 3 over 0..19: predicting the mean is ~17 off.
  assert metrics['rmse'] < 3.0
  summary = prediction.predict_files(
    model,
    held,
    str(tmp_path / 'predicted.jsonl'),
    protos=dataset['eval'],
    progress=False,
  )
  assert summary.predicted == 20
  rows = [
    json.loads(line)
    for line in (tmp_path / 'predicted.jsonl').read_text().splitlines()
  ]
  values = np.array([row['value'] for row in rows])
  expected = np.array([3.0 * i for i in range(20)])
  assert np.abs(values - expected).mean() < 3.0
  with pytest.raises(data.DataError, match='cannot hold predictions'):
    prediction.predict_files(
      model,
      held,
      str(tmp_path / 'p.tfrecord'),
      protos=dataset['eval'],
      progress=False,
    )
