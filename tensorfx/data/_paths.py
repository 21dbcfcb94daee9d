"""File patterns and lists, resolved through tf.io.gfile (local and gs://)."""

from tensorfx._errors import DataError


def as_list(paths):
  """A path, a comma-separated string or a sequence, as a list of strings."""
  if paths is None:
    return []
  if isinstance(paths, str):
    return [p for p in (s.strip() for s in paths.split(',')) if p]
  return [str(p) for p in paths]


def expand(paths, what='data'):
  """Expands patterns to the sorted list of files they match.

  Args:
    paths: a path, pattern, comma-separated list, or a sequence of them.
    what: what the paths are, for the error message.

  Returns:
    The matching files, each pattern's matches sorted, duplicates removed.

  Raises:
    DataError: when a path or pattern matches no file.
  """
  import tensorflow as tf

  files: list[str] = []
  for pattern in as_list(paths):
    try:
      matches = sorted(tf.io.gfile.glob(pattern))
    except tf.errors.OpError as e:
      raise DataError(
        f'Cannot list {what} files {pattern!r}: {e.message}'
      ) from None
    matches = [m for m in matches if not tf.io.gfile.isdir(m)]
    if not matches:
      raise DataError(
        f'No {what} file matches {pattern!r}. Check the path; '
        'it must exist and be readable.'
      )
    files.extend(m for m in matches if m not in files)
  if not files:
    raise DataError(f'No {what} files were given.')
  return files
