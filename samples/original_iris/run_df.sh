#!/bin/sh
# Runs the standalone DataFrame client from this directory.

python -m trainer.df "$@"
