#!/bin/sh
# Trains trainer/examples.py from this directory with the original tensorfx's
# tool, as the original's run_examples.sh did. Arguments given to this script
# come last (and win): sh run_examples.sh --max-steps 200 --output /tmp/x

python -m tensorfx.tools.tfx train \
  --module trainer.examples \
  --output /tmp/tensorfx/iris/examples \
  --data-train data/train.tfrecord \
  --data-eval data/eval.tfrecord \
  --data-schema data/schema.yaml \
  --data-metadata data/metadata.json \
  --data-features trainer/features.yaml \
  --log-level-tensorflow ERROR \
  --log-level INFO \
  --batch-size 5 \
  --max-steps 2000 \
  --checkpoint-interval-secs 1 \
  --hidden-layers:1 20 \
  --hidden-layers:2 10 \
  "$@"
