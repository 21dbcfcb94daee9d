"""`tensorfx run-package`: the trainer image's command on Vertex AI."""


def add_parser(commands):
  parser = commands.add_parser(
    'run-package',
    help='install staged trainer packages and run a module '
    "(the trainer image's command)",
    description='Downloads and pip-installs the packages, then runs '
    "`python -m MODULE ARGS`: what Vertex AI's prebuilt executors do for "
    'a Python package job. `tensorfx submit` makes it the command of the '
    'tensorfx trainer image.',
    epilog='Example: tensorfx run-package --package-uris '
    'gs://bucket/staging/iris-0.1.tar.gz --module trainer.task -- '
    '--job-dir gs://bucket/iris',
  )
  parser.add_argument(
    '--package-uris',
    required=True,
    type=lambda text: [u for u in text.split(',') if u],
    help='comma-separated gs:// URIs or paths of the '
    'sdists and wheels to install',
  )
  parser.add_argument(
    '--module', required=True, help='the module to run, e.g. trainer.task'
  )
  parser.add_argument(
    '--install-dir', help='install into this directory instead of site-packages'
  )
  parser.set_defaults(run=run, accepts_extra=True)


def run(args, rest):
  """Installs, then runs the module in this process with `rest` as argv."""
  from tensorfx.cloud import _runpackage
  from tensorfx.tools import _train

  if rest and rest[0] == '--':
    rest = rest[1:]
  _runpackage.install_packages(args.package_uris, target=args.install_dir)
  return _train.run_module(args.module, list(rest))
