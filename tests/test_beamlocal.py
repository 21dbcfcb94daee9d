"""Local Beam pipelines: the FnApiRunner directly, Beam's introspection kept.

What tensorfx's pipelines compute is unchanged: the same runner the
DirectRunner picks for a batch pipeline, the same signatures and option
views, computed once (the analysis and batch-prediction tests check the
results end to end).
"""

import apache_beam as beam
from apache_beam.options.pipeline_options import DebugOptions
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.options.pipeline_options import StandardOptions
from apache_beam.testing.util import assert_that
from apache_beam.testing.util import equal_to
from apache_beam.transforms import core
from apache_beam.transforms import userstate
import pytest

from tensorfx import _beamlocal


@pytest.mark.parametrize('flags', [[], ['--runner=DirectRunner']])
def test_the_direct_runner_is_its_batch_runner_without_prism(flags):
  pipeline = _beamlocal.pipeline(PipelineOptions(flags))
  assert type(pipeline.runner).__name__ == 'FnApiRunner'


def test_another_runner_is_left_to_beam():
  options = PipelineOptions(['--runner=BundleBasedDirectRunner'])
  pipeline = _beamlocal.pipeline(options)
  assert type(pipeline.runner).__name__ == 'BundleBasedDirectRunner'


def test_a_local_pipeline_runs_and_keeps_its_options():
  options = PipelineOptions(['--direct_num_workers=1', '--experiments=x'])
  with _beamlocal.faster_beam():
    with _beamlocal.pipeline(options) as pipeline:
      squares = pipeline | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * x)
      assert_that(squares, equal_to([1, 4, 9]))
  assert 'x' in options.view_as(DebugOptions).experiments


class _Stateful(beam.DoFn):
  COUNT = userstate.CombiningValueStateSpec('count', sum)

  # Beam declares a DoFn's state as a default value.
  def process(self, element, count=beam.DoFn.StateParam(COUNT)):  # noqa: B008
    yield element


def _counting_signatures():
  original = core.get_function_args_defaults
  calls = []

  def counted(f):
    calls.append(f)
    return original(f)

  return original, counted, calls


def test_signatures_are_introspected_once_with_the_same_answer():
  dofn = _Stateful()
  before = userstate.get_dofn_specs(dofn)
  original, counted, calls = _counting_signatures()
  core.get_function_args_defaults = counted
  try:
    with _beamlocal.faster_beam():
      inside = [userstate.get_dofn_specs(dofn) for _ in range(3)]
  finally:
    core.get_function_args_defaults = original
  assert all(specs == before for specs in inside)
  assert {spec.name for spec in before[0]} == {'count'}
  # Each method once, not once per call of get_dofn_specs.
  assert len(calls) == len({getattr(f, '__func__', f) for f in calls})


def _made(default):
  def process(self, element, flag=default):
    return element

  return process


def test_functions_unpickled_anew_are_introspected_once():
  from apache_beam.internal import pickler

  original, counted, calls = _counting_signatures()
  # As a runner makes them for every bundle: equal code, new objects.
  copies = [pickler.loads(pickler.dumps(_made(3))) for _ in range(4)]
  assert len({id(f) for f in copies}) == 4
  core.get_function_args_defaults = counted
  try:
    with _beamlocal.faster_beam():
      answers = [core.get_function_args_defaults(f) for f in copies]
      # The same code with other defaults is asked again: 1 is not True.
      others = [
        core.get_function_args_defaults(_made(d)) for d in (1, True, 1.0)
      ]
  finally:
    core.get_function_args_defaults = original
  assert answers == [(['self', 'element', 'flag'], [3])] * 4
  assert [defaults for _, defaults in others] == [[1], [True], [1.0]]
  assert [type(d) for _, (d,) in others] == [int, bool, float]
  assert len(calls) == 1 + 3


def test_views_are_shared_and_their_values_stay_live():
  options = PipelineOptions(['--runner=DirectRunner'])
  with _beamlocal.faster_beam():
    view = options.view_as(StandardOptions)
    assert options.view_as(StandardOptions) is view
    view.runner = 'FnApiRunner'
    assert options.get_all_options()['runner'] == 'FnApiRunner'
    other = PipelineOptions([])
    assert other.view_as(StandardOptions) is not view


def test_beam_is_restored_after_the_outermost_block():
  signature = core.get_function_args_defaults
  view_as = PipelineOptions.view_as
  with _beamlocal.faster_beam():
    with _beamlocal.faster_beam():
      assert core.get_function_args_defaults is not signature
    assert core.get_function_args_defaults is not signature
  assert core.get_function_args_defaults is signature
  assert PipelineOptions.view_as is view_as
  with pytest.raises(RuntimeError):
    with _beamlocal.faster_beam():
      raise RuntimeError('a failed pipeline')
  assert core.get_function_args_defaults is signature
