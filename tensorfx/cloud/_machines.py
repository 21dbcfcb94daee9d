"""Accelerators: the names Vertex AI accepts, and gcloud's spelling of them."""


def accelerator_types():
  """The accelerator type names Vertex AI accepts (from its API)."""
  from google.cloud import aiplatform_v1  # pylint: disable=g-import-not-at-top
  return tuple(n for n in aiplatform_v1.AcceleratorType.__members__
               if n != 'ACCELERATOR_TYPE_UNSPECIFIED')


def normalize_accelerator(name):
  """'nvidia-tesla-t4' -> 'NVIDIA_TESLA_T4' (gcloud flags used lower case)."""
  return str(name).strip().upper().replace('-', '_')
