"""`python -m tensorfx`: the tensorfx command line."""

import sys

from tensorfx.tools import main

if __name__ == '__main__':
  sys.exit(main())
