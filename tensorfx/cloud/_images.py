"""The images a job's Python package pools run on.

Python trainers run on the tensorfx trainer image (`trainer_image()`: Python
3.11, the pinned TensorFlow and tensorfx, built and pushed by
`cloudbuild.yaml` from the top-level `Dockerfile`) as a container whose
command, `tensorfx run-package`, does what Vertex AI's prebuilt executors do
for a Python package: install the staged packages, then run the module. A
pool with `executor_image_uri` runs on that prebuilt executor instead
(`pythonPackageSpec`), and a pool with `image_uri` runs a custom container.
"""

# Vertex AI's prebuilt TensorFlow training images lag TensorFlow releases:
# the newest, when this was written, is TensorFlow 2.17 on Python 3.10
# (`tf-cpu.2-17.py310`, `tf-gpu.2-17.py310`), where tensorfx (TensorFlow
# 2.21, Python 3.11) does not install. They stay available for trainers
# that do not use tensorfx at run time (`--executor-image-uri`); tensorfx
# trainers run on the trainer image (`trainer_image()`).
EXECUTOR_TENSORFLOW = '2-17'
EXECUTOR_PYTHON = 'py310'
EXECUTOR_IMAGE_CPU = (
  f'us-docker.pkg.dev/vertex-ai/training/'
  f'tf-cpu.{EXECUTOR_TENSORFLOW}.{EXECUTOR_PYTHON}:latest'
)
EXECUTOR_IMAGE_GPU = (
  f'us-docker.pkg.dev/vertex-ai/training/'
  f'tf-gpu.{EXECUTOR_TENSORFLOW}.{EXECUTOR_PYTHON}:latest'
)

# Where cloudbuild.yaml pushes the trainer image: an Artifact Registry
# Docker repository of this name in the job's project and region.
TRAINER_IMAGE_REPOSITORY = 'tensorfx'


def trainer_image(project, region, gpu=False, version=None):
  """The tensorfx trainer image that `cloudbuild.yaml` pushes.

  Example:
    >>> trainer_image('my-project', 'us-central1', version='0.1.0')
    'us-central1-docker.pkg.dev/my-project/tensorfx/trainer:0.1.0'
    >>> trainer_image('my-project', 'us-central1', gpu=True, version='0.1.0')
    'us-central1-docker.pkg.dev/my-project/tensorfx/trainer-gpu:0.1.0'

  Args:
    project: the Google Cloud project holding the repository.
    region: the repository's region (the job's, so pulls stay local).
    gpu: the variant with TensorFlow's CUDA libraries, for GPU machines.
    version: the image tag; by default this tensorfx's version, so a job
      runs the tensorfx that submitted it.
  """
  if version is None:
    from tensorfx._version import __version__

    version = __version__
  name = 'trainer-gpu' if gpu else 'trainer'
  return (
    f'{region}-docker.pkg.dev/{project}/{TRAINER_IMAGE_REPOSITORY}/'
    f'{name}:{version}'
  )


def run_package_command(package_uris, python_module):
  """The trainer image's command that installs the packages and runs."""
  return (
    'python',
    '-m',
    'tensorfx',
    'run-package',
    '--package-uris',
    ','.join(package_uris),
    '--module',
    python_module,
    '--',
  )
