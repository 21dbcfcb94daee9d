"""ModelTrainer: runs a ModelBuilder as whatever role this process has."""

from typing import Any, Dict, List, Optional, Sequence

from tensorfx import _logging
from tensorfx._errors import ConfigurationError
from tensorfx._errors import DataError
from tensorfx.training import _callbacks
from tensorfx.training._cluster.config import Configuration
from tensorfx.training._run import actions as _actions
from tensorfx.training._run import data_hints as _data_hints
from tensorfx.training._run import dispatch as _dispatch


class ModelTrainer:
  """Trains a model as the role this process has in the job.

  Example:
    >>> args, output = FeedForwardClassificationArguments.parse(parse_job=True)
    >>> dataset = tfx.data.CsvDataSet(args.data_schema, train=args.data_train,
    ...                               eval=args.data_eval,
    ...                               features=args.data_features)
    >>> model = ModelTrainer().train(FeedForwardClassification(args, dataset),
    ...                              output)
    >>> model.predict(['6.3,3.3,6,2.5'])

  Args:
    config: the `Configuration`; read from `TF_CONFIG` when not given.
    callbacks: `tensorfx.training.Callback`s (or standard `tf_keras`
      callbacks, run through `KerasCallback`) to add to training (and to
      evaluation), after the built-in ones and before the builder's own
      (`ModelBuilder.build_callbacks()`).
  """

  def __init__(
    self,
    config: Optional[Configuration] = None,
    callbacks: Optional[Sequence[Any]] = None,
  ) -> None:
    if config is not None and not isinstance(config, Configuration):
      raise ConfigurationError(
        f'config must be a Configuration or None. Received: config={config!r}'
      )
    # Standard tf_keras callbacks run through the adapter.
    callbacks = [
      _callbacks.KerasCallback(c) if _callbacks.is_keras_callback(c) else c
      for c in callbacks or ()
    ]
    for callback in callbacks:
      if not isinstance(callback, _callbacks.Callback):
        raise ConfigurationError(
          'callbacks must be tensorfx.training.Callback instances. '
          f'Received: {callback!r}'
        )
    self._config = config or Configuration.environment()
    self._callbacks = callbacks

  @property
  def callbacks(self) -> List[Any]:
    """The callbacks given to the trainer."""
    return list(self._callbacks)

  @property
  def config(self) -> Configuration:
    """The training `Configuration`."""
    return self._config

  @_logging.guard_root()
  def train(
    self, model_builder: Any, dataset: Any = None, output: Optional[str] = None
  ) -> Any:
    """Runs training for this process's role.

    The chief trains, checkpoints, evaluates and exports; parameter servers
    and workers of a parameter-server cluster serve until the job ends.

    Two forms: `train(builder, output)`, for a builder made with its
    dataset, and the original tensorfx's last one, `train(builder,
    dataset, output)`, for a builder made without (`ModelBuilder(args)`).

    Example:
      >>> model = ModelTrainer().train(builder, '/tmp/job')
      >>> model = ModelTrainer().train(nn.FeedForwardClassification(args),
      ...                              dataset, output='/tmp/job')

    Args:
      model_builder: the `ModelBuilder` to train.
      dataset: the `DataSet` to train on, given to the builder; or, in the
        two-argument form, the output.
      output: the job's output directory (local or gs://); re-using one
        resumes from its latest checkpoint.

    With `--action evaluate` or `--action export` in the arguments (what
    `tensorfx evaluate` and `tensorfx export` pass), the trainer script's
    call does that instead, in this process: `evaluate()` prints its results
    as one JSON line and the process exits (code 0); `export()` returns the
    exported model. `--action evaluate --follow` evaluates each new
    checkpoint, as the evaluator task does, printing a JSON line each,
    and exits (code 0) once the job has ended. `--action predict` predicts
    the `--predict-input` records with a checkpoint (no model is written)
    into `--predict-output`, then exits (code 0).

    Returns:
      On the chief, the trained `tensorfx.prediction.Model`. Other roles
      (parameter servers, workers, the evaluator) do not return: their
      process exits (code 0) when the job has ended, so a trainer script
      written for the chief runs unchanged as every task.
    """
    if output is None and not _is_dataset(dataset):
      dataset, output = None, dataset
    if dataset is not None:
      model_builder.use_dataset(dataset)
    output = _output(output, 'train')
    _configure_logging(model_builder.settings)
    try:
      return _dispatch.run(model_builder, output, self._config, self._callbacks)
    except DataError as e:
      # A bad row's error says how to go on, as prediction's does.
      better = _data_hints.hinted(e, model_builder)
      if better is e:
        raise
      raise better from None

  @_logging.guard_root()
  def evaluate(
    self, model_builder: Any, output: str, checkpoint: Optional[str] = None
  ) -> Dict[str, Any]:
    """Evaluates a checkpoint on the validation targets, without training.

    tfutils' `test_from_params`: the same builder and arguments as
    training, one checkpoint, every validation target (`--data-eval`,
    `--eval-target`), the same evaluation engine as training's
    validation; the trainer's callbacks hear the results. Results are written to
    `OUTPUT/evaluations/CHECKPOINT.json` (and to MLflow with
    `--experiment`).

    Example:
      >>> ModelTrainer().evaluate(builder, '/tmp/job')
      {'checkpoint': '/tmp/job/checkpoints/ckpt-300', 'step': 300,
       'results': {'eval': {'loss': 0.11, 'accuracy': 0.97}}}

    Args:
      model_builder: the `ModelBuilder` (not yet built).
      output: the job's output directory.
      checkpoint: a checkpoint prefix or directory; None for the latest of
        `OUTPUT/checkpoints`.

    Returns:
      A dict: `checkpoint`, `step`, `results` (target name -> metrics).
    """
    output = _output(output, 'evaluate')
    _configure_logging(model_builder.settings)
    return _actions.evaluate(model_builder, output, checkpoint, self._callbacks)

  @_logging.guard_root()
  def export(
    self,
    model_builder: Any,
    output: str,
    checkpoint: Optional[str] = None,
    directory: Optional[str] = None,
  ) -> Any:
    """Exports a checkpoint as the SavedModel over raw instances.

    Example:
      >>> model = ModelTrainer().export(builder, '/tmp/job',
      ...                               '/tmp/job/checkpoints/best')
      >>> model.predict(['6.3,3.3,6,2.5'])

    Args:
      model_builder: the `ModelBuilder` (not yet built).
      output: the job's output directory.
      checkpoint: a checkpoint prefix or directory; None for the latest of
        `OUTPUT/checkpoints`.
      directory: where to write the model; None for `OUTPUT/model`.

    Returns:
      The exported `tensorfx.prediction.Model`.
    """
    output = _output(output, 'export')
    _configure_logging(model_builder.settings)
    return _actions.export(model_builder, output, checkpoint, directory)


def _is_dataset(value):
  from tensorfx.data import DataSet

  return isinstance(value, DataSet)


def _output(output, method):
  output = getattr(output, 'output', output)
  if not output or not isinstance(output, str):
    raise ConfigurationError(
      f'{method}() needs the output directory (a path). '
      f'Received: output={output!r}'
    )
  return output


def _configure_logging(settings):
  _logging.configure(settings.logging.level, settings.logging.tensorflow_level)
