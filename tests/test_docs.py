"""The documentation site: it builds without warnings, and its snippets run.

A fenced code block right after a line `<!-- runnable -->` is a runnable
snippet (docs/contributing.md says how they run). Each page's snippets run
in order in one fresh process, from a scratch directory that holds
`samples/`, with `/tmp/` redirected to a temporary directory.
"""

import dataclasses
import os
import re
import shlex
import subprocess
import sys
import textwrap

import pytest

from conftest import README_TRAIN
from conftest import ROOT

pytestmark = pytest.mark.docs

DOCS = os.path.join(ROOT, 'docs')
MARKER = '<!-- runnable -->'
_FENCE = re.compile(r'^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$')
_LANGUAGES = {
  'python': 'python',
  'py': 'python',
  'sh': 'sh',
  'bash': 'sh',
  'console': 'sh',
  'shell': 'sh',
}


@dataclasses.dataclass(frozen=True)
class Snippet:
  page: str
  line: int
  language: str
  code: str


def _pages():
  for directory, _, files in os.walk(DOCS):
    for name in sorted(files):
      if name.endswith('.md'):
        yield os.path.relpath(os.path.join(directory, name), DOCS)


def snippets(page):
  """The runnable snippets of a page, in order; a stray marker is an error."""
  with open(os.path.join(DOCS, page)) as f:
    lines = f.read().splitlines()
  found = []
  for number, line in enumerate(lines, 1):
    if line.strip() != MARKER:
      continue
    fence = _FENCE.match(lines[number]) if number < len(lines) else None
    if not fence:
      raise AssertionError(
        f'docs/{page}:{number}: {MARKER} must be followed '
        'by a fenced code block on the next line'
      )
    language = _LANGUAGES.get(fence['info'].strip().split(' ')[0])
    if language is None:
      raise AssertionError(
        f'docs/{page}:{number + 1}: a runnable block must be python or sh. '
        f'Received: {fence["info"].strip()!r}'
      )
    body, end = [], number + 1
    while end < len(lines) and not lines[end].strip().startswith(
      fence['fence']
    ):
      body.append(lines[end])
      end += 1
    if end == len(lines):
      raise AssertionError(f'docs/{page}:{number + 1}: unclosed code block')
    found.append(
      Snippet(page, number + 2, language, textwrap.dedent('\n'.join(body)))
    )
  return found


RUNNABLE = {page: snippets(page) for page in _pages() if snippets(page)}

# Runs a page's snippets in order: Python ones share one namespace, shell
# ones run in bash -e. A failure names the page and line of the snippet.
_DRIVER = """
import json, subprocess, sys, traceback
namespace = {'__name__': '__main__'}
for page, line, language, code in json.load(sys.stdin):
  where = f'docs/{page}:{line}'
  print(f'--- {where} ({language})', flush=True)
  if language == 'python':
    try:
      exec(compile(code, where, 'exec'), namespace)
    except BaseException:
      traceback.print_exc()
      sys.exit(f'snippet failed: {where}')
  else:
    done = subprocess.run(['bash', '-e', '-o', 'pipefail', '-c', code])
    if done.returncode:
      sys.exit(f'snippet failed (exit {done.returncode}): {where}')
  sys.stdout.flush()
"""


def test_the_guides_have_runnable_snippets():
  guides = {page for page in RUNNABLE if page.startswith('guides/')}
  assert {'guides/data.md', 'guides/models.md', 'guides/cloud.md'} <= guides
  assert sum(len(s) for s in RUNNABLE.values()) >= 10


def test_a_marker_without_a_code_block_is_an_error(tmp_path, monkeypatch):
  page = tmp_path / 'page.md'
  page.write_text(f'# Page\n\n{MARKER}\nSome text.\n')
  monkeypatch.setattr(sys.modules[__name__], 'DOCS', str(tmp_path))
  with pytest.raises(AssertionError, match=r'page.md:3: .* fenced code'):
    snippets('page.md')


# The pages whose snippets train the longest run in the release tier; the
# standard tier runs the others (which train too).
RELEASE_PAGES = {
  'guides/data.md',
  'guides/callbacks.md',
  'guides/models.md',
  'migrating/tfutils.md',
}


@pytest.mark.parametrize(
  'page',
  [
    pytest.param(page, marks=pytest.mark.release)
    if page in RELEASE_PAGES
    else page
    for page in sorted(RUNNABLE)
  ],
)
def test_runnable_snippets_run(page, tmp_path):
  import json

  scratch = tmp_path / 'work'
  scratch.mkdir()
  os.symlink(os.path.join(ROOT, 'samples'), scratch / 'samples')
  temporary = tmp_path / 'tmp'
  temporary.mkdir()
  payload = [
    (s.page, s.line, s.language, s.code.replace('/tmp/', f'{temporary}/'))
    for s in RUNNABLE[page]
  ]
  env = dict(
    os.environ,
    TMPDIR=str(temporary),
    PYTHONPATH=os.pathsep.join(
      [ROOT]
      + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]
    ),
  )
  result = subprocess.run(
    [sys.executable, '-c', _DRIVER],
    input=json.dumps(payload),
    cwd=scratch,
    env=env,
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]


def test_site_builds_without_warnings(tmp_path):
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'mkdocs',
      'build',
      '--strict',
      '--site-dir',
      str(tmp_path / 'site'),
    ],
    cwd=ROOT,
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  output = result.stdout + result.stderr
  assert result.returncode == 0, output
  assert 'WARNING' not in output, output
  reference = (
    tmp_path / 'site' / 'reference' / 'training' / 'index.html'
  ).read_text()
  # The API reference is generated from the docstrings, lazy exports too.
  assert 'tensorfx.training.ModelBuilder' in reference
  assert 'build_inference' in reference
  for page in (
    'getting-started',
    'cli',
    'guides/data',
    'guides/cloud',
    'migrating/mxrec',
  ):
    assert (tmp_path / 'site' / page / 'index.html').is_file(), page


def test_readme_starts_with_the_two_commands():
  with open(os.path.join(ROOT, 'README.md')) as f:
    text = f.read()
  assert text.startswith('# tensorfx\n\n```sh\npip install -e . && ')
  install_and_run, install_and_test = re.findall(
    r'```sh\n(.*?)\n```', text, re.S
  )[:2]
  install, cd, run = install_and_run.split(' && ')
  assert (install, cd) == ('pip install -e .', 'cd samples/iris')
  # The command the iris sample test runs (conftest.README_TRAIN).
  words = shlex.split(run)
  at = words.index('--output')
  assert words[0] == 'tensorfx'
  assert words[1:at] + words[at + 2 :] == README_TRAIN
  assert install_and_test == (
    'pip install -e ".[test]" && python -m pytest tests'
  )
  with open(os.path.join(ROOT, '.ci', 'run')) as f:
    assert install_and_test in f.read().splitlines()
