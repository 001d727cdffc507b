import sys

from mongobench.cli import main

sys.exit(main())
