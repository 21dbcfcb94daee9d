"""A Griffe extension: `Example:` sections are examples, as `Examples:` are.

tensorfx's Google-style docstrings head their doctests `Example:` (as
Napoleon reads them); Griffe reads only `Examples:` as an examples section
and would render the doctests as plain text. This renames the heading
before Griffe parses the docstring.
"""

import re

import griffe

_HEADING = re.compile(r'^(\s*)Example:\s*$', re.MULTILINE)


class ExampleSections(griffe.Extension):
  """Reads each docstring's `Example:` heading as `Examples:`."""

  def on_object(self, *, obj, **kwargs):
    del kwargs
    if obj.docstring is not None:
      obj.docstring.value = _HEADING.sub(r'\1Examples:', obj.docstring.value)
