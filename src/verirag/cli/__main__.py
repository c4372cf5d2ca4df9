import sys

from verirag.cli import main

sys.exit(main())
