"""CSV data: reading files into batches of raw features, in TensorFlow and Beam.

Every reader applies the rules of `_csvrules` (quoting, column count,
numbers, missing values), so analysis, training and serving accept and
reject the same rows. Errors name the file and line; with
`skip_bad_records` bad rows are dropped and counted instead.

The TensorFlow reader carries no file and line per row (zipping them in
costs several times the throughput): each batch is decoded by one typed
`tf.io.decode_csv` call, which fails on a bad row, and the reals are checked
to be finite. When the pipeline fails, `data_errors()` asks the source to
find the first bad row of its files (`CsvDataSource.diagnose`), by the
Python reader's rules, so the error names the file and line. With
`skip_bad_records` each batch is checked line by line instead
(`parse_lines`), which keeps the good rows at some cost in throughput. The
analysis decodes byte ranges of the files with the same two functions
(`_csvsplits`).
"""

from typing import Any, Self

from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _csvheader
from tensorfx.data import _csvrules
from tensorfx.data import _skipping
from tensorfx.data import _sourceargs
from tensorfx.data import _validation
from tensorfx.data._csvrules import parse_lines
from tensorfx.data._csvrules import read_rows
from tensorfx.data._dataset import DataSet
from tensorfx.data._schema import Schema

# Files read at once; more only adds buffers once reading is parallel.
_CYCLE_LENGTH = 16


class CsvDataSource(_skipping.SkippingSource):
  """CSV files: columns in schema order, or named by each file's header.

  Example:
    >>> source = CsvDataSource('data/train-*.csv', schema, skip_header=True,
    ...                        skip_bad_records=True)
    >>> for batch in source.read(batch_size=64):
    ...   pass
    >>> source.bad_records
    0

  Args:
    paths: a path, a file pattern, a comma-separated list or a sequence of
      them; local or any `tf.io.gfile` filesystem (`gs://`).
    schema: the `Schema` of the columns; may be left out when the source
      is given to a `CsvDataSet` (or `DataSet`), which binds it to its own
      (as the original tensorfx's `CsvDataSource('data/*.csv')`). Files are
      not touched until read.
    delimiter: the one-character column delimiter.
    skip_header: whether each file starts with a header line to skip (the
      columns are in schema order all the same).
    skip_bad_records: whether bad rows are dropped (and counted in
      `bad_records`, and in the analysis log) instead of failing the job.
      Batches with dropped rows are smaller than the batch size.
    header: whether the first line of each file names its columns: they
      are matched to the schema's fields by name, in any order (each file
      its own); columns the schema lacks are ignored (logged once).
    strip_cells: whether spaces around each cell are dropped (files with
      a space after each delimiter).

  Missing-value tokens (`NA`, `?`) are the schema fields' `na_values`.
  """

  def __init__(
    self,
    paths,
    schema=None,
    delimiter=',',
    skip_header=False,
    skip_bad_records=False,
    header=False,
    strip_cells=False,
  ):
    super().__init__(paths, schema, skip_bad_records)
    for name, flag in (
      ('header', header),
      ('skip_header', skip_header),
      ('strip_cells', strip_cells),
    ):
      if not isinstance(flag, bool):
        raise DataError(
          f'{name} must be True or False. Received: {name}={flag!r}'
        )
    if (
      not isinstance(delimiter, str)
      or len(delimiter) != 1
      or delimiter in '"\n\r'
      or not delimiter.isascii()
    ):
      raise DataError(
        'delimiter must be a single ASCII character other than '
        f'a quote or newline. Received: delimiter={delimiter!r}'
      )
    if schema is not None:
      _check_scalar(schema)
    self.delimiter = delimiter
    self.skip_header = skip_header or header
    self.header = header
    self.strip_cells = strip_cells
    self._layouts = None

  def bind(self, schema):
    _check_scalar(schema)
    return super().bind(schema)

  def _note_bad_rows(self, reasons, lines):
    """Counts and logs rows that `_check_batch` dropped (from tf.data)."""
    reasons, lines = reasons.numpy(), lines.numpy()
    for index in range(self._count_bad(len(reasons))):
      logger.warning(
        'Skipping a bad record: %s%s: %r',
        self._where(lines[index]),
        reasons[index].decode('utf-8', 'replace'),
        lines[index].decode('utf-8', 'replace')[:80],
      )
    return len(reasons)

  def _where(self, line):
    """`'PATH:LINE: '` of the first line of the files that is `line`.

    The pipeline keeps no line numbers (that would cost every row); a row
    logged (the first few skipped) is looked up by its text, as `diagnose`
    does.
    """
    import tensorflow as tf

    for path in self.files():
      try:
        with tf.io.gfile.GFile(path, 'rb') as f:
          for number, text in enumerate(f, start=1):
            if text.rstrip(b'\r\n') == line:
              return f'{path}:{number}: '
      except (OSError, tf.errors.OpError):  # Read by the pipeline already.
        continue
    return ''

  def read(
    self, batch_size, epochs=1, shuffle=False, seed=None, shuffle_buffer=10000
  ):
    import tensorflow as tf

    files = self.files()
    _validation.watch(self)
    deterministic = not shuffle or seed is not None
    layouts = self._layout_list()
    if len(layouts) > 1:
      # Each line carries the index of its file's layout, to decode by.
      index = [layouts.index(self.columns_of(path)) for path in files]
      ds = tf.data.Dataset.from_tensor_slices((files, index))

      def lines_of(path: Any, layout: Any) -> Any:
        return tf.data.Dataset.zip(
          (
            tf.data.TextLineDataset(path).skip(1),
            tf.data.Dataset.from_tensors(layout).repeat(),
          )
        )
    else:
      ds = tf.data.Dataset.from_tensor_slices(files)
      if self.skip_header:
        lines_of = lambda path: tf.data.TextLineDataset(path).skip(1)  # type: ignore[assignment,misc]  # noqa: E731
      else:
        lines_of = tf.data.TextLineDataset
    if shuffle and len(files) > 1:
      ds = ds.shuffle(len(files), seed=seed)
    ds = ds.interleave(
      lines_of,
      cycle_length=min(len(files), _CYCLE_LENGTH),
      num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=deterministic,
    )
    if shuffle:
      ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.repeat(epochs)
    # Batch first: one vectorized parse per batch, not one call per line.
    ds = ds.batch(batch_size)
    check = self._check_batch if self.skip_bad_records else self._decode_batch
    # The layouts are bound here: a traced function calls no Python method
    # that reads files.
    parse: Any
    if len(layouts) > 1:
      parse = lambda lines, index: check((lines, index), layouts)  # noqa: E731
    else:
      parse = lambda lines: check(lines, layouts)  # noqa: E731
    ds = ds.map(
      parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic
    )
    # Empty lines and skipped rows can leave a batch empty.
    name = self.schema[0].name
    ds = ds.filter(lambda batch: tf.size(batch[name]) > 0)
    return ds.prefetch(tf.data.AUTOTUNE)

  def with_paths(self, paths):
    source: Self = super().with_paths(paths)
    source._layouts = None
    return source

  def columns_of(self, path):
    """The field name (or None: ignored) of each column of a file.

    By its header with `header`; else None: the schema's fields in order.
    """
    if not self.header:
      return None
    if self._layouts is None:
      self._layouts = {}
      ignored: dict[str, Any] = {}
      for file in self.files():
        self._layouts[file], names = _csvheader.columns(
          file, self.schema, self.delimiter
        )
        for name in names:
          ignored.setdefault(name, file)
      if ignored:
        logger.info(
          'Ignoring the columns %s (not in the schema) of %s',
          ', '.join(map(repr, ignored)),
          ', '.join(sorted(set(ignored.values()))[:3]),
        )
    if path not in self._layouts:
      self._layouts[path] = _csvheader.columns(
        path, self.schema, self.delimiter
      )[0]
    return self._layouts[path]

  def _layout_list(self):
    """The distinct column layouts of the files, in file order."""
    layouts = []
    for path in self.files():
      columns = self.columns_of(path)
      if columns not in layouts:
        layouts.append(columns)
    return layouts or [None]

  @staticmethod
  def _by_layout(parse, lines, layouts):
    """`parse(lines, columns)` of a batch, per layout when files differ.

    Lines whose files share a layout are decoded together; the batch's
    rows come back grouped by layout.
    """
    import tensorflow as tf

    if len(layouts) == 1:
      return parse(lines, layouts[0])
    lines, index = lines
    parts = [
      parse(tf.boolean_mask(lines, tf.equal(index, i)), columns)
      for i, columns in enumerate(layouts)
    ]
    return tf.nest.map_structure(lambda *t: tf.concat(t, axis=0), *parts)

  def _decode_batch(self, lines, layouts=(None,)):
    """Decodes a batch as a hand-written pipeline would; fails on a bad row."""
    return self._by_layout(
      lambda batch, columns: _csvrules.decode_lines(
        batch, self.schema, self.delimiter, columns, self.strip_cells
      ),
      lines,
      layouts,
    )

  def _check_batch(self, lines, layouts=(None,)):
    """Parses and checks each line; drops empty and bad ones, counting these."""
    import tensorflow as tf

    def parse(batch, columns):
      batch = tf.boolean_mask(batch, tf.strings.length(batch) > 0)
      features, reasons = parse_lines(
        batch,
        self.schema,
        self.delimiter,
        columns=columns,
        strip=self.strip_cells,
      )
      return features, reasons, batch

    features, reasons, lines = self._by_layout(parse, lines, layouts)
    good = reasons == ''
    if not self._counting:
      return {k: tf.boolean_mask(v, good) for k, v in features.items()}

    def note():
      return tf.py_function(
        self._note_bad_rows,
        [tf.boolean_mask(reasons, ~good), tf.boolean_mask(lines, ~good)],
        tf.int64,
      )

    # Python is called only for batches that have bad rows.
    noted = tf.cond(tf.reduce_all(good), lambda: tf.constant(0, tf.int64), note)
    with tf.control_dependencies([noted]):
      return {k: tf.boolean_mask(v, good) for k, v in features.items()}

  def diagnose(self, error):
    """Finds the file and line of the bad row that failed a `read()` pipeline.

    Called by `data_errors()` once a pipeline failed. A row the pipeline
    quoted is looked up by its text; for an error of `tf.io.decode_csv`, the
    files are read by the Python reader's rules up to their first bad row.

    Returns:
      `'FILE:LINE: reason'`, or None when the error is not about a row of
      these files.
    """
    unlocated = _validation.unlocated_of(error)
    if unlocated is not None:
      return self._find_line(unlocated[0])
    # TensorFlow could not put a row that is not UTF-8 in its message.
    if not isinstance(
      error, UnicodeDecodeError
    ) and not _csvrules.DECODE_ERROR.search(
      str(getattr(error, 'message', error))
    ):
      return None
    for path in self.files():
      try:
        for _ in read_rows(
          path,
          self.schema,
          self.delimiter,
          self.skip_header,
          columns=self.columns_of(path),
          strip=self.strip_cells,
        ):
          pass
      except DataError as e:
        if isinstance(
          error, UnicodeDecodeError
        ) and 'not UTF-8 text' not in str(e):
          # Only a row that is not UTF-8 explains this error.
          return None
        return str(e)
    return None

  def _find_line(self, record):
    """The message of the first line whose text is `record`, by the rules."""
    import tensorflow as tf

    for path in self.files():
      with tf.io.gfile.GFile(path, 'rb') as f:
        for number, line in enumerate(f, start=1):
          if number == 1 and self.skip_header:
            continue
          # As TextLineDataset cuts lines: at \n, without a \r before it.
          text = line.decode('utf-8', errors='replace')
          text = text[:-1] if text.endswith('\n') else text
          text = text[:-1] if text.endswith('\r') else text
          if text == record:
            try:
              _csvrules.parse_row(
                path,
                number,
                text,
                self.schema,
                self.delimiter,
                self.columns_of(path),
                self.strip_cells,
              )
            except DataError as e:
              return str(e)
    return None

  def reading_options(self):
    options = dict(
      super().reading_options(),
      delimiter=self.delimiter,
      skip_header=self.skip_header,
      skip_bad_records=self.skip_bad_records,
    )
    # Only when set: analyses of earlier versions stay reusable.
    if self.header:
      options['header'] = True
    if self.strip_cells:
      options['strip_cells'] = True
    return options

  def record_batches(self, pipeline, label='ReadCsv'):
    from tensorfx.data import _csvsplits

    return _csvsplits.record_batches(self, pipeline, label)


def _check_scalar(schema):
  for field in schema:
    if field.length != 1:
      raise DataError(
        f'CSV data holds one value per column; field {field.name!r} has '
        f'length {field.length}. Use ExamplesDataSet for list fields.'
      )


class CsvDataSet(DataSet):
  """A DataSet of CSV sources sharing one schema.

  Example:
    >>> dataset = CsvDataSet('schema.yaml', train='data/train*.csv',
    ...                      eval='data/eval.csv', features='features.yaml')
    >>> dataset['train'].files()
    ['data/train.csv']

  Args:
    schema: a `Schema` or the path of its YAML file.
    metadata: the analysis output: a directory written by `tensorfx analyze`
      (or its `metadata.json`), a `Metadata`, or None to analyze on demand.
    features: a `FeatureSet` or the path of its YAML file.
    delimiter: the column delimiter of every source.
    skip_header: whether each file starts with a header line to skip
      (columns in schema order).
    skip_bad_records: whether bad rows are skipped (and counted: each
      source's `bad_records`, the analysis log) instead of failing.
    header: whether the first line of each file names its columns, matched
      to the schema's fields by name in any order; other columns are
      ignored. The exported model's CSV signature still takes lines in
      schema order.
    na_values: texts that stand for a missing value in every column (e.g.
      `['NA']`, `['?']`), besides the empty cell: added to each field's
      `na_values` (the schema's own, per field, stay), so the exported
      model reads them as missing too.
    strip_cells: whether spaces around each cell are dropped (`a, b, c`).
    **sources: named sources (`train=`, `eval=`, ...), each a path, pattern
      or list of them, or a `CsvDataSource` (its files and options, read by
      this dataset's schema).

  Example (a file as R writes it: a header, `NA` for missing values):
    >>> dataset = CsvDataSet('schema.yaml', train='penguins.csv',
    ...                      header=True, na_values=['NA'],
    ...                      features='features.yaml')

  Raises:
    DataError: a keyword is neither an option nor a source (`heade=True`).
  """

  def __init__(
    self,
    schema,
    metadata=None,
    features=None,
    delimiter=',',
    skip_header=False,
    skip_bad_records=False,
    header=False,
    na_values=(),
    strip_cells=False,
    **sources,
  ):
    _sourceargs.check_sources(
      'CsvDataSet',
      sources,
      _OPTIONS,
      _sourceargs.paths_or(CsvDataSource),
      'a path, pattern, list of them or a CsvDataSource',
    )
    if isinstance(na_values, str):
      na_values = [t for t in na_values.split(',') if t]
    if isinstance(schema, str):
      schema = Schema.load(schema)
    if isinstance(schema, Schema):
      schema = schema.with_na_values(na_values)
    super().__init__(schema, metadata=metadata, features=features)
    self._add_sources(
      sources,
      lambda paths: CsvDataSource(
        paths,
        self._reading_schema,
        delimiter,
        skip_header,
        skip_bad_records,
        header=header,
        strip_cells=strip_cells,
      ),
      CsvDataSource,
    )


_OPTIONS = (
  'schema',
  'metadata',
  'features',
  'delimiter',
  'skip_header',
  'skip_bad_records',
  'header',
  'na_values',
  'strip_cells',
)
