"""tensorfx: a model-builder SDK for TensorFlow training jobs."""

import os

import setuptools

_HERE = os.path.dirname(os.path.abspath(__file__))


def _version():
  scope = {}
  with open(os.path.join(_HERE, 'tensorfx', '_version.py')) as f:
    exec(f.read(), scope)  # pylint: disable=exec-used
  return scope['__version__']


_TRACKING = [
    'mlflow-skinny>=2.10',
    'sqlalchemy>=2.0',
    'alembic>=1.12',
    'psycopg2-binary>=2.9',
]

# The documentation site (mkdocs.yml): MkDocs and the API reference from the
# docstrings.
_DOCS = [
    'mkdocs>=1.6',
    'mkdocstrings[python]>=0.26',
]

setuptools.setup(
    name='tensorfx-sdk',
    version=_version(),
    description='Build, train and serve TensorFlow models from one ModelBuilder.',
    long_description=open(os.path.join(_HERE, 'README.md')).read(),
    long_description_content_type='text/markdown',
    license='Apache 2.0',
    python_requires='>=3.11,<3.12',
    packages=setuptools.find_packages(include=['tensorfx', 'tensorfx.*']),
    install_requires=[
        # tensorflow, not tensorflow-cpu: tf.Transform requires the former.
        'tensorflow~=2.21.0',
        # Keras 2: Keras 3 does not run under the PS/multi-worker strategies.
        'tf_keras~=2.21.0',
        'tensorflow-transform~=1.21.0',
        'pyyaml>=6',
        # tf.summary needs it, and users open summaries/ with it.
        'tensorboard~=2.21.0',
        # Staging packages on gs:// (what tf.io.gfile does not do).
        'google-cloud-storage>=2.10',
        # Vertex AI CustomJob / HyperparameterTuningJob submission.
        'google-cloud-aiplatform>=1.38',
    ],
    extras_require={
        # Experiment records (--experiment): MLflow's client and its SQL
        # stores (embedded SQLite, PostgreSQL).
        'tracking': _TRACKING,
        'docs': _DOCS,
        'test': [
            'pytest>=8',
            'pytest-timeout>=2.3',
            # A real GCS JSON-API server on loopback for the staging tests.
            'gcp-storage-emulator>=2024.8.3',
            # Builds the sdist and wheel (cloudbuild.yaml, trainer packages).
            'build>=1.0',
            # The tracking tests run against SQLite and PostgreSQL stores.
            *_TRACKING,
            # tests/test_docs.py builds the site.
            *_DOCS,
        ],
    },
    entry_points={
        'console_scripts': ['tensorfx = tensorfx.tools:main'],
    },
)
