#!/bin/sh
# Trains the sample from the directory above this one (samples/), as the
# original tensorfx's run script did; tensorfx's `train` command replaces
# `python -m tensorfx.tools.train`. Arguments given to this script come last
# (and win): sh original_census/run.sh --max-steps 200

tensorfx train \
  --module original_census.trainer.main \
  --output /tmp/tensorfx/census \
  --data-train original_census/data/train.csv \
  --data-eval original_census/data/eval.csv \
  --data-schema original_census/data/schema.yaml \
  --data-metadata original_census/data/metadata.json \
  --data-features original_census/features.yaml \
  --log-level-tensorflow ERROR \
  --log-level INFO \
  --batch-size 5 \
  --max-steps 1000 \
  --checkpoint-interval-secs 1 \
  --hidden-layers:1 200 \
  --hidden-layers:2 100 \
  --hidden-layers:3 20 \
  "$@"
