"""The analysis benchmark's references read every row of the file they time.

`benchmarks/analysis.py` compares tensorfx's analysis with a tf.data pass
(`floor`) and a pandas pass (`pandas`) computing the same statistics; a
reference that skipped rows would flatter the ratios. Both run here on a
small census file, in this process, and report the file's row count. The
report's table gives the ratio to each reference. Never a timing.
"""

import os
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))

import analysis  # noqa: E402  (the benchmark script, from its directory)
from analysis_memory import write_data  # noqa: E402

pytestmark = pytest.mark.xdist_group('test_analysis_references')


@pytest.fixture(scope='module')
def census(tmp_path_factory):
  return write_data(str(tmp_path_factory.mktemp('census')), 2500)


@pytest.mark.parametrize('reference', [analysis._floor, analysis._pandas])
def test_each_reference_reads_every_row(census, reference):
  with open(census) as f:
    lines = sum(1 for _ in f)
  assert lines == 2500
  assert reference(census) == 2500


def test_the_report_compares_tensorfx_with_both_references():
  def run(variant, seconds):
    return {
      'size': 1000,
      'variant': variant,
      'seconds': seconds,
      'cpu_seconds': seconds,
      'peak_rss_mib': 100.0,
      'load': 0.5,
      'file_mib': 0.1,
    }

  report = analysis._report(
    [run('now', 12.0), run('floor', 2.0), run('pandas', 1.5)], [1000]
  )
  now = next(line for line in report.splitlines() if '| now |' in line)
  cells = [cell.strip() for cell in now.split('|')]
  # rows, CSV, variant, time, rows/s, vs before, vs floor, vs pandas
  assert cells[6:9] == ['', '6.0x', '8.0x']
  pandas = next(line for line in report.splitlines() if '| pandas |' in line)
  assert [cell.strip() for cell in pandas.split('|')][7:9] == ['0.8x', '']
