"""tensorfx against hand-written TensorFlow on a GPU, paired, in one run.

On the reference workload (`ctr_data.py`, `ctr_model.py`) it trains, at
each batch size, three switch settings on both sides:

- `default`: float32, no XLA;
- `mixed`: `--precision mixed_float16` against a hand-written loop under
  the `mixed_float16` policy with a `LossScaleOptimizer`;
- `xla`: `--jit-compile` against the hand-written step compiled with
  `tf.function(jit_compile=True)`.

Both sides read the same cached batches (tensorfx with `--cache memory`,
the loop over the tuned pipeline with `cache().repeat()`), so the figures
compare the step, not the disk. Each round runs every pair adjacently,
the order within a pair alternating from round to round, and the ratio
reported is the median of the per-round ratios with its interquartile
range. Then serving: `prediction.Model.predict` against the raw SavedModel
signature at batch 1 and 1024.

  bash benchmarks/gpu.sh                  # on a machine with an NVIDIA GPU
  python benchmarks/gpu.py --allow-cpu --rows 4000 --batches 256 --rounds 1
                                          # the same code on a CPU (a smoke test)

Writes `gpu.json` and `gpu.md` to `--output` (default benchmarks/results)
and prints the table. No timing is asserted anywhere.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, ROOT)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import compare  # noqa: E402  (after the path set-up above)
import ctr_data  # noqa: E402
import ctr_model  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

# The switch settings: tensorfx's flags, and what the hand-written loop does.
SWITCHES = {
  'default': {'flags': (), 'policy': 'float32', 'jit': False},
  'mixed': {
    'flags': ('--precision', 'mixed_float16'),
    'policy': 'mixed_float16',
    'jit': False,
  },
  'xla': {'flags': ('--jit-compile',), 'policy': 'float32', 'jit': True},
}


def hand_rate(dataset, batch, warmup, steps, per_call, policy, jit):
  """examples/s of the hand-written loop under `policy`, XLA if `jit`."""
  tf_keras.mixed_precision.set_global_policy(policy)
  try:
    model = ctr_model.CtrNet()
    optimizer = tf_keras.optimizers.Adam(ctr_model.LEARNING_RATE)
    mixed = policy != 'float32'
    if mixed:
      optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)

    def step(inputs, labels):
      with tf.GradientTape() as tape:
        # The loss in float32 whatever the layers compute in.
        loss = ctr_model.loss_of(labels, tf.cast(model(inputs), tf.float32))
        scaled = optimizer.get_scaled_loss(loss) if mixed else loss
      variables = model.trainable_variables
      gradients = tape.gradient(scaled, variables)
      if mixed:
        gradients = optimizer.get_unscaled_gradients(gradients)
      optimizer.apply_gradients(zip(gradients, variables))
      return loss

    iterator = iter(dataset)
    if jit:
      inputs, _ = next(iter(dataset.take(1)))
      model(inputs)
      optimizer.build(model.trainable_variables)
      step = tf.function(step, jit_compile=True)

    @tf.function
    def loop(count):
      loss = tf.constant(0.0)
      for _ in tf.range(count):
        inputs, labels = next(iterator)
        loss = step(inputs, labels)
      return loss

    loop(tf.constant(warmup)).numpy()
    start, done = time.perf_counter(), 0
    while done < steps:
      count = min(per_call, steps - done)
      loop(tf.constant(count)).numpy()
      done += count
    return steps * batch / (time.perf_counter() - start)
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')


def training(files, analysis, stats, batch, rounds, workdir, records, rows):
  """The three pairs at one batch size: per-round rates and ratios."""
  window = max(5, 50 // max(1, batch // 1024))
  epoch_steps = -(-rows // batch)
  warmup = window * (-(-epoch_steps // window) + 1)
  steps = window * 4
  pairs = {
    name: {'tensorfx': [], 'hand-written': [], 'ratios': []}
    for name in SWITCHES
  }
  for round_ in range(rounds):
    for name, switch in SWITCHES.items():
      order = ['tensorfx', 'hand-written']
      if round_ % 2:
        order.reverse()
      rates = {}
      for side in order:
        tf_keras.backend.clear_session()
        if side == 'tensorfx':
          output = os.path.join(workdir, f'{name}-{batch}-{round_}')
          rates[side], _ = compare.tensorfx_rate(
            files,
            analysis,
            output,
            batch,
            window,
            warmup,
            steps,
            extra=('--cache', 'memory', *switch['flags']),
            train=records,
          )
        else:
          rates[side] = hand_rate(
            ctr_model.cached_pipeline(records, batch, stats),
            batch,
            warmup,
            steps,
            window,
            switch['policy'],
            switch['jit'],
          )
        pairs[name][side].append(rates[side])
      pairs[name]['ratios'].append(rates['tensorfx'] / rates['hand-written'])
      print(
        f'batch {batch} round {round_ + 1} {name}: tensorfx '
        f'{rates["tensorfx"]:,.0f}, hand-written '
        f'{rates["hand-written"]:,.0f} examples/s',
        file=sys.stderr,
        flush=True,
      )
  return {
    'batch': batch,
    'window': window,
    'warmup': warmup,
    'steps': steps,
    'pairs': pairs,
  }


def markdown(result):
  """The result as one Markdown table (and the serving table)."""
  lines = [
    f'**{result["device"]}**, TensorFlow {result["tensorflow"]}, '
    f'{result["rows"]:,} rows, {result["rounds"]} paired rounds',
    '',
    '| batch | switches | tensorfx ex/s | hand-written ex/s | '
    'ratio (median of pairs) | IQR | spread includes 1.0 |',
    '| ---: | --- | ---: | ---: | ---: | --- | --- |',
  ]
  for section in result['training']:
    for name, pair in section['pairs'].items():
      q1, median, q3 = compare.quartiles(pair['ratios'])
      lines.append(
        f'| {section["batch"]} | {name} | '
        f'{statistics.median(pair["tensorfx"]):,.0f} | '
        f'{statistics.median(pair["hand-written"]):,.0f} | '
        f'**{median:.2f}x** | {q1:.2f}-{q3:.2f} | '
        f'{"yes" if q1 <= 1.0 <= q3 else "no"} |'
      )
  if 'serving' in result:
    lines += [
      '',
      '| serving batch | prediction.Model / raw signature |',
      '| ---: | ---: |',
    ]
    for batch, entry in result['serving'].items():
      lines.append(
        f'| {batch} | {entry["ratio"]:.2f}x '
        f'({entry["medians"]["tensorfx"]:,.0f} vs '
        f'{entry["medians"]["raw-signature"]:,.0f} /s) |'
      )
  return '\n'.join(lines) + '\n'


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--rows', type=int, default=200000)
  parser.add_argument(
    '--batches',
    default=[1024, 8192],
    type=lambda t: [int(b) for b in t.split(',')],
  )
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--data', default=os.path.join(HERE, 'results', 'data'))
  parser.add_argument('--output', default=os.path.join(HERE, 'results'))
  parser.add_argument(
    '--allow-cpu',
    action='store_true',
    help='run without a GPU (a smoke test of the code)',
  )
  args = parser.parse_args(argv)
  gpus = tf.config.list_physical_devices('GPU')
  if not gpus and not args.allow_cpu:
    print(
      'gpu.py: TensorFlow sees no GPU (tf.config.list_physical_devices'
      "('GPU') is empty); --allow-cpu runs it anyway",
      file=sys.stderr,
    )
    return 2
  device = (
    tf.config.experimental.get_device_details(gpus[0]).get('device_name', 'GPU')
    if gpus
    else f'CPU ({os.cpu_count()} cores)'
  )
  os.makedirs(args.output, exist_ok=True)
  files = ctr_data.generate(args.data, args.rows, 2)
  with open(files['stats']) as f:
    stats = json.load(f)
  analysis = ctr_model.analyze(
    files, os.path.join(os.path.dirname(files['schema']), 'analysis')
  )
  result = {
    'device': device,
    'rows': args.rows,
    'rounds': args.rounds,
    'tensorflow': tf.__version__,
    'python': platform.python_version(),
    'training': [],
  }
  records = files['tfrecord'][:1]
  with tempfile.TemporaryDirectory(prefix='tensorfx-gpu-') as workdir:
    for batch in args.batches:
      result['training'].append(
        training(
          files,
          analysis,
          stats,
          batch,
          args.rounds,
          workdir,
          records,
          args.rows // 2,
        )
      )
    model_dir = ctr_model.tensorfx_train(
      files,
      analysis,
      os.path.join(workdir, 'serving-model'),
      1024,
      20,
      10,
      train=records,
    ).path
    result['serving'] = compare.serving(model_dir, files, args.rounds)
  table = markdown(result)
  with open(os.path.join(args.output, 'gpu.json'), 'w') as f:
    json.dump(result, f, indent=2)
  with open(os.path.join(args.output, 'gpu.md'), 'w') as f:
    f.write(table)
  print(table)
  return 0


if __name__ == '__main__':
  sys.exit(main())
