"""Writes census-income data in the original tensorfx sample's layout.

The columns are those of the UCI "Adult" census data as the original
tensorfx's census sample read them (label first), the people are made up,
and the cells are missing where the real data's are: about 6% of the rows
have no work class and no occupation, and about 2% no native country (an
empty cell, as in the original's CSV files). The income label follows
education, marriage, age, hours, capital gains and the occupation, drawn
from that probability, so a good model beats the majority class (about 68%
'<=50K') without being perfect.

Run it from this directory (deterministic for a given --seed):

  python generate.py                       # 4000 training, 1000 eval rows

Writes, under --output (default data/): train.csv, eval.csv (no header) and
metadata.json in the original's format: per numeric field its min and max
(and mean and std for age and hours), per discrete field its entries.
`--numeric-holes` also blanks numeric cells (which the sample's schema does
not allow: its numeric fields say nothing about missing values).
"""

import argparse
import csv
import json
import os

import numpy as np

FIELDS = (
  'income_bracket',
  'age',
  'workclass',
  'education_num',
  'marital_status',
  'occupation',
  'relationship',
  'race',
  'gender',
  'capital_gain',
  'capital_loss',
  'hours_per_week',
  'native_country',
)
NUMERIC = (
  'age',
  'education_num',
  'capital_gain',
  'capital_loss',
  'hours_per_week',
)
HIGH, LOW = '>50K', '<=50K'

WORKCLASS = {
  'Private': 0.70,
  'Self-emp-not-inc': 0.08,
  'Local-gov': 0.065,
  'State-gov': 0.04,
  'Self-emp-inc': 0.035,
  'Federal-gov': 0.03,
  'Without-pay': 0.005,
}
MARITAL = {
  'Married-civ-spouse': 0.46,
  'Never-married': 0.33,
  'Divorced': 0.14,
  'Separated': 0.03,
  'Widowed': 0.03,
  'Married-spouse-absent': 0.01,
}
# occupation: (share, effect on the log-odds)
OCCUPATION = {
  'Prof-specialty': (0.13, 0.9),
  'Exec-managerial': (0.13, 1.0),
  'Craft-repair': (0.13, 0.1),
  'Adm-clerical': (0.12, -0.3),
  'Sales': (0.11, 0.3),
  'Other-service': (0.10, -1.2),
  'Machine-op-inspct': (0.06, -0.4),
  'Transport-moving': (0.05, -0.1),
  'Handlers-cleaners': (0.04, -0.9),
  'Farming-fishing': (0.03, -0.8),
  'Tech-support': (0.03, 0.4),
  'Protective-serv': (0.02, 0.3),
  'Priv-house-serv': (0.005, -2.0),
  'Armed-Forces': (0.005, 0.0),
}
RACE = {
  'White': 0.85,
  'Black': 0.10,
  'Asian-Pac-Islander': 0.03,
  'Amer-Indian-Eskimo': 0.01,
  'Other': 0.01,
}
COUNTRIES = (
  'Mexico',
  'Philippines',
  'Germany',
  'Canada',
  'Puerto-Rico',
  'El-Salvador',
  'India',
  'Cuba',
  'England',
  'Jamaica',
  'China',
  'Italy',
  'Dominican-Republic',
  'Vietnam',
  'Guatemala',
  'Japan',
  'Poland',
  'Columbia',
  'Iran',
  'Haiti',
  'Portugal',
  'Peru',
)


def _pick(rng, table, size):
  names = list(table)
  shares = np.array(
    [
      table[n] if not isinstance(table[n], tuple) else table[n][0]
      for n in names
    ],
    dtype=float,
  )
  return np.array(names, dtype=object)[
    rng.choice(len(names), size, p=shares / shares.sum())
  ]


def people(count, seed=1):
  """`count` synthetic people: dicts of the fields, with their labels."""
  rng = np.random.default_rng(seed)
  age = np.clip(rng.normal(38.6, 13.6, count), 17, 90).astype(int)
  education = np.clip(np.round(rng.normal(10.1, 2.6, count)), 1, 16)
  education = education.astype(int)
  marital = _pick(rng, MARITAL, count)
  marital = np.where(
    (age < 22) & (rng.random(count) < 0.9), 'Never-married', marital
  )
  married = marital == 'Married-civ-spouse'
  male = rng.random(count) < 0.67
  relationship = np.where(
    married,
    np.where(male, 'Husband', 'Wife'),
    np.where(
      age < 25,
      'Own-child',
      np.where(
        rng.random(count) < 0.7,
        'Not-in-family',
        np.where(rng.random(count) < 0.8, 'Unmarried', 'Other-relative'),
      ),
    ),
  )
  occupation = _pick(rng, OCCUPATION, count)
  gain = np.where(
    rng.random(count) < 0.06 + 0.01 * (education - 9),
    np.round(rng.lognormal(8.6, 1.0, count)),
    0,
  ).astype(int)
  loss = np.where(
    rng.random(count) < 0.045, np.round(rng.normal(1900, 300, count)), 0.0
  )
  hours = np.clip(np.round(rng.normal(40, 12, count)), 1, 99)
  country = np.where(
    rng.random(count) < 0.91,
    'United-States',
    np.array(COUNTRIES, dtype=object)[rng.integers(0, len(COUNTRIES), count)],
  )
  logit = (
    -2.2
    + 0.33 * (education - 10)
    + 1.9 * married
    + 0.035 * (np.minimum(age, 55) - 38)
    - 0.05 * np.maximum(age - 65, 0)
    + 0.03 * (hours - 40)
    + 2.2 * (gain > 5000)
    + 0.8 * (loss > 0)
    + np.array([OCCUPATION[o][1] for o in occupation])
    + 0.2 * male
  )
  high = rng.random(count) < 1.0 / (1.0 + np.exp(-logit))
  workclass = _pick(rng, WORKCLASS, count)
  race = _pick(rng, RACE, count)
  rows = []
  for i in range(count):
    rows.append(
      {
        'income_bracket': HIGH if high[i] else LOW,
        'age': int(age[i]),
        'workclass': str(workclass[i]),
        'education_num': int(education[i]),
        'marital_status': str(marital[i]),
        'occupation': str(occupation[i]),
        'relationship': str(relationship[i]),
        'race': str(race[i]),
        'gender': 'Male' if male[i] else 'Female',
        'capital_gain': int(gain[i]),
        'capital_loss': float(loss[i]),
        'hours_per_week': float(hours[i]),
        'native_country': str(country[i]),
      }
    )
  return rows


def blank(rows, seed=1, job_rate=0.06, country_rate=0.02, numeric_rate=0.0):
  """A copy of `rows` with cells emptied as in the real census data.

  Args:
    rows: the rows (not changed).
    seed: the random seed.
    job_rate: the share of rows without work class and occupation.
    country_rate: the share of rows without native country.
    numeric_rate: the share of each numeric column's cells emptied.
  """
  rng = np.random.default_rng(seed + 7919)
  holed = []
  for row in rows:
    row = dict(row)
    if rng.random() < job_rate:
      row['workclass'] = row['occupation'] = ''
    if rng.random() < country_rate:
      row['native_country'] = ''
    for name in NUMERIC:
      if numeric_rate and rng.random() < numeric_rate:
        row[name] = ''
    holed.append(row)
  return holed


def write_csv(path, rows, fields=FIELDS):
  with open(path, 'w', newline='') as f:
    writer = csv.writer(f, lineterminator='\n')
    for row in rows:
      writer.writerow([row[name] for name in fields])


def legacy_metadata(rows):
  """The original tensorfx's metadata.json of some rows."""
  metadata = {}
  for name in FIELDS:
    values = [row[name] for row in rows if row[name] != '']
    if name in NUMERIC:
      numbers = np.array(values, dtype=float)
      stats = {'min': float(numbers.min()), 'max': float(numbers.max())}
      if name in ('age', 'hours_per_week'):
        stats.update(
          mean=round(float(numbers.mean()), 6),
          std=round(float(numbers.std()), 6),
        )
      metadata[name] = stats
    else:
      metadata[name] = {'entries': sorted(set(values))}
  return metadata


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument(
    '--train', type=int, default=4000, help='training rows (default 4000)'
  )
  parser.add_argument(
    '--eval', type=int, default=1000, help='evaluation rows (default 1000)'
  )
  parser.add_argument('--seed', type=int, default=1, help='the random seed')
  parser.add_argument(
    '--numeric-holes',
    type=float,
    default=0.0,
    help='the share of numeric cells to empty (default 0)',
  )
  parser.add_argument(
    '--output',
    default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data'),
    help='the directory to write to (default: data/)',
  )
  args = parser.parse_args(argv)
  os.makedirs(args.output, exist_ok=True)
  train = blank(
    people(args.train, args.seed), args.seed, numeric_rate=args.numeric_holes
  )
  evaluation = blank(
    people(args.eval, args.seed + 1000),
    args.seed + 1000,
    numeric_rate=args.numeric_holes,
  )
  write_csv(os.path.join(args.output, 'train.csv'), train)
  write_csv(os.path.join(args.output, 'eval.csv'), evaluation)
  with open(os.path.join(args.output, 'metadata.json'), 'w') as f:
    json.dump(legacy_metadata(train), f, indent=2)
    f.write('\n')
  holed = sum(any(v == '' for v in row.values()) for row in train)
  high = sum(r['income_bracket'] == HIGH for r in evaluation) / len(evaluation)
  print(
    f'Wrote {len(train)} training rows ({holed / len(train):.1%} with an '
    f'empty cell) and {len(evaluation)} eval rows to {args.output} '
    f'({max(high, 1 - high):.1%} of eval rows are the majority class)'
  )


if __name__ == '__main__':
  main()
