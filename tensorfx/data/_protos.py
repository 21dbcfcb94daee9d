"""TFRecord files of any protocol buffer message, read as raw features.

The reader is the tf.Example reader's pipeline (interleave the files,
shuffle, repeat, batch) with `tf.io.decode_proto` in place of
`tf.io.parse_example`: each batch of serialized messages is decoded in the
graph by the `ProtoFormat`'s field paths (`_protodecode`), never record by
record in Python. A format with `examples` yields one example per element
(Gematria's one example per throughput measurement), batched again to the
batch size.

A record that does not parse as the message, or whose values do not fit
the schema (two values for a scalar field, text for a number), is bad:
it fails the job naming its file and record, or with `skip_bad_records` is
dropped and counted, in training, evaluation and the analysis alike.
"""

from collections.abc import Iterator
import re
from typing import Any

from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _examples
from tensorfx.data import _examplescan
from tensorfx.data._dataset import DataSet
from tensorfx.data._protoformat import ProtoFormat

# Records per decoded batch the analysis reads.
_ANALYSIS_BATCH = 4096
# What the decoder's checks of one field say (`_protodecode`), without the
# values an assertion prints after it.
_FIELD_CHECK = re.compile(r"field '[^']+': [^\]\[\n]*")


class ProtoDataSource(_examples.ExamplesDataSource):
  """TFRecord files of serialized protocol buffer messages of one type.

  Example:
    >>> source = ProtoDataSource('blocks.tfrecord', schema, blocks_format)
    >>> batch = next(iter(source.read(batch_size=64)))  # doctest: +SKIP

  Args:
    paths: a path, pattern, comma-separated list or a sequence of them.
    schema: the `Schema` of the features.
    proto_format: the `ProtoFormat` (message type and field paths).
    compression: None, 'GZIP', 'ZLIB' or 'auto' (by the file's suffix).
    skip_bad_records: drop and count bad records instead of failing.
  """

  def __init__(
    self,
    paths,
    schema,
    proto_format: ProtoFormat,
    compression='auto',
    skip_bad_records=False,
  ):
    super().__init__(paths, schema, compression, skip_bad_records)
    proto_format.check_schema(schema)
    self.proto_format = proto_format
    self._decoders: dict = {}

  def decode(self, records, for_prediction=False):
    """Dict of raw feature tensors (by schema field) of a [B] batch.

    Args:
      records: a [B] string tensor of serialized messages.
      for_prediction: one example per record even when the format's
        `examples` is set; the fields under `examples` (measurements,
        targets) are left out.
    """
    key = for_prediction
    if key not in self._decoders:
      self._decoders[key] = self.proto_format.decoder(self.schema)
    return self._decoders[key].decode(records, for_prediction)

  def _decoder(self):
    return self.decode

  def _rebatched(self, ds, batch_size, full):
    if self.proto_format.examples:
      # A record makes any number of examples: batches of batch_size again.
      return ds.unbatch().batch(batch_size, drop_remainder=full)
    return super()._rebatched(ds, batch_size, full)

  def record_problem(self, value: bytes) -> str | None:
    """Why one serialized record is bad, or None when it decodes."""
    import tensorflow as tf

    problem = self.proto_format.problem(value)
    if problem is not None:
      return problem
    try:
      self.decode(tf.constant([value]))
    except tf.errors.OpError as e:
      return _message(e)
    return None

  def _check_records(self, records):
    """Decodes a batch; on failure finds, counts and logs its bad records."""
    import numpy as np
    import tensorflow as tf

    values = records.numpy()
    try:
      self.decode(tf.constant(values))
      return np.ones(len(values), dtype=bool)
    except tf.errors.OpError:
      pass
    problems = [self.record_problem(value) for value in values]
    bad = [p for p in problems if p is not None]
    for problem in bad[: self._count_bad(len(bad))]:
      logger.warning('Skipping a bad record: %s', problem)
    return np.array([p is None for p in problems], dtype=bool)

  def diagnose(self, error):
    """Names the file and record of the first bad record, or None.

    Only failures of decoding these messages, or of reading their files,
    are about records; a file's first bad record is claimed only when it
    fails the way `error` says, so a source whose files are fine, or bad in
    another way, claims nothing (sources are watched process-wide: a later
    pipeline's error, e.g. a tf.Example's, is not this source's).
    """
    import tensorflow as tf

    if not isinstance(
      error, (tf.errors.InvalidArgumentError, tf.errors.DataLossError)
    ):
      return None
    text = str(getattr(error, 'message', '') or error)
    decoding = 'DecodeProto' in text
    checks = {m.strip() for m in _FIELD_CHECK.findall(text)}
    reading = (
      isinstance(error, tf.errors.DataLossError)
      and _examplescan.RECORD_LOSS.search(text) is not None
    )
    if not (decoding or checks or reading):
      return None
    for path, compression in zip(self.files(), self.compressions()):
      index = 0
      try:
        for record in tf.data.TFRecordDataset(path, compression):
          index += 1
          problem = self.record_problem(record.numpy())
          if problem is not None:
            check = _FIELD_CHECK.search(problem)
            if (check.group(0).strip() in checks) if check else decoding:
              return f'{path}: record {index}: {problem}'
      except tf.errors.DataLossError:
        if reading:
          return f'{path}: truncated or corrupt after record {index}'
    return None

  def batches(
    self, path: str, compression: str, on_bad_record=None
  ) -> Iterator[dict]:
    """Decoded batches of one file (numpy values), for the analysis."""
    import numpy as np
    import tensorflow as tf

    count = 0
    for records in tf.data.TFRecordDataset(path, compression).batch(
      _ANALYSIS_BATCH
    ):
      values = records.numpy()
      try:
        decoded = self.decode(records)
      except tf.errors.OpError:
        problems = [self.record_problem(v) for v in values]
        if not self.skip_bad_records:
          index = next(i for i, p in enumerate(problems) if p is not None)
          raise DataError(
            f'{path}: record {count + index + 1}: {problems[index]}'
          ) from None
        for index, problem in enumerate(problems):
          if problem is not None and on_bad_record is not None:
            on_bad_record(f'{path}: record {count + index + 1}: {problem}')
        good = np.array([p is None for p in problems])
        count += len(values)
        if not good.any():
          continue
        decoded = self.decode(tf.constant(values[good]))
      else:
        count += len(values)
      yield decoded

  def reading_options(self):
    return dict(
      super().reading_options(), proto=self.proto_format.reading_options()
    )

  def record_batches(self, pipeline, label='ReadProtos'):
    from tensorfx.data import _arrow

    schema = self.schema

    def read(path, compression, on_bad_record):
      for decoded in self.batches(path, compression, on_bad_record):
        yield _arrow.record_batch(decoded, schema)

    return _examples.file_record_batches(
      pipeline, label, list(zip(self.files(), self.compressions())), read
    )


def _message(error) -> str:
  text = str(getattr(error, 'message', '') or error).splitlines()[0]
  if (
    'Unable to parse' in text
    or 'parse' in text.lower()
    and 'proto' in text.lower()
  ):
    return 'does not parse as the message'
  for marker in ('field ',):
    at = text.find(marker + "'")
    if at >= 0:
      return text[at:].split(' [Op:')[0].split('\n')[0]
  return text


class ProtoDataSet(DataSet):
  """A DataSet of TFRecord files of protocol buffer messages.

  Example:
    >>> dataset = ProtoDataSet(
    ...     'schema.yaml', proto_format=ProtoFormat(
    ...         'my_protos:Measurement',
    ...         fields={'x': 'inputs.value', 'y': 'label'}),
    ...     train='data/train.tfrecord', features='features.yaml')
    ...     # doctest: +SKIP

  Args:
    schema: a `Schema` or the path of its YAML file.
    proto_format: the `ProtoFormat` of the records.
    metadata: the analysis output, or None to analyze on demand.
    features: a `FeatureSet` or the path of its YAML file.
    compression: None, 'GZIP', 'ZLIB' or 'auto' (by file suffix).
    skip_bad_records: drop and count bad records instead of failing.
    **sources: named sources (`train=`, `eval=`), each paths or patterns.
  """

  def __init__(
    self,
    schema,
    proto_format: ProtoFormat,
    metadata=None,
    features=None,
    compression='auto',
    skip_bad_records=False,
    **sources: Any,
  ):
    super().__init__(schema, metadata=metadata, features=features)
    if not isinstance(proto_format, ProtoFormat):
      raise DataError(
        'proto_format must be a ProtoFormat. Received: '
        f'proto_format={proto_format!r}'
      )
    proto_format.check_schema(self.schema)
    self.proto_format = proto_format
    self._add_sources(
      sources,
      lambda paths: ProtoDataSource(
        paths, self._reading_schema, proto_format, compression, skip_bad_records
      ),
    )
