"""Which run a process makes: an action's, or its role's in the cluster.

`ModelTrainer.train()` hands every call here. `--action evaluate`,
`export` and `predict` (what `tensorfx evaluate`, `export` and `predict`
pass) run the action in this process; otherwise the process's role in
`TF_CONFIG` decides: the evaluator task evaluates, parameter servers and
parameter-server workers serve, and the chief (and each multi-worker
replica) trains.
"""

import contextlib
import json
import os
import sys
from typing import Any, Sequence

from tensorfx._logging import logger
from tensorfx.training._cluster import cluster as _cluster
from tensorfx.training._run import actions as _actions
from tensorfx.training._run import batch_predict as _batch_predict
from tensorfx.training._run import evaluator as _evaluator
from tensorfx.training._run import run as _run


def run(
  builder: Any, output: str, config: Any, callbacks: Sequence[Any]
) -> Any:
  """Runs `builder` as this process's action or role.

  Returns:
    The exported `tensorfx.prediction.Model` on the chief and for
    `--action export`. Other roles and actions do not return: the process
    exits (code 0) once its part is done.
  """
  settings = builder.settings
  job = settings.job
  if job.action == 'export':
    return _actions.export(builder, output, job.checkpoint, job.export_dir)
  if job.action == 'evaluate' and job.follow:
    _evaluator.follow(
      builder,
      output,
      callbacks,
      poll_secs=job.eval_interval_secs,
      timeout_secs=job.cluster_timeout_secs,
    )
    raise SystemExit(0)
  if job.action == 'evaluate':
    summary = _actions.evaluate(builder, output, job.checkpoint, callbacks)
    print(json.dumps(summary), flush=True)
    raise SystemExit(0)
  if job.action == 'predict':
    _batch_predict.predict(
      builder,
      output,
      job.checkpoint,
      settings.prediction,
      settings.data.skip_bad_records,
    )
    raise SystemExit(0)
  timeout = job.cluster_timeout_secs
  if config.evaluator:
    _evaluator.EvaluatorRun(
      builder, output, config, timeout_secs=timeout, callbacks=callbacks
    ).run()
    _exit_task(config)
  if config.strategy_kind == 'parameter_server' and not config.master:
    # Parameter servers and workers only serve: the chief sends them work.
    _cluster.serve(config, output, settle_secs=timeout)
    _exit_task(config)
  if config.strategy_kind == 'parameter_server':
    # Servers are up from the start: fail fast, naming a missing one.
    _cluster.wait_for_cluster(config, timeout)
  elif config.strategy_kind == 'multi_worker_mirrored':
    # Collective ops must be set up before any other TensorFlow work.
    config.create_device_setter(settings.job)
  model = _run.TrainingRun(builder, output, config, callbacks).run()
  if not config.master:
    _exit_task(config)
  return model


def _exit_task(config: Any) -> None:
  logger.info('%s is done', config.device or config.task.type)
  sys.stdout.flush()
  sys.stderr.flush()
  _remove_autograph_sources()
  # A server's gRPC threads would keep the interpreter alive: leave now.
  # The seed's contract too: a trainer script written for the chief runs
  # unchanged as every task, and only the chief returns from train().
  os._exit(0)


def _remove_autograph_sources() -> None:
  """Removes the temporary files holding autograph's converted functions.

  Autograph writes each function it converts to a file in the temporary
  directory and removes it in an `atexit` hook, which `os._exit` skips:
  without this, every task that ends here would leave its files behind.
  """
  for name, module in list(sys.modules.items()):
    path = getattr(module, '__file__', None)
    if name.startswith('__autograph_generated_file') and path:
      with contextlib.suppress(OSError):
        os.remove(path)
