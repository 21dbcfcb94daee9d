"""The start of a script that trains on two replicas of one machine.

Logical devices must be configured before TensorFlow initializes its
runtime, so tests that need two CPU replicas run a script in a fresh
process: `PREAMBLE` plus their own code. The script reads the iris sample's
directory and an analysis of it from its arguments (`iris`, `analysis`)
and defines `Mirrored`, a `Configuration` whose strategy mirrors the model
over the two logical CPUs.
"""

import textwrap

PREAMBLE = textwrap.dedent('''
    import json, os, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices('CPU')[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from tensorfx import data, training
    from tensorfx.models import nn

    iris, analysis = sys.argv[1], sys.argv[2]


    class Mirrored(training.Configuration):
      """One machine, two replicas: MirroredStrategy over the 2 CPUs."""

      def create_device_setter(self, args=None):
        if getattr(self, '_mirrored', None) is None:
          self._mirrored = tf.distribute.MirroredStrategy(
              ['/cpu:0', '/cpu:1'])
        return self._mirrored
''')
