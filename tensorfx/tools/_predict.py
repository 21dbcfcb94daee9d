"""`tensorfx predict`: predictions for instances in a file or on stdin."""

import json
import sys

from tensorfx._errors import DataError

_CHUNK = 1024


def add_parser(commands):
  parser = commands.add_parser(
      'predict', help='predict instances with an exported model',
      description='Reads instances, one per line, from --input (or stdin) '
      'and writes one JSON object of outputs per line. A line is a CSV '
      'record in schema order (target optional) or a JSON object of raw '
      'features. A missing value (an empty cell, an absent key, null) means '
      'what the schema says, as in training.')
  parser.add_argument('--model', required=True,
                      help='the exported model directory (OUTPUT/model)')
  parser.add_argument('--input', default='-',
                      help='the instances file (default: stdin)')
  parser.add_argument('--output', default='-',
                      help='where to write JSON lines (default: stdout)')
  parser.set_defaults(run=run)


def run(args, rest):
  del rest
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorfx.prediction import Model  # pylint: disable=g-import-not-at-top
  model = Model.load(args.model)
  source = sys.stdin if args.input == '-' else tf.io.gfile.GFile(args.input)
  sink = sys.stdout if args.output == '-' else tf.io.gfile.GFile(
      args.output, 'w')
  try:
    chunk, number = [], 0
    for number, line in enumerate(source, start=1):
      line = line.rstrip('\r\n')
      if not line.strip():
        continue
      chunk.append((number, _instance(line, number, args.input)))
      if len(chunk) == _CHUNK:
        _write(model, chunk, sink, args.input)
        chunk = []
    if chunk:
      _write(model, chunk, sink, args.input)
  finally:
    if sink is not sys.stdout:
      sink.close()
  return 0


def _instance(line, number, name):
  if line.lstrip().startswith('{'):
    try:
      return json.loads(line)
    except json.JSONDecodeError as e:
      raise DataError(f'{_name(name)}:{number}: invalid JSON: {e}') from None
  return line


def _write(model, chunk, sink, name):
  kinds = {type(i) for _, i in chunk}
  # One call per run of same-kind instances keeps input order.
  start = 0
  while start < len(chunk):
    kind = type(chunk[start][1])
    end = start
    while end < len(chunk) and type(chunk[end][1]) is kind:
      end += 1
    part = chunk[start:end]
    try:
      outputs = model.predict([i for _, i in part])
    except DataError as e:
      # Map 'instance N' back to the input's line number.
      message = str(e)
      for index, (number, _) in enumerate(part, start=1):
        # CSV lines are named 'instance:N:', dicts 'instance N:'.
        prefix = next((p for p in (f'instance:{index}:', f'instance {index}:')
                       if message.startswith(p)), None)
        if prefix:
          message = f'{_name(name)}:{number}:' + message[len(prefix):]
          break
      raise DataError(message) from None
    for output in outputs:
      sink.write(json.dumps(output) + '\n')
    start = end
  del kinds
  sink.flush()


def _name(name):
  return '<stdin>' if name == '-' else name
