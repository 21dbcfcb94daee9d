"""The flags of Gematria's sequence model, as the sample's trainer takes them.

Gematria's `run_sequence_model` (and `token_model_flags`) define them as
`--gematria_token_embedding_size` and so on; tensorfx's translation of
Gematria's command line passes them to these (see
`tensorfx.training._arguments.gematriaflags`).
"""

import argparse
import os

import tensorfx as tfx

HERE = os.path.dirname(os.path.abspath(__file__))


def _layers(text):
  """Gematria's layer list flag: comma-separated positive sizes, or ''."""
  try:
    sizes = [int(size) for size in text.split(',') if size.strip()]
  except ValueError:
    sizes = [0]
  if any(size <= 0 for size in sizes):
    raise argparse.ArgumentTypeError(
      f'expected comma-separated positive layer sizes, e.g. 256,256; got {text!r}'
    )
  return sizes


class SequenceModelArguments(tfx.training.ModelArguments):
  """Gematria's hierarchical LSTM sequence model of basic-block throughput.

  Its flags are those of Gematria's `run_sequence_model` (and
  `token_model_flags`), which Gematria's command line names
  `--gematria_token_embedding_size` and so on. The defaults are smaller
  than Gematria's (256), so that the sample trains in a minute on a laptop.
  """

  @classmethod
  def build_parser(cls):
    parser = super().build_parser()
    model = parser.add_argument_group("Gematria's sequence model")
    model.add_argument(
      '--token-embedding-size',
      type=int,
      help="the tokens' embedding size (default: features.yaml's dim)",
    )
    model.add_argument(
      '--instruction-embedding-size',
      type=int,
      default=64,
      help="an instruction's embedding: the token LSTM's output and state, "
      'half each (an even number; default: 64)',
    )
    model.add_argument(
      '--block-embedding-size',
      type=int,
      default=64,
      help="a block's embedding: the instruction LSTM's output and state, "
      'half each (an even number; default: 64)',
    )
    model.add_argument(
      '--output-layers',
      type=_layers,
      default=[],
      metavar='SIZES',
      help='the shared dense ReLU layers after the block LSTM, e.g. 256,256 '
      '(default: none)',
    )
    model.add_argument(
      '--task-output-layers',
      type=_layers,
      default=[],
      metavar='SIZES',
      help="each task's dense ReLU layers before its linear output "
      '(default: none)',
    )
    model.add_argument(
      '--bidirectional',
      action=argparse.BooleanOptionalAction,
      default=False,
      help="run the block's LSTM (over its instructions) both ways",
    )
    model.add_argument(
      '--seq2seq',
      action=argparse.BooleanOptionalAction,
      default=False,
      help="predict one delta per instruction; the block's throughput is "
      'their sum',
    )
    model.add_argument(
      '--seq2seq-loss',
      action=argparse.BooleanOptionalAction,
      default=True,
      help="with --seq2seq, Gematria's loss on each prefix of a block "
      '(--no-seq2seq-loss: the loss on the whole block)',
    )
    model.add_argument(
      '--oov-injection-probability',
      type=float,
      default=0.0,
      metavar='P',
      help='in training, replace each token by the out-of-vocabulary one '
      'with probability P (default: 0)',
    )
    parser.set_defaults(
      data_schema=os.path.join(HERE, 'schema.yaml'),
      data_features=os.path.join(HERE, 'features.yaml'),
      predict_source='hierarchical-lstm',
      # Gematria's --gematria_collected_percentile_ranks.
      percentile_ranks=[50, 90, 95, 99],
    )
    return parser

  def process(self):
    super().process()
    for flag in (
      'token_embedding_size',
      'instruction_embedding_size',
      'block_embedding_size',
    ):
      value = getattr(self, flag)
      even = flag != 'token_embedding_size'
      if value is not None and (value <= 0 or (even and value % 2)):
        raise tfx.ConfigurationError(
          f'--{flag.replace("_", "-")} must be a positive'
          f'{" even" if even else ""} number. Received: {value}'
        )
    if not 0.0 <= self.oov_injection_probability <= 1.0:
      raise tfx.ConfigurationError(
        '--oov-injection-probability must be within [0, 1]. Received: '
        f'{self.oov_injection_probability}'
      )
    if self.seq2seq and self.seq2seq_loss:
      raise tfx.ConfigurationError(
        "--seq2seq with Gematria's loss on each prefix of a block needs the "
        "blocks' prefix_inverse_throughputs, which this sample does not "
        'read; add --no-seq2seq-loss (--nogematria_use_seq2seq_loss) to '
        "train the instructions' summed deltas on the block's throughput."
      )
