"""cloudbuild.yaml runs what .ci/run runs, then builds and publishes."""

import os
import subprocess
import tomllib

from packaging.specifiers import SpecifierSet
import yaml

from conftest import ROOT


def _load():
  with open(os.path.join(ROOT, 'cloudbuild.yaml')) as f:
    return yaml.safe_load(f)


def _script(step):
  """A bash step's script as bash sees it (Cloud Build turns $$ into $)."""
  assert step['entrypoint'] == 'bash'
  assert step['args'][0] == '-c'
  return step['args'][1].replace('$$', '$')


def _commands(text):
  """Command lines: no shebang, comments or blank lines."""
  return [
    line.strip()
    for line in text.splitlines()
    if line.strip() and not line.lstrip().startswith('#')
  ]


def test_steps_in_order_on_python_311():
  build = _load()
  assert [s['id'] for s in build['steps']] == [
    'test',
    'build',
    'publish',
    'image',
  ]
  assert build['steps'][0]['name'] == 'python:3.11'
  assert build['steps'][1]['name'] == 'python:3.11'


def test_test_step_runs_exactly_the_ci_commands():
  with open(os.path.join(ROOT, '.ci', 'run')) as f:
    ci = _commands(f.read())
  step = _load()['steps'][0]
  assert _commands(_script(step)) == ci
  # $0 is .ci/run, so its `cd "$(dirname "$0")/.."` reaches the root.
  assert step['args'][2:] == ['.ci/run']


def test_test_step_starts_in_the_repository_root():
  step = _load()['steps'][0]
  lines = _script(step).splitlines()
  # Everything before the install, then where the script stands.
  install = next(i for i, line in enumerate(lines) if line.startswith('pip '))
  prefix = [*lines[:install], 'pwd']
  result = subprocess.run(
    ['bash', '-c', '\n'.join(prefix), '.ci/run'],
    cwd=ROOT,
    capture_output=True,
    text=True,
    timeout=30,
    check=True,
  )
  assert result.stdout.strip() == os.path.realpath(ROOT)


def test_build_and_publish_steps():
  steps = _load()['steps']
  build = _script(steps[1])
  assert 'pip install build' in build
  assert 'python -m build --sdist --wheel --outdir dist .' in build
  publish = steps[2]['args'][1]
  assert publish == (
    'gcloud storage cp dist/*.tar.gz dist/*.whl gs://${_BUCKET}/tensorfx/'
  )
  # No default bucket: a build without _BUCKET fails rather than publishing
  # somewhere unintended.
  assert '_BUCKET' not in (_load().get('substitutions') or {})


def test_only_user_substitutions_are_unescaped():
  """Every `$` Cloud Build would substitute is `_BUCKET`; the rest are $$."""
  import re

  with open(os.path.join(ROOT, 'cloudbuild.yaml')) as f:
    text = '\n'.join(
      line
      for line in f.read().splitlines()
      if not line.lstrip().startswith('#')
    )
  names = re.findall(r'(?<!\$)\$(?!\$)\{?(\w+)', text.replace('$$', ''))
  # PROJECT_ID is Cloud Build's own; _REGION has a default.
  assert set(names) == {'_BUCKET', '_REGION', 'PROJECT_ID'}
  assert set(_load()['substitutions']) == {'_REGION'}


def test_image_step_pushes_the_images_submit_runs_on():
  """The step's script pushes the tags `tensorfx submit` uses.

  Run with a recording `docker`; the tags are those `tensorfx submit` puts
  in its requests by default.
  """
  from tensorfx import cloud

  step = _load()['steps'][3]
  script = (
    _script(step)
    .replace('${_REGION}', 'europe-west4')
    .replace('${PROJECT_ID}', 'my-project')
  )
  fake = 'docker() { echo "docker $*"; }\n'
  result = subprocess.run(
    ['bash', '-c', fake + script],
    cwd=ROOT,
    capture_output=True,
    text=True,
    timeout=30,
    check=True,
  )
  calls = result.stdout.splitlines()
  cpu = cloud.trainer_image('my-project', 'europe-west4')
  gpu = cloud.trainer_image('my-project', 'europe-west4', gpu=True)
  assert calls == [
    f'docker build -t {cpu} .',
    f'docker build --build-arg TENSORFLOW_EXTRA=and-cuda -t {gpu} .',
    f'docker push {cpu}',
    f'docker push {gpu}',
  ]


def test_dockerfile_installs_the_built_wheel_on_the_pinned_python():
  with open(os.path.join(ROOT, 'Dockerfile')) as f:
    lines = [
      line.strip()
      for line in f.read().splitlines()
      if line.strip() and not line.lstrip().startswith('#')
    ]
  with open(os.path.join(ROOT, 'pyproject.toml'), 'rb') as f:
    requires = tomllib.load(f)['project']['requires-python']
  assert lines[0] == 'FROM python:3.11-slim'
  assert SpecifierSet(requires).contains('3.11')
  assert 'ARG TENSORFLOW_EXTRA=' in lines
  assert 'COPY dist/*.whl /tmp/wheels/' in lines
  assert any(
    'pip install /tmp/wheels/tensorfx_sdk-*.whl' in line for line in lines
  )
  # Vertex replaces the entrypoint with the request's command; run by hand,
  # the image is the tensorfx command line.
  assert 'ENTRYPOINT ["python", "-m", "tensorfx"]' in lines
  # The image step builds it after the wheel exists.
  ids = [s['id'] for s in _load()['steps']]
  assert ids.index('build') < ids.index('image')
