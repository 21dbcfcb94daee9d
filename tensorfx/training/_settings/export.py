"""Export settings: the layout of the exported model."""

import argparse
import dataclasses
from typing import Any, Self

from tensorfx.training._settings import _section


def add_arguments(parser: argparse.ArgumentParser) -> None:
  export = _section.group(parser, 'export')
  export.add_argument(
    '--export-versioned',
    action=argparse.BooleanOptionalAction,
    default=False,
    help="export to model/STEP/ (TensorFlow Serving's "
    'layout: one numbered version per export, the '
    'highest served; earlier versions are kept) instead '
    'of model/ (default: off)',
  )


def check(args: Any) -> None:
  del args  # A switch: argparse checks it.


@dataclasses.dataclass(frozen=True)
class ExportSettings:
  """How the trained model is exported.

  Attributes:
    versioned: whether the model goes to `model/<global step>/`, a
      version directory as TensorFlow Serving expects, rather than to
      `model/` itself (`--export-versioned`).
  """

  versioned: bool = False

  @classmethod
  def from_args(cls, args: Any) -> Self:
    return cls(versioned=bool(_section.read(args, 'export_versioned', False)))
