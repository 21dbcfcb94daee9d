"""The default optimizer: choice, learning-rate schedule, clipping, accumulation.

`ModelBuilder.build_optimizer()` makes its optimizer here from the
`ModelArguments` flags:

- `--optimizer` adam | sgd (`--momentum`, `--nesterov`) | rmsprop
  (`--momentum`) | adagrad | ftrl, at `--learning-rate`;
- `--learning-rate-schedule` constant | exponential | inverse-time |
  polynomial | cosine | cosine-restarts | linear-cosine | natural-exp, with
  `--decay-steps`, `--decay-rate`, `--end-learning-rate`, and a linear
  `--warmup-steps` in front of any of them;
- `--clip-value` (each gradient element) or `--clip-norm` (the global norm
  of all gradients together), applied by the optimizer after the gradients
  of the replicas are summed, so every replica clips the same gradient;
- `--accumulation-steps N` (see `GradientAccumulator`).

Schedules count optimizer updates: with `--accumulation-steps N`, one update
every N steps (minibatches).
"""

import math
import re

import tensorflow as tf
import tf_keras

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings.optimizer import DEFAULT_LEARNING_RATE
from tensorfx.training._settings.optimizer import OPTIMIZERS
from tensorfx.training._settings.optimizer import SCHEDULES
from tensorfx.training._settings.optimizer import OptimizerSettings


def build_optimizer(args):
  """Builds the optimizer the arguments describe.

  Arguments missing from `args` (an object built by hand) take their
  defaults: Adam, a constant learning rate of 0.001, no clipping.

  Example:
    >>> args = ModelArguments.parse(['--optimizer', 'sgd', '--momentum',
    ...                              '0.9', '--clip-norm', '1'])
    >>> build_optimizer(args).global_clipnorm
    1.0

  Args:
    args: the `ModelArguments`, or their `OptimizerSettings`.

  Returns:
    A `tf_keras.optimizers.Optimizer`.

  Raises:
    ConfigurationError: an unknown optimizer or schedule, or a schedule
      without the values it needs.
  """
  settings = _settings(args)
  name = settings.optimizer
  clipping = {}
  clip_norm = settings.clip_norm
  clip_value = settings.clip_value
  if clip_norm is not None and clip_value is not None:
    # tf_keras would silently apply only the norm.
    raise ConfigurationError(
      'Use one of --clip-norm and --clip-value. Received: '
      f'--clip-norm={clip_norm} --clip-value={clip_value}'
    )
  if clip_norm is not None:
    clipping['global_clipnorm'] = float(clip_norm)
  if clip_value is not None:
    clipping['clipvalue'] = float(clip_value)
  learning_rate = build_learning_rate(settings)
  momentum = settings.momentum
  if name == 'adam':
    return tf_keras.optimizers.Adam(learning_rate=learning_rate, **clipping)
  if name == 'sgd':
    return tf_keras.optimizers.SGD(
      learning_rate=learning_rate,
      momentum=momentum,
      nesterov=settings.nesterov,
      **clipping,
    )
  if name == 'rmsprop':
    return tf_keras.optimizers.RMSprop(
      learning_rate=learning_rate, momentum=momentum, **clipping
    )
  if name == 'adagrad':
    return tf_keras.optimizers.Adagrad(learning_rate=learning_rate, **clipping)
  if name == 'ftrl':
    return tf_keras.optimizers.Ftrl(learning_rate=learning_rate, **clipping)
  raise ConfigurationError(
    f'--optimizer must be one of {", ".join(OPTIMIZERS)}. '
    f'Received: --optimizer={name}'
  )


def build_learning_rate(args):
  """The learning rate: a float, or a `LearningRateSchedule` of updates.

  Example:
    >>> args = ModelArguments.parse(['--learning-rate-schedule', 'cosine',
    ...                              '--decay-steps', '100'])
    >>> float(build_learning_rate(args)(100))
    0.0

  Args:
    args: the `ModelArguments`, or their `OptimizerSettings`.

  Returns:
    A float for a constant rate without warmup, else a schedule.
  """
  settings = _settings(args)
  rate = settings.learning_rate or DEFAULT_LEARNING_RATE
  kind = settings.schedule
  warmup = settings.warmup_steps
  schedule = _schedule(settings, kind, rate, warmup)
  if warmup > 0:
    return LinearWarmup(schedule if schedule is not None else rate, warmup)
  return rate if schedule is None else schedule


def _schedule(settings, kind, rate, warmup):
  if kind == 'constant':
    return None
  if kind not in SCHEDULES:
    raise ConfigurationError(
      f'--learning-rate-schedule must be one of {", ".join(SCHEDULES)}. '
      f'Received: --learning-rate-schedule={kind}'
    )
  steps = _decay_steps(settings, kind, warmup)
  end = settings.end_learning_rate
  end = 0.0 if end is None else float(end)
  # The cosine schedules express their floor as a fraction of the rate.
  alpha = end / rate
  schedules = tf_keras.optimizers.schedules
  if kind == 'exponential':
    return schedules.ExponentialDecay(rate, steps, _decay_rate(settings, kind))
  if kind == 'natural-exp':
    # rate * exp(-decay_rate * step / decay_steps), TF1's natural_exp_decay,
    # is exponential decay by exp(-decay_rate) per decay_steps.
    return schedules.ExponentialDecay(
      rate, steps, math.exp(-_decay_rate(settings, kind))
    )
  if kind == 'inverse-time':
    return schedules.InverseTimeDecay(rate, steps, _decay_rate(settings, kind))
  if kind == 'polynomial':
    return schedules.PolynomialDecay(rate, steps, end)
  if kind == 'cosine':
    return schedules.CosineDecay(rate, steps, alpha=alpha)
  if kind == 'cosine-restarts':
    return schedules.CosineDecayRestarts(rate, steps, alpha=alpha)
  return LinearCosineDecay(rate, steps, end_learning_rate=end)


def _decay_steps(settings, kind, warmup):
  steps = settings.decay_steps
  max_steps = settings.max_steps
  if steps is None:
    # By default the decay spans the run's updates after the warmup.
    accumulation = settings.accumulation_steps
    if max_steps is not None:
      steps = max_steps // accumulation - warmup
    if steps is None or steps <= 0:
      raise ConfigurationError(
        f'--learning-rate-schedule {kind} needs --decay-steps (a positive '
        'integer), or a positive --max-steps (divided by '
        '--accumulation-steps) longer than --warmup-steps to default to. '
        f'Received: --decay-steps={settings.decay_steps} '
        f'--max-steps={max_steps}'
      )
  return int(steps)


def _decay_rate(settings, kind):
  rate = settings.decay_rate
  if rate is None:
    raise ConfigurationError(
      f'--learning-rate-schedule {kind} needs --decay-rate. '
      'Received: no --decay-rate'
    )
  return float(rate)


class LinearCosineDecay(tf_keras.optimizers.schedules.LearningRateSchedule):
  """TF1's `linear_cosine_decay` (Bello et al., 2017), which tf_keras lacks.

  `rate * (linear * cosine + end / rate)` with `linear = 1 - t` and
  `cosine = (1 + cos(pi * t)) / 2` for `t = min(step, decay_steps) /
  decay_steps` (half a cosine period, TF1's default): from `rate` down to
  `end_learning_rate` at `decay_steps`.

  Example:
    >>> schedule = LinearCosineDecay(1.0, 10)
    >>> [round(float(schedule(s)), 3) for s in (0, 5, 10)]
    [1.0, 0.25, 0.0]

  Args:
    learning_rate: the initial rate.
    decay_steps: the updates to decay over.
    end_learning_rate: the final rate (TF1's `beta` times the rate).
  """

  def __init__(self, learning_rate, decay_steps, end_learning_rate=0.0):
    super().__init__()
    self.learning_rate = float(learning_rate)
    self.decay_steps = int(decay_steps)
    self.end_learning_rate = float(end_learning_rate)

  def __call__(self, step):
    steps = float(self.decay_steps)
    t = tf.minimum(tf.cast(step, tf.float32), steps) / steps
    linear = 1.0 - t
    cosine = 0.5 * (1.0 + tf.cos(math.pi * t))
    return self.learning_rate * linear * cosine + self.end_learning_rate

  def get_config(self):
    return {
      'learning_rate': self.learning_rate,
      'decay_steps': self.decay_steps,
      'end_learning_rate': self.end_learning_rate,
    }


class LinearWarmup(tf_keras.optimizers.schedules.LearningRateSchedule):
  """Rises linearly to a schedule's first value, then follows it.

  Update `i` (from 0) of the `warmup_steps` first ones gets
  `(i + 1) / warmup_steps` of the schedule's first value, so the first
  update already moves; update `warmup_steps + j` gets `schedule(j)`.

  Example:
    >>> warm = LinearWarmup(0.1, 4)
    >>> [round(float(warm(i)), 3) for i in range(6)]
    [0.025, 0.05, 0.075, 0.1, 0.1, 0.1]

  Args:
    schedule: a `LearningRateSchedule`, or a constant rate.
    warmup_steps: the number of updates to warm up over (positive).
  """

  def __init__(self, schedule, warmup_steps):
    super().__init__()
    if warmup_steps <= 0:
      raise ConfigurationError(
        '--warmup-steps must be a positive integer. '
        f'Received: --warmup-steps={warmup_steps}'
      )
    self.schedule = schedule
    self.warmup_steps = int(warmup_steps)

  def _rate(self, step):
    if callable(self.schedule):
      return tf.cast(self.schedule(step), tf.float32)
    return tf.constant(float(self.schedule), tf.float32)

  def __call__(self, step):
    step = tf.cast(step, tf.float32)
    warmup = float(self.warmup_steps)
    return tf.cond(
      step < warmup,
      lambda: self._rate(0) * (step + 1.0) / warmup,
      lambda: self._rate(step - warmup),
    )

  def get_config(self):
    schedule = self.schedule
    if isinstance(schedule, tf_keras.optimizers.schedules.LearningRateSchedule):
      schedule = tf_keras.optimizers.schedules.serialize(schedule)
    return {'schedule': schedule, 'warmup_steps': self.warmup_steps}


def select_variables(variables, pattern):
  """The variables whose names match `--trainable-pattern` (`re.search`).

  Example:
    >>> [v.name for v in select_variables(builder.trainable_variables,
    ...                                   '^output/')]
    ['output/kernel:0', 'output/bias:0']

  Args:
    variables: the trainable variables of the model.
    pattern: a regular expression, or None for all of them.

  Returns:
    A tuple of the variables to train.

  Raises:
    ConfigurationError: the pattern is invalid or matches no variable.
  """
  if not pattern:
    return tuple(variables)
  try:
    regex = re.compile(pattern)
  except re.error as e:
    raise ConfigurationError(
      f'--trainable-pattern must be a regular expression ({e}). '
      f'Received: --trainable-pattern={pattern}'
    ) from None
  selected = tuple(v for v in variables if regex.search(v.name))
  if not selected:
    names = ', '.join(v.name for v in variables)
    raise ConfigurationError(
      '--trainable-pattern must match the name of at least one trainable '
      f'variable ({names}). Received: --trainable-pattern={pattern}'
    )
  return selected


class GradientAccumulator(tf.Module):
  """Sums the gradients of N minibatches, then applies them once.

  Each replica keeps its own sums (sync-on-read variables, so a replica
  adds to its copy without communicating). Every N-th step each replica
  passes the mean of its sums to the optimizer, which sums the replicas'
  gradients (each already scaled by 1/replicas) before clipping and
  applying. The applied gradient is therefore the gradient of the mean loss
  over all N * replicas * batch examples: no double scaling.

  The sums are variables of the model, so they are checkpointed and a
  resumed job continues its partial accumulation.

  Example:
    >>> accumulator = GradientAccumulator(variables, 4)
    >>> accumulator.add(gradients)             # in replica context
    >>> accumulator.apply(optimizer)           # every 4th step

  Args:
    variables: the variables being trained.
    steps: the number of minibatches per update (at least 2).
  """

  def __init__(self, variables, steps):
    super().__init__(name='gradient_accumulator')
    self.steps = int(steps)
    self._variables = tuple(variables)
    self.sums = [
      tf.Variable(
        tf.zeros_like(v),
        trainable=False,
        name=f'accumulated_{i}',
        synchronization=tf.VariableSynchronization.ON_READ,
        aggregation=tf.VariableAggregation.SUM,
      )
      for i, v in enumerate(self._variables)
    ]

  def add(self, gradients):
    """Adds one minibatch's gradients (in replica context)."""
    return [
      s.assign_add(
        tf.convert_to_tensor(g) if g is not None else tf.zeros_like(s)
      )
      for s, g in zip(self.sums, gradients)
    ]

  def apply(self, optimizer):
    """Applies the mean of the sums and zeroes them (in replica context)."""
    scale = 1.0 / self.steps
    gradients = [tf.cast(s.read_value(), s.dtype) * scale for s in self.sums]
    optimizer.apply_gradients(zip(gradients, self._variables))
    for s in self.sums:
      s.assign(tf.zeros_like(s))
    return tf.constant(True)


def _settings(args):
  if isinstance(args, OptimizerSettings):
    return args
  return OptimizerSettings.from_args(args)
