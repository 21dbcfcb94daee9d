"""Export settings: the layout of the exported model."""

import argparse
import dataclasses

from tensorfx.training._settings import _section


@dataclasses.dataclass(frozen=True)
class ExportSettings(_section.Section):
  """How the trained model is exported.

  Attributes:
    versioned: whether the model goes to `model/<global step>/`, a
      version directory as TensorFlow Serving expects, rather than to
      `model/` itself (`--export-versioned`).
  """

  versioned: bool = _section.setting(
    '--export-versioned',
    group='export',
    action=argparse.BooleanOptionalAction,
    default=False,
    convert=bool,
    help="export to model/STEP/ (TensorFlow Serving's "
    'layout: one numbered version per export, the '
    'highest served; earlier versions are kept) instead '
    'of model/ (default: off)',
  )
