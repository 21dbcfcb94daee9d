"""Autograph leaves tensorfx's library code alone and converts users' hooks."""

import tensorflow as tf
from tensorflow.python.autograph.impl import conversion

from tensorfx import _autograph
from tensorfx.data import _csv
from tensorfx.training._engine import serving


def _users_hook(x):
  if tf.reduce_sum(x) > 0:  # A tensor as a Python bool: needs autograph.
    return x * 2.0
  return x


def test_library_modules_are_not_converted_users_code_is():
  _autograph.skip_library()
  _autograph.skip_library()  # Idempotent.
  assert conversion.is_allowlisted(_csv.parse_lines)
  assert conversion.is_allowlisted(serving.build)
  assert not conversion.is_allowlisted(_users_hook)


def test_a_hook_called_from_unconverted_code_is_converted():
  hook = _autograph.hook(_users_hook)

  @tf.function(autograph=False)
  def library(x):
    return hook(x)

  assert library(tf.constant([1.0])).numpy().tolist() == [2.0]
  assert library(tf.constant([-1.0])).numpy().tolist() == [-1.0]
