"""Helpers of the fuzzing tests: seeded damage to text inputs."""


def delete(rng, text, longest_span=40):
  """`text` with 1-3 random deletions (characters, a span or a line).

  Args:
    rng: the `random.Random` of the case (the damage repeats with its seed).
    text: the text to damage.
    longest_span: the longest span deleted at once (spans are 4 or more
      characters; a 'chars' deletion is 1 to 3).
  """
  for _ in range(rng.randint(1, 3)):
    if not text:
      break
    kind = rng.choice(('chars', 'span', 'line'))
    if kind == 'line':
      lines = text.split('\n')
      del lines[rng.randrange(len(lines))]
      text = '\n'.join(lines)
    else:
      at = rng.randrange(len(text))
      size = (
        rng.randint(1, 3) if kind == 'chars' else rng.randint(4, longest_span)
      )
      text = text[:at] + text[at + size :]
  return text
