"""The record of a tfutils experiment, kept as its run goes (a callback).

Besides what every run records (the built-in MLflow callback: parameters,
`train/loss`, each target's `TARGET/NAME`, checkpoints), a tfutils
experiment records:

- its identity, once the model is built: `OUTPUT/tfutils.json` and the
  run's tags `mlflow.runName` and `tfutils.exp_id` (the exp_id),
  `tfutils.fingerprint` and `tfutils.model` (see `_fingerprint`),
  `tfutils.model_config` (what the model function returned beside its
  outputs);
- `train_params['targets']` and the learning rate, as `train/NAME`
  metrics every `save_metrics_freq` steps (and in TensorBoard);
- the checkpoints of every `save_filters_freq` steps (and step 0 with
  `save_initial_filters`), copied to `checkpoints/saved/` where the
  rotation of recent ones never deletes them (tag `tfutils.saved_filters`).
"""

import json
import os
import statistics
from typing import Any, Callable, Optional

import tensorflow as tf

from tensorfx._logging import logger
from tensorfx.tfutils import _load
from tensorfx.tfutils import _save
from tensorfx.tfutils import _store
from tensorfx.training import internal as _internal


class ExperimentRecord(_internal.Callback):
  """Records a tfutils experiment; runs on the chief only.

  Args:
    exp_id: the experiment id.
    store: the `Store` the run is recorded in; None with `do_save` False.
    experiment: the MLflow experiment name.
    action: 'train' or 'evaluate' (`test_from_params`).
    description: the params dicts, described (for `tfutils.json`).
    save: the `SaveSettings` (None when evaluating).
    validates: for an evaluation, the experiment and checkpoint it
      evaluates (tags `tfutils.validates`, `tfutils.checkpoint`).
    fresh: whether the run starts from scratch on an exp_id that had
      checkpoints (`do_restore` False; tag `tfutils.fresh_start`).
  """

  def __init__(
    self,
    exp_id: str,
    store: Optional[_store.Store],
    experiment: str,
    action: str = 'train',
    description: Optional[dict[str, Any]] = None,
    save: Optional[_save.SaveSettings] = None,
    validates: Optional[dict[str, Any]] = None,
    fresh: bool = False,
  ) -> None:
    super().__init__()
    self.exp_id = exp_id
    # A Store whenever run_id is set (runs are recorded only with one).
    self.store: Any = store
    self.experiment = experiment
    self.action = action
    self.description = description or {}
    self.save = save
    self.validates = validates
    self.fresh = fresh
    self.run_id: Optional[str] = None
    self.results: Any = None
    self.saved_filters: list[str] = []
    self._failed = False

  @property
  def _chief(self) -> bool:
    return self.context.chief

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    if not self._chief:
      return
    builder = self.context.builder
    fingerprint = builder.fingerprint()
    if self.action == 'train':
      _store.write_record(
        self.context.output,
        {
          'exp_id': self.exp_id,
          'experiment': self.experiment,
          'store': self.store and _internal.tracking.safe_uri(self.store.uri),
          'fingerprint': fingerprint,
          'params': self.description,
          'model_config': builder.model_config,
          'fresh_start': self.fresh,
        },
      )
    if self.store is not None:
      output = self.context.output
      output = output if '://' in output else os.path.abspath(output)
      run = self._call(
        self.store.run_of_output, self.experiment, output, self.action
      )
      self.run_id = run.info.run_id if run is not None else None
      tags = {
        'mlflow.runName': self.exp_id,
        'tfutils.exp_id': self.exp_id,
        'tfutils.fingerprint': fingerprint['digest'],
        'tfutils.model': _tag(fingerprint),
      }
      if builder.model_config:
        tags['tfutils.model_config'] = _tag(builder.model_config)
      if self.fresh:
        tags['tfutils.fresh_start'] = 'true'
      if self.validates:
        tags.update({f'tfutils.{k}': str(v) for k, v in self.validates.items()})
      self._tags(tags)
    save = self.save
    if (
      save is not None
      and save.save_initial_filters
      and logs.get('step') == 0
      and builder.warm_started is None
    ):
      # tfutils kept the initial filters of a model it did not load.
      self.context.save_checkpoint()

  def on_step_end(self, step: int, logs: dict[str, Any]) -> None:
    if not self._chief:
      return
    values = self.context.builder.train_target_values()
    if values:
      self.context.summaries.scalars('train', step, values)
    if logs.get('learning_rate') is not None:
      values['learning_rate'] = logs['learning_rate']
    if values and self.run_id is not None:
      self._call(
        self.store.log_metrics,
        self.run_id,
        step,
        {f'train/{k}': v for k, v in values.items()},
      )

  def on_checkpoint(self, step: int, path: str) -> None:
    save = self.save
    if not self._chief or save is None:
      return
    initial = (
      step == 0
      and save.save_initial_filters
      and self.context.builder.warm_started is None
    )
    if not initial and (step == 0 or step % save.save_filters_freq):
      return
    directory = os.path.join(os.path.dirname(path), _load.SAVED)
    tf.io.gfile.makedirs(directory)
    for source in tf.io.gfile.glob(path + '.*'):
      tf.io.gfile.copy(
        source,
        os.path.join(directory, os.path.basename(source)),
        overwrite=True,
      )
    kept = os.path.join(directory, os.path.basename(path))
    self.saved_filters.append(kept)
    logger.info('Kept %s (save_filters_freq %d)', kept, save.save_filters_freq)
    self._tags({'tfutils.saved_filters': _tag(self.saved_filters)})

  def on_evaluate_end(self, step: int, results: Any) -> None:
    self.results = {
      'step': step,
      'results': {k: dict(v) for k, v in results.items()},
    }
    if not self._chief:
      return
    # tfutils' default agg_func keeps each key's per-batch list, which
    # the store's and TensorBoard's numbers cannot hold: their mean goes
    # there (the lists are in the results).
    for name, values in results.items():
      means = {
        key: statistics.fmean(value)
        for key, value in values.items()
        if isinstance(value, list)
        and value
        and all(isinstance(v, (int, float)) for v in value)
      }
      if not means:
        continue
      if self.context.summaries is not None:
        self.context.summaries.scalars(
          _internal.targets.summaries_dir(name), step, means
        )
      if self.run_id is not None:
        self._call(
          self.store.log_metrics,
          self.run_id,
          step,
          {f'{name}/{k}': v for k, v in means.items()},
        )

  def _tags(self, tags: dict[str, str]) -> None:
    if self.run_id is not None:
      self._call(self.store.set_tags, self.run_id, tags)

  def _call(self, method: Callable[..., Any], *args: Any) -> Any:
    if self._failed:
      return None
    try:
      return method(*args)
    except Exception as e:
      # As for the run's other records: warn once, train on.
      self._failed = True
      logger.warning(
        'Recording the tfutils experiment in MLflow failed '
        '(%s: %s); training goes on without it.',
        type(e).__name__,
        e,
      )
      return None


def _tag(value: Any) -> str:
  return _internal.tracking.clipped_text(
    json.dumps(value, sort_keys=True), _internal.tracking.TAG_LIMIT
  )
