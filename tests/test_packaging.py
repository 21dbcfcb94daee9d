"""The source distribution is a source release; the PyPI page renders.

The sdist carries the package and what documents, demonstrates and tests
it (docs/, samples/, the whole of tests/, CHANGELOG); the README, which is
also the PyPI page, links absolutely and says how to install a release.
"""

import email
import os
import re
import subprocess
import sys
import tarfile

import pytest

from conftest import ROOT

# Markdown links: [text](target).
_LINK = re.compile(r'\[[^\]]+\]\(([^)\s]+)\)')


def _tracked(folder):
  """The files of the checkout under `folder`, as git tracks them."""
  result = subprocess.run(
    ['git', 'ls-files', folder],
    cwd=ROOT,
    capture_output=True,
    text=True,
    check=False,
  )
  if result.returncode != 0:  # Not a git checkout (an unpacked sdist).
    pytest.skip('not a git checkout')
  return set(result.stdout.split())


def _base_url():
  with open(os.path.join(ROOT, 'pyproject.toml')) as f:
    return re.search(r'^Source = "([^"]+)"$', f.read(), re.M)[1]


def test_the_readme_links_absolutely_to_files_that_exist():
  with open(os.path.join(ROOT, 'README.md')) as f:
    text = f.read()
  base = _base_url()
  links = _LINK.findall(text)
  assert links
  for link in links:
    assert re.match(r'^https?://', link), link  # Relative breaks on PyPI.
    if link.startswith(base + '/'):
      path = re.sub(r'^/(blob|tree)/main/', '', link[len(base) :])
      assert os.path.exists(os.path.join(ROOT, path.partition('#')[0])), link
  # The install line of a release, and how to install before one.
  assert '\npip install tensorfx-sdk\n' in text
  assert 'pip install dist/tensorfx_sdk-*.whl' in text


# A pip command in prose, a code block or a Python string, up to the end of
# its line; what follows the arguments (a code span's end, a comment, the
# next command) ends it.
_PIP_INSTALL = re.compile(r'pip install +([^\n]*)')
_AFTER_ARGUMENTS = re.compile(r'[`#;|]|&&|[\'"]?\)')


def _install_hints():
  """`(file, arguments)` of every `pip install` the project shows a user."""
  files = [
    os.path.join(ROOT, 'README.md'),
    *(
      os.path.join(ROOT, f)
      for folder in ('tensorfx', 'docs', 'samples')
      for f in _tracked(folder)
      if f.endswith(('.py', '.md', '.yaml', '.txt'))
    ),
  ]
  for path in files:
    with open(path, encoding='utf-8') as f:
      text = f.read()
    for match in _PIP_INSTALL.finditer(text):
      arguments = _AFTER_ARGUMENTS.split(match.group(1), maxsplit=1)[0]
      yield os.path.relpath(path, ROOT), arguments.split()


def test_every_install_hint_quotes_its_brackets_and_installs_from_a_clone():
  hints = list(_install_hints())
  assert len(hints) > 10
  for path, arguments in hints:
    # On one line: `grep -rn "pip install"` shows the whole command.
    assert arguments, (path, 'a pip install command ends its line')
    for argument in arguments:
      # A shell globs an unquoted [extra] (zsh stops: "no matches found").
      if '[' in argument:
        assert argument[0] in '"\'', (path, arguments)
      # tensorfx-sdk is not on the package index: its extras install from
      # a clone (pip install -e ".[profile]") or by their own packages.
      assert not argument.strip('"\'').startswith('tensorfx-sdk['), (
        path,
        arguments,
      )
    if 'tensorfx-sdk' in arguments:
      # The release's install line, only where the page says how to
      # install before a release.
      assert path in ('README.md', 'docs/getting-started.md'), (
        path,
        arguments,
      )


@pytest.mark.slow
def test_the_sdist_is_a_source_release(tmp_path):
  result = subprocess.run(
    [sys.executable, '-m', 'build', '--sdist', '--outdir', str(tmp_path), ROOT],
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  (sdist,) = tmp_path.glob('tensorfx_sdk-*.tar.gz')
  with tarfile.open(sdist) as tar:
    names = tar.getnames()
    top = names[0].split('/')[0]
    members = {n[len(top) + 1 :] for n in names if n.startswith(top + '/')}
    info = email.message_from_bytes(tar.extractfile(f'{top}/PKG-INFO').read())
  for needed in (
    'README.md',
    'CHANGELOG.md',
    'LICENSE',
    'mkdocs.yml',
    'pytest.ini',
    'docs/index.md',
    'docs/getting-started.md',
    'samples/iris/trainer.py',
    'samples/iris/data/train.csv',
    'tensorfx/py.typed',
  ):
    assert needed in members, needed
  # The whole test suite, not setuptools' default tests/test*.py alone.
  assert _tracked('tests') <= members
  assert not any('__pycache__' in m or m.endswith('.pyc') for m in members)
  # Project URLs, and a long description PyPI renders as Markdown.
  urls = info.get_all('Project-URL')
  assert {u.split(',')[0] for u in urls} >= {
    'Homepage',
    'Documentation',
    'Source',
    'Issues',
    'Changelog',
  }
  assert info['Description-Content-Type'] == 'text/markdown'
  description = info.get_payload()
  assert 'pip install tensorfx-sdk' in description
  assert all(
    re.match(r'^https?://', link) for link in _LINK.findall(description)
  )
