"""CSV files read for the analysis: byte ranges decoded into RecordBatches.

Each file is cut into ranges of `SPLIT_BYTES` (a line belongs to the range
its first byte is in), so the workers of a runner share even one big file.
A worker reads its range in blocks of whole lines and decodes each block
with one call of the training reader's function (`decode_lines`, or
`parse_lines` when bad records are skipped), then hands tf.Transform one
Arrow RecordBatch per block. Blocks decode in threads, a few ahead of the
one tf.Transform works on. Memory is bounded by the blocks in flight,
whatever the size of the data.

Line numbers are counted only when needed: a bad row stops the analysis
with `FILE:LINE: what is wrong`, found by the Python rules in its block, and
skipped rows are logged by file and line.
"""

import collections
from concurrent import futures
import os
from typing import Any

import apache_beam as beam

from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _arrow
from tensorfx.data import _csvrules
from tensorfx.data import _skipping

SPLIT_BYTES = 64 << 20
BLOCK_BYTES = 4 << 20
# Blocks decoded at once by a worker.
_THREADS = min(os.cpu_count() or 1, 4)


def splits(files, split_bytes=None):
  """`(path, start, end)` byte ranges covering the files."""
  import tensorflow as tf

  split_bytes = split_bytes or SPLIT_BYTES
  ranges = []
  for path in files:
    size = int(tf.io.gfile.stat(path).length)
    for start in range(0, max(size, 1), split_bytes):
      ranges.append((path, start, min(start + split_bytes, size)))
  return ranges


def record_batches(source, pipeline, label='ReadCsv'):
  """The RecordBatches of a `CsvDataSource`, as a PCollection."""
  ranges = splits(source.files())
  elements = pipeline | f'{label}Ranges' >> beam.Create(ranges)
  if len(ranges) > 1:
    # Spreads the ranges over workers (Create makes one bundle).
    elements |= f'{label}Spread' >> beam.Reshuffle()
  # Headers are read here, once: each range decodes by its file's columns.
  columns = {path: source.columns_of(path) for path in source.files()}
  return elements | f'{label}Decode' >> beam.ParDo(
    _DecodeRanges(
      source.schema,
      source.delimiter,
      source.skip_header,
      source.skip_bad_records,
      columns,
      source.strip_cells,
    )
  )


def blocks(path, start, end, block_bytes=None):
  """Yields `(offset, data)`: whole lines of a file that start in [start, end).

  `data` ends with the end of a line (its newline included, except at the
  end of the file); `offset` is its position in the file.
  """
  import tensorflow as tf

  block_bytes = block_bytes or BLOCK_BYTES
  with tf.io.gfile.GFile(path, 'rb') as f:
    offset = start
    if start > 0:
      # The line that holds byte start - 1 belongs to the range before.
      f.seek(start - 1)
      pending = b''
      while True:
        chunk = f.read(block_bytes)
        if not chunk:
          return
        pending += chunk
        newline = pending.find(b'\n')
        if newline >= 0:
          offset = start - 1 + newline + 1
          pending = pending[newline + 1 :]
          break
    else:
      pending = b''
    done = False
    while not done:
      chunk = f.read(block_bytes)
      pending += chunk
      if not chunk:
        done = True
        data = pending
      else:
        last = pending.rfind(b'\n')
        if last < 0:
          continue
        data = pending[: last + 1]
      if offset + len(data) > end:
        # The last line taken is the one holding byte end - 1.
        newline = data.find(b'\n', max(end - 1 - offset, 0))
        data = data[: newline + 1] if newline >= 0 else data
        done = True
      if offset < end and data:
        yield offset, data
      offset += len(data)
      pending = pending[len(data) :]


def count_lines(path, end):
  """How many lines start before byte `end` of a file (all but the last)."""
  import tensorflow as tf

  count = 0
  with tf.io.gfile.GFile(path, 'rb') as f:
    remaining = end
    while remaining > 0:
      chunk = f.read(min(BLOCK_BYTES, remaining))
      if not chunk:
        break
      count += chunk.count(b'\n')
      remaining -= len(chunk)
  return count


class _DecodeRanges(beam.DoFn):
  """Byte ranges of CSV files -> RecordBatches, by the training reader."""

  def __init__(
    self,
    schema,
    delimiter,
    skip_header,
    skip_bad_records,
    columns=None,
    strip=False,
  ):
    super().__init__()
    self._schema = schema
    self._columns = columns or {}
    self._strip = strip
    self._delimiter = delimiter
    self._skip_header = skip_header
    self._skip_bad_records = skip_bad_records
    self._bad_records = beam.metrics.Metrics.counter(
      _arrow.COUNTER_NAMESPACE, _arrow.BAD_RECORDS_COUNTER
    )

  def setup(self):
    self._parsers = {}

  def process(self, split):
    import tensorflow as tf

    path, start, end = split
    columns = self._columns.get(path)
    if columns not in self._parsers:
      self._parsers[columns] = _parser(
        self._schema,
        self._delimiter,
        self._skip_bad_records,
        columns,
        self._strip,
      )
    self._parse = self._parsers[columns]
    first = _FirstLine(path)
    # Blocks decode in threads (TensorFlow releases the GIL), in order, a
    # few ahead of the one tf.Transform works on: every core is busy even
    # in a single-process runner.
    with futures.ThreadPoolExecutor(_THREADS) as pool:
      ahead: collections.deque[Any] = collections.deque()
      for item in self._blocks(path, start, end, first):
        ahead.append((pool.submit(self._parse, tf.constant(item[0])),) + item)
        if len(ahead) > _THREADS:
          yield from self._batches(path, first, ahead.popleft())
      while ahead:
        yield from self._batches(path, first, ahead.popleft())

  def _blocks(self, path, start, end, first):
    """Yields `(data, header lines dropped)` of the range's blocks."""
    for offset, data in blocks(path, start, end):
      first.begin(offset)
      header = 0
      if self._skip_header and offset == 0:
        newline = data.find(b'\n')
        data = data[newline + 1 :] if newline >= 0 else b''
        header = 1
      if data:
        yield data, header
      elif header:
        first.skip(header)

  def _batches(self, path, first, item):
    """The RecordBatch of one decoded block (checked, or bad rows dropped)."""
    import tensorflow as tf

    future, data, header = item
    first.skip(header)
    if not self._skip_bad_records:
      try:
        features = future.result()
      except tf.errors.OpError as e:
        raise DataError(self._locate(path, first, data, e)) from None
      first.skip(_line_count(data))
      yield _arrow.record_batch(features, self._schema)
      return
    features, reasons, lines = future.result()
    reasons, lines = reasons.numpy(), lines.numpy()
    kept = (reasons == b'') & (lines != b'')
    bad = ((reasons != b'') & (lines != b'')).nonzero()[0]
    if len(bad):
      self._bad_records.inc(len(bad))
      logged = max(0, _skipping.LOGGED_BAD_RECORDS - first.logged)
      for index in bad[:logged]:
        logger.warning(
          'Skipping a bad record: %s:%d: %s',
          path,
          first.number() + index,
          reasons[index].decode('utf-8', 'replace'),
        )
      first.logged += len(bad)
    first.skip(len(lines))
    yield _arrow.record_batch(
      {name: value.numpy()[kept] for name, value in features.items()},
      self._schema,
    )

  def _locate(self, path, first, data, error):
    """The `FILE:LINE: reason` of the first bad line of a block."""
    text = data.decode('utf-8', errors='replace')
    for index, line in enumerate(text.split('\n')):
      line = line[:-1] if line.endswith('\r') else line
      if not line:
        continue
      try:
        _csvrules.parse_row(
          path,
          first.number() + index,
          line,
          self._schema,
          self._delimiter,
          self._columns.get(path),
          self._strip,
        )
      except DataError as e:
        return str(e)
    message = str(getattr(error, 'message', error)).split('\n')[0]
    return f'{path}:{first.number()}: a line from here on is bad: {message}'


# Traced parsers by (schema, delimiter, skipping, columns, strip): a runner
# makes a DoFn per bundle, and tracing one costs more than decoding a block.
_PARSERS: dict[Any, Any] = {}


def _parser(schema, delimiter, skip_bad_records, columns=None, strip=False):
  """The tf.function decoding a block of CSV lines (a scalar string)."""
  key = (schema, delimiter, skip_bad_records, columns, strip)
  if key in _PARSERS:
    return _PARSERS[key]
  import tensorflow as tf

  def lines_of(data):
    # As TextLineDataset cuts lines: at \n, without a \r before it.
    lines = tf.strings.split(tf.strings.regex_replace(data, '\n$', ''), '\n')
    return tf.strings.regex_replace(lines, '\r$', '')

  if skip_bad_records:

    def parse(data):
      lines = lines_of(data)
      features, reasons = _csvrules.parse_lines(
        lines, schema, delimiter, columns=columns, strip=strip
      )
      return features, reasons, lines
  else:

    def parse(data):
      return _csvrules.decode_lines(
        lines_of(data), schema, delimiter, columns, strip
      )

  _PARSERS[key] = tf.function(
    parse, input_signature=[tf.TensorSpec([], tf.string)], autograph=False
  )
  return _PARSERS[key]


def _line_count(data):
  """The lines in a block of whole lines."""
  if not data:
    return 0
  return data.count(b'\n') + (0 if data.endswith(b'\n') else 1)


class _FirstLine:
  """The number of the next line of a range, counted only when asked."""

  def __init__(self, path):
    self._path = path
    self._start = None
    self._before = None
    self._read = 0
    self.logged = 0  # Bad rows logged so far.

  def begin(self, offset):
    """Notes the offset of the range's first line (the first call only)."""
    if self._start is None:
      self._start = offset
      self._before = 0 if offset == 0 else None

  def skip(self, count):
    self._read += count

  def number(self):
    if self._before is None:
      self._before = count_lines(self._path, self._start)
    return self._before + self._read + 1
