"""`tensorfx run-package`: what the trainer image runs on Vertex AI."""

import json
import sys

import pytest

from cloud_fakes import BUCKET
from cloud_fakes import _emulator_server  # noqa: F401  (a fixture: pytest finds it by name)
from cloud_fakes import emulator  # noqa: F401  (a fixture: pytest finds it by name)
from tensorfx import cloud
from tensorfx.tools import main


def _trainer_project(root, name):
  """A trainer package whose module records its argv and where it ran."""
  package = root / name
  package.mkdir(parents=True)
  (package / '__init__.py').write_text('')
  (package / 'task.py').write_text(
    'import json, os, sys\n'
    'out = sys.argv[sys.argv.index("--record") + 1]\n'
    'with open(out, "w") as f:\n'
    '  json.dump({"argv": sys.argv[1:], "name": __name__,\n'
    '             "file": __file__}, f)\n'
  )
  return root


def test_installs_a_staged_package_and_runs_its_module(
  tmp_path, emulator, monkeypatch
):
  name = 'rp_trainer_a'
  sdist = cloud.build_sdist(
    _trainer_project(tmp_path / 'src', name), f'{name}.task', tmp_path / 'dist'
  )
  uri = cloud.upload(sdist, f'gs://{BUCKET}/staging/', emulator)
  installed = tmp_path / 'site'
  record = tmp_path / 'record.json'
  monkeypatch.setattr(sys, 'path', list(sys.path))
  monkeypatch.chdir(tmp_path)
  code = main(
    [
      'run-package',
      '--package-uris',
      uri,
      '--module',
      f'{name}.task',
      '--install-dir',
      str(installed),
      '--',
      '--record',
      str(record),
      '--job-dir',
      f'gs://{BUCKET}/job',
    ]
  )
  assert code == 0
  ran = json.loads(record.read_text())
  assert ran['name'] == '__main__'
  assert ran['argv'] == [
    '--record',
    str(record),
    '--job-dir',
    f'gs://{BUCKET}/job',
  ]
  # It ran the installed copy, not the source tree.
  assert ran['file'].startswith(str(installed))


def test_a_missing_package_is_named(tmp_path, emulator, capsys):
  code = main(
    [
      'run-package',
      '--package-uris',
      f'gs://{BUCKET}/staging/nope-1.0.tar.gz',
      '--module',
      'x.task',
      '--install-dir',
      str(tmp_path / 'site'),
    ]
  )
  assert code == 1
  assert (
    f'gs://{BUCKET}/staging/nope-1.0.tar.gz: no such object'
    in capsys.readouterr().err
  )


def test_a_package_pip_rejects_fails_with_pips_reason(tmp_path, capsys):
  broken = tmp_path / 'broken-1.0.tar.gz'
  broken.write_bytes(b'not a tarball')
  code = main(
    [
      'run-package',
      '--package-uris',
      str(broken),
      '--module',
      'x.task',
      '--install-dir',
      str(tmp_path / 'site'),
    ]
  )
  assert code == 1
  err = capsys.readouterr().err
  assert f'pip could not install {broken}' in err


def test_the_job_request_runs_the_trainer_image():
  spec = cloud.job_spec(
    project='my-project',
    region='europe-west4',
    job_name='iris_1',
    staging_bucket=f'gs://{BUCKET}',
    module_name='iris.trainer',
    package_uris=[f'gs://{BUCKET}/iris-0.0.0.tar.gz'],
    args=['--max-steps', '10'],
    environ={},
  )
  pool = spec.request()['customJob']['jobSpec']['workerPoolSpecs'][0]
  from tensorfx import __version__

  assert pool['containerSpec'] == {
    'imageUri': (
      f'europe-west4-docker.pkg.dev/my-project/tensorfx/trainer:{__version__}'
    ),
    'command': [
      'python',
      '-m',
      'tensorfx',
      'run-package',
      '--package-uris',
      f'gs://{BUCKET}/iris-0.0.0.tar.gz',
      '--module',
      'iris.trainer',
      '--',
    ],
    'args': ['--max-steps', '10'],
  }
  # The command is one `tensorfx` understands, arguments after `--`.
  from tensorfx.tools import _main

  parsed, rest = _main.build_parser().parse_known_args(
    pool['containerSpec']['command'][3:] + pool['containerSpec']['args']
  )
  assert parsed.module == 'iris.trainer'
  assert parsed.package_uris == [f'gs://{BUCKET}/iris-0.0.0.tar.gz']
  assert rest[-2:] == ['--max-steps', '10']


@pytest.mark.parametrize(
  'flag, expected',
  [
    (
      ('--trainer-image', 'us-docker.pkg.dev/p/r/mine:1'),
      {'containerSpec': 'us-docker.pkg.dev/p/r/mine:1'},
    ),
    (
      ('--executor-image-uri', cloud.EXECUTOR_IMAGE_CPU),
      {'pythonPackageSpec': cloud.EXECUTOR_IMAGE_CPU},
    ),
  ],
)
def test_the_image_flags_choose_what_runs(flag, expected, capsys):
  code = main(
    [
      'submit',
      '--dry-run',
      '--project',
      'my-project',
      '--region',
      'us-central1',
      '--job-name',
      'x',
      '--staging-bucket',
      f'gs://{BUCKET}',
      '--module-name',
      'iris.trainer',
      '--packages',
      f'gs://{BUCKET}/iris-0.0.0.tar.gz',
      *flag,
    ]
  )
  assert code == 0
  request = json.loads(capsys.readouterr().out)
  pool = request['customJob']['jobSpec']['workerPoolSpecs'][0]
  ((kind, image),) = expected.items()
  assert list(pool) == ['machineSpec', 'replicaCount', kind]
  assert pool[kind].get('imageUri', pool[kind].get('executorImageUri')) == image
