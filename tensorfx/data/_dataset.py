"""DataSet: a schema, a feature set, analysis results and named sources."""

import copy
import os

from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _metadata
from tensorfx.data import _missing
from tensorfx.data import _paths
from tensorfx.data._datasetargs import dataset_arguments
from tensorfx.data._featureset import FeatureSet
from tensorfx.data._metadata import Metadata
from tensorfx.data._schema import Schema

_METADATA_FILE = 'metadata.json'
_TRANSFORM_FN_DIR = 'transform_fn'


class DataSource:
  """One named source of a DataSet (e.g. its training files).

  Subclasses read their format: `read()` into batches of raw features for
  TensorFlow, `record_batches()` into Arrow RecordBatches for the Beam
  analysis, by the same rules.
  """

  # Sources that can drop bad records instead of failing say so.
  supports_skipping = False

  def __init__(self, paths=None, schema=None):
    self.paths = _paths.as_list(paths) if paths is not None else []
    # None until a DataSet binds the source to its schema (see `bind`).
    self.schema = schema
    self.skip_bad_records = False
    self._files = None

  def bind(self, schema):
    """This source reading by `schema`: itself, or a copy if it has another.

    What a DataSet does with the sources it is given: the dataset's schema
    is the one they read by. A source made without a schema takes the
    dataset's and is the very object the dataset holds, as the original
    tensorfx's `DataSet(...)[name]` was; one already reading by another
    schema (given to another dataset) is copied. Files are not touched.

    Example:
      >>> source = CsvDataSource('data/train-*.csv')  # no schema yet
      >>> source.bind(schema) is source, source.schema is schema
      (True, True)
    """
    if self.schema is None or self.schema is schema:
      self.schema = schema
      return self
    source = copy.copy(self)
    source.schema = schema
    return source

  @property
  def bad_records(self):
    """How many bad records reading this source skipped so far."""
    return 0

  def files(self):
    """The files this source reads (patterns expanded, checked to exist)."""
    if self._files is None:
      self._files = _paths.expand(self.paths)
    return list(self._files)

  def with_paths(self, paths):
    """A source like this one (format, options) reading other files.

    Example:
      >>> holdout = dataset['eval'].with_paths('data/holdout-*.csv')

    Args:
      paths: a path, pattern, comma-separated list or a sequence of them.

    Returns:
      A new source of the same class and options.

    Raises:
      DataError: no paths, or this source does not read files (a DataFrame).
    """
    if not self.paths:
      raise DataError(
        f'A {type(self).__name__} does not read files; add '
        'the source to the DataSet itself.'
      )
    if not _paths.as_list(paths):
      raise DataError(f'A source needs paths. Received: {paths!r}')
    source: DataSource = copy.copy(self)
    source.paths = _paths.as_list(paths)
    source._files = None
    return source

  def read(
    self, batch_size, epochs=1, shuffle=False, seed=None, shuffle_buffer=10000
  ):
    """A `tf.data.Dataset` of dicts of raw [batch] tensors, by field name.

    Args:
      batch_size: records per batch; the last batch may be smaller.
        Repeating forever, readers of one record per row (TFRecord,
        Parquet, DataFrame) make every batch full, with a static batch
        dimension: an endless stream has no last batch to drop, and a
        static size lets TensorFlow fold each step's shape arithmetic.
        CSV batches stay dynamic (blank lines are dropped after batching).
      epochs: passes over the data; None repeats forever.
      shuffle: whether to shuffle files and records.
      seed: the shuffle seed, for repeatable runs.
      shuffle_buffer: how many records the shuffle mixes.
    """
    raise NotImplementedError

  def record_batches(self, pipeline, label='Read'):
    """A PCollection of `pyarrow.RecordBatch`es of the raw data.

    One column per schema field (see `_arrow`); what the analysis feeds
    tf.Transform.
    """
    raise NotImplementedError

  def reading_options(self):
    """What, besides the files, decides the records read (a JSON-able dict).

    Part of the fingerprint that lets a second analysis of the same data
    reuse the first.
    """
    return {'source': type(self).__name__}

  def content_digest(self):
    """A digest of data that is not in files (a DataFrame), else None."""
    return None


class DataSet:
  """Data described declaratively, with named sources.

  Example:
    >>> dataset = DataSet({'train': CsvDataSource('data/train.csv')},
    ...                   'schema.yaml', None, 'features.yaml')
    >>> len(dataset), dataset.sources
    (1, ['train'])

  Two forms: tensorfx's `DataSet(schema, metadata=None, features=None)`,
  for subclasses, which add their sources, and the original tensorfx's
  `DataSet(sources, schema, metadata=None, features=None)`, told apart by
  the dict (or `sources=`) first. Their arguments:

  - `sources`: a dict of name to `DataSource`, each bound to the schema.
  - `schema`: a `Schema`, or the path of its YAML file.
  - `metadata`: the analysis output directory (as written by `tensorfx
    analyze`), its `metadata.json`, or None when the data has not been
    analyzed yet. A `metadata.json` of the original tensorfx (field
    statistics without a transform graph) is recognized: the data is
    analyzed instead, as without one.
  - `features`: a `FeatureSet`, or the path of its YAML file.

  Sources read records with the fields of targets required (a record
  without its label is bad), whatever the schema says about them.
  """

  def __init__(self, *args, **kwargs):
    sources, schema, metadata, features = dataset_arguments(args, kwargs)
    if isinstance(schema, str):
      schema = Schema.load(schema)
    if schema is None:
      # Most often a trainer's --data-schema left out: name the flag too.
      raise DataError(
        'The data needs its schema: give --data-schema PATH '
        '(a schema YAML file) on the command line, or schema= '
        'in Python. Received: schema=None'
      )
    if not isinstance(schema, Schema):
      raise DataError(
        'schema must be a Schema or the path of a schema YAML '
        f'file. Received: schema={schema!r}'
      )
    if isinstance(features, str):
      features = FeatureSet.load(features)
    if features is not None:
      if not isinstance(features, FeatureSet):
        raise DataError(
          'features must be a FeatureSet or the path of a '
          f'features YAML file. Received: features={features!r}'
        )
      features.validate(schema)
    self._schema = schema
    self._features = features
    targets = features.targets if features is not None else ()
    # What the sources read: a target's field is never missing; but with
    # several targets (tasks), one whose default is NaN may be: that task
    # has no target in the record (left out of its loss and metrics).
    self._reading_schema = _missing.required(
      schema,
      [
        name
        for t in targets
        for name in t.fields
        if len(targets) < 2 or not _missing.is_nan(schema[name].default)
      ],
    )
    self._metadata = None
    self._analysis_dir = None
    self._legacy_metadata = None
    self._transform_output = None
    if isinstance(metadata, Metadata):
      self._metadata = metadata
    elif metadata:
      path = str(metadata)
      if path.endswith('.json'):
        file, path = path, os.path.dirname(path)
      else:
        file = os.path.join(path, _METADATA_FILE)
      if _metadata.is_legacy(file):
        # Said when the analysis runs: logging is set up by then.
        self._legacy_metadata = file
      else:
        self._analysis_dir = path
    self._sources = {}
    for name, source in (sources or {}).items():
      self._sources[name] = self._bind(name, source)

  def _add_sources(self, sources, make, kind=None):
    """Adds the named sources a file-format dataset was given.

    Args:
      sources: name -> the files (a path, pattern, comma-separated list or
        list of them), a source of type `kind`, or None (left out).
      make: `make(paths)`, the source reading `paths` by the dataset's
        schema.
      kind: the `DataSource` class whose instances are taken as they are.
    """
    for name, paths in sources.items():
      if paths is None:
        continue
      if kind is not None and isinstance(paths, kind):
        # The original tensorfx's form: train=CsvDataSource('data/*.csv').
        self._sources[name] = self._bind(name, paths)
      elif not _paths.as_list(paths):
        raise DataError(f'Source {name!r} has no paths. Received: {paths!r}')
      else:
        self._sources[name] = make(paths)

  def _bind(self, name, source):
    """The source a DataSet given `source` reads: bound to its schema."""
    if not isinstance(source, DataSource):
      raise DataError(
        f'Source {name!r} must be a DataSource. Received: '
        f'{type(source).__name__}'
      )
    return source.bind(self._reading_schema)

  @property
  def schema(self):
    """The `Schema` of the raw data."""
    return self._schema

  @property
  def features(self):
    """The `FeatureSet`, or None when none was given."""
    return self._features

  def use_vocabulary_files(self, files):
    """Reads the vocabularies of features from files instead of the analysis.

    What `--data-vocabulary FEATURE=PATH` (Gematria's
    `--gematria_tokens_file`) does to a trainer's dataset.

    Example:
      >>> dataset.use_vocabulary_files({'tokens': 'tokens.txt'})

    Args:
      files: feature name -> the path of a file of one token per line.

    Raises:
      DataError: a feature that is not a top-level onehot or embedding one.
    """
    import dataclasses

    from tensorfx.data._featuretypes import FeatureType

    features = self._require_features('A vocabulary file')
    replaced = list(features)
    for name, path in dict(files).items():
      index = next((i for i, f in enumerate(replaced) if f.name == name), None)
      if index is None or replaced[index].type not in (
        FeatureType.ONEHOT,
        FeatureType.EMBEDDING,
      ):
        raise DataError(
          f'--data-vocabulary {name}={path}: the feature set has no onehot '
          f'or embedding feature {name!r} (it has '
          f'{", ".join(f.name for f in features)}).'
        )
      feature = replaced[index]
      replaced[index] = dataclasses.replace(
        feature, params=dict(feature.params, vocabulary_file=path)
      )
    self._features = FeatureSet(replaced)
    self._features.validate(self._schema)

  @property
  def sources(self):
    """The names of the sources, e.g. `['train', 'eval']`."""
    return list(self._sources)

  def skip_bad_records(self, count=True):
    """Makes every source skip and count bad records instead of failing.

    What `--skip-bad-records` does to a trainer's dataset.

    Args:
      count: whether the sources count (and log) what they skip; pipelines
        that run in other processes (parameter-server workers) cannot.

    Example:
      >>> dataset.skip_bad_records()
      >>> dataset.bad_records()
      {'train': 0, 'eval': 0}

    Raises:
      DataError: naming a source whose format cannot skip records.
    """
    for name, source in self._sources.items():
      if not source.supports_skipping:
        raise DataError(
          f'Source {name!r} ({type(source).__name__}) cannot skip bad '
          'records; CSV and TFRecord sources can.'
        )
      source.enable_skipping(count)

  def bad_records(self):
    """The bad records each source skipped so far, by source name."""
    return {name: source.bad_records for name, source in self._sources.items()}

  def add_source(self, name, paths, like=None):
    """Adds a named source of other files in the format of an existing one.

    What a validation target with its own files (`--eval-target holdout
    data=holdout.csv`) uses.

    Example:
      >>> dataset.add_source('holdout', 'data/holdout.csv', like='eval')
      >>> dataset.sources
      ['train', 'eval', 'holdout']

    Args:
      name: the new source's name (replaces a source of that name).
      paths: a path, pattern, comma-separated list or a sequence of them.
      like: the source whose format and options to copy (default: `eval`,
        else the first source).

    Raises:
      DataError: the dataset has no source to copy, or its format does not
        read files.
    """
    if like is None:
      like = (
        'eval' if 'eval' in self._sources else next(iter(self._sources), None)
      )
    if like is None:
      raise DataError(
        f'Cannot add source {name!r}: the dataset has no '
        'source whose format to copy.'
      )
    self._sources[name] = self[like].with_paths(paths)

  def __getitem__(self, name):
    try:
      return self._sources[name]
    except KeyError:
      raise DataError(
        f'The dataset has no source {name!r}; it has {sorted(self._sources)}.'
      ) from None

  def __contains__(self, name):
    return name in self._sources

  def __iter__(self):
    return iter(self._sources)

  def __len__(self):
    """The number of sources."""
    return len(self._sources)

  @property
  def analysis_dir(self):
    """Where the analysis output is (or will be), or None."""
    return self._analysis_dir

  @property
  def analyzed(self):
    """Whether a complete analysis output is available."""
    import tensorflow as tf

    if not self._analysis_dir:
      return False
    return tf.io.gfile.exists(
      os.path.join(self._analysis_dir, _METADATA_FILE)
    ) and tf.io.gfile.exists(
      os.path.join(self._analysis_dir, _TRANSFORM_FN_DIR)
    )

  def use_analysis(self, directory):
    """Uses the analysis in `directory` if it is complete.

    Returns:
      Whether `directory` held a complete analysis (and is now used).
    """
    previous = self._analysis_dir
    self._analysis_dir = directory
    if self.analyzed:
      self._metadata = None
      self._transform_output = None
      return True
    self._analysis_dir = previous
    return False

  @property
  def metadata(self):
    """The `Metadata` (statistics, vocabularies) of the analysis, or None."""
    if self._metadata is None and self.analyzed:
      self._metadata = Metadata.load(
        os.path.join(str(self._analysis_dir), _METADATA_FILE)
      )
    return self._metadata

  def _require_features(self, what):
    if self._features is None:
      raise DataError(
        f'{what} needs a feature set: pass features= (or '
        '--data-features) with the path of a features YAML.'
      )
    return self._features

  @property
  def preprocessing_fn(self):
    """The tf.Transform `preprocessing_fn` compiled from the feature set."""
    from tensorfx.data import _transforms

    return _transforms.build_preprocessing_fn(
      self._require_features('Preprocessing'), self._schema
    )

  def analyze(self, output_dir, source='train', pipeline_args=None, reuse=True):
    """Analyzes a source on Apache Beam and uses the result from then on.

    Writes the transform graph (`transform_fn/`), the transformed and raw
    schemas (`transformed_metadata/`, `metadata/`), `fingerprint.json` and
    `metadata.json`.

    Example:
      >>> dataset.analyze('/tmp/analysis', pipeline_args=[
      ...     '--direct_num_workers=1'])  # doctest: +SKIP

    Args:
      output_dir: the directory to write to (local or `gs://`).
      source: the source to analyze.
      pipeline_args: Beam pipeline options as command-line flags, e.g.
        `['--runner=DataflowRunner', '--project=p']`. By default the
        DirectRunner: in this process, or with a worker process per core
        from 256 MiB of files on a machine of 4 cores or more; any option
        given wins.
      reuse: whether an analysis already in `output_dir` of the same data
        files (paths, sizes, modification times), schema, features and
        reading options is reused instead of run again (logged either way).

    Returns:
      The `Metadata` computed (or reused).
    """
    from tensorfx.data import _analysis

    self._require_features('Analysis')
    if self._legacy_metadata:
      logger.info(
        "%s holds the original tensorfx's statistics, not an "
        'analysis (no transform graph): analyzing the data instead',
        self._legacy_metadata,
      )
    metadata = _analysis.analyze(self, output_dir, source, pipeline_args, reuse)
    self._analysis_dir = output_dir
    self._metadata = metadata
    self._transform_output = None
    return metadata

  @property
  def transform_output(self):
    """The `tft.TFTransformOutput` of the analysis."""
    if self._transform_output is None:
      if not self.analyzed:
        raise DataError(
          'The dataset has not been analyzed: pass metadata= (or '
          '--data-metadata) with a `tensorfx analyze` output directory, or '
          'call analyze(). Received: metadata='
          f'{self._analysis_dir!r}'
        )
      import tensorflow_transform as tft

      self._transform_output = tft.TFTransformOutput(str(self._analysis_dir))
    return self._transform_output

  @property
  def transformed_features(self):
    """A dict of feature name to `TransformedFeature`, after analysis."""
    from tensorfx.data import _transforms

    return _transforms.describe(
      self._require_features('Describing features'), self.transform_output
    )

  def raw_feature_spec(self):
    """The tf.io feature spec that parses raw tf.Examples.

    A feature that may be missing (see `Schema`'s `default` and `missing`)
    has its fill value as `default_value`, so an absent feature is a
    missing value, as an empty CSV cell is; targets are required.
    """
    from tensorfx.data import _transforms

    return _transforms.parsing_spec(self._reading_schema)

  def transform(self, dataset, layer=None):
    """Applies the transform graph to each batch of a raw `tf.data.Dataset`.

    Args:
      dataset: batches of raw features, as `DataSource.read()` makes.
      layer: the transform layer to use (one is made if not given).
    """
    import tensorflow as tf

    from tensorfx.data import _transforms

    apply = _transforms.applier(
      layer or self.transform_output.transform_features_layer()
    )
    # Prefetched again: the transform is the pipeline's last stage.
    return dataset.map(apply, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
      tf.data.AUTOTUNE
    )
