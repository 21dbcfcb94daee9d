"""Writes a synthetic census-income dataset, as CSV and as GZIP TFRecords.

The people are made up, but the income label follows them as it does in the
real census data: it rises with education, age (up to the fifties), hours
worked, capital gains and being married, and depends on the occupation and
on how education and occupation go together. The label is drawn from that
probability, so no model is perfect; a good one beats the majority class.

Run it from this directory (deterministic for a given --seed):

  python generate.py                       # 8000 training, 2000 eval rows
  python generate.py --train 2000 --eval 500 --output /tmp/census-data

Writes, under --output (default data/):
  train.csv, eval.csv                CSV, no header, columns as schema.yaml
  train-0000N-of-00004.tfrecord.gz   the same training rows as tf.Example
  eval.tfrecord.gz                   the same eval rows as tf.Example
  predict.csv                        5 eval rows without the income column
"""

import argparse
import csv
import math
import os

import numpy as np

FIELDS = (
  'id',
  'age',
  'workclass',
  'education',
  'education_num',
  'marital_status',
  'occupation',
  'sex',
  'hours_per_week',
  'capital_gain',
  'native_country',
  'income',
)

# education: (share of people, years of education, effect on the log-odds)
EDUCATION = {
  '11th': (0.08, 7, -1.0),
  'HS-grad': (0.32, 9, 0.0),
  'Some-college': (0.22, 10, 0.2),
  'Assoc': (0.08, 12, 0.4),
  'Bachelors': (0.17, 13, 1.2),
  'Masters': (0.08, 14, 1.7),
  'Prof-school': (0.025, 15, 2.2),
  'Doctorate': (0.025, 16, 2.2),
}
# occupation: (effect on the log-odds, needs a degree)
OCCUPATION = {
  'Exec-managerial': (1.0, True),
  'Prof-specialty': (0.9, True),
  'Tech-support': (0.4, False),
  'Sales': (0.3, False),
  'Protective-serv': (0.2, False),
  'Craft-repair': (0.0, False),
  'Adm-clerical': (-0.2, False),
  'Transport-moving': (-0.2, False),
  'Machine-op-inspct': (-0.4, False),
  'Farming-fishing': (-0.7, False),
  'Handlers-cleaners': (-0.8, False),
  'Other-service': (-1.0, False),
}
MARITAL = {
  'Married': (0.47, 1.3),
  'Never-married': (0.33, -0.7),
  'Divorced': (0.14, 0.0),
  'Separated': (0.03, -0.3),
  'Widowed': (0.03, -0.2),
}
WORKCLASS = {
  'Private': (0.74, 0.0),
  'Self-emp': (0.11, 0.2),
  'Government': (0.14, 0.1),
  'Without-pay': (0.01, -2.0),
}
COUNTRIES = (
  'Canada',
  'Mexico',
  'Philippines',
  'Germany',
  'India',
  'Puerto-Rico',
  'El-Salvador',
  'Cuba',
  'England',
  'China',
  'Jamaica',
  'South-Korea',
  'Italy',
  'Vietnam',
  'Guatemala',
  'Japan',
  'Poland',
  'Columbia',
  'Taiwan',
  'Haiti',
  'Iran',
  'Portugal',
  'Nicaragua',
  'Peru',
  'Greece',
  'France',
  'Ecuador',
  'Ireland',
  'Hong-Kong',
  'Thailand',
  'Cambodia',
  'Laos',
  'Yugoslavia',
  'Outlying-US',
  'Scotland',
  'Honduras',
  'Hungary',
  'Holand-Netherlands',
  'Trinadad-Tobago',
)
HIGH, LOW = '>50K', '<=50K'


def _pick(rng, table, size):
  names = list(table)
  shares = np.array([table[n][0] for n in names], dtype=float)
  return np.array(names, dtype=object)[
    rng.choice(len(names), size, p=shares / shares.sum())
  ]


def people(count, seed, first_id=1):
  """`count` synthetic people as dicts of the schema's fields, with labels."""
  rng = np.random.default_rng(seed)
  age = np.clip(rng.normal(39, 13, count), 17, 90).astype(int)
  education = _pick(rng, EDUCATION, count)
  degree = np.isin(
    education, ['Bachelors', 'Masters', 'Prof-school', 'Doctorate']
  )
  occupations = list(OCCUPATION)
  graduate_jobs = [o for o in occupations if OCCUPATION[o][1]]
  occupation = np.where(
    degree & (rng.random(count) < 0.55),
    np.array(graduate_jobs, dtype=object)[
      rng.integers(0, len(graduate_jobs), count)
    ],
    np.array(occupations, dtype=object)[
      rng.integers(0, len(occupations), count)
    ],
  )
  marital = _pick(rng, MARITAL, count)
  marital = np.where(
    age < 23,
    np.where(rng.random(count) < 0.9, 'Never-married', marital),
    marital,
  )
  workclass = _pick(rng, WORKCLASS, count)
  sex = np.where(rng.random(count) < 0.67, 'Male', 'Female')
  hours = np.clip(rng.normal(40, 11, count) + 4 * degree, 1, 99).astype(int)
  gain = np.where(
    rng.random(count) < 0.08 + 0.06 * degree,
    np.round(rng.lognormal(8.5, 1.0, count), 2),
    0.0,
  )
  country = np.where(
    rng.random(count) < 0.88,
    'United-States',
    np.array(COUNTRIES, dtype=object)[rng.integers(0, len(COUNTRIES), count)],
  )

  logit = (
    -2.6
    + np.array([EDUCATION[e][2] for e in education])
    + np.array([OCCUPATION[o][0] for o in occupation])
    + np.array([MARITAL[m][1] for m in marital])
    + np.array([WORKCLASS[w][1] for w in workclass])
    + 0.045 * (np.minimum(age, 55) - 38)
    - 0.06 * np.maximum(age - 62, 0)
    + 0.035 * (hours - 40)
    + 1.6 * (gain > 0)
    + 0.3 * (sex == 'Male')
    # A degree pays more in a job that needs one.
    + 0.6 * (degree & np.array([OCCUPATION[o][1] for o in occupation]))
  )
  high = rng.random(count) < 1.0 / (1.0 + np.exp(-logit))
  rows = []
  for i in range(count):
    rows.append(
      {
        'id': first_id + i,
        'age': int(age[i]),
        'workclass': str(workclass[i]),
        'education': str(education[i]),
        'education_num': EDUCATION[education[i]][1],
        'marital_status': str(marital[i]),
        'occupation': str(occupation[i]),
        'sex': str(sex[i]),
        'hours_per_week': int(hours[i]),
        'capital_gain': float(gain[i]),
        'native_country': str(country[i]),
        'income': HIGH if high[i] else LOW,
      }
    )
  return rows


def write_csv(path, rows, fields=FIELDS):
  with open(path, 'w', newline='') as f:
    writer = csv.writer(f, lineterminator='\n')
    for row in rows:
      writer.writerow([_text(row[name]) for name in fields])


def _text(value):
  if isinstance(value, float):
    return repr(value) if math.isfinite(value) else ''
  return str(value)


def to_example(row):
  """A row as a tf.Example: int64_list, float_list or bytes_list per field."""
  import tensorflow as tf

  feature = {}
  for name in FIELDS:
    value = row[name]
    if isinstance(value, int):
      feature[name] = tf.train.Feature(
        int64_list=tf.train.Int64List(value=[value])
      )
    elif isinstance(value, float):
      feature[name] = tf.train.Feature(
        float_list=tf.train.FloatList(value=[value])
      )
    else:
      feature[name] = tf.train.Feature(
        bytes_list=tf.train.BytesList(value=[value.encode('utf-8')])
      )
  return tf.train.Example(features=tf.train.Features(feature=feature))


def write_tfrecords(path, rows):
  import tensorflow as tf

  with tf.io.TFRecordWriter(path, 'GZIP') as writer:
    for row in rows:
      writer.write(to_example(row).SerializeToString())


def main(argv=None):
  # TensorFlow's C++ start-up chatter is noise here.
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument(
    '--train', type=int, default=8000, help='training rows (default 8000)'
  )
  parser.add_argument(
    '--eval', type=int, default=2000, help='evaluation rows (default 2000)'
  )
  parser.add_argument(
    '--shards',
    type=int,
    default=4,
    help='TFRecord files of training rows (default 4)',
  )
  parser.add_argument('--seed', type=int, default=1, help='the random seed')
  parser.add_argument(
    '--output',
    default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data'),
    help='the directory to write to (default: data/)',
  )
  args = parser.parse_args(argv)
  os.makedirs(args.output, exist_ok=True)
  train = people(args.train, args.seed)
  evaluation = people(args.eval, args.seed + 1000, first_id=args.train + 1)
  write_csv(os.path.join(args.output, 'train.csv'), train)
  write_csv(os.path.join(args.output, 'eval.csv'), evaluation)
  write_csv(
    os.path.join(args.output, 'predict.csv'), evaluation[:5], FIELDS[:-1]
  )
  for shard in range(args.shards):
    write_tfrecords(
      os.path.join(
        args.output, f'train-{shard:05d}-of-{args.shards:05d}.tfrecord.gz'
      ),
      train[shard :: args.shards],
    )
  write_tfrecords(os.path.join(args.output, 'eval.tfrecord.gz'), evaluation)
  high = sum(r['income'] == HIGH for r in evaluation) / max(len(evaluation), 1)
  print(
    f'Wrote {len(train)} training and {len(evaluation)} eval rows to '
    f'{args.output} ({high:.1%} of eval rows earn {HIGH}; a model must '
    f'beat {max(high, 1 - high):.1%} accuracy)'
  )


if __name__ == '__main__':
  main()
