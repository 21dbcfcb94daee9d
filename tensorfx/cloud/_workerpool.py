"""`WorkerPool`: the machines of one role in a job.

Vertex AI's worker pools are positional: [0] chief (exactly one replica),
[1] workers, [2] parameter servers, [3] evaluator (`ROLES`).
"""

import dataclasses
import types
from typing import Any, Mapping

from tensorfx._errors import ConfigurationError
from tensorfx.cloud import _argchecks
from tensorfx.cloud import _images
from tensorfx.cloud import _vertexschema

ROLES = ('chief', 'workers', 'parameter_servers', 'evaluator')


@dataclasses.dataclass(frozen=True)
class WorkerPool:
  """The machines of one role in a job.

  Example:
    >>> WorkerPool('n1-standard-8', replica_count=2,
    ...            accelerator_type='NVIDIA_TESLA_T4', accelerator_count=1)
    ... # doctest: +ELLIPSIS
    WorkerPool(machine_type='n1-standard-8', replica_count=2, ...)

  Attributes:
    machine_type: a Compute Engine machine type, e.g. 'n1-standard-4'.
    replica_count: how many machines (the chief has exactly one).
    accelerator_type: e.g. 'NVIDIA_TESLA_T4', or None for none.
    accelerator_count: accelerators per machine (0 without a type).
    image_uri: a custom training container to run instead of the Python
      package, or None.
    command: the container's command; by default `python -m MODULE` when
      the job has a module, else the image's entrypoint.
    executor_image_uri: a prebuilt Vertex AI executor image the Python
      package runs on (`pythonPackageSpec`), or None for the job's trainer
      image.
    boot_disk_type: 'pd-ssd' or 'pd-standard', or None for Vertex's default.
    boot_disk_size_gb: the boot disk size, or None for Vertex's default.
    extra: other `WorkerPoolSpec` fields, as Vertex AI's JSON (e.g.
      `{'containerSpec': {'env': [...]}}`, `nfsMounts`), merged into the
      pool's request; `containerSpec`/`pythonPackageSpec` fields go to
      whichever of the two the pool runs.
  """

  machine_type: str
  replica_count: int = 1
  accelerator_type: str | None = None
  accelerator_count: int = 0
  image_uri: str | None = None
  command: tuple[str, ...] = ()
  executor_image_uri: str | None = None
  boot_disk_type: str | None = None
  boot_disk_size_gb: int | None = None
  extra: Mapping[str, Any] = dataclasses.field(
    default_factory=lambda: types.MappingProxyType({})
  )

  def __post_init__(self):
    object.__setattr__(
      self, 'extra', types.MappingProxyType(dict(self.extra or {}))
    )
    _argchecks.require(
      isinstance(self.machine_type, str) and self.machine_type,
      'machine_type',
      'a machine type such as n1-standard-4',
      self.machine_type,
    )
    _argchecks.require(
      _argchecks.is_count(self.replica_count),
      'replica_count',
      'a non-negative integer',
      self.replica_count,
    )
    _argchecks.require(
      _argchecks.is_count(self.accelerator_count),
      'accelerator_count',
      'a non-negative integer',
      self.accelerator_count,
    )
    if self.accelerator_type and self.accelerator_count == 0:
      raise ConfigurationError(
        f'accelerator_count: expected at least 1 with accelerator_type '
        f'{self.accelerator_type}. '
        f'{_argchecks.received("accelerator_count", 0)}'
      )
    if self.accelerator_count and not self.accelerator_type:
      raise ConfigurationError(
        'accelerator_type: expected a type with accelerator_count '
        f'{self.accelerator_count}. '
        f'{_argchecks.received("accelerator_type", None)}'
      )
    if self.boot_disk_size_gb is not None:
      _argchecks.require(
        _argchecks.is_count(self.boot_disk_size_gb)
        and self.boot_disk_size_gb > 0,
        'boot_disk_size_gb',
        'a positive integer',
        self.boot_disk_size_gb,
      )
    object.__setattr__(self, 'command', tuple(self.command))

  @property
  def gpu(self):
    """Whether the machines have GPUs (which need the GPU image)."""
    return bool(
      self.accelerator_type and not self.accelerator_type.startswith('TPU')
    )

  def to_json(self, trainer_image, package_uris, python_module, args):
    """This pool's `WorkerPoolSpec` as Vertex AI's JSON."""
    machine: dict[str, Any] = {'machineType': self.machine_type}
    if self.accelerator_type:
      machine['acceleratorType'] = self.accelerator_type
      machine['acceleratorCount'] = self.accelerator_count
    pool: dict[str, Any] = {
      'machineSpec': machine,
      'replicaCount': str(self.replica_count),
    }
    if self.boot_disk_type or self.boot_disk_size_gb:
      disk: dict[str, Any] = {}
      if self.boot_disk_type:
        disk['bootDiskType'] = self.boot_disk_type
      if self.boot_disk_size_gb:
        disk['bootDiskSizeGb'] = self.boot_disk_size_gb
      pool['diskSpec'] = disk
    if self.image_uri or not self.executor_image_uri:
      if self.image_uri:
        image = self.image_uri
        # With a module, one image can hold several trainers: run the
        # module as Vertex runs a package's. Without, the entrypoint runs.
        command = self.command or (
          ('python', '-m', python_module) if python_module else ()
        )
      else:
        image = trainer_image
        command = _images.run_package_command(package_uris, python_module)
      container: dict[str, Any] = {'imageUri': image}
      if command:
        container['command'] = list(command)
      if args:
        container['args'] = list(args)
      pool['containerSpec'] = container
    else:
      package = {
        'executorImageUri': self.executor_image_uri,
        'packageUris': list(package_uris),
        'pythonModule': python_module,
      }
      if args:
        package['args'] = list(args)
      pool['pythonPackageSpec'] = package
    extra = dict(self.extra)
    # Task fields (env, args, ...) go to the task spec the pool runs.
    task = 'containerSpec' if 'containerSpec' in pool else 'pythonPackageSpec'
    for other in ('containerSpec', 'pythonPackageSpec'):
      if other != task and other in extra:
        extra[task] = _vertexschema.merge(extra.get(task, {}), extra.pop(other))
    return _vertexschema.merge(pool, extra)
