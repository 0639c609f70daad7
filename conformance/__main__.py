import sys

from relavium_conformance._cli import main

sys.exit(main())
