# The tensorfx trainer image: Python 3.11, the pinned TensorFlow and tensorfx,
# which no prebuilt Vertex AI executor has. `tensorfx submit` runs Python
# package jobs on it: the command `tensorfx run-package` installs the job's
# staged packages and runs its module, as the prebuilt executors do.
#
# It installs the wheel the build step made, so the image holds exactly
# the published package. cloudbuild.yaml builds and pushes both variants;
# by hand:
#
#   python -m build --wheel --outdir dist .
#   docker build -t trainer .
#   docker build --build-arg TENSORFLOW_EXTRA=and-cuda -t trainer-gpu .
FROM python:3.11-slim

# "and-cuda" adds TensorFlow's CUDA libraries (the GPU variant).
ARG TENSORFLOW_EXTRA=

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

COPY dist/*.whl /tmp/wheels/

# setuptools and wheel: run-package builds trainer sdists without build
# isolation, so a job does not fetch them at start-up.
RUN pip install setuptools wheel \
 && pip install /tmp/wheels/tensorfx_sdk-*.whl \
 && if [ -n "$TENSORFLOW_EXTRA" ]; then \
      pip install "tensorflow[$TENSORFLOW_EXTRA]==$(python -c \
          'import importlib.metadata as m; print(m.version("tensorflow"))')"; \
    fi \
 && rm -rf /tmp/wheels \
 && python -m tensorfx --version

WORKDIR /workspace
ENTRYPOINT ["python", "-m", "tensorfx"]
CMD ["--help"]
