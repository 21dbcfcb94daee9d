r"""Writes synthetic user/item click data with large, Zipf-distributed id spaces.

Users and items have made-up 64-bit-ish ids (random integers below 2^40,
so only hashing can map them to rows) and hidden taste vectors. Each
interaction is a user shown an item, with the user's recent history (up
to --history items, chosen among popular items the user likes), and
whether the user clicked. Users and items are drawn from Zipf
distributions (a few are very frequent, most are rare), as in real logs.
The click is drawn from

  P(click) = sigmoid(2.5 u.v + 1.5 mean(history).v + b_item - 0.5)

so a model learns from the item (its bias, its vector), the user (when seen
often enough) and the history (which generalizes to rare users). The AUC of
the true probabilities on the evaluation rows, the best any model can do,
is printed and written to `oracle.json`.

Run it from this directory (deterministic for a given --seed):

  python generate.py                                   # the README's size
  python generate.py --users 2000 --items 1000 --train 20000 --eval 2000 \
      --output /tmp/recommend-data                      # tiny, for tests

Writes, under --output (default data/):
  train-0000N-of-0000S.tfrecord.gz   training interactions as tf.Example
  eval.tfrecord.gz                   evaluation interactions
  oracle.json                        rows, distinct ids, the oracle AUC
"""

import argparse
import json
import os

import numpy as np

# The hidden taste vectors' dimension.
TASTE_DIM = 8
# The largest id (exclusive): ids are random integers below it.
ID_SPACE = 1 << 40


def _ids(rng, count):
  """`count` distinct random ids, in random order (not by popularity)."""
  ids = np.unique(rng.integers(1, ID_SPACE, size=int(count * 1.01) + 16))
  rng.shuffle(ids)
  return ids[:count]


def _zipf(count, exponent):
  weights = 1.0 / np.arange(1, count + 1) ** exponent
  return weights / weights.sum()


def interactions(rows, users, items, history, rng, world):
  """Draws `rows` interactions; returns columns and true click probabilities."""
  user_rank = rng.choice(users, size=rows, p=world['user_p'])
  item_rank = rng.choice(items, size=rows, p=world['item_p'])
  u = world['user_taste'][user_rank]
  v = world['item_taste'][item_rank]
  lengths = rng.integers(0, history + 1, size=rows)
  histories = []
  liked = np.zeros((rows, TASTE_DIM))
  chunk = 20000
  for start in range(0, rows, chunk):
    stop = min(rows, start + chunk)
    # Candidates among popular items; the user keeps the ones they like.
    candidates = rng.choice(
      items, size=(stop - start, 4 * max(history, 1)), p=world['item_p']
    )
    scores = np.einsum(
      'nd,nkd->nk', u[start:stop], world['item_taste'][candidates]
    )
    order = np.argsort(-scores, axis=1)
    for i in range(stop - start):
      chosen = candidates[i, order[i, : lengths[start + i]]]
      histories.append(world['item_ids'][chosen])
      if len(chosen):
        liked[start + i] = world['item_taste'][chosen].mean(axis=0)
  logit = (
    2.5 * np.sum(u * v, axis=1)
    + 1.5 * np.sum(liked * v, axis=1)
    + world['item_bias'][item_rank]
    - 0.5
  )
  probability = 1.0 / (1.0 + np.exp(-logit))
  clicked = rng.random(rows) < probability
  return {
    'user': world['user_ids'][user_rank],
    'item': world['item_ids'][item_rank],
    'history': histories,
    'clicked': clicked,
  }, probability


def auc(labels, scores):
  """The area under the ROC curve (ties count half)."""
  labels = np.asarray(labels, bool)
  order = np.argsort(scores, kind='mergesort')
  ranks = np.empty(len(scores))
  sorted_scores = np.asarray(scores)[order]
  # Average ranks over ties.
  _, first, counts = np.unique(
    sorted_scores, return_index=True, return_counts=True
  )
  for start, count in zip(first, counts):
    ranks[order[start : start + count]] = start + (count + 1) / 2.0
  positives = labels.sum()
  negatives = len(labels) - positives
  if not positives or not negatives:
    return float('nan')
  return float(
    (ranks[labels].sum() - positives * (positives + 1) / 2)
    / (positives * negatives)
  )


def to_example(columns, i):
  import tensorflow as tf

  feature = tf.train.Feature
  return tf.train.Example(
    features=tf.train.Features(
      feature={
        'user': feature(
          int64_list=tf.train.Int64List(value=[int(columns['user'][i])])
        ),
        'item': feature(
          int64_list=tf.train.Int64List(value=[int(columns['item'][i])])
        ),
        'history': feature(
          int64_list=tf.train.Int64List(
            value=[int(h) for h in columns['history'][i]]
          )
        ),
        'clicked': feature(
          bytes_list=tf.train.BytesList(
            value=[b'yes' if columns['clicked'][i] else b'no']
          )
        ),
      }
    )
  )


def write_tfrecords(path, columns, indices):
  import tensorflow as tf

  with tf.io.TFRecordWriter(path, 'GZIP') as writer:
    for i in indices:
      writer.write(to_example(columns, i).SerializeToString())


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument(
    '--users',
    type=int,
    default=300000,
    help='distinct users (default %(default)s)',
  )
  parser.add_argument(
    '--items',
    type=int,
    default=200000,
    help='distinct items (default %(default)s)',
  )
  parser.add_argument(
    '--train',
    type=int,
    default=500000,
    help='training interactions (default %(default)s)',
  )
  parser.add_argument(
    '--eval',
    type=int,
    default=10000,
    help='evaluation interactions (default %(default)s)',
  )
  parser.add_argument(
    '--history',
    type=int,
    default=10,
    help='the longest history (default %(default)s)',
  )
  parser.add_argument(
    '--zipf',
    type=float,
    default=1.05,
    help="the Zipf exponent of users' and items' "
    'frequencies (default %(default)s)',
  )
  parser.add_argument(
    '--shards', type=int, default=4, help='training files (default %(default)s)'
  )
  parser.add_argument('--seed', type=int, default=1)
  parser.add_argument('--output', default='data')
  args = parser.parse_args(argv)
  rng = np.random.default_rng(args.seed)
  scale = 1.0 / np.sqrt(TASTE_DIM)
  world = {
    'user_ids': _ids(rng, args.users),
    'item_ids': _ids(rng, args.items),
    'user_taste': rng.normal(0, scale, (args.users, TASTE_DIM)),
    'item_taste': rng.normal(0, scale, (args.items, TASTE_DIM)),
    'item_bias': rng.normal(0, 1.0, args.items),
    'user_p': _zipf(args.users, args.zipf),
    'item_p': _zipf(args.items, args.zipf),
  }
  columns, probability = interactions(
    args.train + args.eval, args.users, args.items, args.history, rng, world
  )
  os.makedirs(args.output, exist_ok=True)
  train = np.arange(args.train)
  for shard in range(args.shards):
    write_tfrecords(
      os.path.join(
        args.output, f'train-{shard:05d}-of-{args.shards:05d}.tfrecord.gz'
      ),
      columns,
      train[shard :: args.shards],
    )
  evaluation = np.arange(args.train, args.train + args.eval)
  write_tfrecords(
    os.path.join(args.output, 'eval.tfrecord.gz'), columns, evaluation
  )
  clicked = columns['clicked']
  summary = {
    'train': args.train,
    'eval': args.eval,
    'distinct_users': int(len(np.unique(columns['user'][train]))),
    'distinct_items': int(len(np.unique(columns['item'][train]))),
    'click_rate': round(float(clicked.mean()), 4),
    'oracle_auc': round(auc(clicked[evaluation], probability[evaluation]), 4),
  }
  with open(os.path.join(args.output, 'oracle.json'), 'w') as f:
    json.dump(summary, f, indent=2)
  print(json.dumps(summary))


if __name__ == '__main__':
  main()
