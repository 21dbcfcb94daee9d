"""The reference model as a tensorfx trainer module, for `--cluster` runs.

`tensorfx train --module benchmarks/ctr_trainer.py --output DIR --cluster
ps=1,workers=2 --ctr-data D --ctr-rows N --ctr-shards S --ctr-analysis A
[--ctr-tables hashed|exact] [tensorfx flags]` trains `ctr_model.CtrNet`
(with tensorfx embedding tables, given `--ctr-tables`) on the generated
click-through data (`ctr_data.py`) as every task of a local cluster: the
launcher runs this file as the chief, the parameter servers and the
workers alike.
`distributed.py` runs it against hand-written TensorFlow.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))

import ctr_data
import ctr_model


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--ctr-data', required=True)
  parser.add_argument('--ctr-rows', type=int, required=True)
  parser.add_argument('--ctr-shards', type=int, required=True)
  parser.add_argument('--ctr-analysis', required=True)
  parser.add_argument(
    '--ctr-tables',
    choices=['hashed', 'exact'],
    help='tensorfx embedding tables instead of Keras Embedding layers',
  )
  ours, rest = parser.parse_known_args(argv)
  from tensorfx import embeddings
  from tensorfx import training

  class Arguments(training.ModelArguments, embeddings.EmbeddingArguments):
    """The model's flags and the tables' optimizer."""

  files = ctr_data.paths(ours.ctr_data, ours.ctr_rows, ours.ctr_shards)
  args, job = Arguments.parse(rest, parse_job=True)
  builder = ctr_model.tensorfx_builder_type(ours.ctr_tables)(
    args, ctr_model.tensorfx_dataset(files, ours.ctr_analysis)
  )
  # Off the chief this does not return: the task serves until the job ends.
  training.ModelTrainer().train(builder, job)
  return 0


if __name__ == '__main__':
  sys.exit(main())
